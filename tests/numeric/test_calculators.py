"""engine.numeric.calculators: chains derived from the formula graph, ranges, boundaries, integrity.

Every expected number is hand arithmetic written beside it, from the cited public source.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from engine.check.integrity import check
from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.kb.knowledge import Knowledge
from engine.numeric import calculators
from engine.numeric.calculators import Calculator, Graph, load_records, run

GiB = 2**30


@pytest.fixture(scope="module")
def records():
    return load_records(shipped_root())


def calc(records, name):
    return Calculator.from_record(records[f"calc:{name}"])


def kv(records, module, **given):
    return run(calc(records, "kv-concurrency"), module, given)


def train(records, module, **given):
    return run(calc(records, "training-duration"), module, given)


def out(result, name):
    return result.outputs[name].value


# ---------------------------------------------------------------------- kv-concurrency worked examples


def test_qwen3_8b_bytes_per_token_and_one_h100(records, module):
    # Qwen/Qwen3-8B config.json: 36 layers, 8 KV heads, head_dim 128, BF16 (2 B)
    r = kv(records, module, layers=36, kv_heads=8, head_dim=128, kv_bytes=2, gpu_memory_total="80GiB",
           weight_bytes="16GiB", engine_overhead_bytes="4GiB", context_tokens=4096)
    assert out(r, "kv_bytes_per_token") == 2 * 36 * 8 * 128 * 2 == 147456
    assert out(r, "kv_bytes_per_token_per_gpu") == 147456  # tp 1
    # 80 GiB x 0.9 - 16 GiB - 4 GiB = 52 GiB
    assert out(r, "kv_budget_per_gpu") == pytest.approx(52 * GiB)
    # 52 GiB / 147456 B = 378652.44 tokens; / 4096 per request = 92.4 -> 92
    assert out(r, "max_kv_tokens") == pytest.approx(52 * GiB / 147456)
    assert out(r, "max_concurrent_requests") == 92
    assert r.formulas == ["F8", "FX73", "FX72", "F9", "FX71", "FX301", "FX302"]  # FX301/FX302: per-GPU requests and weights


def test_vllm_log_llama_31_8b_on_h100(records, module):
    # llm-d-benchmark vLLM log (cited by FX72): 79.18 GiB total, utilisation 0.9, weights 14.99 GiB,
    # overhead 4.89 GiB, TP 1; Llama-3.1-8B config.json: 32 layers, 8 KV heads, head_dim 128, BF16.
    r = kv(records, module, layers=32, kv_heads=8, head_dim=128, kv_bytes=2, gpu_memory_total="79.18GiB",
           gpu_memory_utilization=0.9, weight_bytes="14.99GiB", engine_overhead_bytes="4.89GiB", context_tokens=8192)
    budget = (79.18 * 0.9 - 14.99 - 4.89) * GiB  # 51.382 GiB
    assert out(r, "kv_bytes_per_token") == 2 * 32 * 8 * 128 * 2 == 131072
    assert out(r, "kv_budget_per_gpu") == pytest.approx(budget)
    assert out(r, "max_kv_tokens") == pytest.approx(budget / 131072)  # 420921.6
    assert out(r, "max_concurrent_requests") == 51  # 420921.6 / 8192 = 51.38


def test_book_chapter_22_sixty_gib_budget(records, module):
    # Book ch22 §22.1: a 60 GiB budget at 128 KiB per token holds about 491520 tokens:
    # 120 sessions at 4K context, 15 at 32K. The budget and bytes are given directly (chain stops).
    for context, sessions in ((4096, 120), (32768, 15)):
        r = kv(records, module, kv_budget_per_gpu="60GiB", kv_bytes_per_token_per_gpu=131072, context_tokens=context)
        assert out(r, "max_kv_tokens") == 60 * GiB / 131072 == 491520
        assert out(r, "max_concurrent_requests") == sessions
        assert r.formulas == ["F9", "FX71", "FX301"]  # FX301: requests per GPU (no weights given: no FX302)


def test_qwen3_235b_replicates_kv_heads_past_tp(records, module):
    # Qwen/Qwen3-235B-A22B config.json: 94 layers, 4 KV heads, head_dim 128; TP 8 > 4 KV heads,
    # so each KV head is on two ranks and a rank holds 1/4 of the token: 192512 / 4 = 48128 B.
    r = kv(records, module, layers=94, kv_heads=4, head_dim=128, kv_bytes=2, tp_size=8, gpu_memory_total="80GiB",
           weight_bytes="440GiB", engine_overhead_bytes="5GiB", context_tokens=4096)
    assert out(r, "kv_bytes_per_token") == 2 * 94 * 4 * 128 * 2 == 192512
    assert out(r, "kv_bytes_per_token_per_gpu") == 48128
    assert out(r, "kv_budget_per_gpu") == pytest.approx((72 - 55 - 5) * GiB)  # 80x0.9 - 440/8 - 5 = 12 GiB


def test_deepseek_v3_mla_latent_is_replicated(records, module):
    # deepseek-ai/DeepSeek-V3 config.json: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64:
    # 61 x (512 + 64) x 2 B = 70272 B per token, the same on each of 8 TP ranks.
    r = kv(records, module, attention="mla", layers=61, kv_lora_rank=512, qk_rope_head_dim=64, kv_bytes=2, tp_size=8,
           gpu_memory_total="141GiB", weight_bytes="640GiB", engine_overhead_bytes="6GiB", context_tokens=4096)
    assert out(r, "kv_bytes_per_token") == 61 * 576 * 2 == 70272
    assert out(r, "kv_bytes_per_token_per_gpu") == 70272


def test_gpt3_mha_shards_over_tp(records, module):
    # Brown et al. 2020 Table 2.1: GPT-3 175B has 96 layers, 96 heads, d_head 128: 2x96x96x128x2 = 4718592 B;
    # over TP 8 each rank holds 12 heads: 4718592 / 8 = 589824 B.
    r = kv(records, module, attention="mha", layers=96, heads=96, head_dim=128, kv_bytes=2, tp_size=8,
           gpu_memory_total="80GiB", weight_bytes="350GB", engine_overhead_bytes="4GiB", context_tokens=2048)
    assert out(r, "kv_bytes_per_token") == 4718592
    assert out(r, "kv_bytes_per_token_per_gpu") == 589824


def test_llama_70b_fp8_at_tp1_meets_the_budget_boundary(records, module):
    # Same vLLM log source: 70B FP8 at TP 1, 67.72 GiB weights, 4.98 GiB overhead:
    # 79.18 x 0.9 - 67.72 - 4.98 = -1.438 GiB: the model does not fit; a warning, not an error.
    r = kv(records, module, layers=80, kv_heads=8, head_dim=128, kv_bytes=1, gpu_memory_total="79.18GiB",
           weight_bytes="67.72GiB", engine_overhead_bytes="4.98GiB", context_tokens=4096)
    assert out(r, "kv_budget_per_gpu") == pytest.approx((79.18 * 0.9 - 67.72 - 4.98) * GiB)
    assert any("kv_budget_per_gpu <= 0" in w for w in r.warnings)
    assert any("max_concurrent_requests < 1" in w for w in r.warnings)


# ---------------------------------------------------------------------- training-duration worked examples


def test_book_chapter_6_seventy_b_on_1024_cards(records, module):
    # Book ch6 §6.2: C = 6 x 70e9 x 15e12 = 6.3e24 FLOP; 1024 cards at 1 PFLOPS, MFU 40%:
    # 6.3e24 / (1024 x 1e15 x 0.4) = 15380859.375 s (178 days)
    r = train(records, module, params_active=70e9, train_tokens=15e12, n_gpus=1024, peak_flops="1000TFLOPS", mfu=0.4)
    assert out(r, "train_flops") == pytest.approx(6.3e24)
    assert out(r, "train_time") == pytest.approx(15380859.375)
    # FX59 defaults: availability 0.9, checkpoint overhead 0.01: 15380859.375 / (0.9 x 0.99) = 17262468.43 s
    assert out(r, "train_wall_time") == pytest.approx(15380859.375 / 0.891)
    assert r.formulas == ["F1", "F2", "FX59", "FX426"]  # FX426: the run's GPU-hours, an optional output
    assert out(r, "gpu_hours") == pytest.approx(1024 * 15380859.375 / 0.891 / 3600)


def test_book_chapter_6_doubling_cards(records, module):
    # Book ch6 §6.2: 2048 cards halve the ideal time: 15380859.375 / 2 = 7690429.6875 s
    r = train(records, module, params_active=70e9, train_tokens=15e12, n_gpus=2048, peak_flops="1PFLOPS", mfu=0.4)
    assert out(r, "train_time") == pytest.approx(7690429.6875)


def test_gpt3_compute(records, module):
    # Brown et al. 2020: 175e9 parameters, 300e9 tokens: 6 x 175e9 x 300e9 = 3.15e23 (Table D.1 prints 3.14e23)
    r = train(records, module, params_active=175e9, train_tokens=300e9, n_gpus=1024, peak_flops="312TFLOPS", mfu=0.5)
    assert out(r, "train_flops") == pytest.approx(3.15e23)
    assert out(r, "train_time") == pytest.approx(3.15e23 / (1024 * 312e12 * 0.5))


def test_llama3_405b_compute(records, module):
    # Dubey et al. 2024 §1: 405B parameters on 15.6T tokens, about 3.8e25 FLOP: 6 x 405e9 x 15.6e12 = 3.7908e25
    r = train(records, module, params_active=405e9, train_tokens=15.6e12, n_gpus=16384, peak_flops="989TFLOPS", mfu=0.4)
    assert out(r, "train_flops") == pytest.approx(3.7908e25)


def test_megatron_hardware_flops_basis(records, module):
    # Narayanan et al. 2021 §5.1: GPT-3 on 1024 A100 at 140 TFLOP/s achieved: 8TP = 8 x 175e9 x 300e9 = 4.2e23;
    # 4.2e23 / (1024 x 140e12) = 2929687.5 s (34 days)
    r = train(records, module, flop_basis="hardware", train_hw_flops=4.2e23, n_gpus=1024, achieved_hw_flops="140TFLOPS")
    assert out(r, "train_time") == pytest.approx(2929687.5)
    assert "train_flops" not in r.outputs and any("not computed: train_flops" in w for w in r.warnings)


def test_no_wall_time_stretch_when_perfect(records, module):
    # Book training calculator test vector: availability 1 and no checkpoint overhead leave the time unchanged
    r = train(records, module, train_time=15380859.375, availability=1, checkpoint_overhead=0)
    assert out(r, "train_wall_time") == pytest.approx(15380859.375)


# ---------------------------------------------------------------------- properties


def test_doubling_context_halves_concurrency(records, module):
    # 60 GiB / 131072 B = 491520 tokens = 2^15 x 15: block-aligned contexts from 1024 to 16384 divide it
    previous = None
    for context in (1024, 2048, 4096, 8192, 16384):
        r = kv(records, module, kv_budget_per_gpu="60GiB", kv_bytes_per_token_per_gpu=131072, context_tokens=context)
        n = out(r, "max_concurrent_requests")
        if previous is not None:
            assert n * 2 == previous
        previous = n


def test_mfu_range_gives_exact_duration_range(records, module):
    # 6.3e24 / (1024e15 x 0.5) = 12304687.5 s; / (1024e15 x 0.3) = 20507812.5 s
    r = train(records, module, params_active=70e9, train_tokens=15e12, n_gpus=1024, peak_flops="1PFLOPS", mfu="0.3..0.5")
    t = r.outputs["train_time"]
    assert t.method == "exact"
    assert (t.low, t.high) == (pytest.approx(12304687.5), pytest.approx(20507812.5))
    assert r.outputs["train_flops"].low == r.outputs["train_flops"].high  # does not depend on mfu
    w = r.outputs["train_wall_time"]
    assert w.low == pytest.approx(12304687.5 / 0.891, rel=1e-6) and w.high == pytest.approx(20507812.5 / 0.891, rel=1e-6)


def test_a_min_in_the_chain_is_composed_not_sampled(records, module):
    # FX73 kv_bytes / Min(tp_size, kv_heads): Min of two non-decreasing arguments is non-decreasing,
    # its reciprocal falls, so the tp range has exact ends (TP 1 and 2: 131072 and 131072/2 B)
    r = kv(records, module, layers=32, kv_heads=8, head_dim=128, kv_bytes=2, tp_size="1..2", gpu_memory_total="80GiB",
           weight_bytes="16GiB", engine_overhead_bytes="4GiB", context_tokens=4096)
    per_gpu = r.outputs["kv_bytes_per_token_per_gpu"]
    assert per_gpu.method == "exact"
    assert (per_gpu.low, per_gpu.high) == (131072 / 2, 131072)
    assert r.outputs["kv_budget_per_gpu"].method == "exact"  # FX72 is increasing in tp_size


# ---------------------------------------------------------------------- input errors and the contract


@pytest.mark.parametrize("given, field", [
    (dict(nonsense=1), "--set nonsense"),
    (dict(layers=32, kv_heads=8, head_dim=128, kv_bytes="2GHz"), "--set kv_bytes"),
    (dict(layers=0), "--set layers"),
    (dict(attention="xyz"), "--set attention"),
])
def test_bad_input_names_the_input(records, module, given, field):
    with pytest.raises(InputError) as exc:
        kv(records, module, **given)
    assert exc.value.field == field


def test_missing_input_names_it(records, module):
    with pytest.raises(InputError) as exc:
        kv(records, module, layers=32, kv_heads=8, head_dim=128, kv_bytes=2)
    assert exc.value.field.startswith("--set ")
    missing = getattr(exc.value, "missing", [exc.value])  # several at once: MissingInputs, one line each
    assert all(m.field.startswith("--set ") and "needs a value" in m.message for m in missing)


def test_json_contract(records, module):
    r = kv(records, module, kv_budget_per_gpu="60GiB", kv_bytes_per_token_per_gpu=131072, context_tokens=4096)
    data = r.to_json()
    assert set(data) == {"calculator", "inputs", "outputs", "formulas", "assumptions", "provenance", "warnings", "ranking"}
    assert data["calculator"] == "calc:kv-concurrency"
    assert set(data["inputs"]["context_tokens"]) == {"value", "unit", "low", "high", "source"}
    assert data["inputs"]["context_tokens"]["source"] == "user"
    assert data["inputs"]["block_tokens"]["source"].startswith("default: ")
    assert set(data["outputs"]["max_concurrent_requests"]) == {"value", "unit", "low", "high", "method"}
    assert data["outputs"]["max_concurrent_requests"]["unit"] == "requests"


# ---------------------------------------------------------------------- integrity


@pytest.fixture(scope="module")
def knowledge():
    return Knowledge.load(shipped_root())


def test_shipped_calculators_are_clean(knowledge):
    assert {"calc:kv-concurrency", "calc:training-duration"} <= set(knowledge.calculators)
    assert calculators.problems(knowledge) == []


def test_integrity_reports_broken_calculators(knowledge):
    k = copy.copy(knowledge)
    k.calculators = dict(knowledge.calculators)
    rec = copy.deepcopy(k.calculators["calc:kv-concurrency"])
    rec["outputs"].append("no_such_output")
    rec["inputs"].append({"symbol": "not_a_symbol"})
    rec["sections"].append("infra:99.9")
    rec["failure_boundaries"].append({"when": "import os", "message": "x"})
    k.calculators["calc:kv-concurrency"] = rec
    messages = [str(p) for p in calculators.problems(k)]
    assert any("outputs[6]" in m and "not produced" in m for m in messages)  # after the six shipped outputs
    assert any("inputs.not_a_symbol" in m for m in messages)
    assert any("infra:99.9" in m for m in messages)
    assert any("failure_boundaries[2].when" in m for m in messages)


def test_check_runs_the_calculator_rule(tmp_path, monkeypatch):
    # a root with the shipped formulas but no chapters: the calculator's sections cannot resolve
    from engine.check import integrity

    monkeypatch.setattr(integrity, "_examples", lambda k: [])  # the worked examples are another rule's (and slow)
    (tmp_path / "formulas").symlink_to(shipped_root() + "/formulas")
    (tmp_path / "knowledge" / "calculators").mkdir(parents=True)
    text = (Path(shipped_root()) / "knowledge" / "calculators" / "training-duration.yaml").read_text(encoding="utf-8")
    (tmp_path / "knowledge" / "calculators" / "training-duration.yaml").write_text(text, encoding="utf-8")
    messages = [str(p) for p in check(Knowledge.load(tmp_path, strict=False))]
    assert any("calc:training-duration sections[0]: refers to infra:6.2, which is not defined" in m for m in messages)


def test_reach_stops_at_declared_inputs(module, records):
    fids, symbols = Graph(module).reach(calc(records, "kv-concurrency"))
    # FX70 through FX71's sliding_window variant (kv_bytes_per_request); weight_bytes is a declared
    # input without a default, so its producer F6 (and the parameter count behind params) is
    # reachable too: a --model preset fills params and the chain derives weight_bytes
    assert {"F8", "FX73", "FX72", "F9", "FX71", "FX70", "F6", "FX17"} <= set(fids)
    assert "weight_bytes" in symbols and "params" in symbols
    # block_tokens has a default, so nothing behind a defaulted input is reached
    assert "gpu_memory_utilization" in symbols


def test_check_runs_calculator_worked_examples(tmp_path, monkeypatch):
    # the shipped kv-concurrency example with a wrong expectation (93 instead of the hand-computed 92)
    from engine.check import integrity

    monkeypatch.setattr(integrity, "_examples", lambda k: [])
    (tmp_path / "formulas").symlink_to(shipped_root() + "/formulas")
    (tmp_path / "knowledge" / "calculators").mkdir(parents=True)
    text = (Path(shipped_root()) / "knowledge" / "calculators" / "kv-concurrency.yaml").read_text(encoding="utf-8")
    assert "max_concurrent_requests: 92}" in text
    text = text.replace("max_concurrent_requests: 92}", "max_concurrent_requests: 93}")
    (tmp_path / "knowledge" / "calculators" / "kv-concurrency.yaml").write_text(text, encoding="utf-8")
    messages = [str(p) for p in check(Knowledge.load(tmp_path, strict=False))]
    assert any("calc:kv-concurrency examples[0].expect.max_concurrent_requests: expected 93, the chain gives 92" in m for m in messages)
