"""Issue #24 (Low): arguments and trees that used to end in exit 70 are refused with one line
naming the field (exit 2), or reported at their file:line (exit 1)."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine.cli.main import main

SHIPPED = Path(__file__).parent.parent.parent


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_non_utf8_model_and_device_bytes_are_refused(capsys):
    bad = b"\xff\xfe".decode("utf-8", "surrogateescape")  # as Python hands undecodable argv bytes over
    assert run(["calc", "kv-concurrency", "--model", bad, "--set", "context_tokens=1000"], capsys) == (
        2, "", "aiinfra: error: --model: b'\\xff\\xfe' is not valid UTF-8 (expected text)\n")
    assert run(["calc", "kv-concurrency", f"--device={bad}"], capsys) == (
        2, "", "aiinfra: error: --device: b'\\xff\\xfe' is not valid UTF-8 (expected text)\n")
    assert run(["tree", "walk", bad], capsys) == (2, "", "aiinfra: error: argument 3: b'\\xff\\xfe' is not valid UTF-8 (expected text)\n")


def test_a_300_character_tree_id_is_an_unknown_tree(capsys):
    code, out, err = run(["tree", "walk", "a" * 300], capsys)
    assert (code, out) == (2, "")
    assert err.startswith("aiinfra: error: ID: 'aaaa") and "is not a decision tree" in err and err.count("\n") == 1


def _tree_root(tmp_path, old: str, new: str) -> tuple[str, int]:
    """A root with the shipped formulas and pd-disaggregation.yaml with ``old`` replaced; the 1-based line of the edit."""
    shutil.copytree(SHIPPED / "formulas", tmp_path / "formulas")
    (tmp_path / "decision_trees").mkdir()
    text = (SHIPPED / "decision_trees" / "pd-disaggregation.yaml").read_text()
    assert old in text
    (tmp_path / "decision_trees" / "pd-disaggregation.yaml").write_text(text.replace(old, new, 1))
    return str(tmp_path), text[: text.index(old)].count("\n") + 1


def test_tree_walk_on_a_start_naming_a_missing_node(tmp_path, capsys):
    root, line = _tree_root(tmp_path, "start: slo", "start: nowhere")
    assert run(["tree", "walk", "pd-disaggregation", "--root", root], capsys) == (1, "", (
        f"decision_trees/pd-disaggregation.yaml:{line} tree:pd-disaggregation start: leads to 'nowhere', which is neither a node nor a leaf of the tree\n"
        "1 problem found\n"))


def test_tree_walk_names_the_file_line_and_tree_of_a_condition_that_does_not_parse(tmp_path, capsys):
    root, line = _tree_root(tmp_path, '- when: "prefill_time + decode_step_time > tpot_slo"', '- when: "prefill_time + decode_step_time >> > tpot_slo"')
    assert run(["tree", "walk", "pd-disaggregation", "--root", root], capsys) == (1, "", (
        f"aiinfra: error: decision_trees/pd-disaggregation.yaml:{line} tree:pd-disaggregation nodes.stall.branches[0].when: "
        "is not a valid expression (invalid syntax)\n"))
