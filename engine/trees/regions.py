"""The symbolic half of decision trees: regions, flip boundaries, gap/overlap proofs.

Conditions become disjunctive normal forms of comparison literals. Each literal is moved to
``expr op 0``; after clearing a denominator of known sign the expression is linear in its
terms (plain symbols, or opaque products and functions of them, each treated as one more
variable whose sign comes from the symbols' domains). Such systems are decided exactly by
Fourier-Motzkin elimination over fractions, which also yields a witness point. Abstracting
a product to a free variable only enlarges the space, so "infeasible" stays a proof; a
witness counts only once a real point is built from it and checked exactly. What cannot be
decided this way is sampled (seeded) and reported as sampled.

Produced symbols (``prefill_time``) are free variables over their domains in the proofs
(the branches of a node must partition whatever values reach it); in ``--for VAR --set``
they are expanded through the formula chain the walk uses, so the region is an interval of
VAR for the given inputs. All values are in base units.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp

from engine.core import symbolic
from engine.core.errors import InputError, Problem
from engine.numeric.calculators import condition_function
from engine.trees.walk import Runner, _TreePlan, _WalkState, parse_condition

SAMPLES = 2000
SEED = 0
MAX_DISJUNCTS = 512
MAX_CONSTRAINTS = 4000
NEG = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_REL = {"<": sp.Lt, "<=": sp.Le, ">": sp.Gt, ">=": sp.Ge, "==": sp.Eq, "!=": sp.Ne}


# ---------------------------------------------------------------------- literals and paths


@dataclass(frozen=True)
class Literal:
    atom: object  # engine.core.expr Node of kind cmp
    positive: bool

    @property
    def op(self) -> str:
        return self.atom.value if self.positive else NEG[self.atom.value]

    def text(self) -> str:
        left, right = self.atom.args
        return f"{left.src} {self.op} {right.src}"


def dnf(node, negate: bool = False) -> list[list[Literal]]:
    """A condition tree as a list of conjunctions of literals."""
    kind = node.kind
    if kind == "cmp":
        return [[Literal(node, not negate)]]
    if kind == "not":
        return dnf(node.args[0], not negate)
    parts = [dnf(a, negate) for a in node.args]
    if (kind == "and") != negate:
        return _product(parts)
    return [c for p in parts for c in p]


def _product(parts: list[list[list[Literal]]]) -> list[list[Literal]]:
    out: list[list[Literal]] = [[]]
    for p in parts:
        out = [a + b for a in out for b in p]
        if len(out) > MAX_DISJUNCTS:
            raise _TooBig
    return out


class _TooBig(Exception):
    pass


@dataclass
class Path:
    """One route from the start: categorical answers and (condition, holds?) pairs in order."""

    cats: dict[str, str] = field(default_factory=dict)
    terms: list[tuple[object, bool]] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)

    def extend(self, node: str, cats: dict | None = None, terms: list | None = None) -> Path | None:
        merged = dict(self.cats)
        for k, v in (cats or {}).items():
            if merged.get(k, v) != v:
                return None  # answered differently earlier: this route cannot happen
            merged[k] = v
        return Path(merged, self.terms + list(terms or []), self.nodes + [node])


def routes(runner: Runner, conds: dict) -> dict[str, list[Path]]:
    """Every route from the start to every node and leaf (the node graph is acyclic)."""
    tree = runner.tree
    out: dict[str, list[Path]] = {}
    stack = [(tree.start, Path())]
    while stack:
        key, path = stack.pop()
        out.setdefault(key, []).append(path)
        node = tree.nodes.get(key)
        if node is None or len(path.nodes) > len(tree.nodes):
            continue
        for target, cats, terms in _edges(node, conds):
            nxt = path.extend(key, cats, terms)
            if nxt is not None:
                stack.append((target, nxt))
    return out


def _edges(node, conds):
    if node.kind == "ask":
        return [(t, {node.input: o}, []) for o, t in node.options]
    out = []
    for i, b in enumerate(node.branches):
        terms = [(conds[(node.id, j)], False) for j in range(i)] + [(conds[(node.id, i)], True)]
        out.append((b.to, {}, terms))
    if node.otherwise:
        out.append((node.otherwise, {}, [(conds[(node.id, j)], False) for j in range(len(node.branches))]))
    return out


def literals_of(terms: list[tuple[object, bool]]) -> list[list[Literal]]:
    return _product([dnf(c, not holds) for c, holds in terms])


# ---------------------------------------------------------------------- linear constraints


@dataclass(frozen=True)
class Con:
    """sum(coeffs[v] * v) + const > 0 (strict) or >= 0."""

    coeffs: tuple[tuple[str, Fraction], ...]
    const: Fraction
    strict: bool

    def get(self, v: str) -> Fraction:
        for k, c in self.coeffs:
            if k == v:
                return c
        return Fraction(0)


def _con(coeffs: dict, const: Fraction, strict: bool) -> Con:
    items = tuple(sorted((k, Fraction(c)) for k, c in coeffs.items() if c != 0))
    scale = max((abs(c) for _, c in items), default=Fraction(0)) or max(abs(const), Fraction(1))
    return Con(tuple((k, c / scale) for k, c in items), Fraction(const) / scale, strict)


def _holds(c: Con) -> bool:
    return c.const > 0 or (not c.strict and c.const == 0)


def fourier_motzkin(cons: list[Con], integer: set[str]):
    """('infeasible', None) | ('feasible', {var: Fraction}) | ('unknown', None)."""
    stages = [list(dict.fromkeys(cons))]
    order: list[str] = []
    while True:
        cur = stages[-1]
        variables = sorted({k for c in cur for k, _ in c.coeffs})
        if not variables:
            break
        v = min(variables, key=lambda x: (sum(c.get(x) > 0 for c in cur) * sum(c.get(x) < 0 for c in cur), x))
        pos = [c for c in cur if c.get(v) > 0]
        neg = [c for c in cur if c.get(v) < 0]
        new = [c for c in cur if c.get(v) == 0]
        for p in pos:
            for n in neg:
                a, b = p.get(v), -n.get(v)
                coeffs: dict[str, Fraction] = {}
                for k, c in p.coeffs:
                    coeffs[k] = coeffs.get(k, 0) + c * b
                for k, c in n.coeffs:
                    coeffs[k] = coeffs.get(k, 0) + c * a
                coeffs.pop(v, None)
                new.append(_con(coeffs, p.const * b + n.const * a, p.strict or n.strict))
        new = [c for c in dict.fromkeys(new) if c.coeffs or not _holds(c)]
        if len(new) > MAX_CONSTRAINTS:
            return "unknown", None
        order.append(v)
        stages.append(new)
    if any(not _holds(c) for c in stages[-1]):
        return "infeasible", None
    # a variable whose every constraint also held a one-sided variable vanished with them: any
    # value works for it, since that variable compensates during back-substitution
    point: dict[str, Fraction] = {k: Fraction(1) for c in cons for k, _ in c.coeffs if k not in order}
    for i in range(len(order) - 1, -1, -1):
        v = order[i]
        value = _pick(v, stages[i], point, v in integer)
        if value is None:
            if i == len(order) - 1:
                return "infeasible", None  # the projection on v holds no whole number
            return "unknown", None
        point[v] = value
    return "feasible", point


def _pick(v: str, cons: list[Con], point: dict, integer: bool) -> Fraction | None:
    lo, lo_strict, hi, hi_strict = None, False, None, False
    for c in cons:
        a = c.get(v)
        if a == 0:
            continue
        rest = c.const + sum(coef * point[k] for k, coef in c.coeffs if k != v)
        bound = -rest / a
        if a > 0 and (lo is None or bound > lo or (bound == lo and c.strict)):
            lo, lo_strict = bound, c.strict
        if a < 0 and (hi is None or bound < hi or (bound == hi and c.strict)):
            hi, hi_strict = bound, c.strict
    if integer:
        start = None if lo is None else (math.floor(lo) + 1 if lo_strict or lo != math.floor(lo) else lo)
        if start is None:
            start = Fraction(1) if hi is None else (math.ceil(hi) - 1 if hi_strict or hi != math.ceil(hi) else hi)
        start = Fraction(start)
        ok = (lo is None or start > lo or (start == lo and not lo_strict)) and (hi is None or start < hi or (start == hi and not hi_strict))
        return start if ok else None
    if lo is not None and hi is not None:
        if lo == hi:
            return lo if not (lo_strict or hi_strict) else None
        return lo if not lo_strict else (hi if not hi_strict else (lo + hi) / 2)
    if lo is not None:
        return lo if not lo_strict else lo + max(Fraction(1), abs(lo))
    if hi is not None:
        return hi if not hi_strict else hi - max(Fraction(1), abs(hi))
    return Fraction(1)


# ---------------------------------------------------------------------- the sympy view of a tree


class Algebra:
    """Sympy forms of a tree's atoms, their linear forms, domains and numeric evaluation."""

    def __init__(self, runner: Runner):
        self.runner = runner
        self.symbols = runner.symbols
        self.params = {p.name: _rational(p.value * self.symbols.scale(p.name)) for p in runner.tree.parameters.values()}
        self.table: dict[str, object] = {}
        self.conds: dict[tuple[str, int], object] = {}
        names = self.symbols.names()
        for node in runner.tree.nodes.values():
            for i, b in enumerate(node.branches):
                self.conds[(node.id, i)] = parse_condition(b.when, names)
        self._sym: dict[object, object] = {}
        self._lin: dict[tuple, object] = {}
        self._fns: dict[object, tuple] = {}
        self._terms: dict[str, object] = {}  # key of a linear term -> its sympy expression

    def symbol(self, name: str):
        if name not in self.table:
            info = self.symbols.info(name)
            self.table[name] = sp.Symbol(name, **symbolic.ASSUMPTIONS.get(info["domain"], {"real": True}))
        return self.table[name]

    def diff(self, atom, params: bool = True):
        """lhs - rhs of a comparison, parameters replaced by their values unless ``params`` is False."""
        key = (atom, params)
        if key not in self._sym:
            table = {n: (self.params[n] if params and n in self.params else self.symbol(n)) for n in atom.symbols()}
            left, right = (symbolic.to_sympy(a, table) for a in atom.args)
            self._sym[key] = left - right
        return self._sym[key]

    def linear(self, lit: Literal) -> list[list[Con]] | None:
        """Alternatives (a DNF) of linear constraints for one literal, or None when not linear in its terms."""
        key = (lit.atom, lit.positive)
        if key in self._lin:
            return self._lin[key]
        out = None
        form = self._form(self.diff(lit.atom))
        if form is not None:
            coeffs, const = form
            neg = ({k: -c for k, c in coeffs.items()}, -const)
            op = lit.op
            out = {">": [[_con(coeffs, const, True)]], ">=": [[_con(coeffs, const, False)]],
                   "<": [[_con(*neg, True)]], "<=": [[_con(*neg, False)]],
                   "==": [[_con(coeffs, const, False), _con(*neg, False)]],
                   "!=": [[_con(coeffs, const, True)], [_con(*neg, True)]]}[op]
        self._lin[key] = out
        return out

    def _form(self, expr):
        num, den = sp.fraction(sp.together(expr))
        sign = _sign(den)
        if sign is None:
            return None
        coeffs: dict[str, Fraction] = {}
        const = Fraction(0)
        for term, c in sp.expand(num * sign).as_coefficients_dict().items():
            if not c.is_Rational:
                return None
            if term == 1:
                const += Fraction(int(c.p), int(c.q))
                continue
            if term.has(sp.I, sp.nan, sp.zoo, sp.oo):
                return None
            key = str(term)
            self._terms[key] = term
            coeffs[key] = coeffs.get(key, Fraction(0)) + Fraction(int(c.p), int(c.q))
        return coeffs, const

    def domain_cons(self, variables: set[str]) -> tuple[list[Con], set[str]]:
        cons: list[Con] = []
        integer: set[str] = set()
        for key in sorted(variables):
            term = self._terms[key]
            if isinstance(term, sp.Symbol):
                domain = self.symbols.info(term.name)["domain"]
                cons += _DOMAIN_CONS.get(domain, lambda k: [])(key)
                if domain.endswith("integer"):
                    integer.add(key)
                continue
            if term.is_positive:
                cons.append(_con({key: 1}, Fraction(0), True))
            elif term.is_nonnegative:
                cons.append(_con({key: 1}, Fraction(0), False))
            elif term.is_negative:
                cons.append(_con({key: -1}, Fraction(0), True))
            elif term.is_nonpositive:
                cons.append(_con({key: -1}, Fraction(0), False))
        return cons, integer

    def fn(self, atom):
        if atom not in self._fns:
            used, fn = condition_function(atom.src, self.symbols.names())
            self._fns[atom] = (used, fn)
        return self._fns[atom]

    def holds(self, lit: Literal, point: dict[str, float]) -> bool:
        used, fn = self.fn(lit.atom)
        return bool(fn(*[point[n] if n in point else float(self.params[n]) for n in used])) == lit.positive


