"""``--for VAR``: each leaf's region as a set of VAR for given inputs, and the values where the
recommendation flips, with a closed form where one is found."""

from __future__ import annotations

import math

import sympy as sp

from engine.core import symbolic
from engine.core.errors import InputError
from engine.core.record import dataclass, field
from engine.trees.algebra import Algebra, _rational
from engine.trees.literals import _REL, Literal, dnf, literals_of, routes
from engine.trees.runner import Runner
from engine.trees.state import _TreePlan, _WalkState

# ---------------------------------------------------------------------- --for VAR: intervals and boundaries


@dataclass
class Interval:
    """Regions of one tree as sets of VAR, for given inputs (values in base units inside)."""

    var: str
    unit: str
    scale: float
    sets: dict[str, object]  # leaf -> sympy set of VAR in base units
    values: dict[str, float]  # the numbers substituted (base units), for the closed forms
    defaults: list[str]
    expansions: dict = field(default_factory=dict)  # produced symbol -> expression in the chain's leaves
    raw: dict = field(default_factory=dict)  # produced symbol -> its formula, one level
    notes: list[str] = field(default_factory=list)
    integer: bool = False


def intervals(runner: Runner, var: str, given: dict[str, object], sources: dict[str, str] | None = None) -> tuple[Interval, Algebra]:
    """Per leaf, the set of VAR that leads to it when every other input has a value (``sources``: where a value that
    is not the user's came from, e.g. a --model/--device preset, whose range travels as [value, low, high]).

    Categorical answers (given or defaulted) select the routes first, so only the numbers
    those routes need are required; an answer without a value leaves all its routes open.
    """
    alg = Algebra(runner)
    symbols = runner.symbols
    if not symbols.known(var) or symbols.categorical(var):
        raise InputError("--for", f"{var!r} is not a numeric symbol of {runner.tree.id}")
    if var not in runner.allowed:
        raise InputError("--for", f"{var!r} is not an input of {runner.tree.id} (its inputs: {', '.join(runner.tree.inputs)})")
    _check_given(runner, var, given)
    formula_given = {n: v for n, v in given.items() if symbols.info(n)["kind"] == "formula"}
    formula_given.update({n: v for n, (v, _) in runner.tree.fixed.items()})
    if symbols.info(var)["kind"] == "formula":
        formula_given[var] = "1"  # a placeholder that stops the chain at VAR; never substituted
    plan = _TreePlan(runner.calc, runner.graph, formula_given, None, symbols, sources)
    local = _WalkState(runner, {k: v for k, v in given.items() if symbols.info(k)["kind"] != "formula"}, None, sources)
    cats = _answers(runner, plan, local)
    paths = {key: [p for p in ps if all(cats.get(k) in (None, v) for k, v in p.cats.items())] for key, ps in routes(runner, alg.conds).items()}
    atoms = {lit.atom for ps in paths.values() for p in ps for c, _ in p.terms for conj in dnf(c) for lit in conj}
    numeric = sorted({n for a in atoms for n in a.symbols()} - set(alg.params) - {var})
    values, defaults = _values(runner, plan, local, numeric, var)
    raw, expansions = _expansions(runner, alg, plan.order, var)
    x = alg.symbol(var)
    domain = _domain_set(symbols.info(var)["domain"])
    subs = {alg.symbol(n): _rational(v) for n, v in values.items()}
    sets = {}
    notes = []
    for leaf in runner.tree.leaves:
        total = sp.S.EmptySet
        for path in paths.get(leaf, []):
            for conj in literals_of(path.terms):
                region = domain
                for lit in conj:
                    expr = alg.diff(lit.atom).subs(expansions).subs(subs)
                    region = sp.Intersection(region, _solve(_REL[lit.op](expr, 0), x, domain, notes, lit))
                total = sp.Union(total, region)
        sets[leaf] = total
    info = symbols.info(var)
    return Interval(var, info["unit"], symbols.scale(var), sets, values, defaults, expansions, raw, notes, info["domain"].endswith("integer")), alg


