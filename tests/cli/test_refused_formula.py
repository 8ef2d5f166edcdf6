"""Issue #24: one refused formula stops only the calculators, trees and formula commands that need it.

tests/fixtures/roots/refused_formula has four formulas: FX2's expression is refused (attribute access), FX3 reads
FX2's output, F1 and FX4 need neither. Its intact twin is the same root with FX2 repaired in a copy: every number
a command prints on the damaged root is compared with the same command on the intact twin, never written here.
``aiinfra check`` stays strict.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.cli.main import main

ROOTS = Path(__file__).parent.parent / "fixtures" / "roots"
SHIPPED = Path(__file__).parent.parent.parent
SMALL = ["--set", "layers=2", "--set", "kv_heads=1", "--set", "head_dim=4"]
FX2 = ("formulas/f.yaml:27 FX2 expr: attribute access is not allowed (expected numbers, declared symbols, + - * / **, comparisons "
       "and sqrt, log, exp, ceiling, floor, Min, Max, Abs, Piecewise)")
WARNING = f"aiinfra: warning: 1 problem in other records ignored (first: {FX2}; aiinfra check lists every one)\n"


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def roots(tmp_path):
    """(damaged, intact): the fixture root and a copy with FX2's expression repaired."""
    damaged, intact = tmp_path / "damaged", tmp_path / "intact"
    shutil.copytree(ROOTS / "refused_formula", damaged)
    shutil.copytree(ROOTS / "refused_formula", intact)
    f = intact / "formulas" / "f.yaml"
    text = f.read_text()
    assert text.count("context_tokens.__class__") == 1
    f.write_text(text.replace("context_tokens.__class__", "context_tokens"))
    return str(damaged), str(intact)


def test_the_intact_twin_is_clean_and_the_damaged_root_is_not(roots, capsys):
    damaged, intact = roots
    assert run(["check", "--root", intact], capsys)[0] == 0
    code, out, err = run(["check", "--root", damaged], capsys)
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert FX2 in lines
    # the calculator with an optional output only FX2 produces: the existing rule, at the calculator's line
    assert "knowledge/calculators/kv-request.yaml:12 calc:kv-request optional_outputs[0]: kv_bytes_per_request is not produced by any formula" in lines
    # the calculator whose chain reads FX2's output (FX3): named with the refused formula's file:line
    assert f"knowledge/calculators/kv-batch.yaml:12 calc:kv-batch outputs[1]: kv_bytes_per_batch needs kv_bytes_per_request from FX2, which is refused: {FX2}" in lines
    assert not any("kv-tokens" in line for line in lines)


@pytest.mark.parametrize("extra", [
    ["--set", "kv_budget=1GB"],
    ["--set", "kv_budget=1GB", "--format", "json"],
    ["--set", "kv_budget=1GB..2GB", "--format", "json", "--explain"],
    ["--sweep", "kv_budget=1GB..2GB", "--points", "5"],
    ["--solve", "kv_budget", "--where", "kv_budget_tokens >= 1000", "--format", "json"],
])
def test_a_calculator_that_needs_no_refused_formula_prints_the_intact_numbers(roots, capsys, extra):
    # it was refused with FX2's problem (exit 1), as every calculator of the root was
    damaged, intact = roots
    expected = run(["calc", "kv-tokens", "--root", intact, *SMALL, *extra], capsys)
    assert expected[0] == 0 and expected[2] == ""
    assert run(["calc", "kv-tokens", "--root", damaged, *SMALL, *extra], capsys) == (0, expected[1], WARNING)


def test_the_python_api_runs_it_too(roots):
    from engine import api

    damaged, intact = roots
    got = api.calculator("kv-tokens", damaged).run(layers=2, kv_heads=1, head_dim=4, kv_budget="1GB").to_json()
    assert got == api.calculator("kv-tokens", intact).run(layers=2, kv_heads=1, head_dim=4, kv_budget="1GB").to_json()


