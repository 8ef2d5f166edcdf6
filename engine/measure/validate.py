"""``aiinfra validate``: every measurement record run through the engine with its layout pinned.

Per record: the measured value, the in-sample prediction (the fit on every source) and the held-out one
(the fit without the record's own source), their ratio. Per kind (and, for serving, per metric class):
MAPE, median error factor, share within +-15/30/50 %, Spearman rank correlation: in-sample, held out by table
(the fit without the row's own file) and held out by family (without every release of the row's publisher series).
Rows the engine cannot evaluate as stated are listed with the reason, never scored.
"""

from __future__ import annotations

import numpy as np

from engine.core.record import dataclass
from engine.measure.calibrate import KINDS, fit, held_out, predict, refine, table
from engine.measure.generations import Unmapped

PERCENTILES = ("p90", "p95", "p99", "max")
METRIC_CLASS = {"ttft": "ttft", "tpot": "tpot", "itl": "tpot", "e2e_latency": "e2e", "output_throughput_per_gpu": "throughput",
                "total_throughput_per_gpu": "throughput", "output_throughput": "throughput", "request_throughput": "throughput"}


@dataclass(frozen=True, slots=True)
class Result:
    rows: tuple[dict, ...]  # scored rows
    unmapped: tuple[dict, ...]
    summary: dict  # kind -> {"in_sample": scores, "held_out": scores, "by_metric": {...}}
    calibration: dict  # kind -> fitted parameters on every source
    sources: dict  # kind -> sorted source ids


def score(pred: np.ndarray, meas: np.ndarray) -> dict:
    """MAPE, median error factor, shares within +-15/30/50 % and Spearman's rank correlation."""
    if len(pred) == 0:
        return {"n": 0}
    ratio = pred / meas
    err = np.abs(ratio - 1)
    out = {"n": int(len(pred)), "mape": float(np.mean(err) * 100), "median_error_factor": float(np.median(np.maximum(ratio, 1 / ratio))),
           "within_15": float(np.mean(err <= 0.15) * 100), "within_30": float(np.mean(err <= 0.30) * 100), "within_50": float(np.mean(err <= 0.50) * 100)}
    out["spearman"] = spearman(pred, meas) if len(pred) >= 3 else None
    return out


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    from scipy.stats import spearmanr

    if np.all(a == a[0]) or np.all(b == b[0]):
        return None
    return float(spearmanr(a, b).statistic)


def _terms(root, kind, m):
    from engine.core.errors import InputError

    spread = m.kind == "serve" and (m.statistic == "max" or (m.statistic in PERCENTILES and m.metric not in ("ttft", "e2e_latency")))
    if spread and m.metric != "tpot":
        raise Unmapped(f"a {m.statistic} {m.metric} comes from step-to-step variation the models do not carry; validate predicts "
                       "means, medians, the TTFT/E2E percentiles of a run's queue and, for a replayed run, the TPOT percentiles over its requests")
    try:
        t = kind.terms(root, m)
    except InputError as exc:  # a refusal of the engine's (an architecture a planner does not size): not evaluable as stated
        raise Unmapped(f"{exc.field}: {exc.message}") from None
    if spread and not (kind.replay and kind.replay.replayable(t, m.metric, m.statistic)):
        raise Unmapped(f"a {m.statistic} TPOT is a spread over a run's requests: validate predicts it by replaying the run, and this run "
                       f"(requests per instance: {t.get('burst', 0):g}) is not replayed")
    return t


def run(root, *, kinds=None, device: str | None = None, model: str | None = None, records=None) -> Result:
    from engine.domain import measurements

    if records is None:
        records, problems = measurements.load(root)
        if problems:
            from engine.core.errors import InputError

            raise InputError("knowledge/measurements", f"{len(problems)} problems; first: {problems[0]}")
    rows, unmapped, summary, calibration, sources = [], [], {}, {}, {}
    for name, kind in KINDS.items():
        if kinds and name not in kinds:
            continue
        mine = [m for m in records if m.kind == name]
        ok, terms = [], []
        for m in mine:
            try:
                terms.append(_terms(root, kind, m))
                ok.append(m)
            except Unmapped as exc:
                unmapped.append(dict(id=m.id, kind=name, model=m.model, device=m.device, metric=m.metric, why=str(exc)))
        if not ok:
            continue
        tab = table(kind, ok, terms)
        fitted, factors = refine(tab, fit(tab))
        inside = predict(tab, fitted)
        out = held_out(tab, fitted, factors=factors)
        strict = held_out(tab, fitted, by="family", factors=factors)
        calibration[name] = fitted
        sources[name] = sorted(set(tab.families))
        keep = np.array([(device is None or m.device == device) and (model is None or m.model == model) for m in ok])
        for i, m in enumerate(ok):
            if keep[i]:
                rows.append(dict(id=m.id, source=m.source, kind=name, metric=m.metric, statistic=m.statistic, model=m.model, device=m.device,
                                 gpus=m.gpus, layout=m.layout, measured=m.value, unit=m.unit, in_sample=float(inside[i]), held_out=float(out[i]),
                                 ratio=float(out[i] / m.value), held_out_family=float(strict[i]), where=m.where, engine=m.engine, group=tab.groups[i]["gen"],
                                 capped=bool(terms[i].get("capped", False))))
        if not keep.any():
            continue
        summary[name] = {"in_sample": score(inside[keep], tab.measured[keep]), "held_out": score(out[keep], tab.measured[keep]),
                         "held_out_family": score(strict[keep], tab.measured[keep])}
        if name == "serve":
            classes = np.array([METRIC_CLASS[m.metric] for m in ok])
            summary[name]["by_metric"] = {c: {"in_sample": score(inside[keep & (classes == c)], tab.measured[keep & (classes == c)]),
                                              "held_out": score(out[keep & (classes == c)], tab.measured[keep & (classes == c)]),
                                              "held_out_family": score(strict[keep & (classes == c)], tab.measured[keep & (classes == c)])}
                                          for c in sorted(set(classes[keep]))}
    return Result(tuple(rows), tuple(unmapped), summary, calibration, sources)
