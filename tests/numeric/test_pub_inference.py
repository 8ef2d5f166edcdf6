"""Issue #13, inference slice: published inference numbers reproduced through the CLI JSON and the API.

Sources (every expected number below is transcribed from them or is hand arithmetic on them,
written beside it; none was produced by running this code):
- Austin et al. 2025, "How to Scale Your Model", part 7 "All About Transformer Inference"
  (jax-ml/scaling-book inference.md@ae4e386f): LLaMA 2-13B table (8 TPU v5e, 8.2e11 B/s and
  16 GiB each; 40 layers, 40 KV heads, d_qkv 128, bf16: 819200 B of KV per token, 26 GB of
  weights), the pop quiz (30B int8 on 16 v5e, 100 kB/token, 8192 tokens: 2.5 ms at batch 4,
  about 21 ms at batch 256), B_crit = 1.97e14 / 8.2e11 = 240, and "Sharding the KV cache".
- Qwen/Qwen3-8B config.json (36 layers, 8 KV heads, head_dim 128: 147456 B per BF16 token;
  8,190,735,360 parameters in the shipped model record), NVIDIA H100 SXM: 3.35 TB/s,
  989.4 TFLOPS dense BF16 (whitepaper), 79.18 GiB as the driver reports it (vLLM log cited
  by FX72); Qwen/Qwen3-235B-A22B config.json (94 layers, 4 KV heads, head_dim 128).
- vLLM docs, Optimization and Tuning, Chunked Prefill: decodes first, prefill gets the rest
  of max_num_batched_tokens.
"""

from __future__ import annotations

import json

import pytest

from engine import api
from engine.cli.main import main

GiB = 2**30
QWEN_KV = 2 * 36 * 8 * 128 * 2          # 147456 B per token
QWEN_W = 2 * 8190735360                 # 16381470720 B of BF16 weights
H100_BUDGET = 79.18 * GiB * 0.9 - 4 * GiB  # usable memory minus 4 GiB of overhead


