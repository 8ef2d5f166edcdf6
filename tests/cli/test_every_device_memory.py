"""What a user types first on any device: ``calc kv-concurrency --model qwen3-8b --device D``, for every record.

Before the usable totals (measured or derived, engine/domain/usable_memory.py), 34 of 37 devices exited 2
asking for ``--set gpu_memory_total``. Now each one answers, or refuses naming a real limit: the record
states no BF16 peak (then it answers at a precision it states), or the model does not fit (a warning says so).

Hand arithmetic (Qwen/Qwen3-8B config.json: 36 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 147,456 B per
token; 8,192 tokens = 1.125 GiB per request; BF16 weights 16.38 GB = 15.26 GiB; FX72: total x 0.9 - weights
- 5 GiB engine overhead):
- l4       measured 21.95 GiB: 19.76 - 15.26 - 5 = -0.50 GiB, no room for the K/V
- rtx-4090 measured 23.64 GiB: 21.28 - 15.26 - 5 =  1.02 GiB, less than one 1.125 GiB request
- tpu-v5e  derived 16 x 0.99 = 15.84 GiB: 14.26 - 15.26 - 5 < 0, the weights alone do not fit
Issue 28's wider registry adds more cards too small for it (16-bit weights, FP16 where the card has no BF16):
- a10      measured 21.98 GiB: 19.78 - 15.26 - 5 = -0.48 GiB
- rtx-3090 measured 23.59 GiB: 21.23 - 15.26 - 5 =  0.97 GiB, less than one 1.125 GiB request
- rtx-3080 measured  9.77 GiB; t4 measured 15095 MiB = 14.74 GiB; v100-sxm2-16gb measured 15.77 GiB;
  v100-pcie-16gb, p100-sxm2-16gb, p100-pcie-16gb derived 16 x 0.99 = 15.84 GiB, p100-pcie-12gb 11.88 GiB:
  x 0.9 is below the 15.26 GiB of weights; mi25 and mi50-16gb derived 15.84 GiB (FP16) likewise
- rtx-4000-ada measured 19.67 GiB, rtx-2000-ada measured 15.70 GiB: their records state only an FP32 peak, so the
  run answers at FP32 (32.76 GB = 30.5 GiB of weights), more than either card holds
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DEVICES = sorted(p.stem for p in (ROOT / "knowledge" / "hardware").glob("*.yaml"))
DOES_NOT_FIT = {"l4", "rtx-4090", "tpu-v5e",  # see the module's hand arithmetic
                "a10", "rtx-3090", "rtx-3080", "t4", "v100-sxm2-16gb", "v100-pcie-16gb", "p100-sxm2-16gb", "p100-pcie-16gb",
                "p100-pcie-12gb", "mi25", "mi50-16gb", "rtx-4000-ada", "rtx-2000-ada"}
NOT_FIT_WARNINGS = ("the KV budget per GPU is not positive", "not even one request of this context fits")


def kv(device: str, capsys, *extra: str):
    code = main(["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", device, "--set", "context_tokens=8192",
                 "--format", "json", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _stated_kv_precision(device: str) -> str:
    """A precision with a KV format whose dense peak the record states (fp16 on V100, fp8 on the Ascend 950DT)."""
    import yaml

    record = yaml.safe_load((ROOT / "knowledge" / "hardware" / f"{device}.yaml").read_text(encoding="utf-8"))
    stated = {p["precision"] for p in record["peaks"] if p["sparsity"] == "dense"}
    return next(p for p in ("fp16", "fp8", "fp32") if p in stated)


@pytest.mark.parametrize("device", DEVICES)
def test_kv_concurrency_answers_on_every_device(device, capsys):
    code, out, err = kv(device, capsys)
    assert "gpu_memory_total" not in err, err  # never a request for what the record holds
    if code == 2:  # the one refusal: the record states no BF16 peak (V100 has no BF16 path); it answers at one it states
        assert f"--precision: {device} states no dense bf16 peak" in err, err
        code, out, err = kv(device, capsys, "--precision", _stated_kv_precision(device))
    assert code == 0, err
    data = json.loads(out)
    source = data["inputs"]["gpu_memory_total"]["source"]
    record = (ROOT / "knowledge" / "hardware" / f"{device}.yaml").read_text(encoding="utf-8")
    basis = "driver-reported total" if "driver_total:" in record else "derived usable total"
    assert source.startswith(f"preset hw:{device}: {basis} "), source  # the output says which
    requests = data["outputs"]["max_concurrent_requests"]["value"]
    if device in DOES_NOT_FIT:
        assert requests < 1 and any(w.startswith(NOT_FIT_WARNINGS) for w in data["warnings"]), data["warnings"]
    else:
        assert requests >= 1, (device, requests, data["warnings"])


def test_the_text_output_says_derived_beside_a_derived_total(capsys):
    # H100 PCIe: no measured total; 80 GB x 0.99 = 79.20 GiB = 85,040,906,650 B, labelled derived in the source column
    code = main(["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-pcie", "--set", "context_tokens=8192"])
    out, _ = capsys.readouterr()
    line = next(line for line in out.splitlines() if line.startswith("gpu_memory_total"))
    assert code == 0 and "8.504e10" in line and "preset hw:h100-pcie: derived usable total 79.20GiB — derived, not measured" in line


def test_serving_fleet_on_h200_takes_the_usable_total(capsys):
    # before: with qps, lengths and both targets given, H200 still asked for instance_goodput (no gpu_memory_total
    # for FX138's chain); now its measured 143,071.875 MiB fills the chain and the fleet is sized
    code = main(["calc", "serving-fleet", "--model", "qwen3-8b", "--device", "h200", "--set", "qps=10", "--set", "avg_output_tokens=500",
                 "--set", "prompt_tokens=1000", "--set", "tpot_target=50ms", "--set", "ttft_target=1s", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["inputs"]["gpu_memory_total"]["value"] == 143071.875 * 2**20
    assert data["outputs"]["n_gpus_required"]["value"] >= 1
