"""Numeric fallback of ``formula solve``: brackets found by sampling the domain, then bisection.

Used when SymPy has no closed form (ceiling, floor, Max, transcendental mixes). ``fn`` is the
formula with every other input set, minus the bound, as a plain float function of the target.
Samples cover the symbol's domain (four per decade from 1e-12 to 1e30 for an unbounded one,
201 evenly spaced for a fraction); each change of the tested property between neighbours is
narrowed by bisection. A fixed step count and a deadline keep the answer within seconds; a
crossing between two neighbouring samples that changes back again is not seen.
"""

from __future__ import annotations

import math
import time

DEADLINE_S = 3.0
STEPS = 200
FRACTIONS = {"fraction": (True, True), "positive_fraction": (False, True), "fraction_below_one": (True, False)}
LOWER = {"nonnegative": 0.0, "nonnegative_integer": 0.0, "positive": 0.0, "positive_integer": 0.0, "ge_one": 1.0, "ge_two_integer": 2.0}
CLOSED_LOWER = {"nonnegative", "nonnegative_integer", "ge_one", "ge_two_integer"}
NOTE = ("numeric: SymPy has no closed form, so the {what} was found by bisection between samples of the domain "
        "(4 per decade up to 1e30); a crossing between two neighbouring samples that turns back is not seen")


def samples(domain: str) -> list[float]:
    if domain in FRACTIONS:
        lo_in, hi_in = FRACTIONS[domain]
        return [i / 200 for i in range(201) if (i > 0 or lo_in) and (i < 200 or hi_in)]
    ups = [10.0 ** (k / 4) for k in range(-48, 121)]
    if domain in LOWER:
        lo = LOWER[domain]
        return ([lo] if domain in CLOSED_LOWER else []) + [lo + u for u in ups]
    return [-u for u in reversed(ups)] + [0.0] + ups


def value(fn, x: float) -> float | None:
    try:
        v = float(fn(x))
    except (ArithmeticError, ValueError, TypeError, OverflowError):
        return None
    return v if math.isfinite(v) else None


def _narrow(fn, a: float, b: float, test, deadline: float) -> tuple[float, float]:
    """``test`` differs at a and b: halve [a, b] keeping that, until the float step or the deadline."""
    ta = test(value(fn, a))
    for _ in range(STEPS):
        mid = (a + b) / 2
        if mid in (a, b) or time.monotonic() > deadline:
            break
        if test(value(fn, mid)) == ta:
            a = mid
        else:
            b = mid
    return a, b


def boundaries(fn, domain: str, test) -> tuple[list[tuple[float, bool]], list[float]]:
    """The samples with ``test`` of each, and every point where ``test`` changes (narrowed)."""
    deadline = time.monotonic() + DEADLINE_S
    pts = [(x, test(value(fn, x))) for x in samples(domain)]
    edges = []
    for (a, ta), (b, tb) in zip(pts, pts[1:], strict=False):
        if ta != tb:
            lo, hi = _narrow(fn, a, b, test, deadline)
            edges.append((lo, hi))
    return pts, edges


def roots(fn, domain: str, tolerance: float) -> tuple[list[float], list[float]]:
    """Values where fn is 0 (within ``tolerance``), and points where fn steps over 0 without reaching it."""
    _, edges = boundaries(fn, domain, lambda v: v is not None and v > 0)
    found, jumps = [], []
    for lo, hi in edges:
        best = min((lo, hi), key=lambda x: _size(value(fn, x)))
        (found if _size(value(fn, best)) <= tolerance else jumps).append(best)
    return found, jumps


def _size(v: float | None) -> float:
    return math.inf if v is None else abs(v)


def region(fn, domain: str, test) -> str:
    """Where ``test(fn(x))`` holds, as intervals (boundaries to about 1e-12 relative)."""
    pts, edges = boundaries(fn, domain, test)
    cuts = [(lo + hi) / 2 for lo, hi in edges]
    lo_text = _lower_text(domain)
    hi_text = "1]" if domain in ("fraction", "positive_fraction") else "1)" if domain == "fraction_below_one" else "inf)"
    marks = [lo_text] + [f"{c:.6g}" for c in cuts] + [hi_text]
    state, pieces = pts[0][1], []
    for i in range(len(marks) - 1):
        if state:
            left = marks[i] if i == 0 else f"[{marks[i]}"
            right = marks[i + 1] if i + 1 == len(marks) - 1 else f"{marks[i + 1]}]"
            pieces.append(f"{left}, {right}")
        state = not state
    return " ∪ ".join(pieces) if pieces else "empty"


def _lower_text(domain: str) -> str:
    if domain in FRACTIONS:
        return "[0" if FRACTIONS[domain][0] else "(0"
    if domain in LOWER:
        return ("[" if domain in CLOSED_LOWER else "(") + f"{LOWER[domain]:g}"
    return "(-inf"