def _check_given(runner: Runner, var: str, given: dict) -> None:
    for name in given:
        if name == var:
            raise InputError(f"--set {name}", "is the --for variable; leave it free")
        if name not in runner.allowed:
            raise InputError(f"--set {name}", f"is not an input of {runner.tree.id} (its inputs: {', '.join(runner.tree.inputs)})")
        if name in runner.tree.fixed:
            raise InputError(f"--set {name}", f"is fixed by {runner.tree.id} ({runner.tree.fixed[name][1]})")


def _answers(runner: Runner, plan: _TreePlan, local: _WalkState) -> dict[str, str | None]:
    """The value of every ask node's input, or None where it has neither a value nor a default."""
    out: dict[str, str | None] = {}
    for node in runner.tree.nodes.values():
        if node.kind != "ask" or node.input in out:
            continue
        try:
            if runner.symbols.info(node.input)["kind"] == "formula":
                plan.need(node.input)
                out[node.input] = plan.selectors[node.input]
            else:
                out[node.input] = local.categorical(node.input)
        except InputError as exc:
            if exc.field != f"--set {node.input}":
                raise
            out[node.input] = None
    return out


def _values(runner: Runner, plan: _TreePlan, local: _WalkState, numeric: list[str], var: str) -> tuple[dict[str, float], list[str]]:
    """Base-unit values of the numeric symbols (given, default, parameter, or through the chain)."""
    symbols = runner.symbols
    values: dict[str, float] = {}
    defaults: list[str] = []
    for name in numeric:
        info = symbols.info(name)
        if info["kind"] == "formula":
            plan.need(name, output=symbols.produced(name))
            continue
        values[name] = local.number(name)
        if str(local.local[name].source).startswith("default"):
            defaults.append(f"{name} = {local.shown[name]:g} {info['unit']} ({local.local[name].source})")
    for name, q in plan.quantities.items():
        if name != var:
            values[name] = q.value * symbols.scale(name)
    for name, v in list(plan.inputs.items()) + list(local.local.items()):
        if name != var and str(v.source).startswith("default"):
            shown = v.value if isinstance(v.value, str) else format(v.value, "g")
            text = f"{name} = {shown}{' ' + v.unit if v.unit not in ('', '1') else ''} ({v.source})"
            if text not in defaults and not any(d.startswith(f"{name} = ") for d in defaults):
                defaults.append(text)
    return values, defaults


def _expansions(runner: Runner, alg: Algebra, order, var: str) -> tuple[dict, dict]:
    """Produced symbol -> its formula (one level) and its expression in the chain's leaves (base units)."""
    from engine.core.expr import parse

    raw: dict = {}
    full: dict = {}
    for fid, key in order:
        meta = runner.module.FORMULAS[fid]
        variant = meta["variants"][key]
        tree = parse(variant["expr"], frozenset(variant["inputs"]))
        expr = symbolic.to_sympy(tree, {n: alg.symbol(n) for n in variant["inputs"]})
        symbol = meta["output"]["symbol"]
        if symbol != var:
            raw[alg.symbol(symbol)] = expr
            full[alg.symbol(symbol)] = expr.subs(full)
    return raw, full


def _domain_set(domain: str):
    return {
        "positive": sp.Interval.open(0, sp.oo), "positive_integer": sp.Interval(1, sp.oo),
        "nonnegative": sp.Interval(0, sp.oo), "nonnegative_integer": sp.Interval(0, sp.oo),
        "fraction": sp.Interval(0, 1), "positive_fraction": sp.Interval.Lopen(0, 1),
        "fraction_below_one": sp.Interval.Ropen(0, 1), "ge_one": sp.Interval(1, sp.oo), "ge_two_integer": sp.Interval(2, sp.oo),
    }.get(domain, sp.S.Reals)


