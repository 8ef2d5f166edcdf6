"""A Pareto front of ``plan serve`` for a person: its knee and a few points spread along it.

The front is ordered by tokens/s per user, falling, so tokens/s per GPU rises along it. Both
axes are scaled to the front's own range, so its first point sits at (1, 0), its last at (0, 1),
and the ideal corner no layout reaches (fastest per user and most per GPU at once) at (1, 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

USER, PER_GPU = "user_tokens_per_s", "tokens_per_s_per_gpu"
SHOWN = 10  # points of the front printed by default (its ends among them), the knee besides


def _scaled(front: Sequence[dict]) -> list[tuple[float, float]]:
    def axis(key: str) -> list[float]:
        values = [float(r[key]) for r in front]
        lo, hi = min(values), max(values)
        return [(v - lo) / (hi - lo) if hi > lo else 0.0 for v in values]

    return list(zip(axis(USER), axis(PER_GPU), strict=True))


def knee(front: Sequence[dict]) -> int | None:
    """Index of the front's knee: the point closest to the ideal corner (1, 1) in the scaled axes, the
    compromise that gives up least of either (ties: the first, the faster per user). None for an empty front."""
    if not front:
        return None
    points = _scaled(front)
    return min(range(len(points)), key=lambda i: (1 - points[i][0]) ** 2 + (1 - points[i][1]) ** 2)


def spread(front: Sequence[dict], count: int = SHOWN) -> list[int]:
    """Indices of about ``count`` points spread evenly by length along the front (scaled axes), both ends
    included, and the knee; every index where the front has no more than ``count`` points."""
    n = len(front)
    if n <= count:
        return list(range(n))
    points = _scaled(front)
    along = [0.0]
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        along.append(along[-1] + math.hypot(x1 - x0, y1 - y0))
    total = along[-1]
    picked = {min(range(n), key=lambda j: abs(along[j] - total * i / (count - 1))) for i in range(count)}
    picked.add(knee(front))
    return sorted(picked)
