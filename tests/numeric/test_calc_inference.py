"""calc:inference-capacity and calc:serving-fleet: worked examples, boundaries, the CLI.

Every expected number is hand arithmetic written beside it from a cited public source: the
book's chapter 24 decode-pool example (ch24 section 24.4.2, in the stored version
cdavid817/AI-Infra@108da486: 70B, 140 GFLOPs per token, 400 TFLOPS effective per card,
3 TB/s, FP8 weights of about 70 GB, TP 4, 4K prompts, 500 output tokens, 300 QPS, TTFT <= 1 s,
TPOT <= 50 ms, about 40 GB of KV headroom per card, 7500 requests in flight, about 270
cards' worth of KV), the book calculators' test vector (calculators/tests/test_calculators.py
@a98dbf79: 1000 QPS x 300 tokens, 5000 tokens/s per instance, waterline 0.7 -> 87
instances), NVIDIA's H100 SXM datasheet (989 TFLOPS dense BF16, 3.35 TB/s), official model
configs (Qwen/Qwen3-8B: 36 layers, 32 heads, 8 KV heads, head_dim 128; Llama-3-70B: 80
layers, 64 heads, 8 KV heads, head_dim 128), the vLLM memory log cited by FX72, Databricks'
MBU example and FlashAttention-2's attention FLOP count.
"""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main
from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.numeric.calculators import Calculator, load_records, run

GiB = 2**30


@pytest.fixture(scope="module")
def records():
    return load_records(shipped_root())


def capacity(records, module, **given):
    return run(Calculator.from_record(records["calc:inference-capacity"]), module, given)


def fleet(records, module, **given):
    return run(Calculator.from_record(records["calc:serving-fleet"]), module, given)


def out(result, name):
    return result.outputs[name].value


# The book's chapter 24 decode pool: 70B with FP8 weights (params x 1 B = 70 GB), a
# Llama-3-70B attention shape with an FP16 cache (2 x 80 x 8 x 128 x 2 = 327680 B per token),
# TP 4, 400 TFLOPS effective (MFU folded in, so mfu = 1), 3 TB/s, 4096-token prompts and
# 500 output tokens; the book's KV headroom of about 40 GB per card is taken as 40 GiB.
BOOK_70B = dict(params=70e9, params_active=70e9, bytes_param=1, layers=80, heads=64, head_dim=128, kv_heads=8,
                kv_bytes=2, tp_size=4, peak_flops="400TFLOPS", hbm_bandwidth="3TB/s", prompt_tokens=4096,
                avg_output_tokens=500, mfu=1)

# Qwen3-8B-sized on one H100 SXM: 8e9 parameters in BF16 (16 GB), Qwen/Qwen3-8B config.json
# shape (36 layers, 32 query heads, 8 KV heads, head_dim 128, BF16 cache: 147456 B per token),
# NVIDIA H100 SXM datasheet 989 TFLOPS dense BF16 and 3.35 TB/s, 80 GiB with vLLM's default
# gpu_memory_utilization 0.9 and 4 GiB of engine overhead.
QWEN_H100 = dict(params=8e9, params_active=8e9, layers=36, heads=32, head_dim=128, kv_heads=8, kv_bytes=2,
                 peak_flops="989TFLOPS", hbm_bandwidth="3.35TB/s", gpu_memory_total="80GiB",
                 engine_overhead_bytes="4GiB")


# ---------------------------------------------------------------------- inference-capacity: worked examples


