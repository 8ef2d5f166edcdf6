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


@pytest.mark.parametrize("argv", [[*EXAMPLE[:2], "--model", "qwen3-8b", "--set", "batch_size=8", "--set", "prompt_tokens=1024",
                                    "--set", "avg_output_tokens=256"],
                                   ["calc", "power-tco", "--set", "n_gpus=64", "--set", "gpus_per_node=8", "--set", "node_overhead_power=4kW",
                                    "--set", "capex_per_gpu=30000USD", "--set", "electricity_price=0.1USD/kWh"]])
def test_a_device_that_states_no_tdp_is_named_as_the_limit(argv, capsys):
    # issue 28: tpu-v5e's record states no TDP (Google publishes none), so the run asked 'needs a value for gpu_tdp
    # (... --device fills it)' as if the record should hold one; it names the device's gap and the way round it
    code, out, err = run([*argv, "--device", "tpu-v5e"], capsys)
    assert code == 2 and out == ""
    assert err == (f"aiinfra: error: --device: tpu-v5e states no TDP (aiinfra hardware show tpu-v5e says why), and calc:{argv[1]} needs "
                   "gpu_tdp: give --set gpu_tdp=W for the card you mean, or --system for a system record's\n")
    code, out, err = run([*argv, "--device", "tpu-v5e", "--set", "gpu_tdp=200W", "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["inputs"]["gpu_tdp"]["value"] == 200


def test_one_of_several_missing_inputs_names_the_device_gap_on_its_line(capsys):
    code, out, err = run(["calc", "power-tco", "--device", "trainium2", "--set", "n_gpus=64", "--set", "gpus_per_node=8",
                          "--set", "node_overhead_power=4kW", "--set", "capex_per_gpu=30000USD"], capsys)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == "aiinfra: error: calc:power-tco needs 2 inputs (give each with --set NAME=VALUE):"
    assert lines[1].startswith("  --set gpu_tdp (W, ") and lines[1].endswith("; trainium2 states no TDP (aiinfra hardware show trainium2 says why)")
    assert lines[2].startswith("  --set electricity_price (USD/kWh, ")
