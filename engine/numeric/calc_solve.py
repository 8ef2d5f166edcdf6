"""``calc ID --solve INPUT --where 'OUTPUT >= V'``: one calculator input solved for conditions on its outputs.

The calculator is planned as for a run (presets, defaults, the formula graph's chain), with the
solved input as a leaf. Each formula of the chain is built into SymPy from its parsed tree (the
whitelisted-AST parser; never from user text) and composed: every upstream formula substituted into
the output's expression. Two compositions are made:

- with the other leaves as symbols, solved for the input (``sp.solve``) to print the closed form;
- with the other leaves at their numbers, a function of the input alone, whose solution set over
  the input's domain comes from ``solveset``. An outer ``floor``/``ceiling`` (a whole number of
  requests, blocks, nodes) is peeled exactly (floor(g) >= V iff g >= ceiling(V)), and so is one
  inside when the input appears only there.

Where SymPy finds neither (Max, nested steps, transcendental mixes) or runs out of time, the set is
bracketed numerically on the compiled chain (engine.numeric.calc_bracket, SciPy's brentq), and the
answer says so. Integer inputs are rounded inward (the safe direction). A ranged input among the
others gives the solution at its corners (exact when the engine proves the outputs monotone in every
ranged input, engine/numeric/directions.json), else corners and seeded samples.
"""

from __future__ import annotations

import itertools
import math
import random
import re

import sympy as sp

from engine.core import symbolic
from engine.core.errors import AiinfraError, InputError, UnitError
from engine.core.expr import parse
from engine.core.record import dataclass, field
from engine.core.units import parse_quantity, parse_unit
from engine.numeric import calc_bracket as bracket
from engine.numeric.calc_bracket import Piece
from engine.numeric.calc_plan import _Missing
from engine.numeric.calc_ranges import _chain, _directions
from engine.numeric.calc_records import Calculator, graph_of
from engine.numeric.calc_run import _every_missing, _planned, with_presets

SYMPY_SECONDS = 4.0  # per SymPy call; past it the answer is numeric and says why
MAX_CORNERS = 64  # ranged inputs beyond 6 are sampled
SAMPLES = 24  # seeded samples of the ranged inputs when the directions are not all proven
RELATIONS = {">=": sp.Ge, "<=": sp.Le, "=": sp.Eq}
_WHERE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|==|=)\s*(\S.*?)\s*$")
_REAL = {"positive": {"positive": True}, "positive_integer": {"positive": True}, "nonnegative": {"nonnegative": True},
         "nonnegative_integer": {"nonnegative": True}, "fraction": {"nonnegative": True}, "positive_fraction": {"positive": True},
         "fraction_below_one": {"nonnegative": True}, "ge_one": {"positive": True}, "ge_two_integer": {"positive": True}}
_SETS = {
    "positive": sp.Interval.open(0, sp.oo), "positive_integer": sp.Interval.open(0, sp.oo),
    "nonnegative": sp.Interval(0, sp.oo), "nonnegative_integer": sp.Interval(0, sp.oo),
    "fraction": sp.Interval(0, 1), "positive_fraction": sp.Interval.Lopen(0, 1), "fraction_below_one": sp.Interval.Ropen(0, 1),
    "ge_one": sp.Interval(1, sp.oo), "ge_two_integer": sp.Interval(2, sp.oo),
}
_PLACEHOLDER = {"fraction": 0.5, "positive_fraction": 0.5, "fraction_below_one": 0.5, "ge_two_integer": 2.0}


@dataclass
class Condition:
    output: str
    relation: str  # >= | <= | =
    bound: float  # in the output's unit
    unit: str
    text: str

    def __str__(self) -> str:
        unit = "" if self.unit in ("", "1") else f" {self.unit}"
        return f"{self.output} {self.relation} {self.bound:.10g}{unit}"


