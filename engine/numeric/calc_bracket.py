"""The numeric side of ``calc --solve``: where a condition on an output holds, from the compiled chain.

Used where SymPy finds no closed form (a floor of a ceiling, Max, a transcendental mix) and to
check the closed forms. ``fn`` is the calculator's compiled chain as a float function of the
solved input (None where the chain has no value). The domain is sampled as ``formula solve``
samples it (engine.numeric.solve_numeric: 4 per decade from 1e-12 to 1e30, or 201 points of a
fraction); each neighbouring pair whose answer differs is narrowed with SciPy's ``brentq`` on
``fn - V`` where both ends have a value of opposite sign, else by bisection of the test itself
(a step that jumps over V). A crossing that turns back between two neighbouring samples is not
seen: an output monotone in the input (the directions the engine proves) has at most one.

A set of inputs is a list of pieces ``(low, high, low_closed, high_closed)``; a point is a piece
with ``low == high``. No SymPy here.
"""

from __future__ import annotations

import math

from engine.numeric import solve_numeric

Piece = tuple[float, float, bool, bool]

TOLERANCE = 1e-12  # |fn - V| <= TOLERANCE * max(1, |V|) counts as equal
NOTE = ("numeric: no closed form, so the boundary was bracketed between samples of the domain (4 per decade from 1e-12 "
        "to 1e30, or 201 points of a fraction) and narrowed with SciPy's brentq on the compiled chain")

INTEGER = ("positive_integer", "nonnegative_integer", "ge_two_integer")
_UPPER = {"fraction": (1.0, True), "positive_fraction": (1.0, True), "fraction_below_one": (1.0, False)}


def domain_piece(domain: str) -> Piece:
    """The whole domain as one piece (``real`` is the whole line)."""
    if domain in solve_numeric.FRACTIONS:
        lo_in, _ = solve_numeric.FRACTIONS[domain]
        return (0.0, 1.0, lo_in, _UPPER[domain][1])
    if domain in solve_numeric.LOWER:
        return (solve_numeric.LOWER[domain], math.inf, domain in solve_numeric.CLOSED_LOWER, False)
    return (-math.inf, math.inf, False, False)


def holds(value: float | None, relation: str, bound: float) -> bool:
    if value is None:
        return False
    if relation == ">=":
        return value >= bound
    if relation == "<=":
        return value <= bound
    return abs(value - bound) <= TOLERANCE * max(1.0, abs(bound))


def region(fn, domain: str, relation: str, bound: float) -> tuple[list[Piece], list[tuple[float, float]], list[str]]:
    """Where ``fn(x) relation bound`` holds over ``domain``: (pieces, the sample brackets each boundary was
    found in, notes). ``relation`` is ``>=``, ``<=`` or ``=``."""
    xs = solve_numeric.samples(domain)
    gs = [_value(fn, x, bound) for x in xs]
    if relation == "=":
        return _equal(fn, domain, xs, gs, bound)
    states = [holds(None if g is None else g + bound, relation, bound) for g in gs]
    edges, brackets = [], []
    for i in range(len(xs) - 1):
        if states[i] != states[i + 1]:
            edges.append(_edge(fn, xs[i], xs[i + 1], gs[i], gs[i + 1], relation, bound))
            brackets.append((xs[i], xs[i + 1]))
    return _pieces(domain, states[0], edges), brackets, []


def _value(fn, x: float, bound: float) -> float | None:
    v = solve_numeric.value(fn, x)
    return None if v is None else v - bound


def _edge(fn, a: float, b: float, ga, gb, relation: str, bound: float) -> tuple[float, bool]:
    """The boundary between a and b, and whether the condition holds there."""
    test = lambda v: holds(solve_numeric.value(fn, v), relation, bound)  # noqa: E731
    r = None
    if ga is not None and gb is not None and ga * gb < 0:
        r = _brentq(lambda v: solve_numeric.value(fn, v) - bound, a, b)
        if r is not None and not _flips(test, r, a, b):
            r = None  # brentq stopped inside a plateau of a step function: the test's own edge is elsewhere
    if r is None:  # a step onto or over V, or an end without a value: bisect the test itself
        lo, hi = solve_numeric._narrow(lambda v: v, a, b, test, math.inf)
        r = (lo + hi) / 2
    g = _value(fn, r, bound)
    at = g is not None and (abs(g) <= TOLERANCE * max(1.0, abs(bound)) or holds(g + bound, relation, bound))
    return r, at


def _flips(test, r: float, a: float, b: float) -> bool:
    """Whether the test differs just below and just above r (within 1e-9 of the bracket's width)."""
    step = 1e-9 * (b - a)
    return test(max(a, r - step)) != test(min(b, r + step))


def _brentq(g, a: float, b: float) -> float | None:
    from scipy.optimize import brentq

    try:
        return float(brentq(g, a, b, xtol=1e-300, rtol=4 * 2.220446049250313e-16, maxiter=400))
    except (RuntimeError, ValueError, TypeError, ArithmeticError):
        return None


