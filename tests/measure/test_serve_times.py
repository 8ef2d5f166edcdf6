"""Serving times of hand-built work terms (engine/measure/serve.py ``times``), by hand arithmetic.

One instance on one GPU (TP 1, EP 1: the all-reduce terms are 0), an 8B-parameter dense model in BF16:
16e9 B of weights and 2 x 8e9 = 16e9 FLOPs per decoded token; 1e6 B of K/V per sequence; a 1000-token
prompt of 2 x 8e9 x 1000 = 1.6e13 FLOPs; 100 output tokens. Peak 1e15 FLOP/s, HBM 2e12 B/s.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.measure import serve

P = dict(e_prefill=0.5, e_decode=0.5, e_hbm=0.8, e_kv=0.8, e_link=0.7, ar_latency=5e-6, overhead=2e-3)
DENSE = dict(fixed=1, rate=0, fits=100, burst=0, stat=-1, g=1, ep=1, replicas=1, output=100, prompt=1000, w_dense=16e9, w_expert=0,
             experts=0, top_k=0, cd1=16e9, ca1=0, kv1=1e6, ar_n=0, ar_steps=0, ar1=0, ep1=0, cp=1.6e13, peak=1e15, hbm=2e12, link=450e9,
             ep_link=450e9)
# prefill: 1.6e13 / (1e15 x 0.5) + overhead = 0.032 + 0.002 = 0.034 s
PREFILL = 1.6e13 / (1e15 * 0.5) + 2e-3


def times(**over) -> dict:
    t = {k: np.array([float(v)]) for k, v in {**DENSE, **over}.items()}
    p = {k: np.array([v]) for k, v in P.items()}
    return {k: float(v[0]) for k, v in serve.times(t, p).items()}


def test_dense_tpot_at_one_request_by_hand():
    out = times()
    # matrix kernels: compute 16e9 / (1e15 x 0.5) = 3.2e-5 s against weights 16e9 / (2e12 x 0.8) = 1e-2 s: the weights win;
    # attention kernels (no attention FLOPs here): K/V 1e6 / (2e12 x 0.8) = 6.25e-7 s; the two kernel classes run in turn
    step = max(16e9 / (1e15 * 0.5), 16e9 / (2e12 * 0.8)) + 1e6 / (2e12 * 0.8) + 2e-3
    assert step == pytest.approx(0.012000625, rel=1e-12)
    # TPOT = step + (c - 1) x prefill / output: a lone request's steps carry no other request's prompt
    assert out["tpot"] == pytest.approx(step, rel=1e-12)
    assert out["tpot"] == pytest.approx(0.012000625, rel=1e-12)
    # two clients: each request's decode steps carry the other's next prompt once: + 0.034 / 100 (and the step of 2
    # sequences reads 2e6 B of K/V: + 1e6 / 1.6e12)
    assert times(fixed=2)["tpot"] == pytest.approx(0.012000625 + 1e6 / 1.6e12 + 0.034 / 100, rel=1e-12)
    assert out["itl"] == out["tpot"]


def test_dense_one_request_follows_littles_law():
    out = times()
    # E2E = TTFT + (output - 1) x TPOT; one request in flight: X = 1 / E2E requests/s on one GPU
    assert out["e2e_latency"] == pytest.approx(out["ttft"] + 99 * out["tpot"], rel=1e-12)
    assert out["request_throughput"] == pytest.approx(1 / out["e2e_latency"], rel=1e-12)
    assert out["output_throughput_per_gpu"] == pytest.approx(100 / out["e2e_latency"], rel=1e-12)
    assert out["total_throughput_per_gpu"] == pytest.approx(1100 / out["e2e_latency"], rel=1e-12)
    # a closed loop's one client sends its next request as the last one finishes, into an idle engine: TTFT is the
    # prompt's prefill, 0.034 s (no step is running, and no other prompt is queued)
    assert out["ttft"] == pytest.approx(PREFILL, rel=1e-12)


@pytest.mark.parametrize(("c", "touched"), [
    (1, 0.25),  # 1 - (1 - 2/8)^1 = 0.25: one sequence reads its 2 of 8 experts
    (4, 0.68359375),  # 1 - (3/4)^4 = 1 - 81/256 = 175/256 = 0.68359375
])
def test_moe_decode_reads_the_experts_the_batch_routes_to(c, touched):
    # E = 8 experts, k = 2 per token; 4e9 B of dense weights and 40e9 B of experts; bytes-bound at c <= 4:
    # compute c x 16e9 / 5e14 <= 1.28e-4 s against reads >= 1.4e9 / 1.6e12
    out = times(fixed=c, experts=8, top_k=2, w_dense=4e9, w_expert=40e9)
    reads = 4e9 + 40e9 * touched + c * 1e6
    step = reads / (2e12 * 0.8) + 2e-3
    assert out["tpot"] == pytest.approx(step + (c - 1) * PREFILL / 100, rel=1e-12)
    # c = 1: (4e9 + 10e9 + 1e6) / 1.6e12 = 8.750625e-3; + 2e-3 = 0.010750625 s
    # c = 4: (4e9 + 27.34375e9 + 4e6) / 1.6e12 = 0.01959234375; + 2e-3 + 3 x 0.034 / 100 = 0.02261234375 s
    assert out["tpot"] == pytest.approx({1: 0.010750625, 4: 0.02261234375}[c], rel=1e-12)


def test_an_open_loop_rate_solves_littles_law():
    rate = 4.0
    out = times(fixed=0, rate=rate)
    # invert the TPOT of the solved c (bytes-bound, as above):
    # TPOT = (16e9 + c x 1e6) / 1.6e12 + 2e-3 + (c - 1) x 0.034 / 100, so
    # c = (TPOT - 0.01 - 0.002 + 0.034 / 100) / (1e6 / 1.6e12 + 0.034 / 100)
    c = (out["tpot"] - 16e9 / 1.6e12 - 2e-3 + PREFILL / 100) / (1e6 / 1.6e12 + PREFILL / 100)
    assert 1 < c < 100  # neither clipped at one request nor at the K/V capacity
    # Little's law at the solution: c = rate x E2E (to the fixed-point iteration's convergence, 1 %)
    assert c == pytest.approx(rate * out["e2e_latency"], rel=1e-2)
    assert out["request_throughput"] == pytest.approx(rate, rel=1e-2)
    assert out["request_throughput"] <= rate


def test_an_overloaded_open_loop_holds_at_most_its_runs_requests():
    # 1000 requests/s offered to an instance that completes a few per second: the fixed point c = rate x E2E would run
    # away to the K/V capacity (100); a run of 20 requests never has more than 20 in flight, so the engine runs 20 at
    # once, as 20 closed-loop clients would (same step, TPOT)
    over = times(fixed=0, rate=1000.0, run=20)
    assert over["tpot"] == pytest.approx(times(fixed=20)["tpot"], rel=1e-12)
    assert times(fixed=0, rate=1000.0)["tpot"] == pytest.approx(times(fixed=100)["tpot"], rel=1e-12)  # no run stated: the K/V cap


def test_clients_beyond_the_kv_capacity_wait_for_a_slot():
    # 10 clients, K/V room for 2: the engine runs 2 (same step, TPOT and throughput as 2 clients); by Little's law on
    # its queue the 8 others ahead drain at X requests/s, a wait of 8 / X on top of the 2-client TTFT
    two, ten = times(fixed=2, fits=2), times(fixed=10, fits=2)
    assert ten["tpot"] == two["tpot"]
    assert ten["request_throughput"] == two["request_throughput"]
    assert ten["ttft"] == pytest.approx(two["ttft"] + 8 / two["request_throughput"], rel=1e-12)


def test_a_burst_of_n_requests_reports_the_statistic_asked_for():
    # 8 requests sent at once into an idle engine with room for all 8: request i waits for the i - 1 prompts before it;
    # the mean over i = 1..8 of (i - 1) is 3.5 prompts, the median lies between the 4th and 5th request's wait
    mean = times(fixed=8, burst=8)
    assert mean["ttft"] == pytest.approx(PREFILL + 3.5 * PREFILL, rel=1e-12)
    median = times(fixed=8, burst=8, stat=0.5)["ttft"]
    assert PREFILL + 3 * PREFILL <= median <= PREFILL + 4 * PREFILL
    p90 = times(fixed=8, burst=8, stat=0.9)["ttft"]  # the 8th request of 8 (quantile grid): 7 prompts ahead
    assert p90 == pytest.approx(PREFILL + 7 * PREFILL, rel=1e-12)


def test_a_step_carries_at_most_the_token_budget_of_prompts():
    # 100 clients of 1000-token prompts and 2-token outputs: FX78's share would put 99 prompts on each request's one
    # decode step after the first; an engine step carries at most 8192 prompt tokens, 8.192 prompts of 1000 tokens
    out = times(fixed=100, output=2)
    step100 = (16e9 + 100e6) / 1.6e12 + 2e-3  # the step of 100 sequences, bytes-bound: 0.0120625 s
    assert out["tpot"] == pytest.approx(step100 + 8192 / 1000 * PREFILL, rel=1e-12)


def test_a_speculative_run_is_not_scored_as_plain_decoding():
    # SGLang's cookbook runs its low-latency Qwen3.6 cells with MTP, 3 steps, topk 1, 4 draft tokens (the row's note;
    # sgl-project/sglang docs_new/.../qwen3.6.jsx launch flags): 3 drafted tokens verified per target step, no acceptance
    # published, so validate cannot predict its TPOT as stated and lists it with the reason instead of scoring it
    from pathlib import Path

    from engine.domain import measurements
    from engine.measure.generations import Unmapped

    root = Path(__file__).resolve().parents[2]
    rows, _ = measurements.load(root)
    row = next(m for m in rows if m.id == "meas:sglang-cookbook-qwen3.6-35b-a3b/h200-bf16-ll-c1-tpot")
    assert row.speculative == {"method": "mtp", "draft_tokens": 3, "steps": 3}
    with pytest.raises(Unmapped, match=r"speculative decoding \(mtp, 3 draft tokens, no acceptance stated\)"):
        serve.terms(root, row)


def test_weight_only_kernels_run_at_their_share_of_the_matrix_rate():
    # a weight-only row (dq = 1: MXFP4 or FP8 weights dequantised into BF16 products) at e_dequant = 0.5: the prompt's
    # 1.6e13 FLOPs run at 1e15 x 0.5 x 0.5, 0.064 s + the 2 ms overhead; a row that is not weight-only (dq = 0) keeps
    # 0.034 s whatever e_dequant is
    t = {k: np.array([float(v)]) for k, v in {**DENSE, "dq": 1.0}.items()}
    p = {k: np.array([v]) for k, v in {**P, "e_dequant": 0.5}.items()}
    one = {k: float(v[0]) for k, v in serve.times(t, p).items()}
    assert one["ttft"] == pytest.approx(1.6e13 / (1e15 * 0.5 * 0.5) + 2e-3, rel=1e-12)
    t["dq"] = np.array([0.0])
    assert float(serve.times(t, p)["ttft"][0]) == pytest.approx(PREFILL, rel=1e-12)
    # decode at one request is bound by the weights (1e-2 s), not by the slower products (16e9 / 2.5e14 = 6.4e-5 s)
    assert one["tpot"] == pytest.approx(16e9 / (2e12 * 0.8) + 1e6 / (2e12 * 0.8) + 2e-3, rel=1e-12)


@pytest.mark.parametrize("device, prec, want", [
    ("h100-sxm", {"weights": "mxfp4"}, True),  # no FP4 tensor cores on Hopper: MXFP4 weights, BF16 products
    ("a100-sxm-80gb", {"weights": "fp8"}, True),  # no FP8 tensor cores on Ampere
    ("h100-sxm", {"weights": "fp8"}, False),  # FP8 products on Hopper
    ("b200", {"weights": "mxfp4"}, False),  # Blackwell states an MXFP4 peak
    ("h100-sxm", {"weights": "bf16"}, False),
])
def test_which_rows_run_weight_only(device, prec, want):
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    assert serve.weight_only(prec, serve.compute_precision(root, device, prec)) is want


def test_the_host_work_per_sequence_grows_the_step_with_the_batch():
    # overhead_seq = 50 us a sequence: a step of 1 request pays 2 ms + 50 us, of 64 requests 2 ms + 64 x 50 us = 5.2 ms
    # (64 x 1e6 B of K/V: + 64e6 / 1.6e12 = 40 us; the weights still bound the products: 16e9 / 1.6e12 = 1e-2 s);
    # a lone prompt's step carries its one sequence: 0.034 s + 50 us
    p = {k: np.array([v]) for k, v in {**P, "overhead_seq": 5e-5}.items()}

    def one(**over):
        t = {k: np.array([float(v)]) for k, v in {**DENSE, **over}.items()}
        return {k: float(v[0]) for k, v in serve.times(t, p).items()}

    assert one()["tpot"] == pytest.approx(1e-2 + 1e6 / 1.6e12 + 2e-3 + 5e-5, rel=1e-12)
    assert one()["ttft"] == pytest.approx(PREFILL + 5e-5, rel=1e-12)
    step64 = 1e-2 + 64e6 / 1.6e12 + 2e-3 + 64 * 5e-5
    # TPOT at 64 clients: the step plus the 63 others' prompts (each 0.034 s + 50 us) spread over 100 output tokens
    assert one(fixed=64)["tpot"] == pytest.approx(step64 + 63 / 100 * (PREFILL + 5e-5), rel=1e-12)


def test_each_layer_and_each_moe_layer_adds_its_fixed_cost_to_every_step():
    # overhead_layer = 80 us a layer, overhead_moe = 0.8 ms a MoE layer: the 8B model above as 32 dense layers pays
    # 32 x 80e-6 = 2.56 ms more per step; as 32 layers of which 30 route experts, 2.56 ms + 30 x 0.8e-3 = 26.56 ms more.
    # A prompt's step pays the same once. Without the two parameters (an older calibration) nothing changes.
    p = {k: np.array([v]) for k, v in {**P, "overhead_layer": 8e-5, "overhead_moe": 8e-4}.items()}

    def one(**over):
        t = {k: np.array([float(v)]) for k, v in {**DENSE, **over}.items()}
        return {k: float(v[0]) for k, v in serve.times(t, p).items()}

    base = 1e-2 + 1e6 / 1.6e12 + 2e-3  # 0.012000625 s, test_dense_tpot_at_one_request_by_hand
    assert one(layers=32, moe_layers=0)["tpot"] == pytest.approx(base + 32 * 8e-5, rel=1e-12)
    assert one(layers=32, moe_layers=0)["ttft"] == pytest.approx(PREFILL + 32 * 8e-5, rel=1e-12)
    assert one(layers=32, moe_layers=30)["tpot"] == pytest.approx(base + 32 * 8e-5 + 30 * 8e-4, rel=1e-12)
    assert one(layers=32, moe_layers=30)["tpot"] == pytest.approx(0.038560625, rel=1e-12)
    assert times(layers=32, moe_layers=30)["tpot"] == pytest.approx(base, rel=1e-12)