_DOMAIN_CONS = {
    "positive": lambda k: [_con({k: 1}, Fraction(0), True)],
    "positive_integer": lambda k: [_con({k: 1}, Fraction(-1), False)],
    "nonnegative": lambda k: [_con({k: 1}, Fraction(0), False)],
    "nonnegative_integer": lambda k: [_con({k: 1}, Fraction(0), False)],
    "fraction": lambda k: [_con({k: 1}, Fraction(0), False), _con({k: -1}, Fraction(1), False)],
    "positive_fraction": lambda k: [_con({k: 1}, Fraction(0), True), _con({k: -1}, Fraction(1), False)],
    "fraction_below_one": lambda k: [_con({k: 1}, Fraction(0), False), _con({k: -1}, Fraction(1), True)],
    "ge_one": lambda k: [_con({k: 1}, Fraction(-1), False)],
    "ge_two_integer": lambda k: [_con({k: 1}, Fraction(-2), False)],
}


def _sign(expr) -> int | None:
    if expr.is_positive:
        return 1
    if expr.is_negative:
        return -1
    return None


def _rational(x: float):
    return sp.Rational(repr(float(x)))


# ---------------------------------------------------------------------- deciding a formula


@dataclass
class Verdict:
    found: bool
    method: str  # "exact" | "sampled" | "unknown"
    point: dict[str, float] | None = None