@dataclass
class Answer:
    """One condition solved: the closed form (the input at the boundary), the set of inputs, how it was found."""

    condition: Condition
    method: str  # closed_form | interval | numeric
    pieces: list = field(default_factory=list)
    closed_form: list[str] = field(default_factory=list)
    closed_form_latex: list[str] = field(default_factory=list)
    brackets: list = field(default_factory=list)  # numeric: the sample pairs each boundary was found between
    direction: str | None = None  # of the output in the input, as the engine proves it
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"output": self.condition.output, "relation": self.condition.relation, "bound": self.condition.bound,
                "unit": self.condition.unit, "method": self.method, "closed_form": self.closed_form,
                "closed_form_latex": self.closed_form_latex, "interval": bracket.text(self.pieces),
                "pieces": bracket.to_json(self.pieces), "bracket": [list(b) for b in self.brackets] or None,
                "direction": self.direction, "notes": self.notes}


@dataclass
class CalcSolution:
    calculator: str
    target: str
    unit: str
    domain: str
    answers: list[Answer]
    pieces: list  # inputs satisfying every condition, at the given values
    value: float | None  # the one bound end (or the one point)
    binding: dict  # "low" | "high" | "value" -> condition text
    inputs: dict  # name -> InputValue
    formulas: list[str]
    at_answer: dict = field(default_factory=dict)  # output -> value with the input at ``value``
    over_range: dict | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def method(self) -> str:
        methods = {a.method for a in self.answers}
        return "numeric" if "numeric" in methods else "interval" if "interval" in methods else "closed_form"

    @property
    def interval(self) -> str:
        return bracket.text(self.pieces)

    def to_json(self) -> dict:
        return {
            "calculator": self.calculator, "solve": self.target, "unit": self.unit, "domain": self.domain, "method": self.method,
            "interval": self.interval, "pieces": bracket.to_json(self.pieces), "value": self.value, "binding": self.binding,
            "conditions": [a.to_json() for a in self.answers], "at_answer": self.at_answer, "over_range": self.over_range,
            "inputs": {k: v._asdict() for k, v in self.inputs.items()}, "formulas": list(self.formulas),
            "notes": list(self.notes), "warnings": list(self.warnings),
        }


# ---------------------------------------------------------------------- reading the question


def read_where(text: str, graph, target: str) -> Condition:
    """``'train_wall_time <= 54d'`` -> Condition (V read as a quantity in the output's unit; no expression is evaluated)."""
    if not isinstance(text, str):
        raise InputError("--where", f"expected 'OUTPUT >= V', 'OUTPUT <= V' or 'OUTPUT = V', got a {type(text).__name__}")
    m = _WHERE.match(text)
    if m is None:
        raise InputError("--where", f"{text!r} is not 'OUTPUT >= V', 'OUTPUT <= V' or 'OUTPUT = V' (e.g. --where 'train_wall_time <= 54d')")
    name, rel, value = m.group(1), m.group(2), m.group(3)
    if name not in graph.producer:
        raise InputError("--where", f"{name} is not an output of any formula")
    if name == target:
        raise InputError("--where", f"{name} is the input being solved for; name an output")
    unit = graph.units[name]
    try:
        q = parse_quantity(value, unit)
    except UnitError as exc:
        raise InputError("--where", f"{name}: {exc.text!r} {exc.message}") from None
    if q.is_range:
        raise InputError("--where", f"{name}: the bound takes a single value (give a range to an input with --set)")
    return Condition(name, "=" if rel == "==" else rel, q.value, unit, text)


