"""``aiinfra kv tiers``: formats, hand-checked numbers, presets, bad input (one line on stderr naming the field, exit 2).

Numbers as in tests/domain/test_kv_tiers.py: 147456 B of K/V per token (Qwen3-8B), 1.6e10 FLOPs per token, 989 TFLOPS at
MFU 0.5, an 8192-token prefix reused every 60 s, 20000 other tokens per second entering the caches.
"""

from __future__ import annotations

import json
import math

import pytest

from engine.cli.main import main

GIVEN = ["kv", "tiers", "--bytes-per-token", "147456", "--flops-per-token", "1.6e10", "--peak-flops", "989TFLOPS", "--prefix", "8192",
         "--reuse-interval", "1min", "--insert-rate", "20000", "--tier", "gpu:40GB", "--tier", "host:512GB:64GB/s"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_by_hand(capsys):
    code, out, err = run([*GIVEN, "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    gpu, host = data["tiers"]
    assert data["insert_rate_bytes"] == 20000 * 147456
    assert gpu["characteristic_time"] == pytest.approx(40e9 / 2.94912e9)               # 13.563 s
    assert gpu["hit_rate"] == pytest.approx(1 - math.exp(-40e9 / 2.94912e9 / 60))         # 0.20232668
    assert host["hit_through"] == pytest.approx(0.95582405, abs=1e-8)                     # 1 - exp(-552e9 / 2.94912e9 / 60)
    assert host["restore_time"] == pytest.approx(8192 * 147456 / 64e9)                    # 0.018874368 s
    assert data["recompute_time"] == pytest.approx(8192 * 1.6e10 / 4.945e14)              # 0.26505966 s
    assert data["ttft"] == pytest.approx(0.025931049, rel=1e-6)                           # FX1247's worked example
    assert data["ttft_no_cache"] == pytest.approx(0.26505966, rel=1e-7)
    assert "FX1243" in data["formulas"] and "LRU" in data["hit_model"]


def test_text_md_csv(capsys):
    code, out, _ = run(GIVEN, capsys)
    assert code == 0 and "18.87 ms" in out and "0.7535" in out and "model: exclusive tiers" in out
    code, out, _ = run([*GIVEN, "--format", "md"], capsys)
    assert code == 0 and out.startswith("## prefix of 8,192 tokens") and "| host |" in out
    code, out, _ = run([*GIVEN, "--format", "csv"], capsys)
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("tier,capacity_bytes,") and len(lines) == 3 and lines[2].startswith("host,512000000000.0,")


def test_model_and_device_presets(capsys):
    code, out, err = run(["kv", "tiers", "--model", "qwen3-8b", "--device", "h100-sxm", "--prefix", "8192", "--reuse-interval", "60s",
                          "--insert-rate", "20000", "--tier", "gpu:40GB", "--tier", "host:512GB", "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["inputs"]["kv_bytes_per_token"] == 2 * 36 * 8 * 128 * 2 == 147456              # F8, Qwen3-8B config.json
    assert data["inputs"]["peak_flops"] == pytest.approx(989.4e12)                              # H100 SXM dense BF16 (whitepaper)
    assert data["tiers"][1]["bandwidth"] == 64e9                                                # PCIe Gen5 x16, 128 GB/s both ways
    assert "host link" in data["notes"][0]
    # FX30 = 2 x active parameters; Qwen3-8B counts 8.19e9 parameters with embeddings (the model record's count)
    assert 2 * 8.0e9 < data["inputs"]["flops_per_token"] < 2 * 8.3e9


@pytest.mark.parametrize("extra,field", [
    (["--tier", "gpu"], "--tier"),
    (["--tier", "gpu:40GB", "--tier", "ssd:4TB"], "--tier"),
    (["--tier", "gpu:40XB"], "--tier gpu capacity"),
    (["--tier", "gpu:40GB", "--reuse-interval", "5GB"], "--reuse-interval"),
    (["--tier", "gpu:40GB", "--mfu", "1.5"], "--mfu"),
    (["--tier", "gpu:40GB", "--prefix", "0"], "--prefix"),
    (["--tier", "gpu:40GB", "--device", "h100-sxm"], "--peak-flops"),
])
def test_bad_input_is_one_line_exit_2(capsys, extra, field):
    argv = [a for a in GIVEN if not a.startswith(("gpu:", "host:"))]
    argv = [a for i, a in enumerate(argv) if not (a == "--tier")]
    code, out, err = run([*argv, *extra], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and f"{field}:" in err and "Traceback" not in err


def test_model_or_bytes_needed(capsys):
    code, _, err = run(["kv", "tiers", "--prefix", "8", "--reuse-interval", "1", "--insert-rate", "1", "--tier", "gpu:1GB",
                        "--peak-flops", "1e15", "--flops-per-token", "1e9"], capsys)
    assert code == 2 and "--bytes-per-token:" in err
