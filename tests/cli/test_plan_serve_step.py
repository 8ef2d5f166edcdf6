"""``aiinfra plan serve`` times its search with validate's calibrated step (engine.plan.step_model), as a user runs it.

The step's fixed cost is checked by hand arithmetic on the model's official config (deepseek-ai/DeepSeek-V3 config.json at
e815299b: num_hidden_layers 61, first_k_dense_replace 3, so 58 MoE layers; meta-llama/Llama-3.1-8B: 32 layers, dense) and
the constants in knowledge/calibration/fitted.json (read here, not copied): overhead + layers x overhead_layer + MoE layers
x overhead_moe + batch x overhead_seq, each of the --engine's group. The whole step is checked against validate's own step
function on the same layout (one step model in the search and in the scored closed form).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
FITTED = json.loads((ROOT / "knowledge/calibration/fitted.json").read_text())["serve"]["parameters"]
DSV3 = ["plan", "serve", "--model", "deepseek-v3", "--device", "h200", "--tp", "8", "--ep", "1", "--batch", "64", "--prompt", "3200",
        "--output", "800", "--ttft", "10s", "--tpot", "1s"]
LLAMA = ["plan", "serve", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--prompt", "512", "--output", "256", "--ttft", "2s",
         "--tpot", "60ms", "--max-batch", "96"]


def aiinfra(*argv):
    return subprocess.run([sys.executable, "-m", "engine", *argv], capture_output=True, text=True, timeout=300, cwd=ROOT)


def _json(*argv) -> dict:
    p = aiinfra(*argv, "--format", "json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _fixed(engine: str, layers: int, moe_layers: int, batch: int) -> float:
    v = {k: FITTED[k][engine] for k in ("overhead", "overhead_layer", "overhead_moe", "overhead_seq")}
    return v["overhead"] + layers * v["overhead_layer"] + moe_layers * v["overhead_moe"] + batch * v["overhead_seq"]


@pytest.mark.parametrize("engine", ["sglang", "vllm", "tensorrt-llm"])
def test_the_step_carries_the_engines_fixed_costs(engine):
    data = _json(*DSV3, "--engine", engine)
    assert data["step_model"] == "calibrated"
    for row in data["pinned"]["points"]:
        # DeepSeek-V3: 61 layers, 58 of them MoE (first_k_dense_replace 3), 64 sequences
        assert row["overhead"] == pytest.approx(_fixed(engine, 61, 58, 64), rel=1e-12)
        if row["mode"] == "split":  # TPOT = FX78: the step's work + its overhead (no chunked prefill in the decode pool)
            assert row["tpot"] == pytest.approx(row["step"] + row["tp_comm"] + row["ep_comm"] + row["overhead"], rel=1e-12)


def test_a_dense_model_pays_no_moe_cost_and_no_engine_takes_the_shared_fit():
    data = _json(*LLAMA, "--tp", "1", "--batch", "32")
    row = data["pinned"]["points"][0]
    assert row["overhead"] == pytest.approx(_fixed("shared", 32, 0, 32), rel=1e-12)  # Llama-3.1-8B: 32 layers, dense
    assert any("no --engine (the fit over every engine)" in a for a in data["assumptions"])


def test_the_search_step_is_validates_step():
    """The pinned split point's step equals engine.measure.serve's step for the same stated layout and batch."""
    from engine.measure import predict
    from engine.measure import serve as closed
    from engine.measure.serve import engine_layout

    data = _json(*DSV3, "--engine", "sglang")
    row = next(r for r in data["pinned"]["points"] if r["mode"] == "split")
    stated = predict._row("serve", "deepseek-v3", "h200", 8, engine_layout(8, 1, "sglang"), {"prompt": 3200, "output": 800, "batch": 64}, {},
                          "sglang")
    _, _, t, _, values = predict._calibrated(str(ROOT), "serve", stated)
    want = float(closed._step(t, values, np.array([64.0]))[0])
    assert row["step"] + row["tp_comm"] + row["ep_comm"] + row["overhead"] == pytest.approx(want, rel=1e-9)


def test_the_roofline_is_one_flag_away_and_own_efficiencies_choose_it():
    roof = _json(*DSV3, "--step-model", "roofline")
    assert roof["step_model"] == "roofline"
    assert all(r["overhead"] == 0 for r in roof["pinned"]["points"])
    given = _json(*DSV3, "--mfu", "0.5", "--mbu", "0.9")
    assert given["step_model"] == "roofline"
    p = aiinfra(*DSV3, "--step-model", "calibrated", "--mfu", "0.5")
    assert p.returncode == 2 and "--step-model" in p.stderr and "--mfu" in p.stderr and "Traceback" not in p.stderr


def test_the_batch_bound_never_prunes_a_point_the_calibrated_step_admits():
    """FX134's bound at e_decode and the larger of e_hbm and e_kv, less the fixed cost, is below every calibrated step:
    pruning by it leaves the same front and the same cheapest layout as evaluating every point."""
    tight = ["plan", "serve", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--prompt", "4096", "--output", "1024", "--ttft", "2s",
             "--tpot", "12ms", "--max-batch", "128", "--engine", "vllm"]
    pruned = _json(*tight, "--prune", "bound")
    every = _json(*tight, "--prune", "none")
    assert pruned["pruned_bound"] > 0  # the bound did remove points
    assert [(r["mode"], r["tp"], r["batch"]) for r in pruned["front"]] == [(r["mode"], r["tp"], r["batch"]) for r in every["front"]]
    assert pruned["min_gpus"] == every["min_gpus"] and pruned["best"]["index"] == every["best"]["index"]


def test_the_serving_calculators_take_the_same_fixed_cost_per_step():
    base = ["calc", "inference-capacity", "--set", "tp_size=8", "--set", "batch_size=64", "--set", "prompt_tokens=3200",
            "--set", "avg_output_tokens=800", "--format", "json"]
    with_device = _json_calc(*base, "--model", "deepseek-v3", "--device", "h200")
    fixed = FITTED["overhead"]["shared"] + 61 * FITTED["overhead_layer"]["shared"] + 58 * FITTED["overhead_moe"]["shared"]
    assert with_device["inputs"]["step_overhead_time"]["value"] == pytest.approx(fixed, rel=1e-12)
    assert "calibrated fixed cost of a step" in with_device["inputs"]["step_overhead_time"]["source"]
    # TPOT = FX78: the decode step plus that fixed cost
    out = with_device["outputs"]
    assert out["tpot"]["value"] == pytest.approx(out["decode_step_time"]["value"] + fixed, rel=1e-9)
    # without --device the calculator keeps its formulas' own default, as its site page does (0: no overhead)
    bare = _json_calc(*base, "--model", "deepseek-v3", "--set", "gpu_memory_total=141GB", "--set", "peak_flops=989.5TFLOP/s",
                      "--set", "hbm_bandwidth=4.8TB/s")
    assert bare["inputs"]["step_overhead_time"]["value"] == 0
    given = _json_calc(*base, "--model", "deepseek-v3", "--device", "h200", "--set", "step_overhead_time=0")
    assert given["inputs"]["step_overhead_time"]["value"] == 0


def _json_calc(*argv) -> dict:
    p = aiinfra(*argv)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


H200_TOTAL = 150_021_734_400  # knowledge/hardware h200: the runtime's total per GPU (143,071 MiB, as the record cites)
DSV3_STORED = 673_150_611_808  # deepseek-ai/DeepSeek-V3's checkpoint as stored (FP8 with block scales), the model record's weight_bytes
GIB = 2**30


@pytest.mark.parametrize(("engine", "usable"), [
    (None, 0.9 * H200_TOTAL - 5 * GIB),  # FX72's vLLM rule: 0.9 x total - 5 GiB
    ("vllm", 0.9 * H200_TOTAL - 5 * GIB),
    # SGLang: total - reserved, reserved (12 + TP x PP / 2) GiB between 90 and 160 GiB of total = 16 GiB at TP 8
    ("sglang", H200_TOTAL - 16 * GIB),
    # TensorRT-LLM: K/V = 0.9 x (total - weights - 5 GiB), so weights + K/V <= weights + that
    ("tensorrt-llm", DSV3_STORED / 8 + 0.9 * (H200_TOTAL - DSV3_STORED / 8 - 5 * GIB)),
])
def test_engine_memory_rule_sets_the_memory_a_layout_may_use(engine, usable):
    data = _json(*DSV3, *(["--engine", engine] if engine else []))
    for row in data["pinned"]["points"]:
        assert row["usable"] == pytest.approx(usable, rel=1e-9)
        assert row["meets"]["memory"] == (row["memory"] <= usable)
    p = aiinfra(*DSV3, "--engine", "tgi")
    assert p.returncode == 2 and "--engine" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("argv", [
    ["plan", "serve", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--ttft", "1", "--tpot", "0.05", "--qps", "50", "--prompt", "2048",
     "--output", "256"],
    ["plan", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--gpus", "1024"],
    [*DSV3, "--engine", "sglang"],
])
def test_the_planners_fit_an_80_column_terminal(argv):
    """Issue 28: tables and the sentences around them fit $COLUMNS (JSON, CSV and Markdown keep everything)."""
    import os

    from engine.cli.render import display_width

    p = subprocess.run([sys.executable, "-m", "engine", *argv], capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "COLUMNS": "80"})
    assert p.returncode == 0, p.stderr
    wide = [line for line in p.stdout.splitlines() if display_width(line) > 80]
    assert not wide, wide[:3]
    assert "TPOT ms" in p.stdout or "step s" in p.stdout  # the table itself is there