def solve(calc: Calculator, module, given: dict, presets: dict | None, target: str, wheres: list[str], numeric: bool = False) -> CalcSolution:
    """Solve ``target`` for every condition of ``wheres`` (``OUTPUT >= V``); ``numeric`` skips SymPy (to check it)."""
    graph = graph_of(module)
    broken = graph.unproduced_error(calc)
    if broken is not None:
        raise broken
    spec = _target_spec(calc, graph, given, target)
    if not wheres:
        raise InputError("--where", "give at least one condition, e.g. --where 'OUTPUT >= V'")
    conditions = [read_where(w, graph, target) for w in wheres]
    values, sources = with_presets(calc, graph, {**given, target: _PLACEHOLDER.get(spec["domain"], 1.0)}, presets)
    try:
        plan, *_ = _planned(calc, graph, values, sources)
    except _Missing as first:
        raise _every_missing(calc, graph, values, sources, first) from None
    if target not in plan.used:
        raise InputError("--solve", f"{target} is not used by {calc.id}'s chain with these inputs (a symbol given directly or a selector "
                                    f"made it unnecessary): nothing depends on it")
    order = _order_for(plan.order, module, [c.output for c in conditions])
    for c in conditions:
        if c.output in values:
            raise InputError("--where", f"{c.output} is given ({sources[c.output]}), so {calc.id} does not compute it; leave it out to solve through it")
        if c.output not in {module.FORMULAS[fid]["output"]["symbol"] for fid, _ in order}:
            raise InputError("--where", f"{c.output} is not computed by {calc.id} with these inputs (given directly, or not on its chain)")
    problem = _Problem(calc, module, graph, order, target, spec["domain"], conditions, numeric)
    for c in conditions:
        if target not in problem.depends(c.output):
            raise InputError("--where", f"{c.output} does not depend on {target} in {calc.id}'s chain ({' -> '.join(f for f, _ in order)})")
    used = set().union(*(problem.depends(c.output) for c in conditions))
    leaves = {n: q for n, q in plan.quantities.items() if n != target and n in used}
    point = {n: q.value for n, q in leaves.items()}
    exprs = problem.composed(point)
    for c in conditions:
        if exprs is not None and problem.x not in exprs[c.output].free_symbols:
            raise InputError("--where", f"{c.output} does not depend on {target}: it cancels in {calc.id}'s chain ({' -> '.join(f for f, _ in order)}); "
                                        f"{c.output} = {exprs[c.output]} for every {target}")
    answers = problem.answers(point, closed_forms=True)
    pieces = problem.combine(answers, point)
    sol = CalcSolution(calc.id, target, spec["unit"], spec["domain"], answers, pieces, None, {},
                       {n: v for n, v in plan.inputs.items() if n != target and n in used}, [f for f, _ in order])
    _value_and_binding(sol, problem.domain_piece)
    ranged = [n for n, q in leaves.items() if q.is_range]
    if ranged:
        sol.over_range = problem.over_range(leaves, ranged, point)
    _at_answer(sol, problem, point, given, presets, calc, module)
    return sol


def _target_spec(calc: Calculator, graph, given: dict, target: str) -> dict:
    if not isinstance(target, str) or not graph.known(target):
        raise InputError("--solve", f"{target!r} is not a formula symbol (the inputs of {calc.id}: {', '.join(calc.inputs)})")
    _, allowed = graph.reach(calc)
    if target not in allowed:
        raise InputError("--solve", f"{target} is not an input of {calc.id} (its inputs: {', '.join(calc.inputs)})")
    spec = graph.spec(target)
    if spec["values"]:
        raise InputError("--solve", f"{target} is categorical (one of {', '.join(spec['values'])}); --solve takes a numeric input")
    if target in given:
        raise InputError(f"--set {target}", "is the input being solved for (--solve); leave it out")
    return spec


def _order_for(order, module, outputs: list[str]) -> list:
    """The steps of ``order`` the ``outputs`` need."""
    need, keep = set(outputs), []
    for fid, key in reversed(order):
        meta = module.FORMULAS[fid]
        if meta["output"]["symbol"] in need:
            keep.append((fid, key))
            need |= set(meta["variants"][key]["inputs"])
    return list(reversed(keep))


# ---------------------------------------------------------------------- the composed chain


_PARSED: dict = {}