@pytest.mark.parametrize("argv, line", [
    (["calc", "kv-request", *SMALL, "--set", "context_tokens=100"],
     f"knowledge/calculators/kv-request.yaml:12 calc:kv-request optional_outputs[0]: kv_bytes_per_request comes from FX2, which is refused: {FX2}"),
    (["calc", "kv-batch", *SMALL, "--set", "context_tokens=100", "--set", "decode_batch=3"],
     f"knowledge/calculators/kv-batch.yaml:12 calc:kv-batch outputs[1]: kv_bytes_per_batch needs kv_bytes_per_request from FX2, which is refused: {FX2}"),
    (["calc", "kv-batch", *SMALL, "--set", "context_tokens=100", "--solve", "decode_batch", "--where", "kv_bytes_per_batch <= 1GB"],
     f"knowledge/calculators/kv-batch.yaml:12 calc:kv-batch outputs[1]: kv_bytes_per_batch needs kv_bytes_per_request from FX2, which is refused: {FX2}"),
    (["tree", "walk", "batch-fits", *SMALL, "--set", "kv_budget=1GB", "--set", "context_tokens=100", "--set", "decode_batch=2", "--no-prompt"],
     f"decision_trees/batch-fits.yaml:2 tree:batch-fits: needs kv_bytes_per_request from FX2, which is refused: {FX2}"),
    (["formula", "eval", "FX2", "--set", "kv_bytes_per_token=32", "--set", "context_tokens=2"], FX2),
])
def test_what_needs_the_refused_formula_is_a_broken_record_naming_it(roots, capsys, argv, line):
    damaged, intact = roots
    assert run([*argv, "--root", intact], capsys)[0] == 0  # the same command runs on the intact twin
    assert run([*argv, "--root", damaged], capsys) == (1, "", f"{line}\n1 problem found\n")


def test_a_tree_and_a_formula_that_need_no_refused_formula_answer_as_on_the_intact_root(roots, capsys):
    damaged, intact = roots
    for argv in (["tree", "walk", "kv-fits", *SMALL, "--set", "kv_budget=1GB", "--set", "want_tokens=100", "--no-prompt", "--format", "json"],
                 ["tree", "walk", "kv-fits", *SMALL, "--set", "kv_budget=2kB", "--set", "want_tokens=100", "--no-prompt"],
                 ["formula", "eval", "FX4", "--set", "kv_budget=320", "--set", "kv_bytes_per_token=32"],
                 ["formula", "show", "FX4"]):
        expected = run([*argv, "--root", intact], capsys)
        assert expected[0] == 0 and expected[2] == "", argv
        assert run([*argv, "--root", damaged], capsys) == (0, expected[1], WARNING), argv
    leaves = {json.loads(run(["tree", "walk", "kv-fits", *SMALL, "--set", f"kv_budget={b}", "--set", "want_tokens=100", "--no-prompt",
                              "--format", "json", "--root", damaged], capsys)[1])["leaf"]["id"] for b in ("1GB", "2kB")}
    assert leaves == {"fit", "too-long"}  # both branches were compared above


def test_a_refused_formula_of_a_copy_of_the_shipped_root_stops_only_its_calculator(tmp_path, capsys):
    # FX507 (checkpoint_availability_optimum) feeds one optional output of checkpoint-window and nothing else
    root = tmp_path / "root"
    shutil.copytree(SHIPPED / "formulas", root / "formulas")
    (root / "knowledge" / "calculators").mkdir(parents=True)
    for name in ("kv-concurrency", "checkpoint-window"):
        shutil.copy(SHIPPED / "knowledge" / "calculators" / f"{name}.yaml", root / "knowledge" / "calculators")
    f = root / "formulas" / "checkpoint.yaml"
    old = "expr: 1 - sqrt(2 * checkpoint_stall / mtbf) - restart_time / mtbf\n"
    assert f.read_text().count(old) == 1
    f.write_text(f.read_text().replace(old, old.replace("mtbf\n", "mtbf.real\n")))
    argv = ["calc", "kv-concurrency", "--set", "context_tokens=4096", "--set", "layers=32", "--set", "kv_heads=8", "--set", "head_dim=128",
            "--set", "params=8e9", "--set", "gpu_memory_total=80GB", "--format", "json"]
    expected = run(argv, capsys)  # the shipped root
    assert expected[0] == 0
    code, out, err = run([*argv, "--root", str(root)], capsys)
    assert (code, out) == (0, expected[1])
    assert err.startswith("aiinfra: warning: 1 problem in other records ignored (first: formulas/checkpoint.yaml:") and " FX507 expr: " in err
    code, out, err = run(["calc", "checkpoint-window", "--root", str(root), "--set", "params=70e9", "--set", "ckpt_write_bandwidth=100GB/s",
                          "--set", "node_mtbf=1000h", "--set", "n_nodes=128"], capsys)
    assert (code, out) == (1, "")
    assert err.startswith("knowledge/calculators/checkpoint-window.yaml:59 calc:checkpoint-window optional_outputs[4]: "
                          "checkpoint_availability_optimum comes from FX507, which is refused: formulas/checkpoint.yaml:")
    assert err.endswith("\n1 problem found\n") and err.count("\n") == 2
