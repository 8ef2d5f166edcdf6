"""Issue #24: a broken record is reported with its file:line and never crashes a command.

Each case is a tiny fixture root under tests/fixtures/roots/ named for its mistake; the lines
asserted are the project's own message text.
"""

from __future__ import annotations

import shutil
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


# ------------------------------------------------------------------ Medium: check passes broken knowledge

SHIPPED = Path(__file__).parent.parent.parent


def _root(tmp_path, *folders: str) -> Path:
    """A copy of the shipped ``folders`` (formulas and records by content, so the compiled module is reused)."""
    import shutil

    for folder in folders:
        shutil.copytree(SHIPPED / folder, tmp_path / folder, ignore=shutil.ignore_patterns("measurements"))
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_check_reports_every_empty_record_file(capsys):
    code, out, _ = run(["check", "--root", str(ROOTS / "empty_record_files")], capsys)
    assert code == 1
    assert out.splitlines()[1:6] == [
        "decision_trees/pd-disaggregation.yaml:1: is empty (expected one decision-tree record)",
        "formulas/empty.yaml:1: is empty (expected a list of formula records)",
        "knowledge/calculators/kv-concurrency.yaml:1: is empty (expected one calculator record (a mapping))",
        "knowledge/extra.yaml:1: is empty (expected a mapping with keys among books, chapters, concepts, paths, actions, goal_words)",
        "knowledge/models/qwen3-8b.yaml:1: is empty (expected one model record (a mapping))",
    ]


def test_check_reports_a_model_that_no_longer_reproduces_its_total_and_a_misnamed_model_file(tmp_path):
    from engine.domain import models
    from engine.kb.knowledge import Knowledge

    root = _root(tmp_path, "formulas")
    (root / "knowledge" / "models").mkdir(parents=True)
    for name in ("llama-3.1-8b", "qwen3-8b"):
        (root / "knowledge" / "models" / f"{name}.yaml").write_bytes((SHIPPED / "knowledge" / "models" / f"{name}.yaml").read_bytes())
    _edit(root / "knowledge" / "models" / "llama-3.1-8b.yaml", "  total: 8030261248", "  total: 8030261249")
    _edit(root / "knowledge" / "models" / "qwen3-8b.yaml", "id: model:qwen3-8b", "id: model:qwen3-9b")
    k = Knowledge.load(root, strict=False)
    assert [str(p) for p in models.problems(k)] == [
        "knowledge/models/llama-3.1-8b.yaml:1 model:llama-3.1-8b parameters.total: the architecture gives 8030261248 parameters, not 8030261249",
        "knowledge/models/qwen3-8b.yaml:1 model:qwen3-9b id: the file should be named qwen3-9b.yaml",
    ]


def test_check_reports_a_failure_taxonomy_naming_a_missing_device(tmp_path):
    from engine.domain import failures
    from engine.kb.knowledge import Knowledge

    folder = tmp_path / "knowledge" / "failure_taxonomies"
    folder.mkdir(parents=True)
    (tmp_path / "knowledge" / "hardware").mkdir()  # a root without a hardware folder is not checked for devices
    shutil.copy(SHIPPED / "knowledge" / "hardware" / "h100-sxm.yaml", tmp_path / "knowledge" / "hardware")
    src = SHIPPED / "knowledge" / "failure_taxonomies" / "llama3-405b-pretraining.yaml"
    (folder / src.name).write_bytes(src.read_bytes())
    _edit(folder / src.name, "device: hw:h100-sxm", "device: hw:h100-sxmm")
    k = Knowledge.load(tmp_path, strict=False)
    assert [str(p) for p in failures.problems(k)] == [
        "knowledge/failure_taxonomies/llama3-405b-pretraining.yaml:1 ft:llama3-405b gpus.device: refers to hw:h100-sxmm, which is not in knowledge/hardware"]


def test_check_reports_a_reference_architecture_naming_a_missing_calculator_or_device(tmp_path):
    from engine.domain import archs
    from engine.kb.knowledge import Knowledge

    root = _root(tmp_path, "formulas", "knowledge")
    ra = root / "knowledge" / "reference_architectures" / "ra-02.yaml"
    _edit(ra, "    calculator: calc:training-duration", "    calculator: calc:training-durations")
    _edit(ra, "      device: hw:h100-sxm", "      device: hw:h100-sxmm")
    lines = [str(p) for p in archs.problems(Knowledge.load(root, strict=False)) if "ra-02" in p.place]
    assert lines[:2] == [
        "knowledge/reference_architectures/ra-02.yaml:4 arch:ra-02 hardware.pools[0].device: refers to hw:h100-sxmm, which is not in knowledge/hardware",
        "knowledge/reference_architectures/ra-02.yaml:4 arch:ra-02 runs[0].calculator: refers to calc:training-durations, which is not in knowledge/calculators",
    ]