def calc_json(capsys, *argv):
    code = main(["calc", *argv, "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def value(result, name):
    return result["outputs"][name]["value"]


QWEN_ARGS = ("inference-capacity", "--model", "qwen3-8b", "--device", "h100-sxm",
             "--set", "batch_size=32", "--set", "prompt_tokens=2048", "--set", "avg_output_tokens=256",
             "--set", "kv_bytes=2", "--set", "engine_overhead_bytes=4GiB", "--set", "mfu=1", "--set", "mbu=1",
             "--set", "step_overhead_time=0")  # the datasheet peaks and no step overhead (the defaults are the serving calibration's)


def test_inference_capacity_memory_footprint_and_fit(capsys):
    r = calc_json(capsys, *QWEN_ARGS)
    ctx = 2048 + 256
    kv = 32 * ctx * QWEN_KV                        # 10871635968 B
    assert value(r, "batch_kv_bytes") == pytest.approx(kv, rel=1e-9)
    assert value(r, "serving_memory_bytes") == pytest.approx(QWEN_W + kv, rel=1e-9)   # 27253106688 B
    # 79.18 GiB x 0.9 - 16381470720 - 4 GiB - 10871635968 = 44968915877.9 B left per card
    assert value(r, "memory_headroom_per_gpu") == pytest.approx(H100_BUDGET - QWEN_W - kv, rel=1e-9)
    assert "prefill_tokens_per_step" not in r["outputs"]   # needs max_num_batched_tokens


def test_inference_capacity_kv_additive_step_kv_aware_crossover_and_rates(capsys):
    r = calc_json(capsys, *QWEN_ARGS, "--set", "decode_model=kv_additive", "--set", "crossover_basis=kv_aware",
                  "--set", "max_num_batched_tokens=2048", "--set", "request_rate_basis=throughput")
    # scaling book general step: KV/BW + max(compute, W/BW); compute 32 x 1.638e10 / 989.4e12 = 0.53 ms < 4.89 ms
    step = (32 * 2304 * QWEN_KV) / 3.35e12 + QWEN_W / 3.35e12     # 8.1352557 ms
    assert value(r, "decode_step_time") == pytest.approx(step, rel=1e-9)
    # one sequence reads 2304 x 147456 B: R.c.k = 295.34 x 339738624 = 1.0e11 > 2 x 8.19e9 FLOPs -> never crosses
    assert value(r, "crossover_batch") == -1
    assert value(r, "crossover_batch_whole") == -1
    assert value(r, "prefill_tokens_per_step") == 2048 - 32
    assert value(r, "instance_request_rate") == pytest.approx(32 / step / 256, rel=1e-9)   # 15.365 requests/s
    assert value(r, "decode_throughput_per_gpu") == pytest.approx(32 / step, rel=1e-9)     # tp 1
    assert not any("crossover" in w for w in r["warnings"])


def test_decode_throughput_per_gpu_halves_the_replica_rate_at_tp2(capsys):
    r = calc_json(capsys, *QWEN_ARGS, "--set", "tp_size=2")
    tpot = (QWEN_W / 2 + 32 * 2304 * QWEN_KV / 2) / 3.35e12      # 4.0676 ms, memory-bound
    assert value(r, "decode_throughput") == pytest.approx(32 / tpot, rel=1e-9)
    assert value(r, "decode_throughput_per_gpu") == pytest.approx(32 / tpot / 2, rel=1e-9)  # 3933.5 tokens/s


def test_kv_concurrency_replicated_heads_and_even_split(capsys):
    base = ("kv-concurrency", "--model", "qwen3-235b-a22b", "--device", "h100-sxm", "--set", "tp_size=8",
            "--set", "kv_bytes=2", "--set", "context_tokens=4096", "--set", "batch_size=16")
    r = calc_json(capsys, *base)
    full = 2 * 94 * 4 * 128 * 2                                  # 192512 B per token
    assert value(r, "kv_bytes_per_token_per_gpu") == full / 4    # each of 4 heads on 2 of 8 ranks: 48128
    assert "kv_bytes_per_token_per_gpu_sharded" not in r["outputs"]   # only when kv_sharding is chosen
    assert "FX607" not in r["formulas"]
    assert value(r, "batch_kv_bytes") == 16 * 4096 * full
    assert value(r, "memory_headroom_per_gpu") == pytest.approx(
        value(r, "kv_budget_per_gpu") - 16 * 4096 * full / 4, rel=1e-9)
    r = calc_json(capsys, *base, "--set", "kv_sharding=replicate_heads")
    assert value(r, "kv_bytes_per_token_per_gpu_sharded") == full / 4   # 192512 x max(1, 8/4) / 8
    r = calc_json(capsys, *base, "--set", "kv_sharding=even_split")
    assert value(r, "kv_bytes_per_token_per_gpu_sharded") == full / 8   # 24064: heads + batch sharded


def ev(fid, name, **given):
    return api.evaluate(fid, **given).outputs[name].value


@pytest.mark.parametrize("batch, published", [(1, 4.98e-3), (8, 12.13e-3), (16, 20.30e-3), (64, 69.33e-3), (240, 249.09e-3)])
def test_scaling_book_llama2_13b_step_time(batch, published):
    # (26e9/8 + B x 8192 x 819200/8) / 8.2e11; the book rounds one sequence's KV to 6.7 GB (<= 0.16%)
    got = ev("FX75", "decode_step_time", decode_model="memory_bound", weight_bytes="26GB", tp_size=8,
             decode_batch=batch, context_tokens=8192, kv_bytes_per_token_per_gpu=102400, hbm_bandwidth="820GB/s")
    assert got == pytest.approx(published, rel=0.003), f"scaling book LLaMA 2-13B table, batch {batch}"


@pytest.mark.parametrize("batch, published", [(1, 32.7e9), (8, 79.6e9), (16, 133.2e9), (240, 1634e9)])
def test_scaling_book_llama2_13b_total_memory(batch, published):
    kv = ev("FX600", "batch_kv_bytes", decode_batch=batch, context_tokens=8192, kv_bytes_per_token=819200)
    got = ev("FX601", "serving_memory_bytes", weight_bytes="26GB", batch_kv_bytes=kv)
    assert got == pytest.approx(published, rel=0.002), f"scaling book LLaMA 2-13B table, total memory at batch {batch}"


def test_scaling_book_pop_quiz_additive_step():
    common = dict(decode_model="kv_additive", weight_bytes="30GB", tp_size=16, context_tokens=8192,
                  kv_bytes_per_token_per_gpu=100e3 / 16, hbm_bandwidth="810GB/s", mbu=1)
    # batch 256: 16.18 ms of KV + max(256 x 2 x 30e9 / (16 x 1.97e14) = 4.87 ms, 2.31 ms) = 21.05 ms ("roughly 21ms")
    got = ev("FX75", "decode_step_time", decode_batch=256, decode_compute_time=256 * 2 * 30e9 / (16 * 1.97e14), **common)
    assert got == pytest.approx(21e-3, rel=0.01)
    # batch 4: (4 x 819e6 + 30e9) / (16 x 8.1e11) = 2.57 ms, printed as 2.5 ms
    got = ev("FX75", "decode_step_time", decode_batch=4, decode_compute_time=4 * 2 * 30e9 / (16 * 1.97e14), **common)
    assert got == pytest.approx((4 * 8192 * 100e3 + 30e9) / (16 * 8.1e11), rel=1e-6)


def test_scaling_book_critical_batch_v5e():
    got = ev("FX133", "crossover_batch", ridge_intensity=1.97e14 / 8.2e11, weight_bytes="26GB", mfu=1, mbu=1,
             infer_flops_per_token=2.6e10)
    assert got == pytest.approx(240, rel=0.002)          # B_crit = 240 for bf16 on TPU v5e
    assert ev("FX606", "crossover_batch_whole", crossover_batch=got) == 241