def decide(alg: Algebra, conjunctions: list[list[Literal]], rng_seed: int = SEED) -> Verdict:
    """Is some point in one of the conjunctions? Exact where linear in its terms, else sampled."""
    unknown = []
    for conj in conjunctions:
        result = _decide_linear(alg, conj)
        if result is None:
            unknown.append(conj)
        elif result is not False:
            return Verdict(True, "exact", result)
    if not unknown:
        return Verdict(False, "exact")
    point = _sample(alg, unknown, rng_seed)
    return Verdict(point is not None, "sampled", point)


def _decide_linear(alg: Algebra, conj: list[Literal]):
    """False (infeasible, proven), a point (exact witness), or None (undecided)."""
    options = []
    for lit in conj:
        lin = alg.linear(lit)
        if lin is None:
            return None
        options.append(lin)
    try:
        alternatives = _product(options)
    except _TooBig:
        return None
    undecided = False
    for cons in alternatives:
        variables = {k for c in cons for k, _ in c.coeffs}
        dom, integer = alg.domain_cons(variables)
        status, point = fourier_motzkin(cons + dom, integer)
        if status == "infeasible":
            continue
        if status == "unknown":
            undecided = True
            continue
        real = _realise(alg, point, conj)
        if real is not None:
            return real
        undecided = True
    return None if undecided else False