def _formula(meta: dict, key: str):
    """The SymPy expression of one variant in declared units, with a symbol per input (built once per text)."""
    variant = meta["variants"][key]
    cache_key = (meta["id"], key, variant["expr"], tuple(sorted((n, s["unit"]) for n, s in meta["symbols"].items())), meta["output"]["unit"])
    if cache_key not in _PARSED:
        node = parse(variant["expr"], set(meta["symbols"]))
        table = {n: sp.Symbol(n, real=True) for n in variant["inputs"]}
        expr = symbolic.to_sympy(node, table)
        scales = {table[n]: table[n] * sp.nsimplify(_scale(meta["symbols"][n]["unit"]), rational=True)
                  for n in variant["inputs"] if _scale(meta["symbols"][n]["unit"]) != 1.0}
        out_scale = _scale(meta["output"]["unit"])
        expr = expr.xreplace(scales) / sp.nsimplify(out_scale, rational=True) if scales or out_scale != 1.0 else expr
        _PARSED[cache_key] = (expr, table)
    return _PARSED[cache_key]


_SCALES: dict = {}


def _scale(unit: str) -> float:
    if unit not in _SCALES:
        _SCALES[unit] = parse_unit(unit).scale if unit not in ("", "1") else 1.0
    return _SCALES[unit]


def _leaf_symbol(name: str, domain: str) -> sp.Symbol:
    return sp.Symbol(name, **_REAL.get(domain, {"real": True}))


def _exact(v: float):
    return sp.nsimplify(v, rational=True) if v != int(v) or abs(v) > 2**53 else sp.Integer(int(v))


