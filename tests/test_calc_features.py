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
from engine.errors import InputError

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
    (["--set", "context_tokens=8192", "--plot", "x.svg"], "--plot"),
    (["--sweep", "context_tokens=1024..2048", "--plot", "out.txt"], "--plot"),
    (["--set", "context_tokens=8192", "--precision", "fp4"], "--precision"),
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
