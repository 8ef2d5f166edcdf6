"""Weight, K/V-cache and compute precision as three separate choices (#15): ``--weights FORMAT`` and
``--kv-cache FORMAT`` on calc, state and plan serve, ``--precision`` (the device's peak) on calc and
both planners. Bytes per value are hand arithmetic on each format's definition:

- NVFP4: 4-bit E2M1 values + one 8-bit E4M3 scale per 16 values (NVIDIA, "Introducing NVFP4", 2025-06)
- MXFP4/MXFP6/MXFP8: 4/6/8-bit values + one 8-bit E8M0 scale per 32 (OCP Microscaling Formats v1.0)
- INT4/INT8 group-quantised: 4/8-bit values + one FP16 scale per group (GPTQ/AWQ default group 128)

Model and device figures: Llama-3.1-70B 70,553,706,496 parameters (the Hub's safetensors metadata for
meta-llama/Llama-3.1-70B, as the record cites), 80 layers x 8 KV heads x 128; B200 180 GB, FP4 dense
9 PFLOPS (HGX B200: 144 PFLOPS sparse FP4 over 8 GPUs, halved); H100 SXM FP8 dense 1978.9 TFLOPS
(H100 whitepaper WP-10792-001).
"""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main
from engine.core.errors import InputError
from engine.domain import storage

LLAMA_70B = 70_553_706_496


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("name", "expected"), [
    ("bf16", 16 / 8), ("fp8", 8 / 8), ("int4", 4 / 8), ("fp32", 32 / 8),
    ("nvfp4", (4 + 8 / 16) / 8),        # 4.5 bits = 0.5625 B
    ("mxfp4", (4 + 8 / 32) / 8),        # 4.25 bits = 0.53125 B
    ("mxfp6", (6 + 8 / 32) / 8),        # 6.25 bits = 0.78125 B
    ("mxfp8", (8 + 8 / 32) / 8),        # 8.25 bits = 1.03125 B
    ("int4_group", (4 + 16 / 128) / 8),  # 4.125 bits = 0.515625 B
    ("int8_group", (8 + 16 / 128) / 8),  # 8.125 bits = 1.015625 B
    ("int4_group:64", (4 + 16 / 64) / 8),  # 4.25 bits = 0.53125 B
    ("NVFP4", (4 + 8 / 16) / 8),        # names are case-insensitive
])
def test_bytes_per_value_by_hand(name, expected):
    assert storage.resolve(name, "--weights").bytes == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("bad", ["fp5", "nvfp4:16", "bf16:8", "int4_group:0", "int4_group:x", ""])
def test_unknown_or_malformed_format_names_the_field(bad):
    with pytest.raises(InputError) as exc:
        storage.resolve(bad, "--kv-cache")
    assert exc.value.field == "--kv-cache"


def test_compute_never_narrower_than_the_weights():
    # FX651: a product runs at the wider of weights and activations; W16 cannot run on the FP8 path
    with pytest.raises(InputError) as exc:
        storage.check_compute(storage.resolve("bf16", "--weights"), "fp8")
    assert exc.value.field == "--precision" and "16" in exc.value.message
    # an NVFP4 product reads NVFP4 weights, not MXFP4 ones
    with pytest.raises(InputError):
        storage.check_compute(storage.resolve("mxfp4", "--weights"), "nvfp4")
    # weight-only quantisation (W4A16) and W8A8 are fine
    storage.check_compute(storage.resolve("int4_group", "--weights"), "bf16")
    storage.check_compute(storage.resolve("fp8", "--weights"), "fp8")


