"""Regression tests for the mistakes peer calculators make (../shared/ECOSYSTEM.md, "Where peers go wrong").

Each test names the mistake, the right number from a published source, and the wrong number
the mistake would give, so a regression shows up as the peer's number.

Facts used:
- Qwen3-8B, Qwen/Qwen3-8B config.json: 36 layers, 32 query heads, 8 KV heads, head_dim 128, hidden 4096.
- Gemma-3-27B, google/gemma-3-27b-it config.json (text_config): 62 layers, hidden 5376, 32 heads,
  16 KV heads, head_dim 128 (5376 / 32 = 168 would be wrong).
- H100 SXM: 80 GB (datasheet), 989.4 TFLOPS dense BF16 / 1978.9 sparse, 494.7 TFLOPS dense TF32
  (Hopper whitepaper WP-10792-001).
- A100 SXM 80GB datasheet: BF16 312 TFLOPS dense / 624 sparse, TF32 156 dense.
"""

from __future__ import annotations

import pytest

from engine import api


def kv(**given):
    return api.calculator("kv-concurrency").run(**given)


QWEN = dict(layers=36, kv_heads=8, head_dim=128, kv_bytes=2)


def test_kv_counts_both_k_and_v():
    # 2 (K and V) x 36 x 8 x 128 x 2 B = 147,456 B per token; without the 2: 73,728 B
    r = kv(**QWEN, gpu_memory_total="80GB", weight_bytes="16GB", engine_overhead_bytes="2GiB", context_tokens=4096)
    assert r.outputs["kv_bytes_per_token"].value == 147_456


def test_kv_uses_kv_heads_not_query_heads():
    # GQA: 8 KV heads, not the 32 query heads (589,824 B per token would be 4x too high)
    r = api.calculator("kv-concurrency").run(model="qwen3-8b", kv_bytes=2, gpu_memory_total="80GB", context_tokens=4096,
                                             engine_overhead_bytes="2GiB")
    assert r.outputs["kv_bytes_per_token"].value == 147_456
    assert r.inputs["kv_heads"].value == 8


def test_head_dim_taken_from_config_not_hidden_over_heads():
    # Gemma-3-27B states head_dim 128; hidden / heads = 5376 / 32 = 168 would give 31% more KV:
    # 2 x 62 x 16 x 128 x 2 B = 507,904 B per token (with 168: 666,624 B)
    r = api.calculator("kv-concurrency").run(model="gemma-3-27b-it", kv_bytes=2, gpu_memory_total="80GB", context_tokens=4096,
                                             engine_overhead_bytes="2GiB", kv_layout="full")
    assert r.inputs["head_dim"].value == 128
    assert r.outputs["kv_bytes_per_token"].value == 507_904


def test_kv_divided_by_tensor_parallelism():
    # tp 8 over 8 KV heads: each GPU holds 1 head: 147,456 / 8 = 18,432 B per token per GPU
    r = kv(**QWEN, tp_size=8, gpu_memory_total="80GB", weight_bytes="16GB", engine_overhead_bytes="2GiB", context_tokens=4096)
    assert r.outputs["kv_bytes_per_token_per_gpu"].value == 18_432
    assert r.outputs["kv_bytes_per_token"].value == 147_456  # the whole model's figure stays as model cards state it


def test_serving_engine_reservation_is_not_ignored():
    # vLLM's budget from the driver-reported 79.18 GiB (vLLM logs on H100, llm-d-benchmark@25933486):
    # 85.02e9 x 0.9 - 16.38e9 (weights) - 2 GiB = 57.99e9 B -> 48 requests of 8192 tokens.
    # Ignoring utilisation and overhead: 85.02e9 - 16.38e9 = 68.64e9 B -> 56 requests (17% more than fit).
    r = api.calculator("kv-concurrency").run(model="qwen3-8b", device="h100-sxm", kv_bytes=2, tp_size=1, context_tokens=8192,
                                             gpu_memory_utilization=0.9, engine_overhead_bytes="2GiB")
    assert r.outputs["max_concurrent_requests"].value == 48


def test_gb_and_gib_are_not_mixed():
    # The driver reports 79.18 GiB = 85,018,874,101.76 B on an H100 80GB (not 79.18e9, not the nominal 80e9)
    r = api.calculator("kv-concurrency").run(device="h100-sxm", **QWEN, weight_bytes="16GB", engine_overhead_bytes="2GiB",
                                             context_tokens=4096)
    assert r.inputs["gpu_memory_total"].value == pytest.approx(85_018_874_101.76)
    # and a user's GiB stays binary: 80GiB = 85,899,345,920 B
    r = kv(**QWEN, gpu_memory_total="80GiB", weight_bytes="16GB", engine_overhead_bytes="2GiB", context_tokens=4096)
    assert r.inputs["gpu_memory_total"].value == 85_899_345_920


@pytest.mark.parametrize("device, dense", [("h100-sxm", 989.4e12), ("a100-sxm-80gb", 312e12)])
def test_sparse_peak_is_never_used_as_dense(device, dense):
    r = api.calculator("training-duration").run(device=device, params_active=8e9, train_tokens="1T", n_gpus=8, mfu=0.4)
    assert r.inputs["peak_flops"].value == dense  # not 1978.9e12 / 624e12 (2:4 sparse)


def test_tf32_peak_is_not_used_for_bf16_mfu():
    # BF16 on H100: 989.4 TFLOPS dense; TF32 is 494.7 (half), which would double the duration
    r = api.calculator("training-duration").run(device="h100-sxm", params_active=8e9, train_tokens="1T", n_gpus=8)
    assert r.inputs["peak_flops"].value == 989.4e12
    r32 = api.calculator("training-duration").run(device="h100-sxm", precision="tf32", params_active=8e9, train_tokens="1T", n_gpus=8, mfu=0.4)
    assert r32.inputs["peak_flops"].value == 494.7e12