def test_book_ch24_decode_pool(records, module):
    r = capacity(records, module, **BOOK_70B, kv_budget_per_gpu="40GiB", batch_size=113, prefill_flops_basis="per_token")
    # F8: 2 x 80 x 8 x 128 x 2 = 327680 B per token (the book's 320 KB); 8 KV heads over TP 4: 81920 B per GPU
    assert out(r, "kv_bytes_per_token") == 327680
    assert out(r, "kv_bytes_per_token_per_gpu") == 81920
    # max_batch: 40 x 2^30 / 81920 = 524288 tokens; 4096 + 500 = 4596 tokens take 288 blocks = 4608;
    # floor(524288 / 4608) = floor(113.78) = 113 (the book: about 28 per card x 4 cards)
    assert out(r, "max_concurrent_requests") == 113
    # prefill, the book's 2N count: 2 x 70e9 x 4096 = 5.7344e14 FLOPs / (4 x 4e14) = 0.3584 s
    assert out(r, "prefill_time") == pytest.approx(0.3584)
    assert out(r, "ttft") == pytest.approx(0.3584)  # no queueing unless given
    # decode: weights 70e9 / 4 = 17.5e9 B per card (the book's 6 ms at 3 TB/s) plus
    # 113 x 4596 x 81920 = 42544988160 B of KV: 60044988160 / 3e12 = 0.0200149960 s
    assert out(r, "decode_memory_time") == pytest.approx(60044988160 / 3e12)
    # compute: 113 x 1.4e11 / 1.6e15 = 0.0098875 s, below the reads: memory-bound
    assert out(r, "decode_compute_time") == pytest.approx(0.0098875)
    assert out(r, "decode_step_time") == pytest.approx(60044988160 / 3e12)
    assert out(r, "tpot") == pytest.approx(60044988160 / 3e12)  # 20.0 ms, under the book's 50 ms SLO
    # e2e = 0.3584 + 499 x 0.0200149960 = 10.3458830 s; throughput 113 / 0.0200149960 = 5645.77 tokens/s
    assert out(r, "e2e_latency") == pytest.approx(0.3584 + 499 * 60044988160 / 3e12)
    assert out(r, "decode_throughput") == pytest.approx(113 / (60044988160 / 3e12))
    # crossover: 400e12 / 3e12 x 70e9 / 1.4e11 = 66.67 sequences; 113 is past it (weights only)
    assert out(r, "crossover_batch") == pytest.approx(400 / 3 * 70e9 / 1.4e11)
    assert any("weights-only crossover" in w for w in r.warnings)


def test_qwen3_8b_on_one_h100(records, module):
    # 1792-token prompts and 256 output tokens: a 2048-token context, FX75's worked example
    r = capacity(records, module, **QWEN_H100, batch_size=32, prompt_tokens=1792, avg_output_tokens=256)
    assert out(r, "weight_bytes") == 16e9  # 8e9 x 2 B (F6)
    assert out(r, "kv_bytes_per_token") == 2 * 36 * 8 * 128 * 2 == 147456
    # FX72: 80 GiB x 0.9 - 16e9 B - 4 GiB = 57014444032 B
    assert out(r, "kv_budget_per_gpu") == pytest.approx(80 * 0.9 * GiB - 16e9 - 4 * GiB)
    # 57014444032 / 147456 = 386655.6 tokens; / 2048 (128 whole blocks) = 188.8 -> 188
    assert out(r, "max_concurrent_requests") == 188
    # FX75's example: (16e9 + 32 x 2048 x 147456) / 3.35e12 = 7.6607989e-3 s at MBU 1
    assert out(r, "decode_memory_time") == pytest.approx((16e9 + 32 * 2048 * 147456) / 3.35e12)
    # compute 32 x 1.6e10 / 9.89e14 = 5.177e-4 s: memory-bound
    assert out(r, "decode_compute_time") == pytest.approx(32 * 1.6e10 / 989e12)
    assert out(r, "tpot") == pytest.approx((16e9 + 32 * 2048 * 147456) / 3.35e12)
    # prefill with causal attention (FlashAttention-2 count): 2 x 8e9 x 1792 + 4 x 36 x 32 x 128 x 1792^2 / 2
    # = 2.8672e13 + 9.4704e11 = 2.9619040e13 FLOPs / 9.89e14 = 0.029949 s
    flops = 2 * 8e9 * 1792 + 4 * 36 * 32 * 128 * 1792**2 / 2
    assert out(r, "prefill_time") == pytest.approx(flops / 989e12)
    # crossover: 989e12 / 3.35e12 x 16e9 / 1.6e10 = 295.22 sequences (FX76's ridge)
    assert out(r, "crossover_batch") == pytest.approx(989 / 3.35)
    assert not r.warnings


