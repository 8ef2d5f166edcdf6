"""``aiinfra calc energy-per-token``: the JSON contract with hand-checked numbers, the grid preset, bad input (exit 2)."""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main

EXAMPLE = ["calc", "energy-per-token", "--set", "params=8e9", "--set", "params_active=8e9", "--set", "layers=36", "--set", "head_dim=128",
           "--set", "kv_heads=8", "--set", "kv_bytes=2", "--set", "bytes_param=2", "--set", "peak_flops=989TFLOPS",
           "--set", "hbm_bandwidth=3.35TB/s", "--set", "batch_size=32", "--set", "prompt_tokens=1792", "--set", "avg_output_tokens=256",
           "--set", "gpu_tdp=700W"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_by_hand_with_a_grid_preset(capsys):
    code, out, err = run([*EXAMPLE, "--grid", "france-2022-bloom", "--set", "gpu_power_fraction=0.6", "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    tpot = (16e9 + 32 * 2048 * 147456) / 3.35e12                        # 7.6608 ms: weights + 32 x 2048 tokens of K/V at 3.35 TB/s
    joules = 700 * 0.6 * tpot / 32                                       # 420 W x step time / 32 tokens per step
    assert data["outputs"]["energy_per_output_token"]["value"] == pytest.approx(joules, rel=1e-9)
    assert data["outputs"]["energy_per_output_token"]["unit"] == "J/tokens"
    assert data["inputs"]["carbon_intensity"]["value"] == 57            # grid:france-2022-bloom (Luccioni et al. 2023, Table 1)
    assert data["outputs"]["carbon_per_output_token"]["value"] == pytest.approx(joules * 1.3 / 3.6e6 * 57, rel=1e-9)
    assert "FX1260" in data["formulas"] and "FX1262" in data["formulas"]


@pytest.mark.parametrize("bad,field", [("gpu_power_fraction=abc", "gpu_power_fraction"), ("utilization=2", "utilization"),
                                       ("gpu_tdp=5GB", "gpu_tdp")])
def test_bad_input_is_one_line_exit_2(capsys, bad, field):
    code, out, err = run([*EXAMPLE, "--set", bad], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and field in err and "Traceback" not in err