def _solve(rel, x, domain, notes: list[str], lit: Literal):
    if rel in (sp.true, sp.false):
        return domain if rel is sp.true else sp.S.EmptySet
    if x not in rel.free_symbols:
        missing = ", ".join(sorted(s.name for s in rel.free_symbols))
        raise InputError(f"--set {missing.split(',')[0]}", f"needs a value for {missing} to solve {lit.text()}")
    result = sp.solveset(rel, x, domain)
    if isinstance(result, sp.ConditionSet):
        notes.append(f"could not solve {lit.text()} for {x.name}; its region is left out")
        return sp.S.EmptySet
    return result


def set_text(s, scale: float, unit: str) -> str:
    """A sympy set of VAR (base units) as intervals in VAR's declared unit."""
    def number(x: float, digits: int) -> str:
        return f"{x:.{digits}g}"

    if s is sp.S.EmptySet or s == sp.S.EmptySet:
        return "never"
    parts = s.args if isinstance(s, sp.Union) else (s,)
    out = []
    for part in parts:
        if isinstance(part, sp.FiniteSet):
            out += [f"= {number(float(v) / scale, 6)}" for v in part]
            continue
        if not isinstance(part, sp.Interval):
            out.append(str(part))
            continue
        lo = "-inf" if part.start == -sp.oo else number(float(part.start) / scale, 6)
        hi = "+inf" if part.end == sp.oo else number(float(part.end) / scale, 6)
        out.append(f"{'(' if part.left_open else '['}{lo}, {hi}{')' if part.right_open else ']'}")
    suffix = f" {unit}" if unit not in ("", "1") else ""
    return " or ".join(out) + suffix


@dataclass
class Flip:
    at: float  # in VAR's declared unit
    closed_form: str
    below: str
    above: str
    at_point: str


def boundaries(runner: Runner, var: str, given: dict[str, object], sources: dict[str, str] | None = None) -> tuple[Interval, list[Flip]]:
    """Values of VAR where the leaf changes, each with the closed form it comes from."""
    iv, alg = intervals(runner, var, given, sources)
    points = sorted({b for s in iv.sets.values() for b in _ends(s)}, key=float)
    domain = _domain_set(runner.symbols.info(var)["domain"])
    probes = _probes(points, domain)
    leaf_at = [_leaf_of(iv.sets, p) for p in probes]
    flips = []
    paths = routes(runner, alg.conds)
    for k, e in enumerate(points):
        below, above = leaf_at[k], leaf_at[k + 1]
        if below == above or not _interior(domain, e):
            continue
        closed = _closed_form(runner, alg, iv, paths, float(e), {below, above})
        flips.append(Flip(float(e) / iv.scale, closed, below or "-", above or "-", _leaf_of(iv.sets, e) or "-"))
    return iv, flips


def _interior(domain, e) -> bool:
    return domain.contains(e) is sp.true and e != domain.inf and e != domain.sup


def _ends(s):
    parts = s.args if isinstance(s, sp.Union) else (s,)
    for part in parts:
        if isinstance(part, sp.Interval):
            for b in (part.start, part.end):
                if b.is_finite:
                    yield b
        elif isinstance(part, sp.FiniteSet):
            yield from part


def _probes(points: list, domain) -> list:
    """One value of VAR inside each stretch between consecutive end points (exact rationals)."""
    if not points:
        return [sp.Integer(1)]
    lo, hi = points[0], points[-1]
    step_lo, step_hi = sp.Max(1, abs(lo)), sp.Max(1, abs(hi))
    first = lo - step_lo if domain.contains(lo - step_lo) is sp.true or not domain.inf.is_finite else (domain.inf + lo) / 2
    return [first] + [(a + b) / 2 for a, b in zip(points, points[1:], strict=False)] + [hi + step_hi]


def _leaf_of(sets: dict, x) -> str | None:
    for leaf, s in sets.items():
        if s.contains(x) is sp.true:
            return leaf
    return None


