"""``aiinfra forward`` and ``aiinfra generate``: formats, the JSON contract and bad input.

The shipped records of Qwen3-8B (Qwen/Qwen3-8B@b968826d: 36 layers, hidden 4096, 32 heads,
8 KV heads, head_dim 128, intermediate 12288, vocab 151936) and Qwen3-30B-A3B (128 experts,
8 per token, expert width 768, 48 layers) are used; numbers are hand arithmetic beside them.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from engine.cli import cmd_forward
from engine.cli.main import build_parser, main
from engine.domain import ledger

ROOT = Path(__file__).resolve().parents[2]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_forward_json_contract(capsys):
    code, out, err = run(["forward", "--model", "qwen3-8b", "--tokens", "4", "--format", "json"], capsys)
    assert code == 0 and err == ""
    data = json.loads(out)
    assert list(data)[:4] == ["model", "scenario", "rows", "totals"]
    assert data["model"] == "model:qwen3-8b"
    assert tuple(data["totals"]) == ledger.TOTAL_KEYS
    assert data["scenario"]["tokens"] == 4 and data["scenario"]["history"] == 0 and data["scenario"]["output_head"] == "last"
    head = next(r for r in data["rows"] if r["name"] == "lm_head")
    assert head["matrix_flops"] == 2 * 4096 * 151936  # one row per sequence, FMA = 2
    assert set(head) >= {"name", "shape", "repeats", "matrix_flops", "attention_matrix_flops", "rectangular_attention_matrix_flops",
                         "scalar_flops", "special_functions", "weight_bytes", "activation_read_bytes", "activation_write_bytes",
                         "kv_read_bytes", "kv_write_bytes"}
    assert data["totals"]["kv_bytes_per_token"] == 2 * 36 * 8 * 128 * 2  # 147456, F8
    assert data["totals"]["parameters"] == 8190735360  # Hub count of Qwen/Qwen3-8B


def test_forward_text_md_csv(capsys):
    argv = ["forward", "--model", "model:qwen3-8b", "--tokens", "1", "--history", "8192", "--batch", "8"]
    code, text, _ = run(argv, capsys)
    assert code == 0
    assert text.startswith("model:qwen3-8b (operators:dense): forward of 8 sequence(s) x 1 new tokens over 8192 cached")
    assert "kv_bytes_before = 9.664e9 B" in text  # 8 x 8192 x 147456 = 9663676416
    code, md, _ = run([*argv, "--format", "md"], capsys)
    assert md.startswith("## model:qwen3-8b") and "| operator | shape |" in md
    code, out, _ = run([*argv, "--format", "csv"], capsys)
    table = list(csv.DictReader(io.StringIO(out)))
    qk = next(r for r in table if r["name"] == "attention_qk")
    assert int(qk["kv_read_bytes"]) == 36 * 8 * 8192 * 8 * 128 * 2  # K of 8192 cached tokens, 8 sequences, 36 layers
    assert int(qk["attention_matrix_flops"]) == 36 * 2 * 32 * 128 * 8 * 8193  # 8193 cells per head and sequence


def test_generate(capsys):
    code, out, _ = run(["generate", "--model", "qwen3-8b", "--history", "100", "--steps", "10", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert tuple(data["totals"]) == ledger.TOTAL_KEYS
    assert data["extra"]["history_records_read_per_sequence_per_layer"] == 10 * 100 + 10 * 9 // 2  # G P + G (G - 1) / 2 = 1045
    assert data["extra"]["kv_read_bytes"] == 36 * 1045 * 2 * 8 * 128 * 2
    assert data["totals"]["kv_bytes_written"] == 10 * 147456


def test_moe_routing_from_a_counts_file(capsys, tmp_path):
    counts = tmp_path / "counts.json"
    counts.write_text(json.dumps([1] * 8 + [0] * 120))
    code, out, _ = run(["forward", "--model", "qwen3-30b-a3b", "--tokens", "1", "--routing", str(counts), "--format", "json"], capsys)
    assert code == 0
    totals = json.loads(out)["totals"]
    assert totals["experts_used"] == 8
    assert totals["expert_weight_bytes"] == 48 * 8 * 3 * 2048 * 768 * 2  # 48 layers x 8 experts x gate, up, down x 2 B


@pytest.mark.parametrize("argv, expected", [
    (["forward", "--model", "nosuch", "--tokens", "1"], "aiinfra: error: --model: no model 'nosuch' (known: "),
    (["forward", "--model", "qwen3-8b", "--tokens", "0"], "aiinfra: error: --tokens: expected a whole number >= 1, got 0"),
    (["forward", "--model", "qwen3-8b", "--tokens", "1", "--weight-bytes", "abc"], "aiinfra: error: --weight-bytes: 'abc'"),
    (["forward", "--model", "qwen3-8b", "--tokens", "1", "--kv-bytes", "-1"], "aiinfra: error: --kv-bytes: expected bytes per element > 0"),
    (["forward", "--model", "qwen3-30b-a3b", "--tokens", "1", "--routing", "/nonexistent/counts.json"],
     "aiinfra: error: --routing: '/nonexistent/counts.json' does not exist (expected balanced, concentrated or a counts.json file)"),
    (["forward", "--model", "qwen3-8b", "--tokens", "1", "--routing", "balanced", "--tp", "0"], "aiinfra: error: --tp: expected a whole number >= 1, got 0"),
    (["generate", "--model", "qwen3-8b", "--history", "10", "--steps", "0"], "aiinfra: error: --steps: expected a whole number >= 1, got 0"),
    (["forward", "--model", "qwen3-8b"], "the following arguments are required: --tokens"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, expected):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert expected in err and err.count("\n") == 1


def test_bad_counts_file(capsys, tmp_path):
    path = tmp_path / "counts.json"
    path.write_text("[1, 2,")
    code, _, err = run(["forward", "--model", "qwen3-30b-a3b", "--tokens", "1", "--routing", str(path)], capsys)
    assert code == 2 and "--routing: " in err and "is not JSON" in err
    path.write_text(json.dumps([1] * 7 + [0] * 121))
    code, _, err = run(["forward", "--model", "qwen3-30b-a3b", "--tokens", "1", "--routing", str(path)], capsys)
    assert code == 2 and "the counts sum to 7, expected tokens x top-k = 1 x 8 = 8" in err


@pytest.mark.parametrize("argv", [
    ["forward", "--model", "qwen3-8b", "--tokens", "16"],
    ["forward", "--model=qwen3-8b", "--tokens=16", "--history", "5", "--batch", "2", "--output-head", "all", "--format", "csv"],
    ["forward", "--model", "qwen3-30b-a3b", "--tokens", "1", "--routing", "concentrated", "--weight-bytes", "4bit", "--kv-bytes", "1", "--tp", "2"],
    ["generate", "--model", "qwen3-8b", "--history", "100", "--steps", "10", "--root", str(ROOT)],
    ["forward", "--model", "deepseek-v3", "--tokens", "8", "--mla-path", "absorbed"],
])
def test_fast_args_read_what_the_parser_reads(argv):
    fast = vars(cmd_forward.fast_args(argv))
    full = vars(build_parser().parse_args(argv))
    assert {k: v for k, v in fast.items() if k in full} == full


@pytest.mark.parametrize("argv", [
    ["forward", "--model", "qwen3-8b"],  # --tokens missing
    ["forward", "--model", "qwen3-8b", "--tokens", "x"],
    ["forward", "--model", "qwen3-8b", "--tokens", "1", "--steps", "3"],
    ["forward", "--help"],
    ["forward", "--model", "qwen3-8b", "--tokens", "1", "--format", "xml"],
    ["generate", "--model", "qwen3-8b", "--history", "1", "--steps", "1", "--output-head", "all"],
    ["formula", "eval", "F8"],
])
def test_fast_args_leave_the_unusual_to_the_parser(argv):
    assert cmd_forward.fast_args(argv) is None


def test_another_root_and_a_broken_template(capsys, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(ROOT / "formulas", root / "formulas")
    shutil.copytree(ROOT / "knowledge" / "operators", root / "knowledge" / "operators")
    (root / "knowledge" / "models").mkdir()
    shutil.copy(ROOT / "knowledge" / "models" / "qwen3-8b.yaml", root / "knowledge" / "models")
    code, out, _ = run(["forward", "--root", str(root), "--model", "qwen3-8b", "--tokens", "2", "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["totals"]["kv_bytes_after"] == 2 * 147456
    dense = root / "knowledge" / "operators" / "dense.yaml"
    dense.write_text(dense.read_text().replace("scalar_flops: 5 * heads * cells", "scalar_flops: 5 * heads * cellz"))
    code, out, err = run(["forward", "--root", str(root), "--model", "qwen3-8b", "--tokens", "2"], capsys)
    assert code == 1 and out == ""
    assert "operators:dense operators[" in err and "the name 'cellz' is not a declared symbol" in err


def test_a_routing_file_is_read_bounded(tmp_path, capsys):
    # the counts file goes through the same reader as model import: a FIFO is refused without
    # blocking, and a key given twice is refused rather than silently taking the last value
    import os

    fifo = tmp_path / "counts.json"
    os.mkfifo(fifo)
    code, out, err = run(["forward", "--model", "qwen3-30b-a3b", "--tokens", "8", "--routing", str(fifo)], capsys)
    assert code == 2 and err == f"aiinfra: error: --routing: '{fifo}' is a FIFO, not a regular file\n"
    twice = tmp_path / "twice.json"
    twice.write_text('{"0": 1, "0": 2}')
    code, out, err = run(["forward", "--model", "qwen3-30b-a3b", "--tokens", "8", "--routing", str(twice)], capsys)
    assert code == 2 and err == f"aiinfra: error: --routing: '{twice}' gives the key '0' twice (expected each key once)\n"
