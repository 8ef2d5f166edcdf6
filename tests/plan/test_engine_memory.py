"""Each serving engine's K/V budget (engine/plan/engine_memory.py), by hand arithmetic from the engines' defaults."""

from __future__ import annotations

import pytest

from engine.plan.engine_memory import GIB, kv_budget


def test_vllm_matches_its_logged_kv_cache_memory():
    # vLLM on one H100 with Llama-3.1-8B (llm-d/llm-d-benchmark empirical-vllm-memory-results.md, FX72's example):
    # 79.18 GiB x 0.9 - 14.99 GiB weights - (4.76 + 0.13) GiB profiled = 51.382 GiB; the log says 51.38 GiB
    b, rule = kv_budget("vllm", 79.18 * GIB, 14.99 * GIB, overhead=4.89 * GIB)
    assert b / GIB == pytest.approx(51.38, abs=0.005)
    assert rule == "vllm"


def test_sglang_reserves_by_memory_class_and_parallel_size():
    # H200 (139.72 GiB measured total), TP 8: reserved (12 + 8 / 2) = 16 GiB; 10 GiB of weights per GPU:
    # 139.72 - 16 - 10 = 113.72 GiB
    assert kv_budget("sglang", 139.72 * GIB, 10 * GIB, world=8)[0] / GIB == pytest.approx(113.72, rel=1e-12)
    # H100 (79.18 GiB), TP 1: reserved 9.5 + 0.5 = 10 GiB; 15 GiB of weights: 79.18 - 10 - 15 = 54.18 GiB
    assert kv_budget("sglang", 79.18 * GIB, 15 * GIB)[0] / GIB == pytest.approx(54.18, rel=1e-12)
    # B200 (178.35 GiB): 32 GiB reserved at any size
    assert kv_budget("sglang", 178.35 * GIB, 0.0, world=4)[0] / GIB == pytest.approx(146.35, rel=1e-12)


def test_tensorrt_llm_takes_its_fraction_of_the_free_memory():
    # 0.9 x (79.18 - 15 - 5) GiB = 0.9 x 59.18 = 53.262 GiB
    assert kv_budget("tensorrt-llm", 79.18 * GIB, 15 * GIB)[0] / GIB == pytest.approx(53.262, rel=1e-12)


def test_an_unknown_engine_takes_fx72s_rule_and_says_so():
    b, rule = kv_budget("lmdeploy", 79.18 * GIB, 15 * GIB)
    assert b == kv_budget("vllm", 79.18 * GIB, 15 * GIB)[0]
    assert "lmdeploy" in rule and "FX72" in rule


@pytest.mark.parametrize(("engine", "version", "total_gib", "device", "limits"), [
    # vLLM's get_batch_defaults (vllm/engine/arg_utils.py) for the OpenAI-compatible server: 70 GiB or more and not an
    # A100 -> max_num_batched_tokens 8192, max_num_seqs 1024; otherwise 2048 and 256 (PR 16158 took the others back to
    # V0's 256). Driver totals as the device records cite them: H100 SXM 79.18 GiB, A100 SXM 80GB 79.26 GiB,
    # L40S 45,589 MiB = 44.5 GiB, H200 139.72 GiB
    ("vllm", "0.11.0", 79.18, "h100-sxm", (8192, 1024)),
    ("vllm", "0.11.0", 79.26, "a100-sxm-80gb", (2048, 256)),
    ("vllm", "0.10.1", 44.5, "l40s", (2048, 256)),
    ("vllm", "0.7.3", 139.72, "h200", (8192, 256)),  # V0: max_num_seqs 256
    ("sglang", "0.5.6", 139.72, "h200", (8192, None)),  # running requests bounded by the K/V pool
    ("tensorrt-llm", "1.0", 79.18, "h100-sxm", (8192, None)),
])
def test_batch_limits_are_each_releases_defaults(engine, version, total_gib, device, limits):
    from engine.plan.engine_memory import GIB, batch_limits

    assert batch_limits(engine, version, total_gib * GIB, device) == limits
