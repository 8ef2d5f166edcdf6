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


def _preset_root(tmp_path) -> Path:
    """The shipped formulas, operators and kv-concurrency calculator, llama-3.1-8b and h100-sxm beside a model
    file and a device file that do not load."""
    shutil.copytree(SHIPPED / "formulas", tmp_path / "formulas")
    knowledge = tmp_path / "knowledge"
    shutil.copytree(SHIPPED / "knowledge" / "operators", knowledge / "operators")
    for folder, name in (("models", "llama-3.1-8b"), ("hardware", "h100-sxm"), ("calculators", "kv-concurrency")):
        (knowledge / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(SHIPPED / "knowledge" / folder / f"{name}.yaml", knowledge / folder)
    (knowledge / "models" / "qwen3-8b.yaml").write_text("id: model:qwen3-8b\nname: [broken\n")
    (knowledge / "hardware" / "h200.yaml").write_text("")
    return tmp_path


MODEL_PROBLEM = "knowledge/models/qwen3-8b.yaml:3:1: is not valid YAML (did not find expected ',' or ']')"
DEVICE_PROBLEM = "knowledge/hardware/h200.yaml:1: is empty (expected one hardware record (a mapping))"


def test_a_broken_model_or_device_does_not_stop_the_preset_commands_about_another(tmp_path, capsys):
    # every command reading one model or device through the presets or the forward ledger used to exit 1 on the
    # broken neighbour; now it answers and warns once per broken folder (check stays strict)
    root = str(_preset_root(tmp_path))
    commands = {
        "calc": ["calc", "kv-concurrency", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--set", "context_tokens=4096"],
        "forward": ["forward", "--model", "llama-3.1-8b", "--tokens", "1024"],
        "generate": ["generate", "--model", "llama-3.1-8b", "--history", "1000", "--steps", "4"],
        "roofline": ["roofline", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--tokens", "1024"],
        "plan": ["plan", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--gpus", "8"],
        "state": ["state", "--model", "llama-3.1-8b", "--context", "1000", "--device", "h100-sxm"],
    }
    for name, argv in commands.items():
        code, out, err = run([*argv, "--root", root], capsys)
        assert code == 0 and out, (name, err)
        lines = err.splitlines()
        assert 1 <= len(lines) <= 2 and all(line.startswith("aiinfra: warning: ") and "in other records ignored (first: " in line for line in lines), (name, err)
        assert MODEL_PROBLEM in err, (name, err)
    assert run(["check", "--root", root], capsys)[0] == 1


def test_the_broken_model_or_device_asked_for_is_the_answer(tmp_path, capsys):
    root = str(_preset_root(tmp_path))
    for argv, problem in ((["forward", "--model", "qwen3-8b", "--tokens", "8"], MODEL_PROBLEM),
                          (["calc", "kv-concurrency", "--model", "qwen3-8b", "--set", "context_tokens=8"], MODEL_PROBLEM),
                          (["plan", "--model", "llama-3.1-8b", "--device", "h200", "--gpus", "8"], DEVICE_PROBLEM),
                          (["roofline", "--device", "h200", "--flops", "1e12", "--bytes", "1e9"], DEVICE_PROBLEM)):
        code, out, err = run([*argv, "--root", root], capsys)
        assert (code, out) == (1, "") and err.endswith(f"\n{problem}\n1 problem found\n" if "h200" in argv and "plan" in argv else f"{problem}\n1 problem found\n"), (argv, err)
        assert "Traceback" not in err
