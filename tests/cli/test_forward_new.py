"""``aiinfra forward`` / ``generate`` issue-13 options: --training, --active-params, --residency,
--routing-counts, --attention; the default output keeps its keys; bad input exits 2 with one line.

Shipped records: Qwen3-8B (Qwen/Qwen3-8B@b968826d: 36 layers, hidden 4096, 32 heads, head_dim
128, 8190735360 parameters) and Qwen3-30B-A3B (128 experts, 8 per token). Numbers are hand
arithmetic beside them.
"""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_training_json(capsys):
    code, out, err = run(["forward", "--model", "qwen3-8b", "--tokens", "8", "--training", "--format", "json"], capsys)
    assert code == 0 and err == ""
    data = json.loads(out)
    t = data["extra"]["training"]
    assert t["six_nd"] == 6 * 8190735360 * 8  # F1
    assert t["training_flops"] == 3 * t["forward_matrix_flops"]  # FX860
    assert {"F1", "FX860"} <= set(data["formulas"])


def test_text_sections(capsys):
    argv = ["forward", "--model", "qwen3-30b-a3b", "--tokens", "3", "--active-params", "--residency", "--routing-counts", "--attention", "eager"]
    code, out, err = run(argv, capsys)
    assert code == 0 and err == ""
    for title in ("Active parameters per token", "Residency floor (weights + KV)", "Routing counts per MoE layer",
                  "Eager attention: materialised scores"):
        assert title in out
    # 3 tokens x 8 = 24 assignments: experts 0-23 get one token each
    assert "layers 0-47: 24 experts used, tokens per expert max 1, min 0" in out
    code, md, _ = run([*argv, "--format", "md"], capsys)
    assert "### Active parameters per token" in md


def test_full_parser_path_agrees(capsys):
    """--format=json before the verb takes the full argparse parser, not the fast path."""
    code, fast, _ = run(["forward", "--model", "qwen3-8b", "--tokens", "2", "--residency", "--format", "json"], capsys)
    code2, full, _ = run(["--format", "json", "forward", "--model", "qwen3-8b", "--tokens", "2", "--residency"], capsys)
    assert code == code2 == 0 and json.loads(fast) == json.loads(full)
    r = json.loads(fast)["extra"]["residency"]
    assert r["floor_bytes_replica"] == 8190735360 * 2 + 2 * 147456  # weights + 2 tokens of KV (F8 = 147456 B)


def test_generate_options(capsys):
    code, out, _ = run(["generate", "--model", "qwen3-8b", "--history", "10", "--steps", "2", "--residency", "--attention", "eager",
                        "--format", "json"], capsys)
    assert code == 0
    extra = json.loads(out)["extra"]
    assert extra["residency"]["context_tokens_per_sequence"] == 12
    assert extra["eager_attention"]["extra_activation_bytes"] == 4 * 2 * 32 * (11 + 12) * 36  # calls over 10 and 11 cached tokens


def test_quantized_option(capsys):
    code, out, _ = run(["forward", "--model", "qwen3-8b", "--tokens", "1", "--quantized", "mxfp8", "--format", "json"], capsys)
    q = json.loads(out)["extra"]["quantised_storage"]
    assert code == 0 and q["bytes_per_quantised_value"] == 8.25 / 8  # FX650 mxfp8: 8 bits + an 8-bit scale per 32
    assert q["group_size"] is None


def test_default_output_unchanged(capsys):
    code, out, _ = run(["forward", "--model", "qwen3-8b", "--tokens", "2", "--format", "json"], capsys)
    data = json.loads(out)
    assert "extra" not in data and "attention" not in data["scenario"]


@pytest.mark.parametrize("argv, needle", [
    (["forward", "--model", "qwen3-8b", "--tokens", "4", "--attention", "naive"], "--attention"),
    (["generate", "--model", "qwen3-8b", "--history", "4", "--steps", "2", "--training"], "--training"),
    (["forward", "--model", "qwen3-8b", "--tokens", "4", "--routing-counts"], "--routing-counts"),
    (["forward", "--model", "qwen3-8b", "--tokens", "4", "--quantized", "int3"], "--quantized"),
    (["forward", "--model", "qwen3-8b", "--tokens", "4", "--quantized", "mxfp4", "--quant-scope", "all"], "--quant-scope"),
])
def test_bad_input(argv, needle, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err