def test_max_batch_matches_kv_concurrency(records, module):
    # the same budget rule as kv-concurrency: the vLLM log cited by FX72 (Llama-3.1-8B on one H100:
    # 79.18 GiB, 0.9, weights 14.99 GiB, overhead 4.89 GiB; 32 layers, 8 KV heads, head_dim 128, BF16)
    # with 4096 + 4096 = 8192-token contexts: 51.382 GiB / 131072 B = 420921.6 tokens / 8192 = 51.38 -> 51
    shape = dict(layers=32, kv_heads=8, head_dim=128, kv_bytes=2, gpu_memory_total="79.18GiB", weight_bytes="14.99GiB",
                 engine_overhead_bytes="4.89GiB")
    r = capacity(records, module, **shape, heads=32, params_active=8e9, peak_flops="989TFLOPS", hbm_bandwidth="3.35TB/s",
                 batch_size=16, prompt_tokens=4096, avg_output_tokens=4096)
    kv = run(Calculator.from_record(records["calc:kv-concurrency"]), module, {**shape, "context_tokens": 8192})
    assert out(r, "max_concurrent_requests") == out(kv, "max_concurrent_requests") == 51
    assert out(r, "kv_budget_per_gpu") == pytest.approx((79.18 * 0.9 - 14.99 - 4.89) * GiB)


def test_compute_bound_past_the_h100_ridge(records, module):
    # 512 sequences of 16 + 16 tokens: compute 512 x 1.6e10 / 9.89e14 = 8.2831e-3 s against reads of
    # (16e9 + 512 x 32 x 147456) / 3.35e12 = 5.4973e-3 s: compute-bound, past the 295-sequence ridge
    r = capacity(records, module, **QWEN_H100, batch_size=512, prompt_tokens=16, avg_output_tokens=16)
    assert out(r, "decode_step_time") == pytest.approx(512 * 1.6e10 / 989e12)
    assert out(r, "decode_memory_time") == pytest.approx((16e9 + 512 * 32 * 147456) / 3.35e12)
    assert any("weights-only crossover" in w for w in r.warnings)


def test_databricks_mbu_example(records, module):
    # Databricks 2023: a 7B model in 16-bit (14 GB) at 50% MBU on a 2 TB/s machine decodes at 14 ms per
    # token, KV ignored. Llama-2-7B (meta-llama/Llama-2-7b-hf config.json: 32 layers, 32 heads, MHA,
    # head_dim 128) caches 2 x 32 x 32 x 128 x 2 = 524288 B per token; one request of 64 + 64 tokens adds
    # 128 x 524288 = 67108864 B: (14e9 + 67108864) / (2e12 x 0.5) = 0.0140671 s
    r = capacity(records, module, attention="mha", weight_bytes="14GB", params_active=7e9, layers=32, heads=32, head_dim=128,
                 kv_bytes=2, peak_flops="312TFLOPS", hbm_bandwidth="2TB/s", mbu=0.5, kv_budget_per_gpu="50GiB",
                 batch_size=1, prompt_tokens=64, avg_output_tokens=64)
    assert out(r, "tpot") == pytest.approx((14e9 + 128 * 524288) / 1e12)
    assert out(r, "tpot") == pytest.approx(0.014, rel=0.005)  # the article's 14 ms


def test_metric_definitions_travel_and_hold(records, module):
    r = capacity(records, module, **BOOK_70B, kv_budget_per_gpu="40GiB", batch_size=64, queue_time="200ms")
    text = "\n".join(r.assumptions)
    assert "TTFT runs from the request's arrival to its first output token" in text
    assert "TPOT = (E2E − TTFT) / (output tokens − 1)" in text
    # TTFT includes the given queueing; TPOT = (E2E - TTFT) / (output - 1) holds exactly
    assert out(r, "ttft") == pytest.approx(0.2 + out(r, "prefill_time"))
    assert out(r, "tpot") == pytest.approx((out(r, "e2e_latency") - out(r, "ttft")) / (500 - 1))


def test_model_does_not_fit_and_batch_over_max(records, module):
    # vLLM log cited by FX72: 70B FP8 at TP 1 on one H100, 79.18 GiB x 0.9 - 67.72 - 4.98 = -1.438 GiB
    r = capacity(records, module, **{**BOOK_70B, "tp_size": 1}, weight_bytes="67.72GiB", gpu_memory_total="79.18GiB",
                 engine_overhead_bytes="4.98GiB", batch_size=8)
    assert out(r, "kv_budget_per_gpu") == pytest.approx((79.18 * 0.9 - 67.72 - 4.98) * GiB)
    assert any("the model does not fit" in w for w in r.warnings)
    assert any("exceeds max_batch" in w for w in r.warnings)