class _Problem:
    """The chain, the solved input and the conditions: answers at given values of the other leaves."""

    def __init__(self, calc, module, graph, order, target: str, domain: str, conditions: list[Condition], numeric: bool):
        self.calc, self.module, self.graph, self.order = calc, module, graph, order
        self.target, self.domain, self.conditions, self.numeric = target, domain, conditions, numeric
        self.x = _leaf_symbol(target, domain)
        self.domain_set = _SETS.get(domain, sp.S.Reals)
        self.domain_piece = bracket.domain_piece(domain)
        self.integer = domain in bracket.INTEGER
        outputs = [c.output for c in conditions]
        self._composed: dict = {}
        self.directions = {}
        try:
            dirs = _directions(order, module, [target])
            self.directions = {o: dirs.get(o, {}).get(target) for o in outputs}
        except AiinfraError:
            pass

    def depends(self, output: str) -> set[str]:
        deps: dict[str, set[str]] = {}
        for fid, key in self.order:
            meta = self.module.FORMULAS[fid]
            deps[meta["output"]["symbol"]] = set().union(*({n} | deps.get(n, set()) for n in meta["variants"][key]["inputs"])) if meta["variants"][key]["inputs"] else set()
        return deps.get(output, set())

    def compose(self, values: dict | None) -> dict:
        """output symbol -> SymPy expression in the solved input (and, with ``values`` None, the other leaves)."""
        exprs: dict = {}
        for fid, key in self.order:
            meta = self.module.FORMULAS[fid]
            expr, table = _formula(meta, key)
            repl = {}
            for n, s in table.items():
                if n == self.target:
                    repl[s] = self.x
                elif n in exprs:
                    repl[s] = exprs[n]
                elif values is not None:
                    repl[s] = _exact(values[n])
                else:
                    repl[s] = _leaf_symbol(n, self.graph.spec(n)["domain"])
            exprs[meta["output"]["symbol"]] = expr.xreplace(repl)
        return exprs

    def composed(self, values: dict):
        """``compose(values)`` within SymPy's time, kept per values (None when SymPy ran out of time)."""
        key = tuple(sorted(values.items()))
        if key not in self._composed:
            self._composed[key] = _timed(lambda: self.compose(values))
        return self._composed[key]

    def function(self, values: dict, output: str):
        """The compiled chain's ``output`` as a float function of the solved input (None where it has no value)."""
        order, module, target = self.order, self.module, self.target

        def fn(v: float) -> float | None:
            try:
                out = _chain(order, module, {**values, target: v})[output]
            except (AiinfraError, ArithmeticError, ValueError, TypeError, OverflowError, KeyError):
                return None
            return float(out)

        return fn

    def answers(self, values: dict, closed_forms: bool = False) -> list[Answer]:
        exprs = None if self.numeric else self.composed(values)
        symbolic_exprs = _timed(lambda: self.compose(None)) if closed_forms and not self.numeric else None
        out = []
        for c in self.conditions:
            a = Answer(c, "numeric", direction=self.directions.get(c.output))
            region = None if exprs is None else _timed(lambda c=c: _exact_region(exprs[c.output], self.x, c.relation, c.bound, self.domain_set))
            if region is not None:
                a.pieces, a.method = region, "interval"
                if symbolic_exprs is not None:
                    forms = _timed(lambda c=c: _closed_form(symbolic_exprs[c.output], self.x, c.bound))
                    if forms:
                        a.method = "closed_form"
                        a.closed_form = [f"{self.target} = {sp.sstr(f)}" for f in forms]
                        a.closed_form_latex = [f"{sp.latex(self.x)} = {sp.latex(f)}" for f in forms]
            else:
                if not self.numeric:
                    a.notes.append("SymPy found no closed form within its time; " + bracket.NOTE)
                else:
                    a.notes.append(bracket.NOTE)
                a.pieces, a.brackets, notes = bracket.region(self.function(values, c.output), self.domain, c.relation, c.bound)
                a.notes += notes
                if a.direction in ("increasing", "decreasing"):
                    a.notes.append(f"{c.output} is proven {a.direction} in {self.target} (engine/numeric/directions.json), so there is one boundary")
            out.append(a)
        return out

    def combine(self, answers: list[Answer], values: dict) -> list[Piece]:
        pieces = [self.domain_piece]
        for a in answers:
            pieces = bracket.intersect(pieces, a.pieces)
        if self.integer:
            fns = [(self.function(values, a.condition.output), a.condition) for a in answers]
            pieces = bracket.whole_numbers(pieces, lambda n: all(bracket.holds(fn(n), c.relation, c.bound) for fn, c in fns))
        return pieces

    def over_range(self, leaves: dict, ranged: list[str], point: dict) -> dict:
        dirs = _directions(self.order, self.module, ranged + [self.target])
        proven = all(dirs.get(c.output, {}).get(n) is not None for c in self.conditions for n in ranged + [self.target]
                     if n in dirs.get(c.output, {}))
        ends = [(leaves[n].low, leaves[n].high) for n in ranged]
        corners = list(itertools.product(*ends))
        if len(corners) > MAX_CORNERS:
            proven, corners = False, []
        rng = random.Random(0)
        samples = [] if proven else [tuple(rng.uniform(lo, hi) for lo, hi in ends) for _ in range(SAMPLES)]
        sets = []
        for pt in corners + samples:
            values = {**point, **dict(zip(ranged, pt, strict=True))}
            sets.append(self.combine(self.answers(values), values))
        every = sets[0]
        for s in sets[1:]:
            every = bracket.intersect(every, s)
        lows = [s[0][0] for s in sets if s]
        highs = [s[-1][1] for s in sets if s]
        return {"ranged": ranged, "method": "exact" if proven else "sampled", "points": len(sets),
                "every": bracket.to_json(every), "every_text": bracket.text(every),
                "some": bracket.to_json(bracket.hull(sets)), "some_text": bracket.text(bracket.hull(sets)),
                "low": [min(lows), max(lows)] if lows else None, "high": [min(highs), max(highs)] if highs else None}


def _timed(fn):
    """``fn()`` within SYMPY_SECONDS, else None (the caller goes numeric)."""
    try:
        with symbolic.time_budget(SYMPY_SECONDS):
            return fn()
    except symbolic._OutOfTime:
        return None
    except (NotImplementedError, TypeError, ValueError, AttributeError, RecursionError, ArithmeticError, AiinfraError):
        return None


# ---------------------------------------------------------------------- exact sets


