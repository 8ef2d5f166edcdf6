"""Calibrated times for one stated layout, as ``aiinfra validate`` scores them, for the planners' output.

The constants come from ``knowledge/calibration/fitted.json`` (written by ``aiinfra validate --write-baseline``:
fitted on every measurement table) for the device's generation; a generation with no measurement takes the
shared value, and says so. Each prediction carries the held-out error band of its kind (the share of held-out
rows within +-30 % and their median error factor), so a user sees how far to trust it.
"""

from __future__ import annotations

import numpy as np

from engine.measure.calibrate import KINDS, values_for
from engine.measure.fitted import calibration
from engine.measure.generations import Unmapped, generation


def _row(kind: str, model: str | None, device: str, gpus: int, layout: dict, workload: dict, precision: dict, engine: str | None):
    from engine.domain.measurements import Measurement

    metric = {"serve": "ttft", "train": "step_time"}[kind]
    return Measurement(id="stated", source="stated", family="stated", place="", kind=kind, model=model, device=device, gpus=gpus, layout=layout,
                       precision=precision, workload=workload, engine=engine, engine_version=None, metric=metric, statistic="mean", value=1.0,
                       unit="s", stated="", where="the command line")


def _predict(root, kind: str, row) -> dict:
    cal = calibration(root)
    if cal is None or kind not in cal:
        return {"available": False, "why": "no calibration: run `aiinfra validate --write-baseline`"}
    k = KINDS[kind]
    try:
        terms = k.terms(root, row)
    except Unmapped as exc:
        return {"available": False, "why": str(exc)}
    t = {name: np.array([float(v)]) for name, v in terms.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    groups = [{name: f(row) for name, f in k.groupings.items()}]
    fitted = cal[kind]["parameters"]
    values = values_for(k, fitted, groups)
    out = {name: float(v[0]) for name, v in k.times(t, values).items()}
    gen = groups[0].get("gen", generation(row.device))
    used = {p.name: float(values[p.name][0]) for p in k.params}
    fallback = [f"{p.name} ({p.by} {groups[0][p.by]})" for p in k.params if p.by and groups[0][p.by] not in fitted[p.name]]
    c = cal[kind]
    return {"available": True, "times": out, "parameters": used, "group": gen, "fallback": fallback,
            "band": {"held_out_within_30": c.get("held_out_within_30"), "held_out_median_error_factor": c.get("held_out_median_error_factor"),
                     "held_out_mape": c.get("held_out_mape")},
            "fitted_on": len(c.get("fitted_on", [])), "date": c.get("date"), "capped": bool(terms.get("capped"))}


def serve(root, model: str, device: str, *, tp: int, ep: int = 1, replicas: int = 1, concurrency: int | None = None, batch: int | None = None,
          prompt: int, output: int, weights: str | None = None, kv_cache: str | None = None, precision: str | None = None, engine: str | None = None) -> dict:
    """TTFT, TPOT, E2E and throughputs of ``replicas`` instances of TP x EP under the serving calibration."""
    workload = {"prompt": prompt, "output": output}
    if concurrency:
        workload["concurrency"] = concurrency
    elif batch:
        workload["batch"] = batch
    prec = {k: v for k, v in (("weights", weights), ("kv_cache", kv_cache), ("compute", precision)) if v}
    row = _row("serve", model, device, tp * ep * replicas, {"tp": tp, "ep": ep}, workload, prec, engine)
    return _predict(root, "serve", row)


def train(root, model: str, device: str, *, gpus: int, layout: dict, seq: int, precision: str = "bf16") -> dict:
    """Step time, tokens/s and model TFLOP/s per GPU of a pinned training layout under the training calibration."""
    row = _row("train", model, device, gpus, dict(layout), {"seq": seq}, {"compute": precision}, None)
    return _predict(root, "train", row)


def describe(p: dict, kind: str) -> str:
    """One line: which calibration, its group (or the fallback) and its held-out band."""
    if not p.get("available"):
        return f"calibrated {kind} model: not available ({p.get('why')})"
    b = p["band"]
    fb = f"; no measurement for {', '.join(p['fallback'])}: the shared value is used" if p["fallback"] else ""
    band = (f"held out, {b['held_out_within_30']:.0f}% of {kind} rows within +-30%, median error x{b['held_out_median_error_factor']:.2f}"
            if b.get("held_out_within_30") is not None else "no held-out band")
    return (f"calibration: knowledge/calibration/fitted.json ({kind}, {p['group']}, fitted on {p['fitted_on']} tables, {p['date']}){fb}; "
            f"{band}")