def _pieces(domain: str, first: bool, edges: list[tuple[float, bool]]) -> list[Piece]:
    lo, hi, lo_in, hi_in = domain_piece(domain)
    out: list[Piece] = []
    state, start, start_in = first, lo, lo_in
    for r, at in edges:
        if state:
            out.append((start, r, start_in, at))
        state, start, start_in = not state, r, at
    if state:
        out.append((start, hi, start_in, hi_in))
    return out


def _equal(fn, domain: str, xs, gs, bound: float) -> tuple[list[Piece], list[tuple[float, float]], list[str]]:
    """Where fn = V: the plateaus a step function holds at V (>= and <= both hold over an interval), and the
    crossings of a continuous one (brentq between samples of opposite sign)."""
    above, b1, _ = region(fn, domain, ">=", bound)
    below, b2, _ = region(fn, domain, "<=", bound)
    plateaus = [p for p in intersect(above, below) if p[0] < p[1]]
    points, brackets, notes = _roots(fn, xs, gs, bound)
    points = [p for p in points if not any(lo <= p[0] <= hi for lo, hi, _, _ in plateaus)]
    return sorted(plateaus + points), sorted(set(b1 + b2)) if plateaus else brackets, notes


def _roots(fn, xs, gs, bound: float) -> tuple[list[Piece], list[tuple[float, float]], list[str]]:
    tol = TOLERANCE * max(1.0, abs(bound))
    found, brackets, notes = [], [], []
    for i, (x, g) in enumerate(zip(xs, gs, strict=True)):
        if g is not None and abs(g) <= tol:
            found.append(x)
            continue
        if i + 1 < len(xs) and g is not None and gs[i + 1] is not None and g * gs[i + 1] < 0:
            r = _brentq(lambda v: solve_numeric.value(fn, v) - bound, x, xs[i + 1])
            got = None if r is None else _value(fn, r, bound)
            if got is not None and abs(got) <= max(tol, 1e-9 * max(1.0, abs(bound))):
                found.append(r)
                brackets.append((x, xs[i + 1]))
            elif r is not None:
                notes.append(f"numeric: the output steps over {bound:g} near {r:.10g} without equalling it")
    found = sorted(set(found))
    return [(r, r, True, True) for r in found], brackets, notes


# ---------------------------------------------------------------------- sets of pieces


def intersect(a: list[Piece], b: list[Piece]) -> list[Piece]:
    out = []
    for lo1, hi1, li1, hi_in1 in a:
        for lo2, hi2, li2, hi_in2 in b:
            lo, li = (lo1, li1) if lo1 > lo2 else (lo2, li2) if lo2 > lo1 else (lo1, li1 and li2)
            hi, hin = (hi1, hi_in1) if hi1 < hi2 else (hi2, hi_in2) if hi2 < hi1 else (hi1, hi_in1 and hi_in2)
            if lo < hi or (lo == hi and li and hin):
                out.append((lo, hi, li, hin))
    return sorted(out)


def hull(sets: list[list[Piece]]) -> list[Piece]:
    """The smallest single piece holding every piece of ``sets`` (empty when all are)."""
    pieces = [p for s in sets for p in s]
    if not pieces:
        return []
    lo = min(p[0] for p in pieces)
    hi = max(p[1] for p in pieces)
    return [(lo, hi, any(p[2] for p in pieces if p[0] == lo), any(p[3] for p in pieces if p[1] == hi))]


def whole_numbers(pieces: list[Piece], check=None) -> list[Piece]:
    """Each piece shrunk to the whole numbers inside it (the safe direction: inward). ``check(n)`` says
    whether n satisfies the conditions; an end that fails it by a rounding hair moves one more step in."""
    out = []
    for lo, hi, li, hin in pieces:
        a = lo if math.isinf(lo) else (math.ceil(lo) if not (li is False and float(lo).is_integer()) else lo + 1)
        b = hi if math.isinf(hi) else (math.floor(hi) if not (hin is False and float(hi).is_integer()) else hi - 1)
        if check is not None:
            for _ in range(2):
                if not math.isinf(a) and a <= b and not check(a):
                    a += 1
                if not math.isinf(b) and a <= b and not check(b):
                    b -= 1
        if a <= b:
            out.append((float(a), float(b), not math.isinf(a), not math.isinf(b)))
    return out


def text(pieces: list[Piece]) -> str:
    if not pieces:
        return "empty"
    parts = []
    for lo, hi, li, hin in pieces:
        if lo == hi:
            parts.append(f"{{{lo:.10g}}}")
        else:
            parts.append(f"{'[' if li else '('}{_end(lo)}, {_end(hi)}{']' if hin else ')'}")
    return " ∪ ".join(parts)


def _end(v: float) -> str:
    return "inf" if v == math.inf else "-inf" if v == -math.inf else f"{v:.10g}"


def to_json(pieces: list[Piece]) -> list[dict]:
    """Pieces as JSON objects; an infinite end is null."""
    end = lambda v: None if math.isinf(v) else v  # noqa: E731
    return [{"low": end(lo), "high": end(hi), "low_closed": li, "high_closed": hin} for lo, hi, li, hin in pieces]