_FLOOR_CEIL = (sp.floor, sp.ceiling)
_OPS = {">=": sp.Ge, ">": sp.Gt, "<=": sp.Le, "<": sp.Lt, "=": sp.Eq}


def _peel(e, rel: str, b) -> list[tuple] | None:
    """floor(g) rel b (or ceiling) as conditions on g, exactly; None for an empty set. (The compiled chain's
    floor/ceiling take an argument within 1e-9 relative of a whole number as that number, engine/core/codegen.py;
    the sets here are the exact ones, so a numeric bracket of a step can differ from them by about that much.)"""
    g = e.args[0]
    if e.func is sp.floor:
        table = {">=": [(">=", sp.ceiling(b))], ">": [(">=", sp.floor(b) + 1)], "<=": [("<", sp.floor(b) + 1)], "<": [("<", sp.ceiling(b))],
                 "=": [(">=", b), ("<", b + 1)]}
    else:
        table = {">=": [(">", sp.ceiling(b) - 1)], ">": [(">", sp.floor(b))], "<=": [("<=", sp.floor(b))], "<": [("<=", sp.ceiling(b) - 1)],
                 "=": [(">", b - 1), ("<=", b)]}
    if rel == "=" and not b.is_integer:
        return None
    return [(g, r, v) for r, v in table[rel]]


def _exact_region(expr, x, relation: str, bound: float, domain_set) -> list[Piece] | None:
    """The inputs where ``expr relation bound`` holds, as SymPy solves it (None when it cannot)."""
    region = _conjunction([(expr, relation, _exact(bound))], x, domain_set)
    return None if region is None else _pieces(region)


def _conjunction(work: list, x, region):
    """The set where every (expression, relation, bound) of ``work`` holds, within ``region``; None when SymPy cannot say."""
    work = list(work)
    while work:
        e, rel, b = work.pop()
        if x not in e.free_symbols:
            if not bool(_OPS[rel](e, b)):
                return sp.S.EmptySet
            continue
        if e.func in _FLOOR_CEIL:
            peeled = _peel(e, rel, b)
            if peeled is None:
                return sp.S.EmptySet
            work += peeled
            continue
        steps = [a for a in e.atoms(*_FLOOR_CEIL) if x in a.free_symbols]
        if steps:
            return _through_step(e, rel, b, steps, work, x, region)
        s = sp.solveset(_OPS[rel](e, b), x, region)
        if isinstance(s, sp.ConditionSet) or s.has(sp.ImageSet) or isinstance(s, sp.Complement | sp.Intersection):
            return None
        region = s
    return region


def _through_step(e, rel: str, b, steps: list, work: list, x, region):
    """``e rel b`` where the input appears only inside one floor/ceiling A: solved for A as a number u, then
    each interval of u becomes conditions on A itself (peeled in turn); the union over the intervals."""
    outer = [a for a in steps if not any(a != o and a in o.atoms(*_FLOOR_CEIL) for o in steps)]
    if len(outer) != 1:
        return None
    u = sp.Dummy("u", real=True)
    reduced = e.xreplace({outer[0]: u})
    if x in reduced.free_symbols:
        return None
    s = sp.solveset(_OPS[rel](reduced, b), u, sp.S.Reals)
    parts = list(s.args) if isinstance(s, sp.Union) else [] if s is sp.S.EmptySet else [s]
    found = sp.S.EmptySet
    for part in parts:
        if not isinstance(part, sp.Interval):
            return None
        more = list(work)
        if part.start != -sp.oo:
            more.append((outer[0], ">" if part.left_open else ">=", part.start))
        if part.end != sp.oo:
            more.append((outer[0], "<" if part.right_open else "<=", part.end))
        got = _conjunction(more, x, region)
        if got is None:
            return None
        found = sp.Union(found, got)
    return found


