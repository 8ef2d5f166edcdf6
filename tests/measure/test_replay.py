"""A measurement's run replayed in the serving simulation (engine/measure/replay.py), by hand arithmetic.

The hand terms are tests/measure/test_simulate.py's: an 8B dense model on one GPU, 16e9 B of weights, 16e9 FLOPs per
token at 50 % of 1e15 FLOP/s, 2e12 B/s of HBM at 80 %, 2 ms of overhead a step, no K/V reads.
"""

from __future__ import annotations

import pytest

from engine.measure import replay

P = dict(e_prefill=0.5, e_decode=0.5, e_hbm=0.8, e_kv=0.8, e_link=0.7, ar_latency=5e-6, overhead=2e-3)
T = dict(fixed=4, rate=0, fits=100, burst=4, stat=-1, g=1, ep=1, replicas=1, output=100, prompt=1000, ctx=1050, w_dense=16e9, w_expert=0,
         experts=0, top_k=0, cd1=16e9, ca1=0, kv1=0, ar_n=0, ar_steps=0, ar1=0, ep1=0, cp=1.6e13, peak=1e15, hbm=2e12, link=450e9,
         ep_link=450e9, prefill_first=1, on_demand=0)
# 4 clients send 4 requests at once. The 8,192-token budget takes the four 1000-token prompts in one step:
# 4000 x 3.2e-5 s of FLOPs (16e9 / 5e14 per token) = 0.128 s (> 0.01 s of weight reads) + 2 ms = 0.130 s, so every
# TTFT is 0.130 s; then 99 decode steps of 0.012 s (4 tokens' FLOPs 1.28e-4 s < 0.01 s of reads, + 2 ms): the run
# ends at 0.130 + 99 x 0.012 = 1.318 s
TTFT, END = 0.130, 0.130 + 99 * 0.012


@pytest.mark.parametrize(("metric", "statistic", "expected"), [
    ("ttft", "mean", TTFT),
    ("ttft", "p99", TTFT),
    ("tpot", "median", 0.012),
    ("itl", "mean", 0.012),
    ("e2e_latency", "mean", END),
    ("request_throughput", "single", 4 / END),  # the tools' throughput: requests over the run's duration, 3.035 requests/s
    ("output_throughput", "single", 400 / END),
    ("total_throughput_per_gpu", "single", 4400 / END),
])
def test_a_burst_replayed_as_the_benchmark_tool_reports_it(metric, statistic, expected):
    assert replay.value(dict(T), P, metric, statistic) == pytest.approx(expected, rel=1e-12)


def test_replicas_multiply_the_deployment_throughput_not_the_latency():
    two = dict(T, replicas=2, g=1)  # terms are per instance; the deployment runs two
    assert replay.value(two, P, "output_throughput", "single") == pytest.approx(2 * 400 / END, rel=1e-12)
    assert replay.value(two, P, "ttft", "mean") == pytest.approx(TTFT, rel=1e-12)


@pytest.mark.parametrize(("engine", "version", "first"), [
    ("sglang", "0.4.3", True),  # SGLang's scheduler runs a new prefill batch whenever one forms (no --enable-mixed-chunk)
    ("sglang", "0.5.6", True),
    ("vllm", "0.7.3.dev138+g21f6ca217", True),  # V0 without chunked prefill (dstack's --max-model-len 32768)
    ("vllm", "0.8.0", False),  # vLLM 0.8.0 made the V1 engine (mixed prefill and decode steps) the default
    ("vllm", None, False),
    ("tensorrt-llm", "0.14.0", False),  # in-flight batching mixes context and generation requests in a step
])
def test_the_step_schedule_follows_the_engine_release(engine, version, first):
    assert replay.prefill_first(engine, version) is first


def test_what_is_not_replayed():
    assert not replay.replayable(dict(T, burst=replay.MAX_REQUESTS + 1), "ttft", "mean")  # a long run: the closed form's steady state
    assert not replay.replayable(dict(T, burst=0), "ttft", "mean")  # no stated run
    assert not replay.replayable(T, "itl", "p99")  # a per-token spread the replay does not record
    assert replay.replayable(T, "tpot", "p90")  # a spread over the run's requests
    # a mixed-step engine's finite run is replayed as well: a burst's first wave and drain (GPUStack's 500 prompts sent
    # at once) are the whole run, which no steady state describes
    assert replay.replayable(dict(T, prefill_first=0), "ttft", "mean")
    assert not replay.replayable(dict(T, rate=2.0, fixed=0), "ttft", "mean")  # an open loop at a stated (offered) rate
