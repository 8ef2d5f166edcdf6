"""``aiinfra calc list`` and ``aiinfra calc <name>``: generated help, formats, --explain, bad input.

Numbers are hand arithmetic written beside them (the Qwen3-8B shape from Qwen/Qwen3-8B config.json).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

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
    assert data["formulas"] == ["F8", "FX73", "FX72", "F9", "FX71", "FX301", "FX302"]  # FX301/FX302: per-GPU requests and weights


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
    assert code == 2 and "--set " in err and "needs 4 inputs" in err  # every missing one (tests/numeric/test_calc_missing.py)


def test_unknown_calculator_exit_2(capsys):
    code, _, err = run(["calc", "no-such"], capsys)
    assert code == 2 and "no-such" in err


def test_format_before_the_verb(capsys):
    code, out, _ = run(["--format", "json", "calc", "training-duration", "--set", "params_active=70e9", "--set", "train_tokens=15e12",
                        "--set", "n_gpus=1024", "--set", "peak_flops=1PFLOPS", "--set", "mfu=0.4"], capsys)
    assert code == 0
    # Book ch6 §6.2: 6.3e24 / (1024 x 1e15 x 0.4) = 15380859.375 s
    assert json.loads(out)["outputs"]["train_time"]["value"] == pytest.approx(15380859.375)


def test_kv_precision_by_format_name(capsys):
    # fp8 = 8 bits = 1 B per element (book table B.4, FX158): 2 x 36 x 8 x 128 x 1 = 73728 B per token;
    # (80 x 0.9 - 16 - 4) GiB = 55834574848 B / 73728 = 757305.2 tokens / 4096 = 184.9 -> 184 requests
    argv = [a if a != "kv_bytes=2" else "kv_precision=fp8" for a in QWEN]
    code, out, _ = run([*argv, "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["outputs"]["kv_bytes_per_token"]["value"] == 73728
    assert data["outputs"]["max_concurrent_requests"]["value"] == 184
    assert data["formulas"][0] == "FX158"


def test_kv_precision_outranks_the_precision_preset(capsys):
    # --precision bf16 would fill kv_bytes = 2; the user's kv_precision=fp8 derives it instead (1 B)
    argv = [a if a != "kv_bytes=2" else "kv_precision=fp8" for a in QWEN]
    code, out, _ = run([*argv, "--precision", "bf16", "--format", "json"], capsys)
    assert code == 0
    assert json.loads(out)["outputs"]["kv_bytes_per_token"]["value"] == 73728


def test_kv_precision_unsupported_refused_with_the_list(capsys):
    argv = [a if a != "kv_bytes=2" else "kv_precision=fp64" for a in QWEN]
    code, out, err = run(argv, capsys)
    assert (code, out, err) == (2, "", "aiinfra: error: --set kv_precision: 'fp64' is not one of fp32, bf16, fp16, fp8, int8, fp6, fp4, int4\n")


BROKEN = str(Path(__file__).parent.parent / "fixtures" / "roots" / "broken_conditions")
WHITELIST = "(expected one of sqrt, log, exp, ceiling, floor, Min, Max, Abs, Piecewise)"


def test_check_lists_every_broken_condition_at_its_line(capsys):
    # two calculators, three broken `when` fields: lines 14 of kv-one.yaml, 12 and 14 of kv-two.yaml
    code, out, _ = run(["check", "--root", BROKEN], capsys)
    assert code == 1
    assert out.splitlines()[:3] == [
        f"knowledge/calculators/kv-one.yaml:14 calc:kv-one failure_boundaries[1].when: the function '__import__' is not allowed {WHITELIST}",
        "knowledge/calculators/kv-two.yaml:12 calc:kv-two failure_boundaries[0].when: the name 'no_such_symbol' is not a declared symbol",
        "knowledge/calculators/kv-two.yaml:14 calc:kv-two failure_boundaries[1].when: is not a valid expression (invalid syntax)",
    ]
    assert out.splitlines()[3].endswith("; 3 problems")


def test_a_broken_condition_met_at_run_time_names_its_file_and_line(capsys):
    code, out, err = run(["calc", "kv-one", "--root", BROKEN, "--set", "layers=1", "--set", "kv_heads=1", "--set", "head_dim=1"], capsys)
    assert (code, out) == (1, "")
    assert err == f"aiinfra: error: knowledge/calculators/kv-one.yaml:14 calc:kv-one failure_boundaries[1].when: the function '__import__' is not allowed {WHITELIST}\n"


def test_prefix_hit_rate_with_a_total_context_refused(capsys):
    # context_tokens given directly is the whole context: the prefix hit rate (which only FX136 applies)
    # would be dropped with a warning; the pair is refused instead
    code, out, err = run([*QWEN, "--set", "prefix_hit_rate=0.5"], capsys)
    assert (code, out) == (2, "")
    assert err == ("aiinfra: error: --set prefix_hit_rate: is given together with context_tokens, which it feeds (FX136), so a directly "
                   "given context_tokens would drop it; give context_tokens with prefix_hit_rate already applied, or leave "
                   "context_tokens out to derive it\n")


def test_prefix_hit_rate_with_the_peak_context_refused(capsys):
    # context_basis=peak (the default) holds the whole prompt: the prefix hit rate would be dropped
    argv = [a for a in QWEN if a not in ("--set", "context_tokens=4096")]
    argv = [x for a in argv for x in (("--set", a) if "=" in a else (a,))]
    code, out, err = run([*argv, "--set", "avg_input_tokens=3840", "--set", "avg_output_tokens=256", "--set", "prefix_hit_rate=0.5"], capsys)
    assert (code, out) == (2, "")
    assert err == ("aiinfra: error: --set prefix_hit_rate: is not used with context_basis=peak (FX136); set context_basis=shared_prefix "
                   "to apply it, or leave prefix_hit_rate out\n")


# ----------------------------------------------------------------------------- issue 11: a sweep in every format

# QWEN without context_tokens. Budget: 0.9 x 80 GiB - 16 GiB - 4 GiB = 77,309,411,328 - 21,474,836,480 = 55,834,574,848 B;
# a request of 4096 tokens holds 4096 x 147,456 = 603,979,776 B -> floor(92.44) = 92; at 8192 tokens floor(46.22) = 46.
SWEEP = [*QWEN[:-2], "--sweep", "context_tokens=4096..8192", "--points", "2"]


def test_sweep_as_json_is_json_not_csv(capsys):
    code, out, err = run([*SWEEP, "--format", "json"], capsys)
    data = json.loads(out)
    assert (code, err) == (0, "")
    assert data["calculator"] == "calc:kv-concurrency"
    assert data["x"] == {"name": "context_tokens", "unit": "tokens/requests", "values": [4096.0, 8192.0]}
    assert data["outputs"]["max_concurrent_requests"] == {"unit": "requests", "values": [92.0, 46.0]}
    assert data["outputs"]["kv_bytes_per_token"]["values"] == [147456.0, 147456.0]  # 2 x 36 x 8 x 128 x 2


def test_sweep_as_markdown_is_a_table(capsys):
    code, out, _ = run(["--format", "md", *SWEEP], capsys)
    lines = out.splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert code == 0 and head[0] == "context_tokens [tokens/requests]" and lines[1].startswith("|---|")
    rows = [dict(zip(head, (c.strip() for c in line.strip("|").split("|")), strict=True)) for line in lines[2:]]
    assert [(r["context_tokens [tokens/requests]"], r["max_concurrent_requests [requests]"]) for r in rows] == [("4096", "92"), ("8192", "46")]


@pytest.mark.parametrize("fmt", ["text", "csv"])
def test_sweep_as_text_or_csv_stays_csv(fmt, capsys):
    code, out, _ = run([*SWEEP, "--format", fmt], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [(r["context_tokens [tokens/requests]"], r["max_concurrent_requests [requests]"]) for r in rows] == [("4096", "92"), ("8192", "46")]
