"""``aiinfra kv sequence|pages``: formats, hand-checked numbers, bad input (one line on stderr naming the field, exit 2)."""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_sequence_json_by_hand(capsys):
    code, out, err = run(["kv", "sequence", "--prompt", "4", "--steps", "3", "--prefix-hit", "2", "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["counts"]["decode_kv_reads"] == 4 + 5 + 6
    assert data["counts"]["decode_visible_pairs"] == 5 + 6 + 7
    assert data["counts"]["sequence_kv_tokens"] == 7
    assert data["counts"]["prefix_saved_pairs"] == 1 + 2
    assert data["counts"]["prefix_saved_capacity_tokens"] == 0
    assert data["conservation"]["prefill_pairs_plus_saved"] == data["conservation"]["prefill_full_pairs"] == 10
    assert data["bytes"] == [] and "FX1200" in data["formulas"]


def test_sequence_model_text_and_md(capsys):
    code, out, _ = run(["kv", "sequence", "--prompt", "8192", "--steps", "1024", "--prefix-hit", "6144", "--model", "qwen3-8b"], capsys)
    assert code == 0
    assert "8,912,384" in out and "38,842,575,872" in out        # FX1200, FX1208 by hand (formulas/kv_sequence.yaml examples)
    assert "gqa (model)  147,456" in out and "mha" in out and "mqa" in out
    code, out, _ = run(["kv", "sequence", "--prompt", "8", "--steps", "2", "--model", "qwen3-8b", "--kv-cache", "fp8", "--format", "md"], capsys)
    assert code == 0 and out.startswith("## qwen3-8b") and "| gqa (model) | 73,728 |" in out   # 2 x 36 x 8 x 128 x 1 B


def test_sequence_bytes_per_token(capsys):
    code, out, _ = run(["kv", "sequence", "--prompt", "4", "--steps", "3", "--bytes-per-token", "100", "--format", "json"], capsys)
    assert code == 0
    (row,) = json.loads(out)["bytes"]
    assert row["decode_kv_read_bytes"] == 15 * 100 and row["sequence_kv_bytes"] == 7 * 100


def test_pages_json_and_text(capsys):
    ops = ["kv", "pages", "create:a:17", "fork:a:b", "append:b:1", "cancel:a"]
    code, out, err = run([*ops, "--model", "qwen3-8b", "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["page_bytes"] == 16 * 147456 == 2359296
    steps = data["steps"]
    assert [q["table"] for q in steps[1]["sequences"]] == [[0, 1], [0, 1]]
    assert steps[2]["copied_tokens"] == 1 and steps[2]["sequences"][1]["table"] == [0, 2]
    assert steps[3]["freed"] == [1] and steps[3]["free_queue"] == [{"id": 1, "used": 1}]
    assert steps[3]["totals"]["waste_tokens_per_request"] == 32 - 18
    code, out, _ = run(ops, capsys)
    assert code == 0 and "3. append:b:1  (copied 1 token on write)" in out and "free queue, evicted first to last: 1:1/16" in out


@pytest.mark.parametrize("argv,field", [
    (["kv", "sequence", "--prompt", "0", "--steps", "1"], "--prompt"),
    (["kv", "sequence", "--prompt", "4", "--steps", "x"], "--steps"),
    (["kv", "sequence", "--prompt", "4", "--steps", "1", "--prefix-hit", "5"], "--prefix-hit"),
    (["kv", "sequence", "--prompt", "4", "--steps", "1", "--model", "nope"], "--model"),
    (["kv", "sequence", "--prompt", "4", "--steps", "1", "--kv-bytes", "1"], "--kv-bytes"),
    (["kv", "sequence", "--prompt", "4", "--steps", "1", "--model", "gemma-3-27b-it"], "--model"),
    (["kv", "sequence", "--prompt", "4", "--steps", "1", "--bytes-per-token", "-3"], "--bytes-per-token"),
    (["kv", "pages", "create:a:0"], "OPS"),
    (["kv", "pages", "append:a:1"], "OPS"),
    (["kv", "pages", "create:a:1", "--block-size", "0"], "--block-size"),
    (["kv", "pages", "create:a:1", "--capacity-pages", "x"], "--capacity-pages"),
])
def test_bad_input_one_line(argv, field, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and field in err and "Traceback" not in err


def test_numeric_path_imports_no_sympy():
    import subprocess
    import sys

    code = ("import sys; from engine.cli.main import main; "
            "main(['kv', 'sequence', '--prompt', '8', '--steps', '2', '--model', 'qwen3-8b']); "
            "main(['kv', 'pages', 'create:a:17', 'fork:a:b', 'append:b:1']); "
            "assert 'sympy' not in sys.modules, 'sympy imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
