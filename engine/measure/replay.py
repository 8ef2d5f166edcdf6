"""A measurement's run replayed request by request in the serving simulation (issue 27, section 1, in ``validate``).

A benchmark table reports what one finite run measured: N requests sent by a closed loop of clients (all N at once
when it states no limit) or at an open-loop rate, and the tool's statistic over those N requests (mean, median,
a percentile) and throughput over the run's duration (first send to last token). The closed forms of
``engine.measure.serve`` describe a steady state; the replay runs the stated run itself through
``engine.measure.simulate`` with the same step model, so the first wave's queue, the drain at the end of the run,
an open loop's overload and the engine's step schedule are in the number:

  mixed          (vLLM V1 from 0.8, TensorRT-LLM's in-flight batching) a step carries every decode and prompt
                 chunks up to the token budget
  prefill-first  (SGLang's scheduler, which runs a new prefill batch whenever one can be formed, unless
                 --enable-mixed-chunk; vLLM's V0 engine, 0.7 and earlier, without chunked prefill) a step with
                 admitted prompts carries prompts alone and the decodes wait. A closed loop of equal-length
                 requests then moves in waves: the clients' requests start together, decode together, finish
                 together and send the next wave together, so a request's TTFT includes the prefills of its wave

Which rows are replayed: closed-loop runs (clients, or all N at once) of up to MAX_REQUESTS requests per instance, on
either schedule. On a prefill-first engine the closed form's steady state cannot describe the waves; on a mixed-step
engine a long closed loop desynchronises after its first wave, but the tables' runs are finite and often one burst
(GPUStack sends 500 prompts at once into an idle engine; trtllm-bench sends every request at once), whose first wave
and drain are most of the run: the closed form put gpt-oss-20b's 32K-token burst on an H100 at 0.60 of its measured
TTFT and 2.1x its throughput, the replay at 1.03 and 0.98 under the same calibration. An open loop is not replayed
because the tables' stated rates are offered rates some load generators do not reach (TensorRT-LLM's v0.14 table
reports 11 requests/s completed at "QPS 16" with a 67 ms TTFT, no queue: the client sent fewer), and a replay at the
stated rate builds a queue the run never had.

Lengths are taken as the record states them (the tools' fixed-length random datasets); arrivals of an open loop are
Poisson (benchmark_serving's default) from a fixed seed, so a replay is deterministic.
"""

from __future__ import annotations

import numpy as np

from engine.measure.serve import prefill_first  # noqa: F401  (the schedule a row's terms carry; re-exported for callers)

# a run longer than this (per instance) is not replayed: its first wave and drain are a small share of it, and the
# closed form's steady state stands for it (a replay of 30,000 requests would cost seconds a row)
MAX_REQUESTS = 3000
QUANTILE = {"median": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}
METRICS = ("ttft", "tpot", "itl", "e2e_latency", "request_throughput", "output_throughput", "output_throughput_per_gpu", "total_throughput_per_gpu")
SEED = 0


def replayable(t: dict, metric: str, statistic: str) -> bool:
    """Whether the row is replayed: a closed loop with a finite number of requests per instance (not too many), a
    metric and statistic the replay reports."""
    n = float(t.get("burst", 0))
    if metric not in METRICS or not 1 <= n <= MAX_REQUESTS:
        return False
    if t.get("rate", 0) != 0:
        return False
    if statistic in ("mean", "single"):
        return True
    return statistic in QUANTILE and metric in ("ttft", "tpot", "e2e_latency")


_CACHE: dict = {}


def run(t: dict, p: dict):
    """The simulation of one instance's share of the row's run (``t``: the row's terms as floats, ``p``: its parameters)."""
    from engine.measure import simulate as S

    key = (tuple(sorted((k, float(v)) for k, v in t.items())), tuple(sorted((k, float(v)) for k, v in p.items())))
    got = _CACHE.get(key)
    if got is not None:
        return got
    n = int(t["burst"])
    prompt, output = int(t["prompt"]), int(t["output"])
    step = S.StepModel(t, p)
    arrive = None
    clients = None
    if t["rate"] > 0:
        arrive = S.arrivals("poisson", float(t["rate"]), n, np.random.default_rng(SEED))
    else:
        clients = max(1, int(round(t["fixed"]))) if t["fixed"] > 0 else n
    admission = "on-demand" if t.get("on_demand", 0) > 0 else "reserve"
    r = S.simulate(step, np.full(n, prompt), np.full(n, output), capacity=float(t["fits"]) * (prompt + output), concurrency=clients,
                   arrive=arrive, admission=admission, token_budget=int(t.get("budget", S.TOKEN_BUDGET)),
                   max_running=int(t["max_running"]) if t.get("max_running", 10**9) < 10**9 else None, schedule="prefill-first" if t.get("prefill_first", 0) > 0 else "mixed")
    if len(_CACHE) > 20000:
        _CACHE.clear()
    _CACHE[key] = r
    return r


def value(t: dict, p: dict, metric: str, statistic: str) -> float:
    """The row's metric as the benchmark tool computes it over the replayed run (seconds, requests/s, tokens/s)."""
    r = run(t, p)
    span = r.makespan
    reps, g = float(t["replicas"]), float(t["g"])
    if metric == "request_throughput":
        return len(r.arrive) / span * reps
    if metric == "output_throughput":
        return float(r.output.sum()) / span * reps
    if metric == "output_throughput_per_gpu":
        return float(r.output.sum()) / span / g
    if metric == "total_throughput_per_gpu":
        return float(r.output.sum() + r.prompt.sum()) / span / g
    if metric == "itl":  # the tools' mean ITL: every gap between two tokens of a request, over all requests' gaps
        many = r.output > 1
        return float((r.finish[many] - r.first[many]).sum() / (r.output[many] - 1).sum())
    v = {"ttft": r.ttft, "tpot": r.tpot, "e2e_latency": r.e2e}[metric]
    return float(np.percentile(v, QUANTILE[statistic])) if statistic in QUANTILE else float(v.mean())
