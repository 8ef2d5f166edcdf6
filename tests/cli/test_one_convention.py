"""Issue 28, wrong or blocked answers: one efficiency rule, FP8 checkpoints as shipped, the roofline's fit check,
one capacity convention, one training-memory answer, "does not fit" first, and presets that refuse only what needs a peak.
Every expected number is hand arithmetic from the cited records; none comes from running the engine."""

from __future__ import annotations

import json
from pathlib import Path

from engine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
GIB = 2**30
FITTED = json.loads((ROOT / "knowledge/calibration/fitted.json").read_text(encoding="utf-8"))  # the data file, not our code


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_deepseek_v3_weights_fit_h200_at_tp8_as_the_fp8_checkpoint_ships(capsys):
    # storage: 669,065,609,216 FP8 x 1 B + 1,960,795,136 BF16 x 2 B + (40,838,232 scales + 14,848 router biases) x 4 B
    # = 673,150,611,808 B; / 8 = 84,143,826,476 B per GPU. H200: the runtime's 150,021,734,400 B (deviceQuery) x 0.9 - 5 GiB
    # = 129,650,851,840 B usable; free 45,507,025,364 B; one request at 4096 tokens: 61 x (512 + 64) x 2 B x 4096 =
    # 287,834,112 B (the latent, whole on every rank) -> 158 requests. Before: BF16, 167.8 GB per GPU > 141 GB, "no room".
    code, out, err = run(["state", "--model", "deepseek-v3", "--device", "h200", "--tp", "8", "--context", "4096", "--format", "json"], capsys)
    assert code == 0, err
    fit = json.loads(out)["device"]
    assert fit["weight_bytes"] == 673_150_611_808 / 8 and fit["requests"] == 158 and "fp8" in fit["weight_source"]


