"""Scores of predicted against measured (engine/measure/validate.py ``score``) and the accuracy gate
(engine/measure/gate.py ``regressions``: held-out MAPE more than 5 points worse, or Spearman more than 0.05 lower,
than the committed baseline; a kind that disappears fails), on small hand-made numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.measure import gate
from engine.measure.validate import score, spearman


def test_score_by_hand():
    pred = np.array([1.1, 0.8, 3.0, 2.0])
    meas = np.array([1.0, 1.0, 2.0, 4.0])
    s = score(pred, meas)
    # ratios 1.1, 0.8, 1.5, 0.5; errors 0.1, 0.2, 0.5, 0.5: MAPE (0.1 + 0.2 + 0.5 + 0.5) / 4 = 32.5 %
    assert s["n"] == 4
    assert s["mape"] == pytest.approx(32.5, rel=1e-12)
    # error factors max(r, 1/r): 1.1, 1.25, 1.5, 2.0; median (1.25 + 1.5) / 2 = 1.375
    assert s["median_error_factor"] == pytest.approx(1.375, rel=1e-12)
    # within 15 %: 0.1 only (1 of 4); within 30 %: 0.1, 0.2 (2 of 4); within 50 %: all four (0.5 counts)
    assert (s["within_15"], s["within_30"], s["within_50"]) == (25.0, 50.0, 100.0)
    # ranks: predicted 2, 1, 4, 3; measured (tie) 1.5, 1.5, 3, 4. Pearson of the ranks (both mean 2.5):
    # deviations (-0.5, -1.5, 1.5, 0.5) and (-1, -1, 0.5, 1.5); sum of products 0.5 + 1.5 + 0.75 + 0.75 = 3.5;
    # sums of squares 5 and 4.5: rho = 3.5 / sqrt(22.5) = 0.737865
    assert s["spearman"] == pytest.approx(3.5 / math.sqrt(22.5), rel=1e-12)
    assert s["spearman"] == pytest.approx(0.737865, rel=1e-6)


def test_spearman_of_perfect_and_reversed_orders_and_of_no_order():
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([10.0, 200.0, 3000.0])) == pytest.approx(1.0)
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])) == pytest.approx(-1.0)
    assert spearman(np.array([5.0, 5.0, 5.0]), np.array([1.0, 2.0, 3.0])) is None  # a constant has no rank order


def test_score_of_too_few_rows():
    assert score(np.array([]), np.array([])) == {"n": 0}
    s = score(np.array([2.0, 1.0]), np.array([1.0, 1.0]))
    # two rows: no rank correlation; errors 1.0 and 0: MAPE 50 %, factors 2 and 1, median 1.5
    assert (s["n"], s["mape"], s["median_error_factor"], s["spearman"]) == (2, 50.0, 1.5, None)


def summary(serve_mape=20.0, serve_rho=0.80, tpot_mape=30.0, hbm=True) -> dict:
    out = {"serve": {"held_out": {"n": 100, "mape": serve_mape, "spearman": serve_rho},
                     "in_sample": {"n": 100, "mape": 10.0, "spearman": 0.9},
                     "by_metric": {"tpot": {"held_out": {"n": 40, "mape": tpot_mape, "spearman": 0.7}}}}}
    if hbm:
        out["hbm"] = {"held_out": {"n": 9, "mape": 4.0, "spearman": 0.95}, "in_sample": {"n": 9, "mape": 3.0, "spearman": 0.95}}
    return out


def test_the_gate_passes_an_unchanged_run():
    assert gate.regressions(summary(), summary()) == []


def test_a_planted_regression_trips_the_gate():
    # MAPE 20 -> 26 (+6 points > 5); Spearman 0.80 -> 0.74 (-0.06 < -0.05); the tpot class 30 -> 36
    now = summary(serve_mape=26.0, serve_rho=0.74, tpot_mape=36.0)
    assert gate.regressions(now, summary()) == [
        "serve: held-out MAPE 26.0% against the baseline's 20.0% (more than 5 points worse)",
        "serve: held-out Spearman 0.740 against the baseline's 0.800 (dropped more than 0.05)",
        "serve:tpot: held-out MAPE 36.0% against the baseline's 30.0% (more than 5 points worse)",
    ]


def test_a_change_inside_the_tolerance_passes():
    # MAPE +4 points (20 -> 24), Spearman -0.04 (0.80 -> 0.76): both inside the gate
    assert gate.regressions(summary(serve_mape=24.0, serve_rho=0.76, tpot_mape=34.0), summary()) == []
    # better is never a regression
    assert gate.regressions(summary(serve_mape=5.0, serve_rho=0.99), summary()) == []


def test_a_kind_that_disappears_fails_and_a_new_one_passes():
    assert gate.regressions(summary(hbm=False), summary()) == ["hbm: no longer scored (baseline 9 rows)"]
    assert gate.regressions(summary(), summary(hbm=False)) == []


def test_a_kind_scored_on_no_rows_fails():
    now = summary()
    now["hbm"]["held_out"] = {"n": 0}
    assert gate.regressions(now, summary()) == ["hbm: no longer scored (baseline 9 rows)"]