def test_the_site_is_not_built_from_a_tree_whose_start_leads_nowhere(tmp_path):
    # check reported it and tree walk exits 1; the site build used to publish the tree's page and exit 0
    import pytest

    from engine.core.errors import KnowledgeError
    from engine.site.generate import generate

    shutil.copytree(ROOTS / "good", tmp_path / "root")
    (tmp_path / "root" / "decision_trees").mkdir()
    text = (ROOTS.parent / "trees" / "good" / "decision_trees" / "good.yaml").read_text()
    (tmp_path / "root" / "decision_trees" / "good.yaml").write_text(text.replace("start: mode", "start: nowhere", 1))
    with pytest.raises(KnowledgeError) as err:
        generate(str(tmp_path / "root"))
    assert [str(p) for p in err.value.problems] == ["decision_trees/good.yaml:14 tree:good start: refers to nowhere, which is neither a node nor a leaf"]


def test_arch_show_of_a_tier_naming_a_missing_device_is_its_record_problem_not_bad_input(tmp_path, capsys):
    # it was exit 2 'hardware.device: no device ...', as if the user had typed the device
    root = _root(tmp_path, "formulas", "knowledge")
    _edit(root / "knowledge" / "reference_architectures" / "ra-02.yaml", "      device: hw:h100-sxm", "      device: hw:h100-sxmm")
    assert run(["arch", "show", "ra-02", "--root", str(root)], capsys) == (1, "", (
        "knowledge/reference_architectures/ra-02.yaml:4 arch:ra-02 hardware.pools[0].device: refers to hw:h100-sxmm, which is not in "
        "knowledge/hardware\n1 problem found\n"))


def test_a_calculator_file_that_does_not_load_fails_only_the_runs_that_name_it(tmp_path, capsys):
    # an empty kv-concurrency.yaml stopped arch show of every tier (exit 1), ra-02 runs none of it
    root = _root(tmp_path, "formulas", "knowledge")
    (root / "knowledge" / "calculators" / "kv-concurrency.yaml").write_text("")
    problem = "knowledge/calculators/kv-concurrency.yaml:1: is empty (expected one calculator record)"
    code, out, err = run(["arch", "show", "ra-02", "--root", str(root)], capsys)
    assert code == 0 and out and "error:" not in out
    assert err == f"aiinfra: warning: 1 problem in other records ignored (first: {problem}; aiinfra check lists every one)\n"
    code, out, err = run(["arch", "show", "ra-05", "--root", str(root)], capsys)
    assert (code, err) == (0, "")
    assert out.count(f"  error: {problem}\n") == 2  # its two kv-concurrency runs


def test_check_of_a_root_whose_formulas_are_refused_loads_them_once(tmp_path, monkeypatch, capsys):
    # every rule asking for the compiled formulas loaded the whole root again (29 loads of the shipped-size root
    # with one refused formula: 16 s of CPU instead of 3.5); the refusal is kept per content key in the process
    from engine.numeric import compiled

    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AIINFRA_JOBS", "1")  # every load in this process, where it is counted
    monkeypatch.setattr(compiled, "_REFUSED", {}, raising=False)
    calls = []
    real = compiled.build_source
    monkeypatch.setattr(compiled, "build_source", lambda root: calls.append(root) or real(root))
    root = tmp_path / "root"
    shutil.copytree(REFUSED, root)
    (root / "knowledge" / "models").mkdir()
    for name in ("llama-3.1-8b", "qwen3-8b"):  # each model's parameter count asks for the formulas
        shutil.copy(SHIPPED / "knowledge" / "models" / f"{name}.yaml", root / "knowledge" / "models")
    code, out, _ = run(["check", "--root", str(root)], capsys)
    assert code == 1 and out.startswith("formulas/f.yaml:25 FX2 expr: attribute access is not allowed")
    # the count does not need the refused FX2 (#24: it is left out of the module); this root lacks the count's FX10
    assert "knowledge/models/qwen3-8b.yaml:1 model:qwen3-8b config: the parameters cannot be counted: --root: its formulas lack FX10" in out
    assert len(calls) == 1