def _realise(alg: Algebra, point: dict[str, Fraction], conj: list[Literal]) -> dict[str, float] | None:
    """A point in the symbols for a witness over terms, checked exactly; None if none is found."""
    values: dict[str, Fraction] = {}
    opaque = []
    for key, v in point.items():
        term = alg._terms[key]
        if isinstance(term, sp.Symbol):
            values[term.name] = v
        else:
            opaque.append((term, v))
    for term, v in opaque:  # one free symbol of each product solves the product's value
        free = sorted((s for s in term.free_symbols if s.name not in values), key=lambda s: s.name)
        if not free:
            return None
        for s in free[1:]:
            values[s.name] = Fraction(1) if alg.symbols.info(s.name)["domain"] not in ("fraction",) else Fraction(1, 2)
        try:
            sols = sp.solve(sp.Eq(term.subs({alg.symbol(n): sp.Rational(x.numerator, x.denominator) for n, x in values.items()}), sp.Rational(v.numerator, v.denominator)), free[0])
        except (NotImplementedError, ValueError, TypeError):
            return None
        real = [s for s in sols if s.is_real and (s.is_positive or not alg.symbol(free[0].name).is_positive)]
        if not real or not real[0].is_Rational:
            return None
        values[free[0].name] = Fraction(int(real[0].p), int(real[0].q))
    subs = {alg.symbol(n): sp.Rational(x.numerator, x.denominator) for n, x in values.items()}
    for lit in conj:
        rel = _REL[lit.op](alg.diff(lit.atom).subs(subs), 0)
        if rel is not sp.true:
            return None
    for n, x in values.items():
        if alg.symbols.info(n)["domain"].endswith("integer") and x.denominator != 1:
            return None
    return {n: float(x) for n, x in values.items()}


