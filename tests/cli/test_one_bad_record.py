"""Issue #24 (Low): one bad record does not take down a command about another record. ``check``
stays strict; a command that reads one record warns about the rest on stderr and goes on, and
when the record asked for is the broken one (or is missing) the problems are the answer."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine.cli.main import main

ROOTS = Path(__file__).parent.parent / "fixtures" / "roots"
SHIPPED = Path(__file__).parent.parent.parent
SMALL = ["--set", "layers=2", "--set", "kv_heads=1", "--set", "head_dim=4"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_broken_chapter_does_not_stop_formula_show(tmp_path, capsys):
    root = tmp_path / "root"
    shutil.copytree(ROOTS / "good", root)
    (root / "knowledge" / "broken.yaml").write_text("chapters:\n  - id: \"infra:ch9\"\n    title: 42\n")
    code, out, err = run(["formula", "show", "F1", "--root", str(root)], capsys)
    assert code == 0 and out.startswith("F1 · KV cache bytes per token")
    assert err.startswith("aiinfra: warning: ") and "knowledge/broken.yaml:2" in err and err.count("\n") == 1
    assert run(["check", "--root", str(root)], capsys)[0] == 1  # check stays strict


def test_a_broken_model_does_not_stop_model_show_of_another(tmp_path, capsys):
    shutil.copytree(SHIPPED / "formulas", tmp_path / "formulas")
    models = tmp_path / "knowledge" / "models"
    models.mkdir(parents=True)
    shutil.copy(SHIPPED / "knowledge" / "models" / "llama-3.1-8b.yaml", models)
    (models / "qwen3-8b.yaml").write_text("id: model:qwen3-8b\nname: [broken\n")
    code, out, err = run(["model", "show", "llama-3.1-8b", "--root", str(tmp_path)], capsys)
    assert code == 0 and out.startswith("model:llama-3.1-8b · Llama-3.1-8B")
    assert err == ("aiinfra: warning: 1 problem in other records ignored (first: knowledge/models/qwen3-8b.yaml:3:1: is not valid YAML "
                   "(did not find expected ',' or ']'); aiinfra check lists every one)\n")
    code, out, err = run(["model", "show", "qwen3-8b", "--root", str(tmp_path)], capsys)
    assert (code, out) == (1, "") and err.startswith("knowledge/models/qwen3-8b.yaml:3:1: is not valid YAML")


def test_a_broken_calculator_does_not_stop_another_calculator(tmp_path, capsys):
    root = tmp_path / "root"
    shutil.copytree(ROOTS / "unproduced_output", root)
    (root / "knowledge" / "calculators" / "kv-broken.yaml").write_text("id: calc:kv-broken\ntitle: [\n")
    for argv in (["--root", str(root), "calc", "kv-fine", *SMALL], ["calc", "kv-fine", "--root", str(root), *SMALL]):
        code, out, err = run(argv, capsys)
        assert code == 0 and out.startswith("calc:kv-fine")
        assert err.startswith("aiinfra: warning: 1 problem in other records ignored (first: knowledge/calculators/kv-broken.yaml:3:1")
    code, out, err = run(["calc", "kv-broken", "--root", str(root)], capsys)
    assert (code, out) == (1, "") and err.startswith("knowledge/calculators/kv-broken.yaml:3:1: is not valid YAML")
