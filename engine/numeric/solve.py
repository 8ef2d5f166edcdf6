"""Symbolic solving of one formula for one input: closed form, number, and honest limits.

Scales are folded in so the closed form reads in the symbols' declared units. For an
inequality the answer is an interval within the symbol's domain; when the sign of a
coefficient is not known from the domains, the answer says so instead of guessing.
"""

from __future__ import annotations

import sympy as sp

from engine.core import symbolic
from engine.core.errors import InputError
from engine.core.record import dataclass, field
from engine.core.units import parse_quantity
from engine.kb.records import Formula
from engine.numeric.evaluate import check_domain, read_input

RELATIONS = ("eq", "le", "ge")


@dataclass
class Solution:
    formula: str
    target: str
    unit: str
    relation: str  # eq | le | ge
    bound: float | None  # V, in the output's unit
    closed_form: list[str] = field(default_factory=list)
    closed_form_latex: list[str] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    interval: str = ""
    inputs: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    method: str = ""  # closed_form | numeric (bisection, engine.numeric.solve_numeric) | "" when no answer

    def to_json(self) -> dict:
        return {
            "formula": self.formula, "for": self.target, "unit": self.unit, "relation": self.relation,
            "bound": self.bound, "closed_form": self.closed_form, "closed_form_latex": self.closed_form_latex,
            "values": self.values, "interval": self.interval or None, "inputs": self.inputs, "notes": self.notes,
            "method": self.method or None,
        }


def solve(f: Formula, target: str, given: dict[str, str], relation: str = "eq", bound_text: str | None = None) -> Solution:
    numeric = {n: s for n, s in f.symbols.items() if not s.categorical}
    if target not in numeric:
        raise InputError("--for", f"{target!r} is not a numeric input of {f.id} (its inputs: {', '.join(numeric)})")
    variant = _variant(f, given)
    table = symbolic.make_symbols({n: s.domain for n, s in numeric.items()})
    expr = symbolic.to_sympy(variant.tree, table)
    if target not in variant.tree.symbols():
        raise InputError("--for", f"{target!r} does not appear in {f.id}" + (f" when {f.selector}={variant.key}" if variant.key else ""))
    # declared units: x_base = x * scale; output_declared = output_base / out_scale
    expr = expr.subs({table[n]: table[n] * s.unit.scale for n, s in numeric.items() if s.unit.scale != 1.0}) / f.output.unit.scale
    expr = sp.nsimplify(expr, rational=True) if expr.has(sp.Float) else expr
    out_sym = sp.Symbol(f.output.symbol, real=True)
    x = table[target]
    sol = Solution(f.id, target, numeric[target].unit_text, relation, None)

    values = {}
    for name, text in given.items():
        if name == f.selector:
            continue
        if name not in numeric:
            raise InputError(f"--set {name}", f"is not an input of {f.id} (its inputs: {', '.join(f.symbols)})")
        if name == target:
            raise InputError(f"--set {name}", "is the symbol being solved for; do not set it")
        q = read_input(name, text, {"unit": numeric[name].unit_text})
        if q.is_range:
            raise InputError(f"--set {name}", "takes a single value when solving (ranges are for formula eval)")
        check_domain(name, q, {"unit": numeric[name].unit_text, "domain": numeric[name].domain})
        values[name] = q.value
    for name in variant.tree.symbols():
        spec = numeric[name]
        if name != target and name not in values and spec.default is not None:
            values[name] = spec.default.value
            sol.notes.append(f"{name} = {spec.default.value:g} {spec.unit_text} (default: {spec.default_source})")
    sol.inputs = values
    subs = {table[n]: sp.nsimplify(v, rational=True) for n, v in values.items()}

    bound = None
    if bound_text is not None:
        try:
            q = parse_quantity(bound_text, f.output.unit_text)
        except Exception as exc:  # UnitError
            raise InputError(f"--{relation}", f"{exc}") from None
        if q.is_range:
            raise InputError(f"--{relation}", "takes a single value")
        bound = q.value
        sol.bound = bound
        if relation != "ge":
            _refuse_unreachable(f, expr, target, relation, bound)

    try:
        closed = sp.solve(sp.Eq(expr, out_sym), x, dict=False)
    except NotImplementedError:  # ceiling, Max, ...: SymPy has no inverse
        closed = []
    closed = [c for c in closed if _admissible(c, x)]
    if not closed:
        sol.notes.append(f"no closed form for {target} was found")
    sol.method = "closed_form" if closed else ""
    sol.closed_form = [f"{target} = {sp.sstr(c)}" for c in closed]
    sol.closed_form_latex = [f"{sp.latex(x)} = {sp.latex(c)}" for c in closed]
    if relation == "eq":
        if bound is not None:
            for c in closed:
                v = c.subs(subs).subs(out_sym, sp.nsimplify(bound, rational=True))
                if v.free_symbols:
                    missing = ", ".join(sorted(str(s) for s in v.free_symbols))
                    sol.notes.append(f"set {missing} to get a number")
                    continue
                num = complex(sp.N(v))
                if abs(num.imag) < 1e-12 and _in_domain(num.real, numeric[target].domain):
                    sol.values.append(float(num.real))
            if not closed:
                _numeric_roots(sol, expr.subs(subs), x, bound, numeric[target].domain)
            if not sol.values and not any(n.startswith("set ") for n in sol.notes):
                sol.notes.append(f"no value of {target} in its domain ({numeric[target].domain}) gives {f.output.symbol} = {bound:g}")
        return sol
    if bound is None:
        raise InputError(f"--{relation}", "needs a value V")
    _inequality(sol, expr.subs(subs), x, relation, bound, numeric[target].domain)
    return sol


