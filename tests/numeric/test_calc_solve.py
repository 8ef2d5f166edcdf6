"""``calc ID --solve INPUT --where ...`` (engine.numeric.calc_solve): the issue's questions against hand arithmetic.

Every expected value is worked out here from the cited numbers, never taken from a run of the engine.
"""

from __future__ import annotations

import math

import pytest

from engine import api
from engine.core.errors import InputError
from engine.numeric import calc_bracket

GIB = 2**30
DAY = 86400


def test_longest_context_for_32_qwen3_8b_requests_on_one_h100():
    # Qwen/Qwen3-8B config.json: 36 layers, 8 K/V heads, head_dim 128; BF16 K/V (2 B): 2 x 36 x 8 x 128 x 2 = 147,456 B per token.
    per_token = 2 * 36 * 8 * 128 * 2
    # weights: 8,190,735,360 parameters (the config's shape: embeddings 151,936 x 4,096 twice, 36 layers of
    # q 4096x4096, k/v 4096x1024 each, o 4096x4096, MLP 3 x 4096 x 12,288, q/k norms 128 each, 2 norms 4096; final norm 4096) x 2 B
    layer = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 12288 + 2 * 128 + 2 * 4096
    params = 2 * 151936 * 4096 + 36 * layer + 4096
    assert params == 8_190_735_360
    # H100 SXM: the driver reports 79.18 GiB (vLLM start-up logs, llm-d-benchmark); vLLM's 0.9 cap; 2 GiB engine overhead
    budget = 79.18 * GIB * 0.9 - params * 2 - 2 * GIB  # 57,988,035,493.9 B
    max_kv_tokens = budget / per_token  # 393,256.4 tokens
    # 32 requests, each holding ceil(c / 16) blocks of 16 tokens: 32 x 16 x ceil(c/16) <= 393,256.4  ->  ceil(c/16) <= 768.08
    blocks = math.floor(max_kv_tokens / (32 * 16))
    assert blocks == 768
    expected = 16 * blocks  # 12,288 tokens
    sol = api.calculator("kv-concurrency").solve("context_tokens", "max_concurrent_requests >= 32", model="qwen3-8b", device="h100-sxm",
                                                 kv_bytes=2, gpu_memory_utilization=0.9, engine_overhead_bytes="2GiB")
    assert sol.value == pytest.approx(expected, rel=1e-12), sol.to_json()
    assert sol.binding == {"high": "max_concurrent_requests >= 32"}
    assert sol.answers[0].method in ("closed_form", "interval")
    assert sol.at_answer["max_concurrent_requests"] == 32


def test_mfu_that_trains_15_6t_tokens_in_54_days_on_16384_h100s():
    # Llama-3.1-405B config.json: hidden 16,384, 126 layers, 128 heads of 128, 8 K/V heads, FFN 53,248, vocabulary 128,256, untied
    layer = 16384 * 16384 + 2 * 16384 * 1024 + 16384 * 16384 + 3 * 16384 * 53248 + 2 * 16384
    params = 2 * 128256 * 16384 + 126 * layer + 16384
    assert params == 405_853_388_800
    # F1: 6 N D; H100 SXM dense BF16 peak 989.4 TFLOPS (whitepaper WP-10792-001); the calculator's defaults availability 0.9
    # and checkpoint overhead 0.01 (book chapter 20 / 14); FX59: wall = 6ND / (n peak mfu) / (availability (1 - overhead))
    expected = 6 * params * 15.6e12 / (16384 * 989.4e12 * 0.9 * (1 - 0.01) * 54 * DAY)  # 0.56373
    sol = api.calculator("training-duration").solve("mfu", "train_wall_time <= 54d", model="llama-3.1-405b", device="h100-sxm",
                                                    train_tokens="15.6T", n_gpus=16384)
    assert sol.value == pytest.approx(expected, rel=1e-12)
    assert sol.pieces == [(pytest.approx(expected, rel=1e-12), 1.0, True, True)]
    assert sol.answers[0].method == "closed_form"
    assert sol.answers[0].closed_form == [
        "mfu = -flop_per_param_token*params_active*train_tokens/(4665600*availability*n_gpus*peak_flops*(checkpoint_overhead - 1))"]