def _sample(alg: Algebra, conjunctions: list[list[Literal]], seed: int) -> dict[str, float] | None:
    names = sorted({n for conj in conjunctions for lit in conj for n in lit.atom.symbols() if n not in alg.params})
    hints = {n: _hints(alg, n, conjunctions) for n in names}
    rng = random.Random(seed)
    for _ in range(SAMPLES):
        point = {n: _draw(rng, alg.symbols.info(n)["domain"], hints[n]) for n in names}
        for conj in conjunctions:
            try:
                if all(alg.holds(lit, point) for lit in conj):
                    return point
            except (ZeroDivisionError, ValueError, OverflowError, TypeError):
                break
    return None


def _hints(alg: Algebra, name: str, conjunctions) -> list[float]:
    info = alg.symbols.info(name)
    hints = []
    default = info.get("default")
    if default is not None and not isinstance(default, str):
        try:
            hints.append(float(default[0] if isinstance(default, list) else default) * alg.symbols.scale(name))
        except (TypeError, ValueError):
            pass
    for conj in conjunctions:
        for lit in conj:
            if name in lit.atom.symbols():
                hints += [abs(float(alg.params[n])) for n in lit.atom.symbols() if n in alg.params]
    return [h for h in hints if h > 0] or [1.0]


def _draw(rng: random.Random, domain: str, hints: list[float]) -> float:
    if domain in ("fraction", "positive_fraction", "fraction_below_one"):
        x = rng.choice([0.0, 1.0, 0.5, rng.random()]) if rng.random() < 0.2 else rng.random()
        return x if (domain == "fraction" or x > 0) and (domain != "fraction_below_one" or x < 1) else 0.5
    h = rng.choice(hints)
    if rng.random() < 0.2:
        x = rng.choice([h, h * (1 + 1e-9), h * (1 - 1e-9), 0.0, 1.0])
    else:
        x = h * 10 ** rng.uniform(-3, 3)
    if domain == "real" and rng.random() < 0.3:
        x = -x
    if domain.endswith("integer"):
        x = float(round(x))
    if domain.startswith("positive") and x <= 0:
        x = 1.0
    if domain.startswith("nonnegative") and x < 0:
        x = 0.0
    return x


# ---------------------------------------------------------------------- proofs over one tree


@dataclass
class Proofs:
    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    proofs: list[dict] = field(default_factory=list)
    regions: dict[str, list[str]] = field(default_factory=dict)


def prove(runner: Runner) -> Proofs:
    """Gap and overlap at every test node, unreachable leaves, and each leaf's region."""
    tree = runner.tree
    alg = Algebra(runner)
    paths = routes(runner, alg.conds)
    out = Proofs()
    for node in tree.nodes.values():
        if node.kind != "test" or node.id not in paths:
            continue
        _prove_node(alg, node, paths[node.id], out)
    for leaf in tree.leaves.values():
        texts, verdict = _region(alg, paths.get(leaf.id, []))
        out.regions[leaf.id] = texts
        where = (tree.where("leaves", leaf.id), tree.id, f"leaves.{leaf.id}")
        if leaf.id not in paths or texts:
            continue
        if verdict == "exact":
            out.problems.append(Problem(*where, "unreachable: the conditions on every path to it contradict each other (exact)"))
        else:
            out.notes.append(Problem(*where, f"possibly unreachable: no path to it is feasible in {SAMPLES} sampled points (seed {SEED}); not proven"))
    return out