def test_batch_from_a_tpot_target(records, module):
    # batch_rule=tpot_target on the book's pool: memory side (3e12 x 0.05 - 17.5e9) / (4596 x 81920)
    # = 351.9 -> 351, compute side 0.05 x 1.6e15 / 1.4e11 = 571.4 -> 571, KV budget 113: 113
    r = capacity(records, module, **BOOK_70B, kv_budget_per_gpu="40GiB", batch_rule="tpot_target", tpot_target="50ms")
    assert out(r, "decode_batch") == 113


def test_bad_input_names_it(records, module):
    with pytest.raises(InputError) as exc:
        capacity(records, module, **BOOK_70B, kv_budget_per_gpu="40GiB", batch_size=8, mbu=1.5)
    assert exc.value.field == "--set mbu"
    with pytest.raises(InputError) as exc:
        capacity(records, module, **BOOK_70B, kv_budget_per_gpu="40GiB", batch_size="8GB")
    assert exc.value.field == "--set batch_size"


# ---------------------------------------------------------------------- serving-fleet: worked examples


def test_book_calculator_vector_measured_path(records, module):
    # book calculators test vector: 1000 QPS x 300 tokens = 3e5 tokens/s; 5000 per instance at waterline
    # 0.7: ceil(3e5 / 3500) = ceil(85.71) = 86, + 1 redundancy = 87; surge 3e5 <= 87 x 5000: absorbed
    r = fleet(records, module, qps=1000, prompt_tokens=2000, avg_output_tokens=300, instance_goodput=5000)
    assert out(r, "token_demand") == 300000
    assert out(r, "n_instances") == 86
    assert out(r, "n_instances_total") == 87
    assert out(r, "surge_absorbed") == 1
    assert r.formulas[:2] == ["FX86", "FX87"]  # the model chain stopped at the measured goodput
    # with 8-card instances (gpus_per_instance given): 86 x 8 + 1 x 8 = 696 cards (FX88's example)
    r = fleet(records, module, qps=1000, prompt_tokens=2000, avg_output_tokens=300, instance_goodput=5000, gpus_per_instance=8)
    assert out(r, "n_gpus_required") == 696


def test_surge_not_absorbed_queues_during_cold_start(records, module):
    # the same fleet under a 1.5x surge: 450000 > 435000 tokens/s; with a 120 s cold start
    # (450000 - 435000) x 120 = 1.8e6 tokens wait
    r = fleet(records, module, qps=1000, prompt_tokens=2000, avg_output_tokens=300, instance_goodput=5000, surge_factor=1.5,
              cold_start_time="2min")
    assert out(r, "surge_absorbed") == 0
    assert out(r, "surge_backlog") == pytest.approx(1.8e6)
    assert any("surge is not absorbed" in w for w in r.warnings)


def test_book_ch24_littles_law(records, module):
    # the book's residence: 500 tokens x 50 ms = 25 s; 300 QPS x 25 s = 7500 requests in flight.
    # One TP-4 instance holds 113 (40 GiB per card, see the capacity test): goodput 300 x 500 x 113 / 7500
    # = 2260 tokens/s; ceil(150000 / 2260) = ceil(66.37) = 67 instances x 4 = 268 cards at waterline 1
    # without redundancy, the book's "about 270 cards' worth of KV" (7500 / 28 per card = 268). The book
    # sizes this decode pool apart from its prefill pool, so the goodput counts the decode slots only.
    r = fleet(records, module, **BOOK_70B, kv_budget_per_gpu="40GiB", qps=300, tpot_target="50ms", e2e_latency=25,
              waterline=1, redundancy_instances=0, goodput_limit="decode_slots")
    assert out(r, "concurrency") == 7500
    assert out(r, "instance_goodput") == pytest.approx(2260)
    assert out(r, "n_instances") == 67
    assert out(r, "n_gpus_required") == 268
    assert out(r, "n_gpus_required") == pytest.approx(270, rel=0.01)
    assert out(r, "n_decode_gpus") == 268  # FX157: the same count as the decode pool of a disaggregated fleet