def _closed_form(runner: Runner, alg: Algebra, iv: Interval, paths, e: float, leaves: set) -> str:
    """The root of one literal on the two leaves' paths that equals e.

    Only produced symbols that depend on VAR are expanded, so the closed form reads in the
    condition's own terms (``tpot_slo - decode_step_time``); the others are listed with
    their values. Parameters keep their names.
    """
    x = alg.symbol(iv.var)
    depends = {s for s, full in iv.expansions.items() if x in full.free_symbols}
    numbers = {alg.symbol(n): _rational(v) for n, v in iv.values.items()}
    numbers.update({alg.symbol(n): v for n, v in alg.params.items()})
    seen = set()
    for leaf in sorted(leaves):
        for path in paths.get(leaf, []):
            for c, _ in path.terms:
                for conj in dnf(c):
                    for lit in conj:
                        if lit.atom in seen:
                            continue
                        seen.add(lit.atom)
                        found = _root_matching(alg, iv, lit.atom, x, depends, numbers, e)
                        if found:
                            return found
    return ""


def _root_matching(alg: Algebra, iv: Interval, atom, x, depends: set, numbers: dict, e: float) -> str:
    expr = alg.diff(atom, params=False)
    for _ in range(len(iv.raw) + 1):
        inner = expr.free_symbols & depends
        if not inner:
            break
        expr = expr.subs({s: iv.raw[s] for s in inner})
    if x not in expr.free_symbols:
        return ""
    try:
        roots = sp.solve(sp.Eq(expr, 0), x)
    except (NotImplementedError, ValueError):
        return ""
    for root in roots:
        try:
            value = float(root.subs(iv.expansions).subs(numbers))
        except (TypeError, ValueError):
            continue
        if not math.isclose(value, e, rel_tol=1e-9, abs_tol=1e-12):
            continue
        kept = sorted((s for s in root.free_symbols if s in iv.expansions), key=lambda s: s.name)
        text = f"{iv.var} = {_pretty(root)}"
        if kept:
            from engine.core.humanize import number

            shown = [f"{s.name} = {number(float(iv.expansions[s].subs(numbers)) / alg.symbols.scale(s.name), 6)} {alg.symbols.info(s.name)['unit']}".rstrip(" 1") for s in kept]
            text += " (with " + ", ".join(shown) + ")"
        return text
    return ""


def _pretty(expr) -> str:
    """sympy text read the way people write it: (1 - h) and (tpot - step), not (h - 1) with a minus in front."""
    num, den = sp.fraction(sp.factor_terms(expr))
    num_c, num_f = num.as_coeff_mul()
    den_c, den_f = den.as_coeff_mul()
    num_f, den_f = list(num_f), list(den_f)
    for i, f in enumerate(den_f):
        if isinstance(f, sp.Add) and f.as_coeff_Add()[0] < 0:
            den_f[i], den_c = -f, -den_c
    coeff = num_c / den_c
    for i, f in enumerate(num_f):
        if coeff < 0 and isinstance(f, sp.Add):
            num_f[i], coeff = -f, -coeff
    top = _factors_text(abs(sp.Integer(coeff.p)), num_f)
    bottom = _factors_text(sp.Integer(coeff.q), den_f)
    den_f = den_f + ([coeff.q] if coeff.q != 1 else [])
    sign = "-" if coeff < 0 else ""
    if bottom == "1":
        return sign + (_add_text(num_f[0]) if len(num_f) == 1 and isinstance(num_f[0], sp.Add) and coeff == 1 else top)
    return f"{sign}{top}/{bottom if len(den_f) == 1 and not isinstance(den_f[0], sp.Add) else '(' + bottom + ')'}"


def _factors_text(coeff, factors) -> str:
    parts = [] if coeff == 1 else [sp.sstr(coeff)]
    for f in factors:
        parts.append(f"({_add_text(f)})" if isinstance(f, sp.Add) else sp.sstr(f))
    return "*".join(parts) or "1"


def _add_text(a) -> str:
    pos = [sp.sstr(t) for t in a.args if not t.could_extract_minus_sign()]
    neg = [sp.sstr(-t) for t in a.args if t.could_extract_minus_sign()]
    return " + ".join(pos) + "".join(f" - {t}" for t in neg) if pos else "-" + " - ".join(neg)
