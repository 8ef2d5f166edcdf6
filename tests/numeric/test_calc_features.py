"""Calculator features shared by every calculator: --model/--device presets, input ranking,
sweeps (CSV and plots), the Python handle ``kb.calculator(...)``, and their bad-input errors.

Expected numbers are hand arithmetic from published facts written beside them:
- Qwen3-8B, Qwen/Qwen3-8B config.json (rev b968826): num_hidden_layers 36, num_key_value_heads 8,
  head_dim 128; 8,190,735,360 parameters (Hugging Face safetensors metadata).
- NVIDIA H100 SXM datasheet: 80 GB HBM3, 3.35 TB/s, 700 W; Hopper whitepaper: 989.4 TFLOPS dense BF16.
- H100 80GB driver-reported total 79.18 GiB (vLLM logs, llm-d/llm-d-benchmark empirical-vllm-memory-results.md@25933486).
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat

import pytest

from engine import api
from engine.cli.main import main
from engine.core.errors import InputError

# KV budget per GPU with the presets, by hand (vLLM rule, FX72, from the driver-reported total):
#   79.18 GiB x 0.9 - 2 B x 8,190,735,360 - 2 GiB = 76,516,986,691.6 - 16,381,470,720 - 2,147,483,648 = 57,988,032,323.6 B
BUDGET = 79.18 * 2**30 * 0.9 - 2 * 8_190_735_360 - 2 * 2**30
KV_PER_TOKEN = 2 * 36 * 8 * 128 * 2  # F8: K and V x layers x kv_heads x head_dim x 2 B = 147,456 B
BASE = ["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes=2", "--set", "tp_size=1",
        "--set", "gpu_memory_utilization=0.9", "--set", "engine_overhead_bytes=2GiB"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_presets_fill_inputs_and_name_their_source(capsys):
    code, out, err = run([*BASE, "--set", "context_tokens=8192", "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    ins = data["inputs"]
    assert ins["layers"]["value"] == 36 and "model:qwen3-8b" in ins["layers"]["source"] and "num_hidden_layers" in ins["layers"]["source"]
    assert ins["kv_heads"]["value"] == 8 and ins["head_dim"]["value"] == 128
    assert ins["params"]["value"] == 8_190_735_360
    assert ins["gpu_memory_total"]["value"] == pytest.approx(79.18 * 2**30) and "hw:h100-sxm" in ins["gpu_memory_total"]["source"]
    assert "driver-reported" in ins["gpu_memory_total"]["source"]
    assert ins["kv_bytes"]["source"] == "user"
    outs = data["outputs"]
    assert outs["kv_bytes_per_token"]["value"] == KV_PER_TOKEN
    assert outs["kv_budget_per_gpu"]["value"] == pytest.approx(BUDGET, rel=1e-12)
    # 57,988,032,323.6 / 147,456 = 393,256.6 tokens; 8192 tokens per request (512 blocks of 16) -> 48.005 -> 48
    assert outs["max_concurrent_requests"]["value"] == 48


def test_user_value_wins_over_preset(capsys):
    code, out, _ = run([*BASE, "--set", "context_tokens=8192", "--set", "layers=18", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["inputs"]["layers"] == {**data["inputs"]["layers"], "value": 18, "source": "user"}
    assert data["outputs"]["kv_bytes_per_token"]["value"] == KV_PER_TOKEN // 2


def test_declared_input_is_derived_when_its_formula_inputs_are_there(capsys):
    # weight_bytes is a kv-concurrency input; with --model it follows from F6 (2 B x params)
    code, out, _ = run([*BASE, "--set", "context_tokens=8192", "--explain"], capsys)
    assert code == 0
    assert "F6" in out and "= 2 * 8190735360" in out


def test_ranking_shares_one_input_at_a_time(capsys):
    argv = [a if a != "kv_bytes=2" else "kv_bytes=1..2" for a in BASE]
    code, out, _ = run([*argv, "--set", "context_tokens=4096..8192", "--format", "json"], capsys)
    assert code == 0
    ranking = json.loads(out)["ranking"]
    # kv_bytes_per_token depends on kv_bytes only
    assert ranking["kv_bytes_per_token"] == [{"input": "kv_bytes", "share": 1.0}]
    # max requests at the mid point (kv_bytes 1.5, context 6144): kv_bytes alone swings
    # floor(B / (73728 x 6144)) - floor(B / (147456 x 6144)) = 128 - 64 = 64; context alone at
    # kv_bytes 1.5 (110592 B/token): floor(B / (110592 x 4096)) - floor(B / (110592 x 8192)) = 128 - 64 = 64
    shares = {r["input"]: r["share"] for r in ranking["max_concurrent_requests"]}
    assert shares == {"kv_bytes": pytest.approx(0.5), "context_tokens": pytest.approx(0.5)}


def test_ranking_printed_in_text(capsys):
    code, out, _ = run([*BASE, "--set", "context_tokens=4096..8192"], capsys)
    assert code == 0
    assert "What drives each range" in out and "max_concurrent_requests: context_tokens 100%" in out


def test_sweep_csv_matches_point_runs(capsys):
    code, out, err = run([*BASE, "--sweep", "context_tokens=1024..8192", "--points", "4", "--log"], capsys)
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [float(r["context_tokens [tokens/requests]"]) for r in rows] == pytest.approx([1024, 2048, 4096, 8192])
    # floor(393,256.6 / context): 384, 192, 96, 48
    assert [float(r["max_concurrent_requests [requests]"]) for r in rows] == [384, 192, 96, 48]


def test_sweep_plot_is_written_atomically_with_normal_permissions(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    target = tmp_path / "kv.svg"
    code, _, err = run([*BASE, "--sweep", "context_tokens=1024..131072", "--points", "8", "--log", "--plot", str(target)], capsys)
    assert code == 0, err
    text = target.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "max_concurrent_requests" in text
    mode = stat.S_IMODE(os.stat(target).st_mode)
    assert mode & stat.S_IRGRP  # not mkstemp's 0600
    assert [p.name for p in tmp_path.iterdir()] == ["kv.svg"]  # no temporary file left


@pytest.mark.parametrize("extra, field", [
    (["--sweep", "context_tokens=8192"], "--sweep"),
    (["--sweep", "context_tokens=8192..1024"], "--sweep"),
    (["--sweep", "nonsense=1..2"], "--sweep"),
    (["--sweep", "context_tokens=1..2", "--set", "context_tokens=5"], "--sweep"),
    (["--sweep", "context_tokens=1..8", "--points", "1"], "--points"),
    (["--sweep", "context_tokens=1..8", "--points", "100001"], "--points"),
    (["--sweep", "context_tokens=1..8", "--points", "99999999999999999999"], "--points"),
    (["--sweep", "context_tokens=1024..2048", "--plot", ""], "--plot"),
    (["--sweep", "context_tokens=1024..2048", "--plot", "/"], "--plot"),
    (["--set", "context_tokens=8192", "--plot", "x.svg"], "--plot"),
    (["--sweep", "context_tokens=1024..2048", "--plot", "out.txt"], "--plot"),
])
def test_bad_sweep_and_preset_input(extra, field, capsys):
    code, out, err = run([*BASE, *extra], capsys)
    assert code == 2
    assert err.count("\n") == 1 and field in err and "Traceback" not in err
    assert out == ""


@pytest.mark.parametrize("flag, value", [("--model", "gpt-9"), ("--device", "h999")])
def test_unknown_preset_id(flag, value, capsys):
    argv = ["calc", "kv-concurrency", flag, value, "--set", "context_tokens=8192"]
    code, _, err = run(argv, capsys)
    assert code == 2 and err.count("\n") == 1 and value in err and "known:" in err


def test_python_handle_matches_cli(capsys):
    kb = api.load()
    calc = kb.calculator("kv-concurrency")
    assert calc.id == "calc:kv-concurrency" and "context_tokens" in calc.inputs
    result = calc.run(model="qwen3-8b", device="h100-sxm", kv_bytes=2, tp_size=1, context_tokens=8192,
                      gpu_memory_utilization=0.9, engine_overhead_bytes="2GiB")
    assert result.outputs["max_concurrent_requests"].value == 48
    code, out, _ = run([*BASE, "--set", "context_tokens=8192", "--format", "json"], capsys)
    assert json.loads(out)["outputs"] == json.loads(json.dumps(result.to_json()))["outputs"]
    assert result._repr_markdown_().startswith("## calc:kv-concurrency")
    xs, ys = calc.sweep("context_tokens", 1024, 8192, points=4, log=True, model="qwen3-8b", device="h100-sxm", kv_bytes=2,
                        tp_size=1, gpu_memory_utilization=0.9, engine_overhead_bytes="2GiB")
    assert list(ys["max_concurrent_requests"]) == [384, 192, 96, 48]


def test_python_handle_unknown_name():
    with pytest.raises(InputError, match="no calculator 'kv'"):
        api.calculator("kv")


# ---------------------------------------------------------------------- money, optional outputs

TCO = dict(n_gpus=1000, gpu_tdp="1000W", it_power_model="host_factor", host_overhead=1.4, pue=1.3, capex_per_gpu="200000CNY",
           electricity_price="0.6CNY/kWh", depreciation_period=4, ecosystem_person_months=50)


def test_money_follows_the_currency_of_the_prices():
    # The book's README tco example (BOOK.md section 8), in 元: IT 1000 x 1000 W x 1.4 = 1.4 MW; x PUE 1.3 = 1.82 MW;
    # x 8760 h = 15,943,200 kWh; x 0.6 = 9,565,920 元; capex 200,000 x 1000 / 4 = 50,000,000; ecosystem
    # 50 x 80,000 / 4 = 1,000,000 a year; TCO 60,565,920 元 a year; / (1000 x 8760) = 6.9139 元 per GPU-hour
    r = api.calculator("power-tco").run(**TCO)
    assert r.outputs["tco_per_year"].value == pytest.approx(60_565_920)
    assert r.outputs["tco_per_year"].unit == "CNY/yr"
    assert r.outputs["gpu_hour_cost"].value == pytest.approx(6.9139, abs=1e-4) and r.outputs["gpu_hour_cost"].unit.startswith("CNY")
    assert any("Money is in CNY" in a for a in r.assumptions)


def test_mixed_currencies_are_refused(capsys):
    code = main(["calc", "power-tco", "--set", "n_gpus=8", "--set", "gpu_tdp=700W", "--set", "electricity_price=0.6CNY/kWh",
                 "--set", "capex_per_gpu=30000USD", "--set", "pue=1.3", "--set", "gpus_per_node=8", "--set", "node_overhead_power=4.6kW",
                 "--set", "depreciation_period=4"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "one currency" in err


def test_optional_outputs_appear_only_with_their_inputs():
    # FX92: 6.9139 元 per GPU-hour / (1000 tokens/s x 3600 s / 1e6) = 1.9205 元 per million tokens
    plain = api.calculator("power-tco").run(**TCO)
    assert "cost_per_mtok" not in plain.outputs and not any("cost_per_mtok" in w for w in plain.warnings)
    more = api.calculator("power-tco").run(**TCO, gpu_token_rate=1000)
    assert more.outputs["cost_per_mtok"].value == pytest.approx(6.9139 / 3.6, rel=1e-4)


def test_pure_bound_is_said_when_no_measured_band_exists():
    # knowledge/hardware/a100-sxm-80gb.yaml records a measured MFU only for FP16 and no bandwidth band, so at BF16 the
    # result must say that mfu and mbu are the pure roofline bound (1), not invent a factor; H100 SXM records
    # Llama 3's 38-43% BF16 MFU (Dubey et al. 2024, table 4)
    common = dict(model="qwen3-8b", gpu_memory_total="79GiB", kv_bytes=2, engine_overhead_bytes="4GiB", batch_size=32,
                  prompt_tokens=2048, avg_output_tokens=256)
    r = api.calculator("inference-capacity").run(device="a100-sxm-80gb", **common)
    assert r.inputs["mfu"].value == 1
    assert any("no measured MFU band" in w and "pure roofline bound" in w for w in r.warnings)
    h = api.calculator("inference-capacity").run(device="h100-sxm", **common)
    assert (h.inputs["mfu"].low, h.inputs["mfu"].high) == (0.38, 0.43)
    assert not any("no measured MFU band" in w for w in h.warnings)


def test_points_state_their_range(capsys):
    _, _, err = run([*BASE, "--sweep", "context_tokens=1024..2048", "--points", "100001"], capsys)
    assert err == "aiinfra: error: --points: expected a whole number from 2 to 100,000, got 100001\n"


def _four_rows(out: str) -> list[float]:
    rows = list(csv.DictReader(io.StringIO(out)))
    return [float(r["max_concurrent_requests [requests]"]) for r in rows]


def test_a_plot_without_matplotlib_keeps_the_csv(monkeypatch, tmp_path, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    code, out, err = run([*BASE, "--sweep", "context_tokens=1024..8192", "--points", "4", "--log", "--plot", str(tmp_path / "kv.svg")], capsys)
    assert code == 2
    assert _four_rows(out) == [384, 192, 96, 48]  # as in test_sweep_csv_matches_point_runs
    assert err == "aiinfra: error: --plot: needs matplotlib (pip install 'aiinfra[plot]' or pip install matplotlib); the CSV above is complete\n"


def test_a_plot_that_cannot_be_written_keeps_the_csv(monkeypatch, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    import tempfile

    def refuse(*args, **kwargs):  # a read-only folder, simulated (the tests may run as root)
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    target = tmp_path / "kv.svg"
    code, out, err = run([*BASE, "--sweep", "context_tokens=1024..8192", "--points", "4", "--log", "--plot", str(target)], capsys)
    assert code == 2
    assert _four_rows(out) == [384, 192, 96, 48]
    assert err == f"aiinfra: error: --plot: cannot write {str(target)!r} (Permission denied)\n"
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- issue 11: defaults that follow the user, per GPU vs per replica, plausibility

# Qwen3-8B as in kv-concurrency's first example (36 layers, 8 KV heads, head_dim 128; 16 GiB of weights on an 80 GiB card).
QWEN_KV = ["calc", "kv-concurrency", "--set", "layers=36", "--set", "kv_heads=8", "--set", "head_dim=128", "--set", "gpu_memory_total=80GiB",
           "--set", "weight_bytes=16GiB", "--set", "context_tokens=4096", "--format", "json"]


def test_kv_bytes_follows_precision_unless_given(capsys):
    # --precision fp8: 1 B per element (book table B.4): 2 x 36 x 8 x 128 x 1 = 73728 B per token; budget with the
    # presets' 2 GiB overhead as in BUDGET: 57,988,032,323.6 / 73728 = 786,513.2 tokens / 8192 = 96.01 -> 96 requests
    code, out, err = run(["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "tp_size=1", "--set", "gpu_memory_utilization=0.9", "--set", "engine_overhead_bytes=2GiB",
                          "--set", "context_tokens=8192", "--precision", "fp8", "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["inputs"]["kv_bytes"]["value"] == 1
    assert data["inputs"]["kv_bytes"]["source"] == "--precision fp8: 1 B per element (book Appendix B table B.4)"
    assert data["outputs"]["kv_bytes_per_token"]["value"] == 73728
    assert data["outputs"]["max_concurrent_requests"]["value"] == 96
    code, out, _ = run([*QWEN_KV, "--set", "engine_overhead_bytes=4GiB"], capsys)  # the default --precision bf16: 2 B
    assert json.loads(out)["inputs"]["kv_bytes"]["value"] == 2
    assert json.loads(out)["outputs"]["max_concurrent_requests"]["value"] == 92  # the calculator's first example (92)
    code, out, _ = run([*QWEN_KV, "--set", "kv_bytes=2", "--precision", "fp8"], capsys)  # a given value wins
    assert json.loads(out)["inputs"]["kv_bytes"]["source"] == "user"


def test_unknown_precision_is_refused(capsys):
    code, out, err = run([*QWEN_KV, "--precision", "fp99"], capsys)
    assert code == 2 and out == ""
    assert err == "aiinfra: error: --precision: 'fp99' is not a known precision (known: fp64, fp32, tf32, bf16, fp16, fp8, fp6, fp4, int8, int4, nvfp4, mxfp4, mxfp6, mxfp8)\n"  # the block-scaled formats of FX650 too


def test_engine_overhead_has_a_cited_default(capsys):
    # 5 GiB default (median of the vLLM H100 logs cited on FX72: 4.89, 4.98, 5.39, 7.51 GiB):
    # (80 x 0.9 - 16 - 5) GiB = 51 GiB = 54,760,833,024 B / 147,456 = 371,370.7 tokens / 4096 = 90.7 -> 90 requests
    code, out, err = run(QWEN_KV, capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["inputs"]["engine_overhead_bytes"]["value"] == 5 * 2**30
    assert data["inputs"]["engine_overhead_bytes"]["source"].startswith("default: typical vLLM start-up figure on an 80 GB H100")
    assert "empirical-vllm-memory-results.md" in data["inputs"]["engine_overhead_bytes"]["source"]
    assert data["outputs"]["max_concurrent_requests"]["value"] == 90


def test_per_replica_and_per_gpu_are_both_printed(capsys):
    # TP 2: (80 x 0.9 - 16/2 - 4) GiB = 60 GiB = 64,424,509,440 B per GPU / (147,456 / 2) = 873,813.3 tokens / 4096 = 213.3
    # -> 213 requests per replica, 213 / 2 = 106.5 per GPU; weights 16 GiB / 2 = 8 GiB per GPU
    code, out, err = run([*QWEN_KV, "--set", "engine_overhead_bytes=4GiB", "--set", "tp_size=2"], capsys)
    assert code == 0, err
    outs = json.loads(out)["outputs"]
    assert outs["max_concurrent_requests"]["value"] == 213
    assert outs["max_concurrent_requests_per_gpu"]["value"] == 106.5
    assert outs["weight_bytes_per_gpu"]["value"] == 8 * 2**30
    code, out, _ = run(["calc", "kv-concurrency", "--help"], capsys)
    assert "  max_concurrent_requests [requests]: per replica: " in out
    assert "  max_concurrent_requests_per_gpu [requests]: per GPU: " in out
    assert "  kv_budget_per_gpu [B]: per GPU: " in out


def test_inference_capacity_prints_weights_and_requests_per_gpu():
    # Llama-3.1-70B at TP 4 with BF16 weights: the result's own weight_bytes / 4 and max_concurrent_requests / 4
    r = api.calculator("inference-capacity").run(model="llama-3.1-70b", device="h100-sxm", tp_size=4, batch_size=16, prompt_tokens=2048,
                                                 avg_output_tokens=256, mfu=0.5)
    assert r.outputs["weight_bytes_per_gpu"].value == r.outputs["weight_bytes"].value / 4
    assert r.outputs["max_concurrent_requests_per_gpu"].value == r.outputs["max_concurrent_requests"].value / 4
    assert not any("measured on training" in w for w in r.warnings)  # mfu given: no band was applied


def test_serving_fleet_prints_goodput_per_gpu():
    # a measured replica of 4 GPUs at 2400 output tokens/s: 2400 / 4 = 600 tokens/s per GPU
    r = api.calculator("serving-fleet").run(qps=10, avg_output_tokens=200, instance_goodput=2400, gpus_per_instance=4)
    assert r.outputs["instance_goodput_per_gpu"].value == 600
    assert r.outputs["instance_goodput_per_gpu"].unit == "tokens/(GPU*s)"


def test_context_beyond_max_position_embeddings_warns(capsys):
    # Qwen/Qwen3-8B config.json: max_position_embeddings 40960
    code, out, err = run([*BASE, "--set", "context_tokens=65536", "--format", "json"], capsys)
    assert code == 0, err
    warnings = json.loads(out)["warnings"]
    assert ("context_tokens = 65536 tokens is beyond the model's max_position_embeddings = 40960 (preset model:qwen3-8b: config "
            "max_position_embeddings (Qwen/Qwen3-8B@b968826)); beyond it the model needs RoPE scaling (e.g. YaRN) or degrades") in warnings
    code, out, _ = run([*BASE, "--set", "context_tokens=40960", "--format", "json"], capsys)
    assert not any("max_position_embeddings" in w for w in json.loads(out)["warnings"])


def test_training_mfu_band_on_inference_prefill_warns():
    # hw:h100-sxm's only MFU band is Llama 3 405B pre-training, 0.38..0.43 (arXiv 2407.21783 table 4): mid point 0.405
    r = api.calculator("inference-capacity").run(model="llama-3.1-70b", device="h100-sxm", tp_size=4, batch_size=16, prompt_tokens=2048,
                                                 avg_output_tokens=256)
    hits = [w for w in r.warnings if "measured on training" in w]
    assert len(hits) == 1 and hits[0].startswith("mfu = 0.405 comes from the device's band measured on training (Llama 3 405B pre-training")
    assert hits[0].endswith("is applied here to inference prefill, whose MFU can differ; give --set mfu from an inference measurement")


@pytest.mark.parametrize("mfu, warned", [(0.7, True), (0.41, False)])
def test_training_mfu_above_60_percent_warns(mfu, warned):
    # Llama 3 405B (arXiv 2407.21783 table 4): 15.6e12 tokens on 16,384 H100s at 989.4 TFLOPS; 0.41 is the measured MFU
    r = api.calculator("training-duration").run(params_active=405e9, train_tokens=15.6e12, n_gpus=16384, peak_flops="989.4TFLOPS", mfu=mfu)
    assert any(w.startswith("an MFU above 60% is beyond published large-scale runs") for w in r.warnings) == warned