def test_book_ch24_sized_from_both_targets(records, module):
    # TTFT 1 s with 0.5 s kept for queueing and transfer (book ch24): prefill with causal attention
    # 2 x 70e9 x 4096 + 4 x 80 x 64 x 128 x 4096^2 / 2 = 5.9543023e14 FLOPs needs 5.9543e14 / (0.5 x 4e14)
    # = 2.98 cards -> 4 (the book: about 3 cards per request). KV: 80 GiB x 0.9 - 70e9 / 4 - 5 GiB
    # = 54440702208 B per card / 81920 = 664559.4 tokens / 4608 = 144.2 -> 144 requests, below the TPOT
    # sides 351 (memory) and 571 (compute): batch 144.
    r = fleet(records, module, **{k: v for k, v in BOOK_70B.items() if k != "tp_size"}, gpu_memory_total="80GiB",
              engine_overhead_bytes="5GiB", qps=300, ttft_target="1s", queue_time="0.5s", tpot_target="50ms",
              waterline=1, redundancy_instances=0)
    assert out(r, "tp_size") == 4
    assert out(r, "decode_batch") == 144
    flops = 2 * 70e9 * 4096 + 4 * 80 * 64 * 128 * 4096**2 / 2
    ttft = 0.5 + flops / 1.6e15  # 0.8721439 s, within the 1 s target
    assert out(r, "ttft") == pytest.approx(ttft)
    tpot = (17.5e9 + 144 * 4596 * 81920) / 3e12  # 0.0239055 s, within 50 ms
    assert out(r, "tpot") == pytest.approx(tpot)
    e2e = ttft + 499 * tpot  # 12.80103 s
    assert out(r, "e2e_latency") == pytest.approx(e2e)
    assert out(r, "concurrency") == pytest.approx(300 * e2e)  # 3840.3 in flight (Little's law)
    # decode slots: ceil(3840.3 / 144) = ceil(26.67) = 27 instances of 4 cards = 108
    assert out(r, "n_decode_gpus") == 108
    # prefill: 300 req/s x 5.9543023e14 FLOPs = 1.7862907e17 FLOP/s over 4e14 per card = 446.57 cards busy;
    # ceil(446.57 / 4) = 112 instances of 4 = 448 cards (the book's ch24 sizes a separate prefill pool)
    assert out(r, "prefill_gpu_load") == pytest.approx(300 * flops / 4e14)
    assert out(r, "n_prefill_gpus") == 448
    # colocated, the prefill binds: 112 instances, 448 cards
    assert out(r, "n_instances") == 112
    assert out(r, "n_gpus_required") == 448
    assert "the prefill FLOP/s bind, not the decode slots: n_instances follows prefill_gpu_load; a PD-disaggregated fleet " \
           "needs n_prefill_gpus + n_decode_gpus cards (n_prefill_gpus > n_decode_gpus)" in r.warnings
    assert not [w for w in r.warnings if "does not fit" in w or "no batch meets" in w or "TTFT target missed" in w]


def test_qwen3_8b_h100_slo_fleet(records, module):
    # 20 QPS of 1792 + 256 tokens, TPOT 25 ms, assumed MFU 0.5 and MBU 0.8, waterline 0.7, one spare,
    # one card per replica (a TTFT target of 0.5 s would need 2.9619e13 FLOPs / (0.5 s x 4.945e14)
    # = 0.12 of a card -> 1; tp_size is given because a given mbu cuts FX35's subtree, see the report).
    # KV: 57014444032 / 147456 / 2048 = 188.8 -> 188; memory side (3.35e12 x 0.8 x 0.025 - 16e9) /
    # (2048 x 147456) = 168.9 -> 168; compute side 0.025 x 4.945e14 / 1.6e10 = 772.7: batch 168.
    r = fleet(records, module, **QWEN_H100, mfu=0.5, mbu=0.8, qps=20, prompt_tokens=1792, avg_output_tokens=256,
              tp_size=1, tpot_target="25ms")
    assert out(r, "decode_batch") == 168
    tpot = (16e9 + 168 * 2048 * 147456) / (3.35e12 * 0.8)  # 0.0249009 s
    prefill = (2 * 8e9 * 1792 + 4 * 36 * 32 * 128 * 1792**2 / 2) / (989e12 * 0.5)  # 0.0598969 s
    assert out(r, "tpot") == pytest.approx(tpot)
    assert out(r, "ttft") == pytest.approx(prefill)
    e2e = prefill + 255 * tpot  # 6.40962 s
    goodput = 20 * 256 * 168 / (20 * e2e)  # 6709.9 tokens/s from the decode slots
    # prefill: 20 x 2.9619e13 FLOPs / (989e12 x 0.5) = 1.1979 cards busy; one card's share of the
    # 5120 tokens/s is 5120 / 1.1979 = 4274.1 tokens/s, below the decode slots, so it is the goodput
    share = 20 * 256 / (20 * prefill)  # prefill_gpu_load = qps x one request's prefill time on one card
    assert out(r, "instance_goodput") == pytest.approx(min(goodput, share))
    # ceil(5120 / (6709.9 x 0.7)) = ceil(1.09) = 2, + 1 spare = 3 instances of 1 card
    assert out(r, "n_instances") == 2
    assert out(r, "n_gpus_required") == 3


