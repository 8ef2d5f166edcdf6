"""``engine.plan.front``: the knee of a Pareto front and the points spread along it, on fronts built by hand.

Each front is ordered as plan serve orders it (tokens/s per user falling, per GPU rising); the expected
indices are worked out in the scaled axes (each axis over the front's own range) in the comments.
"""

from __future__ import annotations

from engine.plan.front import knee, spread


def _front(points):
    return [{"user_tokens_per_s": u, "tokens_per_s_per_gpu": g} for u, g in points]


def test_knee_is_the_point_nearest_the_ideal_corner():
    # axes 0..10 both, so scaled = value / 10: (1, 0), (0.9, 0.8), (0.5, 0.9), (0, 1);
    # squared distance to (1, 1): 1, 0.01 + 0.04 = 0.05, 0.25 + 0.01 = 0.26, 1 -> the second point
    assert knee(_front([(10, 0), (9, 8), (5, 9), (0, 10)])) == 1


def test_knee_of_a_straight_front_is_its_middle():
    # (100 - 10 j, 10 j), j = 0..10: scaled (1 - j/10, j/10); distance^2 (j/10)^2 + (1 - j/10)^2, least at j = 5
    assert knee(_front([(100 - 10 * j, 10 * j) for j in range(11)])) == 5


def test_knee_of_nothing_is_none():
    assert knee([]) is None


def test_spread_is_even_by_length_with_the_ends_and_the_knee():
    # 11 points a tenth of the scaled length apart; 6 points at 0, 1/5, ..., 1 of the length are j = 0, 2, 4, 6, 8, 10;
    # the knee (j = 5) is added
    assert spread(_front([(100 - 10 * j, 10 * j) for j in range(11)]), count=6) == [0, 2, 4, 5, 6, 8, 10]


def test_spread_follows_length_not_rank():
    # scaled x = 1 - u/100: points at 0, 0.01, ..., 0.08 (nine close together), then 0.5 and 1 on the line x + y = 1,
    # so lengths along it are proportional to x: 0..0.08, 0.5, 1. Three points at 0, 1/2, 1 of the length: j = 0,
    # the one at 0.5 (j = 9) and the end (j = 10); the knee (nearest (1, 1): x = 0.5, j = 9) is among them
    xs = [j / 100 for j in range(9)] + [0.5, 1.0]
    assert spread(_front([(100 * (1 - x), 100 * x) for x in xs]), count=3) == [0, 9, 10]


def test_a_short_front_is_shown_whole():
    front = _front([(10, 0), (9, 8), (5, 9), (0, 10)])
    assert spread(front, count=4) == [0, 1, 2, 3] and spread(front) == [0, 1, 2, 3]
