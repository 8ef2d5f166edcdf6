"""``aiinfra calc list`` and ``aiinfra calc <name>``: generated help, formats, --explain, bad input.

Numbers are hand arithmetic written beside them (the Qwen3-8B shape from Qwen/Qwen3-8B config.json).
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from engine.cli.main import main

QWEN = ["calc", "kv-concurrency", "--set", "layers=36", "--set", "kv_heads=8", "--set", "head_dim=128", "--set", "kv_bytes=2",
        "--set", "gpu_memory_total=80GiB", "--set", "weight_bytes=16GiB", "--set", "engine_overhead_bytes=4GiB",
        "--set", "context_tokens=4096"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_list(capsys):
    code, out, _ = run(["calc", "list"], capsys)
    assert code == 0
    assert "calc:kv-concurrency" in out and "calc:training-duration" in out


def test_help_lists_inputs_with_units_and_defaults(capsys):
    code, out, _ = run(["calc", "kv-concurrency", "--help"], capsys)
    assert code == 0
    assert "gpu_memory_total [B]" in out
    assert "block_tokens [tokens] default 16" in out
    assert "kv_scope [one of replica|per_gpu] default per_gpu" in out


def test_json_result(capsys):
    code, out, _ = run([*QWEN, "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["calculator"] == "calc:kv-concurrency"
    # 2 x 36 x 8 x 128 x 2 = 147456 B; (80 x 0.9 - 16 - 4) GiB / 147456 B / 4096 = 92.4 -> 92
    assert data["outputs"]["kv_bytes_per_token"]["value"] == 147456
    assert data["outputs"]["max_concurrent_requests"]["value"] == 92
    assert data["formulas"] == ["F8", "FX73", "FX72", "F9", "FX71"]


def test_explain_substitutes_values(capsys):
    code, out, _ = run([*QWEN, "--explain"], capsys)
    assert code == 0
    assert "F8 KV cache bytes per token (gqa)" in out
    assert "= 2 * 36 * 8 * 128 * 2" in out
    assert "= 85899345920 * 0.9 - 17179869184 / 1 - 4294967296" in out  # 80 GiB, 16 GiB, 4 GiB in bytes


@pytest.mark.parametrize("fmt", ["md", "csv", "text"])
def test_other_formats(capsys, fmt):
    code, out, _ = run([*QWEN, "--format", fmt], capsys)
    assert code == 0
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert {"kind": "output", "name": "max_concurrent_requests"}.items() <= next(r for r in rows if r["name"] == "max_concurrent_requests").items()
    else:
        assert "max_concurrent_requests" in out


def test_boundary_met_is_a_warning_exit_0(capsys):
    # 80 GiB x 0.9 = 72 GiB < 70 GiB weights + 4 GiB overhead
    argv = [a if a != "weight_bytes=16GiB" else "weight_bytes=70GiB" for a in QWEN]
    code, out, _ = run(argv, capsys)
    assert code == 0
    assert "Warnings:" in out and "kv_budget_per_gpu <= 0" in out


@pytest.mark.parametrize("extra, field", [
    (["--set", "nonsense=1"], "--set nonsense"),
    (["--set", "context_tokens=4GiB"], "--set context_tokens"),
    (["--set", "tp_size=0"], "--set tp_size"),
])
def test_bad_input_is_one_line_exit_2(capsys, extra, field):
    code, out, err = run([*QWEN, *extra], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and field in err and "Traceback" not in err


def test_missing_input_exit_2(capsys):
    code, _, err = run(["calc", "training-duration", "--set", "mfu=0.4"], capsys)
    assert code == 2 and "--set " in err and "needs a value" in err


def test_unknown_calculator_exit_2(capsys):
    code, _, err = run(["calc", "no-such"], capsys)
    assert code == 2 and "no-such" in err


def test_format_before_the_verb(capsys):
    code, out, _ = run(["--format", "json", "calc", "training-duration", "--set", "params_active=70e9", "--set", "train_tokens=15e12",
                        "--set", "n_gpus=1024", "--set", "peak_flops=1PFLOPS", "--set", "mfu=0.4"], capsys)
    assert code == 0
    # Book ch6 §6.2: 6.3e24 / (1024 x 1e15 x 0.4) = 15380859.375 s
    assert json.loads(out)["outputs"]["train_time"]["value"] == pytest.approx(15380859.375)