def test_given_tp_size_replaces_the_ttft_sizing(records, module):
    # one card: 0.5 s allowance + 5.9543023e14 / 4e14 = 1.98858 s, over the 1 s target; with tp_size
    # given, the TTFT target no longer sizes anything; the optional ttft_headroom output still checks it
    r = fleet(records, module, **{**BOOK_70B, "tp_size": 1}, kv_budget_per_gpu="40GiB", qps=300, tpot_target="50ms",
              ttft_target="1s", queue_time="0.5s")
    assert out(r, "ttft") == pytest.approx(0.5 + (2 * 70e9 * 4096 + 4 * 80 * 64 * 128 * 4096**2 / 2) / 4e14)
    # the TTFT target no longer sizes tp_size, but it is still checked: FX139 headroom = 1 - 1.98858 s < 0
    assert out(r, "ttft_headroom") == pytest.approx(1 - out(r, "ttft"))
    assert out(r, "ttft_headroom") < 0


def test_fleet_refuses_speculative(records, module):
    with pytest.raises(InputError) as exc:
        fleet(records, module, qps=10, prompt_tokens=100, avg_output_tokens=100, instance_goodput=1000, decoding="speculative")
    assert exc.value.field == "--set decoding"


def test_doubling_qps_doubles_demand_and_in_flight(records, module):
    base = dict(**BOOK_70B, kv_budget_per_gpu="40GiB", tpot_target="50ms", e2e_latency=25, waterline=1, redundancy_instances=0,
                goodput_limit="decode_slots")
    one, two = fleet(records, module, qps=300, **base), fleet(records, module, qps=600, **base)
    assert out(two, "concurrency") == 2 * out(one, "concurrency")
    assert out(two, "token_demand") == 2 * out(one, "token_demand")
    # 15000 in flight / 113 per instance = 132.7 -> 133
    assert out(two, "n_instances") == 133


# ---------------------------------------------------------------------- CLI


def cli(argv, capsys):
    code = main(argv)
    o, e = capsys.readouterr()
    return code, o, e


def sets(**kv):
    return [a for k, v in kv.items() for a in ("--set", f"{k}={v}")]


def test_cli_inference_capacity_json_and_explain(capsys):
    argv = ["calc", "inference-capacity", *sets(**BOOK_70B, kv_budget_per_gpu="40GiB", batch_size=113,
                                                  prefill_flops_basis="per_token")]
    code, o, _ = cli([*argv, "--format", "json"], capsys)
    assert code == 0
    data = json.loads(o)
    assert data["outputs"]["max_concurrent_requests"]["value"] == 113
    assert data["outputs"]["prefill_time"]["value"] == pytest.approx(0.3584)  # 5.7344e14 / 1.6e15
    code, o, _ = cli([*argv, "--explain"], capsys)
    assert code == 0
    assert "FX75 Decode step time (memory-bound) (roofline)" in o
    assert "TPOT = (E2E − TTFT) / (output tokens − 1)" in o


def test_cli_serving_fleet_book_vector(capsys):
    code, o, _ = cli(["calc", "serving-fleet", *sets(qps=1000, prompt_tokens=2000, avg_output_tokens=300,
                                                     instance_goodput=5000), "--format", "json"], capsys)
    assert code == 0
    assert json.loads(o)["outputs"]["n_instances_total"]["value"] == 87  # the book's test vector


def test_cli_bad_input_one_line(capsys):
    code, o, e = cli(["calc", "serving-fleet", *sets(qps="10GB", prompt_tokens=2000, avg_output_tokens=300,
                                                     instance_goodput=5000)], capsys)
    assert code == 2 and o == "" and e.count("\n") == 1 and "--set qps" in e and "Traceback" not in e


def test_cli_help_names_book_terms(capsys):
    code, o, _ = cli(["calc", "serving-fleet", "--help"], capsys)
    assert code == 0 and "measured_instance_tokens_per_s" in o and "waterline" in o


# ---------------------------------------------------------------------- serving-fleet: Llama-3.1-70B on H100 SXM

