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