def _prove_node(alg: Algebra, node, paths: list[Path], out: Proofs) -> None:
    tree = alg.runner.tree
    where = (tree.where("nodes", node.id), tree.id, f"nodes.{node.id}")
    n = len(node.branches)
    checks = []
    if not node.otherwise:
        checks.append(("gap", [(alg.conds[(node.id, j)], False) for j in range(n)], None))
    for i in range(n):
        for j in range(i + 1, n):
            checks.append(("overlap", [(alg.conds[(node.id, i)], True), (alg.conds[(node.id, j)], True)], (i, j)))
    for what, terms, pair in checks:
        try:
            conjunctions = [c for p in paths for c in literals_of(p.terms + terms)]
        except _TooBig:
            out.notes.append(Problem(*where, f"not checked for {what}: the conditions expand to more than {MAX_DISJUNCTS} cases"))
            continue
        verdict = decide(alg, conjunctions)
        out.proofs.append({"node": node.id, "check": what, "method": verdict.method, "found": verdict.found, "point": verdict.point})
        if verdict.found:
            shown = _point_text(alg, verdict.point)
            how = "exact witness" if verdict.method == "exact" else f"sampled counterexample, seed {SEED}"
            if what == "gap":
                out.problems.append(Problem(*where, f"gap: no branch holds at {shown} ({how})"))
            else:
                out.problems.append(Problem(*where, f"overlap: branches[{pair[0]}] and branches[{pair[1]}] both hold at {shown} ({how})"))
        elif verdict.method == "sampled":
            out.notes.append(Problem(*where, f"{what} not proven: none in {SAMPLES} sampled points (seed {SEED}); the conditions are not linear in their terms"))


def _point_text(alg: Algebra, point: dict[str, float]) -> str:
    from engine.core.humanize import number

    parts = []
    for n in sorted(point):
        unit = alg.symbols.info(n)["unit"]
        value = point[n] / alg.symbols.scale(n)
        parts.append(f"{n}={number(value, 6)}" + (f" {unit}" if unit not in ("", "1") else ""))
    return ", ".join(parts) if parts else "every point"


def _region(alg: Algebra, paths: list[Path]) -> tuple[list[str], str]:
    """Simplified conjunctions (one per feasible route and case) and how infeasibility was decided."""
    texts: list[str] = []
    method = "exact"
    for path in paths:
        try:
            conjunctions = literals_of(path.terms)
        except _TooBig:
            texts.append(" and ".join(f"{'' if h else 'not '}({c.src})" for c, h in path.terms))
            continue
        cats = [f"{k} = {v}" for k, v in path.cats.items()]
        for conj in conjunctions:
            result = _decide_linear(alg, conj)
            if result is False:
                continue
            if result is None:
                if _sample(alg, [conj], SEED) is None:
                    method = "sampled"
                    continue
            kept = _simplify(alg, conj)
            text = " and ".join(cats + [lit.text() for lit in kept]) or "always"
            if text not in texts:
                texts.append(text)
    return texts, method


def _simplify(alg: Algebra, conj: list[Literal]) -> list[Literal]:
    """Drop duplicate literals and those the others imply (decided exactly; others kept)."""
    kept: list[Literal] = []
    for lit in conj:
        if lit.text() not in [k.text() for k in kept]:
            kept.append(lit)
    i = 0
    while i < len(kept):
        others = kept[:i] + kept[i + 1:]
        negated = Literal(kept[i].atom, not kept[i].positive)
        if _decide_linear(alg, others + [negated]) is False:
            kept = others
            continue
        i += 1
    return kept


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


def intervals(runner: Runner, var: str, given: dict[str, object]) -> tuple[Interval, Algebra]:
    """Per leaf, the set of VAR that leads to it when every other input has a value.

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
    plan = _TreePlan(runner.calc, runner.graph, formula_given, None, symbols)
    local = _WalkState(runner, {k: v for k, v in given.items() if symbols.info(k)["kind"] != "formula"}, None)
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


def boundaries(runner: Runner, var: str, given: dict[str, object]) -> tuple[Interval, list[Flip]]:
    """Values of VAR where the leaf changes, each with the closed form it comes from."""
    iv, alg = intervals(runner, var, given)
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