# The case: --model llama-3.1-70b --device h100-sxm, 50 req/s of 2048 + 256 tokens, TTFT 1 s,
# TPOT 50 ms, BF16 cache, 4 GiB engine overhead. Presets: 70553706496 parameters (knowledge/models/
# llama-3.1-70b.yaml, from the checkpoint's safetensors metadata), 80 layers, 64 heads, 8 KV heads of 128;
# H100 SXM (knowledge/hardware/h100-sxm.yaml): 989.4 TFLOPS dense BF16 (Hopper whitepaper), 3.35 TB/s,
# driver-reported 79.18 GiB, measured MFU 0.38..0.43 (Llama 3 paper, table 4; a pre-training band), point 0.405.
LLAMA_70B_H100 = ["--model", "llama-3.1-70b", "--device", "h100-sxm", *sets(
    qps=50, prompt_tokens=2048, avg_output_tokens=256, ttft_target="1s", tpot_target="50ms", kv_bytes=2,
    engine_overhead_bytes="4GiB", mfu=(0.38 + 0.43) / 2, mbu=1, step_overhead_time=0)]  # MFU: the h100-sxm record's measured band; MBU 1 (the datasheet bandwidth); no step overhead (the hand arithmetic below has none); all pinned, the defaults are the serving calibration's
PARAMS_70B = 70553706496
PEAK_H100 = 989.4e12
MFU_H100 = (0.38 + 0.43) / 2
USABLE_H100 = 79.18 * GiB * 0.9 - 4 * GiB  # 72222022566 B per card after the 4 GiB overhead


def fleet_json(argv, capsys):
    code, o, e = cli(["calc", "serving-fleet", *argv, "--format", "json"], capsys)
    assert code == 0, e
    data = json.loads(o)
    return {k: v["value"] for k, v in data["outputs"].items()}, data["warnings"]


def llama_prefill_flop_rate():
    # prefill FLOP/s = qps x (2 N prompt + causal attention 4 L a d s^2 / 2), written out:
    matmuls = 2 * PARAMS_70B * 2048 * 50  # 2 x 70.55e9 x 2048 x 50 = 1.44494e16 FLOP/s
    attention = 4 * 80 * 64 * 128 * 2048**2 / 2 * 50  # 5.4976e12 per request x 50 = 2.7488e14 FLOP/s
    return matmuls + attention  # 1.472428e16 FLOP/s


def test_llama_70b_tp_from_memory_not_ttft(capsys):
    # TTFT alone: 2.944855e14 FLOPs / (989.4e12 x 0.405) = 0.735 s < 1 s on one card, but one card
    # cannot hold 141107412992 B of BF16 weights. Memory: (141107412992 + 2304 x 327680) / 72222022566
    # = 1.964 cards -> 2 (the smallest power of two that fits).
    got, warnings = fleet_json(LLAMA_70B_H100, capsys)
    assert (2 * PARAMS_70B + 2304 * 327680) / USABLE_H100 == pytest.approx(1.964, abs=1e-3)
    assert got["tp_size"] == 2
    # KV at TP 2: 72222022566 - 70553706496 = 1668316070 B per card / 163840 B per token = 10182 tokens,
    # / 2304 per request = 4.42 -> 4 requests per replica (the memory side of FX134 allows 256)
    assert got["decode_batch"] == 4
    assert all(got[n] > 0 for n in ("decode_batch", "n_instances", "n_instances_total", "n_gpus_required"))
    # prefill: 1.472428e16 FLOP/s / (989.4e12 x 0.405 = 4.00707e14) = 36.75 cards busy, "about 37 GPUs"
    assert got["prefill_gpu_load"] == pytest.approx(llama_prefill_flop_rate() / (PEAK_H100 * MFU_H100))
    assert got["prefill_gpu_load"] == pytest.approx(36.75, abs=0.01)
    # prefill pool: ceil(36.75 / (2 x 0.7)) = ceil(26.25) = 27 instances x 2 = 54 cards
    assert got["n_prefill_gpus"] == 54
    # decode slots: ttft 2.944855e14 / 8.01414e14 = 0.36746 s, tpot (70553706496 + 4 x 2304 x 163840) / 3.35e12
    # = 0.0215115 s, e2e 0.36746 + 255 x 0.0215115 = 5.8529 s, 292.64 in flight / (4 x 0.7) = 104.5 -> 105 x 2
    assert got["n_decode_gpus"] == 210
    # the decode slots bind: 105 instances + 1 spare, 105 x 2 + 2 = 212 cards, and no prefill-binds warning
    assert got["n_instances"] == 105
    assert got["n_gpus_required"] == 212
    assert not [w for w in warnings if "prefill FLOP/s bind" in w]