def test_calc_weights_kv_and_compute_apart(capsys):
    code, out, _ = run(["calc", "inference-capacity", "--model", "llama-3.1-70b", "--device", "b200", "--weights", "nvfp4", "--kv-cache", "fp8",
                        "--precision", "nvfp4", "--set", "gpu_memory_total=180GB", "--set", "prompt_tokens=2048", "--set", "avg_output_tokens=256",
                        "--set", "batch_size=32", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    inputs = data["inputs"]
    assert inputs["bytes_param"]["value"] == 0.5625 and "--weights nvfp4" in inputs["bytes_param"]["source"]
    assert inputs["kv_bytes"]["value"] == 1 and "--kv-cache fp8" in inputs["kv_bytes"]["source"]
    assert inputs["peak_flops"]["value"] == 9e15  # B200 dense FP4 (NVFP4 stated on that peak)
    assert data["outputs"]["weight_bytes"]["value"] == LLAMA_70B * 9 / 16  # 39,686,459,904 B


def test_calc_weights_conflicts_and_unused(capsys):
    code, _, err = run(["calc", "kv-concurrency", "--weights", "fp8", "--set", "bytes_param=1"], capsys)
    assert code == 2 and err.count("\n") == 1 and "--weights" in err
    # kv-concurrency given weight_bytes directly never reads bytes_param: --weights would be silently lost
    code, _, err = run(["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "context_tokens=8192",
                        "--set", "weight_bytes=16GB", "--weights", "fp8"], capsys)
    assert code == 2 and "--weights" in err and "bytes_param" in err and "Traceback" not in err


def test_calc_block_scaled_precision_refused_without_a_peak(capsys):
    code, _, err = run(["calc", "inference-capacity", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--precision", "nvfp4"], capsys)
    assert code == 2 and "--precision" in err and "nvfp4" in err


def test_state_weights_and_kv_cache_formats(capsys):
    # 32768 tokens x 80 layers x 2 (K, V) x 8 heads x 128 x 1 B (FP8) = 5,368,709,120 B per request;
    # B200 under FX72's vLLM rule (issue 28: one convention with calc kv-concurrency and plan serve): 0.9 x 178.35 GiB
    # (the record's driver_total) - 5 GiB = 166,982,959,759.36 B usable; - 70,553,706,496 x 0.5625 = 127,296,499,855.36 B
    # free -> 23.71 -> 23 requests (the nominal 180e9 B with no engine share gave 26)
    code, out, _ = run(["state", "--model", "llama-3.1-70b", "--context", "32768", "--device", "b200", "--weights", "nvfp4", "--kv-cache", "fp8",
                        "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["bytes_per_request"] == 5_368_709_120
    assert data["device"]["weight_bytes"] == LLAMA_70B * 0.5625
    assert data["device"]["requests"] == 23
    code, _, err = run(["state", "--model", "llama-3.1-70b", "--context", "10", "--kv-cache", "fp8", "--kv-bytes", "1"], capsys)
    assert code == 2 and "--kv-bytes" in err
    code, _, err = run(["state", "--model", "llama-3.1-70b", "--context", "10", "--weights", "nvfp4"], capsys)
    assert code == 2 and "--weights" in err and "--device" in err


def test_plan_serve_space_takes_the_three_precisions():
    from engine.core.paths import shipped_root
    from engine.plan.serve import build_serve, notes
    from engine.plan.serve_eval import constants

    s = build_serve(shipped_root(), "llama-3.1-70b", "b200", prompt=1024, output=128, ttft=2.0, tpot=0.05, mfu=0.4,
                    weights="nvfp4", kv_cache="fp8", precision="nvfp4")
    assert (s.bytes_param, s.kv_bytes, s.peak) == (0.5625, 1.0, 9e15)
    c = constants(s)
    assert c["w_dense"] == LLAMA_70B * 0.5625
    assert c["kv_token"] == 80 * 2 * 8 * 128 * 1  # 163,840 B per token in FP8
    assert any("weights nvfp4" in n and "K/V cache fp8" in n for n in notes(s))


def test_plan_serve_refusals(capsys):
    base = ["plan", "serve", "--model", "llama-3.1-70b", "--prompt", "1024", "--output", "128", "--ttft", "2s", "--tpot", "50ms", "--mfu", "0.4"]
    code, _, err = run(base + ["--device", "h100-sxm", "--precision", "fp8"], capsys)  # BF16 weights on the FP8 path
    assert code == 2 and "--precision" in err
    code, _, err = run(base + ["--device", "h100-sxm", "--weights", "nvfp4", "--precision", "nvfp4"], capsys)  # Hopper states no NVFP4
    assert code == 2 and "--precision" in err and "nvfp4" in err


def test_plan_train_precision_picks_the_peak(capsys):
    from engine.core.paths import shipped_root
    from engine.plan.space import build

    assert build(shipped_root(), "llama-3.1-70b", "h100-sxm", 64, precision="fp8").peak == 1978.9e12
    assert build(shipped_root(), "llama-3.1-70b", "h100-sxm", 64).peak == 989.4e12  # BF16 dense, the default
    code, _, err = run(["plan", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--gpus", "64", "--weights", "fp8"], capsys)
    assert code == 2 and "--weights" in err and "plan serve" in err


def test_forward_weights_and_kv_cache_formats(capsys):
    # Qwen3-8B decode after 8192 tokens: the ledger's weight bytes are parameters x bytes per weight
    # (8,190,735,360 x 2 = 16,381,470,720 B in BF16, Qwen/Qwen3-8B config.json count); NVFP4 stores
    # 0.5625 B per weight, so 8,190,735,360 x 0.5625 = 4,607,288,640 B; FP8 K/V: 36 x 2 x 8 x 128 x 1 B
    # = 73,728 B per token (half of BF16's 147,456)
    code, out, _ = run(["forward", "--model", "qwen3-8b", "--tokens", "1", "--history", "8192", "--weights", "nvfp4", "--kv-cache", "fp8",
                        "--format", "json"], capsys)
    assert code == 0
    totals = json.loads(out)["totals"]
    assert totals["weight_bytes"] == 8_190_735_360 * 0.5625
    assert totals["kv_bytes_per_token"] == 73_728
    code, _, err = run(["forward", "--model", "qwen3-8b", "--tokens", "1", "--weights", "nvfp4", "--quantized", "nvfp4"], capsys)
    assert code == 2 and "--weights" in err
    code, _, err = run(["generate", "--model", "qwen3-8b", "--history", "10", "--steps", "2", "--kv-cache", "fp8", "--kv-bytes", "1"], capsys)
    assert code == 2 and "--kv-cache" in err


def test_roofline_model_weights_kv_and_compute(capsys):
    base = ["roofline", "--device", "h100-sxm", "--model", "llama-3.1-70b", "--tokens", "1", "--history", "4096", "--format", "json"]
    code, out, _ = run(base + ["--precision", "fp8", "--weights", "fp8", "--kv-cache", "fp8"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["scenario"]["weight_bytes_per_element"] == 1 and data["scenario"]["kv_bytes_per_element"] == 1
    assert data["peak"]["precision"] == "fp8"
    code, _, err = run(base + ["--precision", "fp8", "--weights", "bf16"], capsys)  # W16 on the FP8 path (FX651)
    assert code == 2 and "--precision" in err
    code, _, err = run(["roofline", "--device", "h100-sxm", "--flops", "1e12", "--bytes", "1e9", "--weights", "fp8"], capsys)
    assert code == 2 and "--weights" in err and "--model" in err


# issue 28: a format's name given to --set as if it were a number names the option that takes it by name
NOT_A_NUMBER = "is not a number with an optional unit (expected e.g. 80GiB, 3.35TB/s, 1h..3h, 40±10%)"


@pytest.mark.parametrize(("argv", "message"), [
    (["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes=fp8", "--set", "context_tokens=8192"],
     f"--set kv_bytes: 'fp8' {NOT_A_NUMBER} (did you mean --kv-cache fp8?)"),
    (["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes=NVFP4", "--sweep", "context_tokens=1k..8k"],
     f"--set kv_bytes: 'NVFP4' {NOT_A_NUMBER} (did you mean --kv-cache nvfp4?)"),
    (["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes_per_token=fp8", "--set", "context_tokens=8192"],
     f"--set kv_bytes_per_token: 'fp8' {NOT_A_NUMBER} (did you mean --kv-cache fp8?)"),
    (["calc", "training-memory", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--set", "bytes_param=int4_group:64"],
     f"--set bytes_param: 'int4_group:64' {NOT_A_NUMBER} (did you mean --weights int4_group:64?)"),
    (["calc", "serving-fleet", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "peak_flops=fp8", "--set", "qps=50"],
     f"--set peak_flops: 'fp8' {NOT_A_NUMBER} (did you mean --precision fp8?)"),
    # no hint: not a format's name, a format for a symbol no option fills, a storage format that is no compute precision
    (["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes=lots", "--set", "context_tokens=8192"],
     f"--set kv_bytes: 'lots' {NOT_A_NUMBER}"),
    (["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "context_tokens=fp8"],
     f"--set context_tokens: 'fp8' {NOT_A_NUMBER}"),
    (["calc", "serving-fleet", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "peak_flops=int4_group", "--set", "qps=50"],
     f"--set peak_flops: 'int4_group' {NOT_A_NUMBER}"),
])
def test_calc_set_a_format_name_hints_at_the_option(argv, message, capsys):
    code, out, err = run(argv, capsys)
    assert (code, out, err) == (2, "", f"aiinfra: error: {message}\n")