def _pieces(region) -> list[Piece] | None:
    if region is sp.S.EmptySet:
        return []
    if isinstance(region, sp.Interval):
        return [(_float(region.start), _float(region.end), not region.left_open, not region.right_open)]
    if isinstance(region, sp.FiniteSet):
        return sorted((_float(v), _float(v), True, True) for v in region.args) if all(v.is_real for v in region.args) else None
    if isinstance(region, sp.Union):
        out = []
        for part in region.args:
            got = _pieces(part)
            if got is None:
                return None
            out += got
        return sorted(out)
    return None


def _float(v) -> float:
    return math.inf if v == sp.oo else -math.inf if v == -sp.oo else float(v)


def _closed_form(expr, x, bound: float) -> list:
    """The solved input at the boundary, with the other leaves as symbols (none through a step of the input)."""
    b = _exact(bound)
    while expr.func in _FLOOR_CEIL and x in expr.free_symbols:
        expr = expr.args[0]  # the boundary of floor(g) >= V is where g reaches ceiling(V): printed for V itself
    if any(x in a.free_symbols for a in expr.atoms(*_FLOOR_CEIL, sp.Max, sp.Min, sp.Piecewise)):
        return []
    found = sp.solve(sp.Eq(expr, b), x, dict=False)
    return [f for f in found if f.is_real is not False and not (x.is_positive and f.is_nonpositive)]


# ---------------------------------------------------------------------- the answer


def _value_and_binding(sol: CalcSolution, domain: Piece) -> None:
    """The one bound end of the feasible set (or its one point) and the condition that binds each end.

    The side an inequality bounds follows from the output's proven direction in the input (an output
    decreasing in the input, held >= V, bounds it from above); without one, an end is bound where it is
    not the domain's own end."""
    if not sol.pieces:
        sol.notes.append(f"no value of {sol.target} in its domain ({sol.domain}) satisfies every condition")
        return
    if len(sol.pieces) > 1:
        sol.notes.append("the conditions hold on several separate intervals")
        return
    lo, hi, _, _ = sol.pieces[0]
    if lo == hi:
        sol.value = lo
        which = _binding(sol, lo, 0) or _binding(sol, lo, 1)
        if which is not None:
            sol.binding["value"] = which.text.strip()
        return
    sides = {_SIDE[(a.condition.relation, a.direction)] for a in sol.answers if (a.condition.relation, a.direction) in _SIDE}
    if not sides:
        sides = {i for i, (end, edge) in enumerate(((lo, domain[0]), (hi, domain[1]))) if end != edge}
    ends = (lo, hi)
    for index in sorted(sides):
        which = _binding(sol, ends[index], index)
        if which is not None and math.isfinite(ends[index]):
            sol.binding["low" if index == 0 else "high"] = which.text.strip()
    if len(sol.binding) == 1:
        sol.value = ends[0] if "low" in sol.binding else ends[1]


_SIDE = {(">=", "increasing"): 0, (">=", "decreasing"): 1, ("<=", "increasing"): 1, ("<=", "decreasing"): 0}


def _binding(sol: CalcSolution, end: float, index: int):
    """The condition whose own set ends nearest ``end`` on that side (rounded ends included)."""
    best, gap = None, math.inf
    for a in sol.answers:
        for p in a.pieces:
            d = abs(p[index] - end)
            if math.isfinite(d) and d < gap and d <= max(1.0 if sol.domain in bracket.INTEGER else 0.0, 1e-9 * max(1.0, abs(end))):
                best, gap = a.condition, d
    return best


def _at_answer(sol: CalcSolution, problem: _Problem, point: dict, given: dict, presets, calc: Calculator, module) -> None:
    """The outputs of the conditions with the input at the answer, and what the calculator says there."""
    if sol.value is None or not math.isfinite(sol.value):
        return
    for c in problem.conditions:
        sol.at_answer[c.output] = problem.function(point, c.output)(sol.value)
    from engine.numeric.calc_run import run

    try:
        result = run(calc, module, {**given, sol.target: sol.value}, presets)
    except AiinfraError as exc:
        sol.warnings.append(f"at {sol.target} = {sol.value:.10g} the calculator refuses: {exc}")
        return
    sol.warnings += result.warnings