def test_llama_70b_tp8_prefill_binds(capsys):
    # TP 8: KV (72222022566 - 141107412992 / 8) / 40960 B per token / 2304 = 578.4 -> 578 requests; the
    # decode step is compute-bound at 578 x 1.41107e11 / (8 x 4.00707e14) = 0.025443 s, e2e about
    # 0.0919 + 255 x 0.025443 = 6.58 s, 329 in flight: ceil(329 / (578 x 0.7)) = 1 instance, 8 cards.
    # Prefill: 36.75 cards busy, ceil(36.75 / (8 x 0.7)) = ceil(6.56) = 7 instances, 56 cards: prefill binds.
    got, warnings = fleet_json([*LLAMA_70B_H100, "--set", "tp_size=8"], capsys)
    assert got["decode_batch"] == 578
    assert got["n_decode_gpus"] == 8
    assert got["n_prefill_gpus"] == 56
    assert got["n_instances"] == 7
    assert got["n_gpus_required"] == 7 * 8 + 8  # one spare instance of 8
    assert any(w.startswith("the prefill FLOP/s bind, not the decode slots") for w in warnings)


def test_no_tp_within_one_node_holds_405b_refused(capsys):
    # Llama-3.1-405B in BF16: 2 x 405853388800 = 811706777600 B (knowledge/models/llama-3.1-405b.yaml);
    # / 72222022566 B per card = 11.2 -> 16 cards, beyond one 8-GPU node: refused, one line
    argv = [a if a != "llama-3.1-70b" else "llama-3.1-405b" for a in LLAMA_70B_H100]
    code, o, e = cli(["calc", "serving-fleet", *argv], capsys)
    assert code == 2 and o == ""
    assert e.count("\n") == 1 and "Traceback" not in e
    assert "--set tp_size: no tensor-parallel group of 1, 2, 4 or 8 GPUs (one 8-GPU NVLink node) holds the weights" in e
    assert "(tp_size_memory = 16)" in e


def test_given_tp_too_small_refused_not_negative(capsys):
    # tp_size=1: 72222022566 - 141107412992 B < 0 of KV budget; the old answer was decode_batch -92 and
    # n_gpus_required -3 with exit 0
    code, o, e = cli(["calc", "serving-fleet", *LLAMA_70B_H100, "--set", "tp_size=1"], capsys)
    assert code == 2 and o == "" and e.count("\n") == 1
    assert "--set tp_size: the model does not fit at this tp_size: no KV cache is left after weights and engine overhead" in e


def test_unreachable_tpot_refused(capsys):
    # TP 2 reads 70553706496 B of weights per step: at 3.35 TB/s that is 21.06 ms, so a 10 ms TPOT has no batch
    argv = [a if a != "tpot_target=50ms" else "tpot_target=10ms" for a in LLAMA_70B_H100]
    code, o, e = cli(["calc", "serving-fleet", *argv], capsys)
    assert code == 2 and o == "" and e.count("\n") == 1
    assert "--set tpot_target: no batch meets the TPOT target within the KV budget" in e


def test_surge_factor_below_one_refused(capsys):
    # a surge factor is the burst over the planned peak: below 1 it is no surge (domain ge_one)
    code, o, e = cli(["calc", "serving-fleet", *sets(qps=1000, prompt_tokens=2000, avg_output_tokens=300,
                                                     instance_goodput=5000, surge_factor=0.8)], capsys)
    assert (code, o, e) == (2, "", "aiinfra: error: --set surge_factor: expected a number >= 1, got 0.8\n")


def test_prefix_hit_rate_of_one_refused(capsys):
    # h = 1 would mean no prompt token is ever prefilled: the domain is [0, 1) (fraction_below_one)
    code, o, e = cli(["calc", "serving-fleet", *LLAMA_70B_H100, "--set", "prefix_hit_rate=1"], capsys)
    assert (code, o, e) == (2, "", "aiinfra: error: --set prefix_hit_rate: expected a fraction from 0 up to but not including 1, got 1\n")