def test_longest_checkpoint_interval_keeping_availability_above_95_percent():
    # Narayanan et al. 2021 section 5.10: a 13.8 TB checkpoint written at 273 GB/s -> delta = 50.55 s stall;
    # the book's job MTBF of 24 h; a recovery time R of 10 min (assumed, stated in the question)
    delta, m, r = 13.8e12 / 273e9, 24 * 3600, 600
    # FX506: 1 - delta/T - (T/2 + R)/M >= 0.95  <=>  T^2/(2M) - (0.05 - R/M) T + delta <= 0
    a = 0.05 - r / m
    root = math.sqrt(a * a - 2 * delta / m)
    shortest, longest = m * (a - root), m * (a + root)  # 1460.9 s and 5979.1 s (99.7 min)
    sol = api.calculator("checkpoint-window").solve("checkpoint_interval", "checkpoint_availability >= 0.95", checkpoint_bytes="13.8TB",
                                                    ckpt_write_bandwidth="273GB/s", mtbf="24h", restart_time="10min")
    (lo, hi, lo_in, hi_in), = sol.pieces
    assert (lo, hi) == (pytest.approx(shortest, rel=1e-12), pytest.approx(longest, rel=1e-12))
    assert lo_in and hi_in
    assert sol.binding == {"low": "checkpoint_availability >= 0.95", "high": "checkpoint_availability >= 0.95"}
    assert len(sol.answers[0].closed_form) == 2


def test_a_ranged_input_gives_the_interval_over_its_range():
    # the same run, solving the GPUs with MFU 0.35..0.45: n = 6ND / (peak x mfu x 0.9 x 0.99 x 54 d), whole GPUs rounded up
    params = 405_853_388_800
    need = lambda mfu: 6 * params * 15.6e12 / (989.4e12 * mfu * 0.9 * 0.99 * 54 * DAY)  # noqa: E731
    sol = api.calculator("training-duration").solve("n_gpus", ["train_wall_time <= 54d"], model="llama-3.1-405b", device="h100-sxm",
                                                    train_tokens="15.6T", mfu="0.35..0.45")
    r = sol.over_range
    assert r["ranged"] == ["mfu"] and r["method"] == "exact"
    assert r["every"] == [{"low": math.ceil(need(0.35)), "high": None, "low_closed": True, "high_closed": False}]  # 26,389 GPUs
    assert r["some"][0]["low"] == math.ceil(need(0.45))  # 20,525 GPUs
    assert sol.value == math.ceil(need(0.40))  # the point is the range's middle value, 0.40


def test_two_conditions_name_the_binding_one():
    # n_gpus for train_wall_time <= 54 d and <= 60 d: 54 d binds (same arithmetic as above at mfu 0.4)
    sol = api.calculator("training-duration").solve("n_gpus", ["train_wall_time <= 60d", "train_wall_time <= 54d"], model="llama-3.1-405b",
                                                    device="h100-sxm", train_tokens="15.6T", mfu=0.4)
    assert sol.binding == {"low": "train_wall_time <= 54d"}


def test_numeric_bracket_agrees_and_says_so():
    sol = api.calculator("training-duration").solve("mfu", "train_wall_time <= 54d", model="llama-3.1-405b", device="h100-sxm",
                                                    train_tokens="15.6T", n_gpus=16384, numeric=True)
    assert sol.answers[0].method == "numeric" and sol.answers[0].brackets
    assert any("brentq" in n for n in sol.answers[0].notes)
    exact = 6 * 405_853_388_800 * 15.6e12 / (16384 * 989.4e12 * 0.9 * 0.99 * 54 * DAY)
    assert sol.value == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize(("target", "where", "field", "words"), [
    ("mfu", ["train_wall_time >> 3"], "--where", "is not 'OUTPUT >= V'"),
    ("mfu", ["nothing <= 3"], "--where", "nothing is not an output of any formula"),
    ("mfu", ["train_wall_time <= 3kg"], "--where", "train_wall_time"),
    ("mfu", ["train_wall_time <= 1..3"], "--where", "single value"),
    ("mfu", [], "where", "expected 'OUTPUT >= V'"),
    ("flop_basis", ["train_wall_time <= 54d"], "--solve", "categorical"),
    ("nothing", ["train_wall_time <= 54d"], "--solve", "is not a formula symbol"),
    ("train_tokens", ["train_wall_time <= 54d"], "--set train_tokens", "is the input being solved for"),
])
def test_bad_questions_name_the_field(target, where, field, words):
    with pytest.raises(InputError) as info:
        api.calculator("training-duration").solve(target, where, model="llama-3.1-405b", device="h100-sxm", train_tokens="15.6T", n_gpus=16384)
    assert info.value.field == field and words in info.value.message


