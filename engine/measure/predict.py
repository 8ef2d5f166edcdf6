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
from engine.measure.serve import engine_layout


def _row(kind: str, model: str | None, device: str, gpus: int, layout: dict, workload: dict, precision: dict, engine: str | None):
    from engine.domain.measurements import Measurement

    metric = {"serve": "ttft", "train": "step_time"}[kind]
    return Measurement(id="stated", source="stated", family="stated", place="", kind=kind, model=model, device=device, gpus=gpus, layout=layout,
                       precision=precision, workload=workload, engine=engine, engine_version=None, metric=metric, statistic="mean", value=1.0,
                       unit="s", stated="", where="the command line")


def _calibrated(root, kind: str, row):
    """(calibration, terms, numeric terms, groups, parameter values) of one stated row, or an 'unavailable' dict."""
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
    return cal, terms, t, groups, values_for(k, cal[kind]["parameters"], groups)


def _predict(root, kind: str, row) -> dict:
    got = _calibrated(root, kind, row)
    if isinstance(got, dict):
        return got
    cal, terms, t, groups, values = got
    k = KINDS[kind]
    fitted = cal[kind]["parameters"]
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
    row = _row("serve", model, device, tp * ep * replicas, engine_layout(tp, ep, engine), workload, prec, engine)
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
    return (f"calibration: knowledge/calibration/fitted.json ({kind}, {p['group']}, fitted on the tables of {p['fitted_on']} publisher families, {p['date']}){fb}; "
            f"{band}")



def simulate_serve(root, model: str, device: str, *, tp: int, ep: int = 1, replicas: int = 1, prompt: int, output: int, requests: int = 1000,
                   concurrency: int | None = None, qps: float | None = None, arrival: str = "poisson", cv: float = 1.0, lengths: str = "fixed",
                   range_ratio: float = 1.0, sigma: float = 0.5, trace=None, seed: int = 0, token_budget: int | None = None,
                   admission: str | None = None, schedule: str | None = None, weights: str | None = None, kv_cache: str | None = None, precision: str | None = None,
                   engine: str | None = None) -> dict:
    """The serving simulation (engine.measure.simulate) of one of ``replicas`` instances, its share of the load, under the
    serving calibration: percentiles of TTFT, TPOT and E2E, throughput of the deployment, preemptions, K/V peak."""
    from engine.core.errors import InputError
    from engine.measure import simulate as S

    if (concurrency is None) == (qps is None) and trace is None:
        raise InputError("--concurrency", "the simulation needs a closed loop (--concurrency) or an open loop (--qps or --trace), one of them")
    if requests < 1:
        raise InputError("--requests", f"{requests} is not a positive number of requests")
    prec = {k: v for k, v in (("weights", weights), ("kv_cache", kv_cache), ("compute", precision)) if v}
    row = _row("serve", model, device, tp * ep * replicas, engine_layout(tp, ep, engine), {"prompt": prompt, "output": output, "concurrency": concurrency or 1},
               prec, engine)
    got = _calibrated(root, "serve", row)
    if isinstance(got, dict):
        return got
    cal, terms, t, groups, values = got
    step = S.StepModel(t, values)
    rng = np.random.default_rng(seed)
    n = max(1, requests // replicas)
    if trace is not None:
        arr, pr, out = (np.asarray(c) for c in trace)
        n = min(n, len(arr))
        arr, pr, out = arr[:n] * 1.0, pr[:n], out[:n]
    else:
        pr = S.lengths(lengths, prompt, n, rng, ratio=range_ratio, sigma=sigma, field="--lengths")
        out = S.lengths(lengths, output, n, rng, ratio=range_ratio, sigma=sigma, field="--lengths")
        arr = None if qps is None else S.arrivals(arrival, qps / replicas, n, rng, cv=cv)
    capacity = float(terms["fits"]) * (prompt + output)  # the K/V tokens of the requests the engine's memory rule admits
    policy = admission or S.ENGINE_ADMISSION.get((engine or "").lower(), "reserve")
    clients = None if arr is not None else max(1, concurrency // replicas)
    from engine.measure.serve import prefill_first

    steps = schedule or ("prefill-first" if prefill_first(engine, None) else "mixed")
    # the engine's own caps unless the command line gives a token budget (engine.plan.engine_memory.batch_limits)
    budget = token_budget or int(terms.get("budget", S.TOKEN_BUDGET))
    cap = int(terms["max_running"]) if terms.get("max_running", 10**9) < 10**9 else None
    r = S.simulate(step, pr, out, capacity=capacity, concurrency=clients, arrive=arr, token_budget=budget, max_running=cap, admission=policy,
                   schedule=steps)
    s = r.summary()
    for name in ("request_throughput", "output_throughput", "total_throughput"):
        s[name] = s[name] * replicas if s[name] is not None else None
    s["output_throughput_per_gpu"] = s["output_throughput"] / (tp * ep * replicas) if s["output_throughput"] else None
    gen = groups[0].get("gen", generation(row.device))
    return {"available": True, "summary": s, "requests_per_instance": n, "replicas": replicas, "capacity_tokens": capacity, "admission": policy, "schedule": steps,
            "token_budget": budget, "max_running": cap, "group": gen, "seed": seed, "loop": "closed" if clients else "open",
            "band": cal["serve"].get("held_out_within_30")}
