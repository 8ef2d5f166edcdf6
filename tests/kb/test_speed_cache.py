"""The caches behind the fast commands (issue 12) change no answer: a warm ``check`` prints what a
cold one prints, problems included; an edit is seen at once; a warm single-record command or
check does not import PyYAML, jsonschema, networkx or SymPy. Behaviour only, never timings."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli.main import main
from engine.core import cache

ROOTS = Path(__file__).parent.parent / "fixtures" / "roots"
BROKEN = ROOTS / "speed_broken"  # a schema problem, a dangling reference and a file that is not YAML
HEAVY = ("yaml", "jsonschema", "networkx", "sympy")


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(path))
    monkeypatch.setattr(cache, "_state", {})
    monkeypatch.setattr(cache, "repaired", [])
    return path


def _check(root: Path, capsys, fmt: str = "text") -> tuple[int, str]:
    capsys.readouterr()
    code = main(["check", "--root", str(root), "--format", fmt])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["text", "json", "csv"])
def test_a_warm_check_of_a_broken_root_prints_what_a_cold_one_does(folder, capsys, fmt):
    cold = _check(BROKEN, capsys, fmt)
    assert cold[0] == 1 and "colour" in cold[1] and "infra:ch99" in cold[1] and "not valid YAML" in cold[1]
    assert _check(BROKEN, capsys, fmt) == cold  # the whole outcome replayed
    for name in os.listdir(folder):
        if name.startswith("check_"):
            os.unlink(folder / name)
    assert _check(BROKEN, capsys, fmt) == cold  # the rules re-run over the per-file cache


@pytest.mark.parametrize("name", ["duplicate_key", "dangling_reference", "failing_example", "good"])
def test_warm_and_cold_agree_on_the_fixture_roots(folder, capsys, name):
    cold = _check(ROOTS / name, capsys)
    assert _check(ROOTS / name, capsys) == cold


def test_an_edit_is_seen_by_the_next_check(folder, capsys, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(ROOTS / "good", root)
    first = _check(root, capsys)
    book = next((root / "knowledge").rglob("*.yaml"))
    book.write_text(book.read_text(encoding="utf-8") + "\nbroken: [\n", encoding="utf-8")
    edited = _check(root, capsys)
    assert edited != first and edited[0] == 1 and "not valid YAML" in edited[1]
    shutil.rmtree(folder)
    cache._state.clear()
    assert _check(root, capsys) == edited  # what a cold check of the edited root says


def _imported(argv: list[str], cache_dir: Path) -> set[str]:
    code = (f"import sys; from engine.cli.main import main; code = main({argv!r}); "
            f"print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})), file=sys.stderr); sys.exit(code)")
    env = dict(os.environ, AIINFRA_CACHE_DIR=str(cache_dir))
    for _ in range(2):  # the first run fills the caches
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return set(proc.stderr.split())


@pytest.mark.parametrize("argv", [["hardware", "show", "h100-sxm"], ["path", "show", "inference-service"],
                                  ["path", "for", "上线一个推理服务"], ["check"],
                                  ["tree", "walk", "pd-disaggregation", "--set", "latency_slo=offline", "--no-prompt"]])
def test_warm_commands_do_not_import_the_heavy_libraries(tmp_path, argv):
    assert _imported(argv, tmp_path / "cache") == set()


def _tree_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(Path(__file__).parent.parent.parent, root, ignore=shutil.ignore_patterns(
        ".git", ".venv", "node_modules", "site", "build", "tests", "__pycache__", "*.egg-info"))
    return root


def test_a_tree_walk_reads_its_own_file_and_sees_an_edit(folder, capsys, tmp_path):
    root = _tree_root(tmp_path)
    argv = ["tree", "walk", "pd-disaggregation", "--set", "latency_slo=offline", "--no-prompt", "--root", str(root)]
    (root / "decision_trees" / "zz-broken.yaml").write_text("id: [\n", encoding="utf-8")  # another tree's file is broken
    assert main(argv) == 0 and "colocate-throughput" in capsys.readouterr().out
    own = root / "decision_trees" / "pd-disaggregation.yaml"
    own.write_text(own.read_text(encoding="utf-8") + "\nbroken: [\n", encoding="utf-8")
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "decision_trees/pd-disaggregation.yaml" in err and "not valid YAML" in err and "zz-broken" not in err


def test_a_tree_in_a_file_of_another_name_is_still_found(folder, capsys, tmp_path):
    root = _tree_root(tmp_path)
    trees = root / "decision_trees"
    (trees / "pd-disaggregation.yaml").rename(trees / "renamed.yaml")
    assert main(["tree", "walk", "tree:pd-disaggregation", "--set", "latency_slo=offline", "--no-prompt", "--root", str(root)]) == 0
    assert "colocate-throughput" in capsys.readouterr().out


def test_a_library_upgrade_changes_the_check_key(monkeypatch):
    from engine.check import integrity

    root = ROOTS / "good"
    before = integrity.outcome_key(root)
    stamp = integrity.libraries_stamp()
    assert "sympy-" in stamp and "jsonschema-" in stamp  # the installed versions, read from their dist-info folders
    monkeypatch.setattr(integrity, "libraries_stamp", lambda: stamp.replace("sympy-", "sympy-0.0.0-was-"))
    assert integrity.outcome_key(root) != before


# Standard-library modules that cost several ms each at start-up (dataclasses pulls in inspect,
# ast, dis and tokenize; typing about 4 ms): a warm one-record command needs none of them
# (issue 12), and the interval calculator's exact corners need no NumPy.
START_UP = ("dataclasses", "inspect", "ast", "typing", "difflib", "numpy")


def _imported_of(argv: list[str], cache_dir: Path, names: tuple[str, ...]) -> set[str]:
    code = (f"import sys; from engine.cli.main import main; code = main({argv!r}); "
            f"print(' '.join(sorted(m for m in sys.modules if m in {names!r})), file=sys.stderr); sys.exit(code)")
    env = dict(os.environ, AIINFRA_CACHE_DIR=str(cache_dir))
    for _ in range(2):  # the first run fills the caches
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return set(proc.stderr.split()[-len(names):]) & set(names)


@pytest.mark.parametrize("argv", [["roofline", "--device", "h100-sxm", "--model", "qwen3-8b", "--tokens", "2048"],
                                  ["arch", "show", "ra-02"], ["hardware", "show", "h100-sxm"], ["model", "show", "qwen3-8b"],
                                  ["path", "for", "上线一个推理服务"],
                                  ["tree", "walk", "pd-disaggregation", "--model", "qwen3-8b", "--set", "latency_slo=offline", "--no-prompt"],
                                  ["calc", "inference-capacity", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes=2",
                                   "--set", "engine_overhead_bytes=4GiB", "--set", "batch_size=64", "--set", "avg_output_tokens=256",
                                   "--set", "prompt_tokens=128"]])
def test_warm_one_record_commands_skip_the_costly_standard_modules(tmp_path, argv):
    assert _imported_of(argv, tmp_path / "cache", START_UP) == set()