def test_an_output_that_does_not_depend_on_the_input_is_refused_with_why():
    with pytest.raises(InputError) as info:
        api.calculator("training-duration").solve("n_gpus", "train_flops >= 1e25", model="llama-3.1-405b", device="h100-sxm",
                                                  train_tokens="15.6T", mfu=0.4)
    assert info.value.field == "--where" and "does not depend on n_gpus" in info.value.message


def test_whole_numbers_round_inward():
    assert calc_bracket.whole_numbers([(2.5, 7.5, True, True)]) == [(3.0, 7.0, True, True)]
    assert calc_bracket.whole_numbers([(2.0, 7.0, False, False)]) == [(3.0, 6.0, True, True)]
    assert calc_bracket.whole_numbers([(2.2, 2.8, True, True)]) == []
    assert calc_bracket.whole_numbers([(2.5, math.inf, True, False)]) == [(3.0, math.inf, True, False)]


def test_pieces_intersect():
    a = [(0.0, 5.0, True, True)]
    assert calc_bracket.intersect(a, [(3.0, math.inf, False, False)]) == [(3.0, 5.0, False, True)]
    assert calc_bracket.intersect(a, [(6.0, 7.0, True, True)]) == []


def test_smallest_tp_at_which_llama_3_1_70b_fits_on_h200_with_fp8_kv():
    # Llama-3.1-70B config.json: hidden 8,192, 80 layers, 64 heads of 128, 8 K/V heads, FFN 28,672, vocabulary 128,256, untied
    layer = 8192 * 8192 + 2 * 8192 * 1024 + 8192 * 8192 + 3 * 8192 * 28672 + 2 * 8192
    params = 2 * 128256 * 8192 + 80 * layer + 8192
    assert params == 70_553_706_496
    # H200: the driver reports 143,071.875 MiB (CUDA deviceQuery); vLLM's 0.9 cap; the calculator's 5 GiB engine overhead;
    # BF16 weights (2 B) split over TP; FP8 K/V: 2 x 80 x 8 x 128 x 1 B per token, split over min(TP, 8 K/V heads); 8,192-token requests
    total = 143071.875 * 2**20

    def requests(tp: int) -> int:
        budget = total * 0.9 - params * 2 / tp - 5 * GIB
        per_request = 2 * 80 * 8 * 128 * 1 / min(tp, 8) * 8192
        return max(0, math.floor(budget / per_request))

    assert requests(1) == 0  # 135.0e9 - 141.1e9 - 5.4e9 < 0: the weights alone do not fit
    assert requests(2) == 88  # (135.0e9 - 70.6e9 - 5.4e9) / (81,920 B x 8,192) = 88.0
    sol = api.calculator("kv-concurrency").solve("tp_size", "max_concurrent_requests >= 1", model="llama-3.1-70b", device="h200",
                                                 kv_bytes=1, context_tokens=8192)
    assert sol.value == 2 and sol.binding == {"low": "max_concurrent_requests >= 1"}
    assert sol.at_answer["max_concurrent_requests"] == requests(2)


def test_an_equality_on_a_whole_number_output_is_an_interval():
    # the Qwen3-8B run above: 393,256.4 K/V tokens; exactly 32 requests when 32 <= 393,256.4 / (16 b) < 33 for b = ceil(c / 16)
    # blocks: b <= 768.08 and b > 744.77, so b = 745..768 and c in (744 x 16, 768 x 16] = (11,904, 12,288]
    max_kv_tokens = (79.18 * GIB * 0.9 - 8_190_735_360 * 2 - 2 * GIB) / 147456
    low, high = math.floor(max_kv_tokens / (33 * 16)), math.floor(max_kv_tokens / (32 * 16))
    assert (low, high) == (744, 768)
    sol = api.calculator("kv-concurrency").solve("context_tokens", "max_concurrent_requests = 32", model="qwen3-8b", device="h100-sxm",
                                                 kv_bytes=2, gpu_memory_utilization=0.9, engine_overhead_bytes="2GiB")
    assert sol.pieces == [(16.0 * low, 16.0 * high, False, True)]
    assert sol.answers[0].method == "interval"
