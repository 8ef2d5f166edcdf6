"""Comparison literals, disjunctive normal forms, root-to-leaf paths, and linear constraints
decided exactly by Fourier-Motzkin elimination over fractions (with a witness point)."""

from __future__ import annotations

import math
from fractions import Fraction

import sympy as sp

from engine.core.record import dataclass, field
from engine.trees.runner import Runner

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