def test_kv_concurrency_takes_the_checkpoint_bytes_and_agrees_with_state(capsys):
    # the same 158 through calc kv-concurrency (bytes_param = 673,150,611,808 / 671,026,419,200 parameters)
    code, out, err = run(["calc", "kv-concurrency", "--model", "deepseek-v3", "--device", "h200", "--set", "tp_size=8",
                          "--set", "context_tokens=4096", "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["inputs"]["bytes_param"]["value"] == 673_150_611_808 / 671_026_419_200
    assert data["outputs"]["max_concurrent_requests"]["value"] == 158


def test_state_and_kv_concurrency_one_convention(capsys):
    # Qwen3-8B on H100 SXM at 8192 tokens: 0.9 x 79.18 GiB - 5 GiB = 71,148,280,741.89 B; - 16,381,470,720 B of BF16
    # weights = 54,766,810,021.89; / (8192 x 147,456 = 1,207,959,552) = 45.3 -> 45 in both (before: state 52, nominal 80e9 B)
    code, out, _ = run(["state", "--model", "qwen3-8b", "--device", "h100-sxm", "--context", "8192", "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["device"]["requests"] == 45
    code, out, _ = run(["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "context_tokens=8192", "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["outputs"]["max_concurrent_requests"]["value"] == 45


def test_roofline_model_refuses_weights_that_do_not_fit(capsys):
    # Llama-3.1-70B: 70,553,706,496 x 2 B = 131.42 GiB > L4's 0.9 x 21.95 GiB - 5 GiB = 14.76 GiB (before: a time)
    code, out, err = run(["roofline", "--device", "l4", "--model", "llama-3.1-70b", "--tokens", "1"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("aiinfra: error: --model: llama-3.1-70b's weights do not fit l4: 131.42 GiB per GPU")


def test_serving_fleet_takes_the_calibrated_efficiency_not_the_peak(capsys):
    hopper = FITTED["serve"]["parameters"]
    code, out, err = run(["calc", "serving-fleet", "--model", "qwen3-8b", "--device", "h200", "--set", "qps=50", "--set", "prompt_tokens=2048",
                          "--set", "avg_output_tokens=256", "--set", "ttft_target=1s", "--set", "tpot_target=50ms", "--format", "json"], capsys)
    assert code == 0, err
    inputs = json.loads(out)["inputs"]
    assert inputs["mfu"]["value"] == hopper["e_prefill"]["hopper"] != 1  # before: 1, the peak
    assert inputs["mbu"]["value"] == hopper["e_hbm"]["hopper"] != 1
    assert "calibrated serve e_prefill" in inputs["mfu"]["source"] and "for hopper" in inputs["mfu"]["source"]


def test_energy_per_token_takes_the_same_calibrated_step(capsys):
    # energy-per-token times its step as inference-capacity does: the generation's e_prefill / e_hbm and the fixed cost of a
    # step for Qwen3-8B's 36 layers (config.json num_hidden_layers 36, dense): overhead + 36 x overhead_layer, the shared fit
    fit = FITTED["serve"]["parameters"]
    code, out, err = run(["calc", "energy-per-token", "--model", "qwen3-8b", "--device", "h200", "--set", "tp_size=1", "--set", "batch_size=32",
                          "--set", "prompt_tokens=1000", "--set", "avg_output_tokens=500", "--format", "json"], capsys)
    assert code == 0, err
    inputs = json.loads(out)["inputs"]
    assert inputs["mfu"]["value"] == fit["e_prefill"]["hopper"] and inputs["mbu"]["value"] == fit["e_hbm"]["hopper"]
    assert abs(inputs["step_overhead_time"]["value"] - (fit["overhead"]["shared"] + 36 * fit["overhead_layer"]["shared"])) < 1e-15


def test_a_generation_without_a_fit_falls_back_and_says_so(capsys):
    # the serving fit has no TPU group: the shared value, named as a fallback
    shared = FITTED["serve"]["parameters"]["e_prefill"]["shared"]
    code, out, err = run(["calc", "serving-fleet", "--model", "qwen3-8b", "--device", "tpu-v5p", "--set", "qps=5", "--set", "prompt_tokens=1024",
                          "--set", "avg_output_tokens=128", "--set", "ttft_target=2s", "--set", "tpot_target=100ms", "--format", "json"], capsys)
    assert code == 0, err
    mfu = json.loads(out)["inputs"]["mfu"]
    assert mfu["value"] == shared and "'shared'" in mfu["source"]


def test_training_duration_asks_no_mfu_on_a_device_without_a_measured_band(capsys):
    # before: "--set mfu: calc:training-duration needs a value for mfu" on b200
    e = FITTED["train"]["parameters"]["e_train"]["blackwell:16-bit"]
    code, out, err = run(["calc", "training-duration", "--model", "llama-3.1-70b", "--device", "b200", "--set", "train_tokens=15T",
                          "--set", "n_gpus=1024", "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["inputs"]["mfu"]["value"] == e


def test_plan_and_calc_training_memory_one_answer(capsys):
    # Llama-3-70B, TP 8 PP 4 DP 32, ZeRO-1, selective, 4096 tokens: calc said 44.68 GB (SP off), plan 21.07 GB (SP on);
    # with sequence parallelism on with TP in both, the same bytes
    code, out, _ = run(["calc", "training-memory", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--set", "tp_size=8", "--set", "pp_size=4",
                        "--set", "dp_size=32", "--set", "zero_stage=1", "--set", "seq_len=4096", "--set", "micro_batch=1",
                        "--set", "recompute=selective", "--format", "json"], capsys)
    assert code == 0
    calc = json.loads(out)
    assert calc["inputs"]["sp_degree"]["value"] == 8
    code, out, _ = run(["plan", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--gpus", "1024", "--global-batch", "1024", "--seq", "4096",
                        "--tp", "8", "--pp", "4", "--cp", "1", "--vp", "1", "--ep", "1", "--micro-batch", "1", "--zero", "1",
                        "--recompute", "selective", "--format", "json"], capsys)
    assert code == 0
    plan = json.loads(out)["pinned"]["layout"]
    assert plan["dp"] == 32
    assert calc["outputs"]["train_memory_bytes_per_gpu"]["value"] == plan["memory"]


def test_does_not_fit_comes_first(capsys):
    # L4: 0.9 x 21.95 GiB - 15.26 GiB of Qwen3-8B weights - 5 GiB < 0
    code, out, _ = run(["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "l4", "--set", "context_tokens=8192"], capsys)
    assert code == 0
    assert out.splitlines()[1].startswith("DOES NOT FIT: the weights and the engine overhead leave no KV budget")


def test_kv_concurrency_runs_where_the_device_has_no_peak_at_the_precision(capsys):
    # V100 states no BF16 peak; kv-concurrency never reads a peak (before: refused with --precision)
    code, out, err = run(["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "v100-sxm2-32gb", "--set", "context_tokens=8192",
                          "--format", "json"], capsys)
    assert code == 0, err
    code, _, err = run(["calc", "serving-fleet", "--model", "qwen3-8b", "--device", "v100-sxm2-32gb", "--set", "qps=1"], capsys)
    assert code == 2 and "--precision: v100-sxm2-32gb states no dense bf16 peak" in err
