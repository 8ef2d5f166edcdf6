"""The accuracy gate: today's held-out summary against the committed baseline.

A kind (or a serving metric class) fails when its held-out MAPE worsens by more than ``MAPE_POINTS``
percentage points or its Spearman rank correlation drops by more than ``RHO_DROP`` (aiconfigurator's
prediction-regression gate is the model). New kinds pass; a kind that disappears fails.
"""

from __future__ import annotations

from engine.measure.fitted import CALIBRATION  # noqa: F401 - where --write-baseline writes the constants

MAPE_POINTS = 5.0
RHO_DROP = 0.05
BASELINE = "knowledge/calibration/validate-baseline.json"


def calibration_record(result) -> dict:
    """Each kind's fitted constants (on every family) with the families and row count they were fitted on, the
    fit's in-sample residual, its held-out error band and the date, for the commands that print a time."""
    import datetime

    out = {}
    for kind, params in result.calibration.items():
        s = result.summary.get(kind, {})
        out[kind] = {"parameters": params, "fitted_on": result.sources.get(kind, []), "rows": s.get("in_sample", {}).get("n"),
                     "in_sample_mape": s.get("in_sample", {}).get("mape"), "held_out_mape": s.get("held_out", {}).get("mape"),
                     "held_out_within_30": s.get("held_out", {}).get("within_30"),
                     "held_out_median_error_factor": s.get("held_out", {}).get("median_error_factor"),
                     "method": "scipy.optimize.least_squares on log(predicted / measured), soft-L1, per device generation (fabric for collectives) "
                               "pulled toward the shared value; held out: leave one publisher family out",
                     "date": datetime.date.today().isoformat()}
    return out


def flatten(summary: dict) -> dict[str, dict]:
    out = {}
    for kind, s in summary.items():
        for split in ("held_out", "held_out_family"):
            tag = "" if split == "held_out" else " (by family)"
            if split in s:
                out[f"{kind}{tag}"] = s[split]
            for metric, by in s.get("by_metric", {}).items():
                if split in by:
                    out[f"{kind}:{metric}{tag}"] = by[split]
    return out


def regressions(current: dict, baseline: dict) -> list[str]:
    """One line per regression of ``current`` (a validate summary) against ``baseline`` (the same shape)."""
    now, before = flatten(current), flatten(baseline)
    out = []
    for key, old in sorted(before.items()):
        new = now.get(key)
        if new is None or not new.get("n"):
            out.append(f"{key}: no longer scored (baseline {old.get('n', 0)} rows)")
            continue
        if old.get("mape") is not None and new["mape"] > old["mape"] + MAPE_POINTS:
            out.append(f"{key}: held-out MAPE {new['mape']:.1f}% against the baseline's {old['mape']:.1f}% (more than {MAPE_POINTS:g} points worse)")
        if old.get("spearman") is not None and new.get("spearman") is not None and new["spearman"] < old["spearman"] - RHO_DROP:
            out.append(f"{key}: held-out Spearman {new['spearman']:.3f} against the baseline's {old['spearman']:.3f} (dropped more than {RHO_DROP:g})")
    return out


def read(root) -> dict | None:
    import json
    from pathlib import Path

    path = Path(root) / BASELINE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
