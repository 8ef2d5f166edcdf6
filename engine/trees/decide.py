"""Deciding a DNF over a tree's algebra (exact, else seeded sampling) and the proofs over one tree:
gaps and overlaps at every test node, and each leaf's simplified region."""

from __future__ import annotations

import random
from fractions import Fraction

import sympy as sp

from engine.core.errors import Problem
from engine.core.record import dataclass, field
from engine.trees.algebra import Algebra
from engine.trees.literals import (
    _REL,
    MAX_DISJUNCTS,
    SAMPLES,
    SEED,
    Literal,
    Path,
    _product,
    _TooBig,
    fourier_motzkin,
    literals_of,
    routes,
)
from engine.trees.runner import Runner

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


def _decide_linear(alg: Algebra, conj: list[Literal], witness: bool = True):
    """False (infeasible, proven), a point (exact witness), or None (undecided). Without
    ``witness`` a feasible alternative answers None at once instead of being realised as a
    point: for callers that only ask "is it proven infeasible?" (the answer is the same)."""
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
        if status == "unknown" or not witness:
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
        if _decide_linear(alg, others + [negated], witness=False) is False:
            kept = others
            continue
        i += 1
    return kept