def _refuse_unreachable(f: Formula, expr, target: str, relation: str, bound: float) -> None:
    """``--le 0`` (or ``--eq -1``) for an output that the input domains keep positive: no value can satisfy it."""
    out = f.output.symbol
    if expr.is_positive and bound <= 0:
        sign, expected = "positive", "a bound above 0"
    elif expr.is_nonnegative and bound < 0:
        sign, expected = "never negative", "a bound of at least 0"
    else:
        return
    rel = "=" if relation == "eq" else "<="
    raise InputError(f"--{relation}", f"{out} is {sign} for every input in its domain, so no value of {target} gives {out} {rel} {bound:g} {f.output.unit_text} (expected {expected})")


def _variant(f: Formula, given: dict[str, str]):
    if not f.selector:
        return f.variants[0]
    spec = f.symbols[f.selector]
    key = given.get(f.selector, spec.default)
    if key is None:
        raise InputError(f"--set {f.selector}", f"{f.id} needs {f.selector}, one of {', '.join(spec.values)}")
    if str(key) not in spec.values:
        raise InputError(f"--set {f.selector}", f"{key!r} is not one of {', '.join(spec.values)}")
    return f.variant(str(key))


def _admissible(c, x) -> bool:
    if c.is_real is False:
        return False
    if x.is_positive and c.is_nonpositive:
        return False
    return True


def _in_domain(v: float, domain: str) -> bool:
    return {
        "positive": v > 0, "nonnegative": v >= 0, "positive_integer": v > 0, "nonnegative_integer": v >= 0,
        "fraction": 0 <= v <= 1, "positive_fraction": 0 < v <= 1, "fraction_below_one": 0 <= v < 1,
        "ge_one": v >= 1, "ge_two_integer": v >= 2,
    }.get(domain, True)


_DOMAIN_SETS = {
    "positive": sp.Interval.open(0, sp.oo), "positive_integer": sp.Interval.open(0, sp.oo),
    "nonnegative": sp.Interval(0, sp.oo), "nonnegative_integer": sp.Interval(0, sp.oo),
    "fraction": sp.Interval(0, 1), "positive_fraction": sp.Interval.Lopen(0, 1), "real": sp.S.Reals,
    "fraction_below_one": sp.Interval.Ropen(0, 1), "ge_one": sp.Interval(1, sp.oo), "ge_two_integer": sp.Interval(2, sp.oo),
}


def _inequality(sol: Solution, expr, x, relation: str, bound: float, domain: str) -> None:
    others = expr.free_symbols - {x}
    rel = sp.Le if relation == "le" else sp.Ge
    if others:
        linear = sp.Poly(expr, x) if expr.is_polynomial(x) and sp.degree(expr, x) == 1 else None
        if linear is not None:
            coeff = linear.coeffs()[0]
            if coeff.is_positive is None and coeff.is_negative is None:
                sol.notes.append(f"the sign of the coefficient of {x} ({sp.sstr(coeff)}) is unknown; set {', '.join(sorted(map(str, others)))} to solve")
                return
        sol.notes.append(f"set {', '.join(sorted(map(str, others)))} to solve the inequality")
        return
    try:
        region = sp.solveset(rel(expr, sp.nsimplify(bound, rational=True)), x, _DOMAIN_SETS.get(domain, sp.S.Reals))
    except (NotImplementedError, TypeError, ValueError):
        region = None
    if region is None or isinstance(region, sp.ConditionSet):
        _numeric_region(sol, expr, x, relation, bound, domain)
        return
    sol.method = "closed_form"
    sol.interval = _interval_text(region)
    if region is sp.S.EmptySet:
        sol.notes.append(f"no value of {x} in its domain satisfies it")


def _function(expr, x, bound: float):
    """expr − bound as a float function of x (SymPy's lambdify over the math module, from our parsed tree only)."""
    return sp.lambdify(x, expr - sp.nsimplify(bound, rational=True), modules="math")


def _numeric_roots(sol: Solution, expr, x, bound: float, domain: str) -> None:
    """No closed form: values of x where expr = bound, found numerically (engine.numeric.solve_numeric)."""
    from engine.numeric import solve_numeric

    others = expr.free_symbols - {x}
    if others:
        sol.notes.append(f"set {', '.join(sorted(map(str, others)))} to get a number")
        return
    found, jumps = solve_numeric.roots(_function(expr, x, bound), domain, 1e-9 * max(1.0, abs(bound)))
    sol.values += found
    sol.method = "numeric"
    sol.notes.append(solve_numeric.NOTE.format(what="value"))
    for j in jumps:
        sol.notes.append(f"numeric: {sol.formula}'s output steps over {bound:g} at {x} ≈ {j:.6g} without equalling it")


def _numeric_region(sol: Solution, expr, x, relation: str, bound: float, domain: str) -> None:
    from engine.numeric import solve_numeric

    fn = _function(expr, x, bound)
    test = (lambda v: v is not None and v <= 0) if relation == "le" else (lambda v: v is not None and v >= 0)
    sol.interval = solve_numeric.region(fn, domain, test)
    sol.method = "numeric"
    sol.notes.append(solve_numeric.NOTE.format(what="interval"))
    if sol.interval == "empty":
        sol.notes.append(f"no value of {x} in its domain satisfies it")


def _interval_text(region) -> str:
    if isinstance(region, sp.Interval):
        lo = "-inf" if region.start == -sp.oo else f"{float(region.start):.6g}"
        hi = "inf" if region.end == sp.oo else f"{float(region.end):.6g}"
        return f"{'(' if region.left_open else '['}{lo}, {hi}{')' if region.right_open else ']'}"
    if region is sp.S.EmptySet:
        return "empty"
    if isinstance(region, sp.Union):
        return " ∪ ".join(_interval_text(a) for a in region.args)
    return sp.sstr(region)
