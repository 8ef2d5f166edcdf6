"""Issue #24: a broken record is reported with its file:line and never crashes a command.

Each case is a tiny fixture root under tests/fixtures/roots/ named for its mistake; the lines
asserted are the project's own message text.
"""

from __future__ import annotations

from pathlib import Path

from engine.cli.main import main

ROOTS = Path(__file__).parent.parent / "fixtures" / "roots"
UNPRODUCED = str(ROOTS / "unproduced_output")
REFUSED = str(ROOTS / "refused_producer")
SMALL = ["--set", "layers=2", "--set", "kv_heads=1", "--set", "head_dim=4"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_check_names_each_output_no_formula_produces(capsys):
    # kv-optional.yaml has a worked example: it used to run and crash on the unproduced optional output
    code, out, err = run(["check", "--root", UNPRODUCED], capsys)
    assert (code, err) == (1, "")
    assert out.splitlines()[:2] == [
        "knowledge/calculators/kv-optional.yaml:11 calc:kv-optional optional_outputs[0]: kv_bytes_per_request is not produced by any formula",
        "knowledge/calculators/kv-unknown.yaml:10 calc:kv-unknown outputs[1]: no_such_symbol is not produced by any formula",
    ]
    assert out.splitlines()[2].endswith("; 2 problems")


def test_check_names_the_refused_formula_beside_the_calculator(capsys):
    code, out, _ = run(["check", "--root", REFUSED], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("formulas/f.yaml:25 FX2 expr: attribute access is not allowed")
    assert lines[1] == "knowledge/calculators/kv-optional.yaml:11 calc:kv-optional optional_outputs[0]: kv_bytes_per_request is not produced by any formula"


def test_calc_refuses_a_calculator_with_an_unproduced_output(capsys):
    for name, line in (("kv-optional", "knowledge/calculators/kv-optional.yaml:11 calc:kv-optional optional_outputs[0]: kv_bytes_per_request"),
                       ("kv-unknown", "knowledge/calculators/kv-unknown.yaml:10 calc:kv-unknown outputs[1]: no_such_symbol")):
        code, out, err = run(["calc", name, "--root", UNPRODUCED, *SMALL], capsys)
        assert (code, out) == (1, "")
        assert err == f"{line} is not produced by any formula\n1 problem found\n"


def test_a_sound_calculator_beside_a_broken_one_runs(capsys):
    code, out, err = run(["calc", "kv-fine", "--root", UNPRODUCED, *SMALL, "--format", "json"], capsys)
    assert (code, err) == (0, "")
    assert '"kv_bytes_per_token"' in out


def test_a_reference_architecture_run_of_a_broken_calculator_is_an_error_not_a_crash():
    from engine.domain import archs

    record = {"id": "arch:ra-x", "hardware": {"pools": [{"name": "p", "device": "hw:none", "nodes": 1, "gpus_per_node": 1, "source": "fixture"}]}}
    spec = {"id": "r", "calculator": "calc:kv-optional", "label": "x", "fill": [],
            "inputs": {n: {"value": v, "source": "fixture"} for n, v in (("layers", 2), ("kv_heads", 1), ("head_dim", 4))}}
    outcome = archs._run(archs._Context(UNPRODUCED), record, spec)
    assert (outcome.status, outcome.message) == (
        "error", "knowledge/calculators/kv-optional.yaml calc:kv-optional optional_outputs[0]: kv_bytes_per_request is not produced by any formula")


def test_site_pages_of_a_broken_calculator_say_its_example_does_not_run():
    from engine.site.generate import generate

    page = next(p for p in generate(UNPRODUCED).pages if p.path.endswith("kv-optional.md"))
    assert ("The example does not run: knowledge/calculators/kv-optional.yaml calc:kv-optional optional_outputs\\[0\\]: "
            "kv_bytes_per_request is not produced by any formula") in page.text
