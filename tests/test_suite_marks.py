"""``make test-fast`` (issue 28): the suite less the tests marked ``slow`` (the browser tests, the
site build and its JavaScript parity, the SymPy proofs of the trees and of every calculator's
solve pairs, the every-device sweep and the validate gate over the shipped measurements);
``make test`` still runs everything."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOW = [
    "tests/browser/test_site_browser.py",
    "tests/site/test_site.py",
    "tests/numeric/test_calc_solve_walk.py",
    "tests/cli/test_every_device_and_model.py",
    "tests/trees/test_proven.py::test_a_shipped_entry_is_what_sympy_proves",
    "tests/core/test_forked.py::test_the_trees_proofs_are_the_same_serial_and_forked",
    "tests/cli/test_validate.py::test_the_gate_passes_on_the_shipped_knowledge_against_the_committed_baseline",
    "tests/cli/test_fuzz_argv.py::test_every_typed_option_refuses_huge_numbers_without_an_internal_error",
]


def test_slow_is_a_registered_marker():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    markers = config["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("slow: ") for m in markers)


def test_make_test_fast_leaves_out_the_slow_tests_and_make_test_runs_everything():
    def dry(target: str) -> list[str]:
        out = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return [line for line in out.splitlines() if "-m pytest" in line]

    assert dry("test-fast") == ['.venv/bin/python -m pytest -m "not slow" || test $? -eq 5']
    assert dry("test") == [".venv/bin/python -m pytest || test $? -eq 5"]


def test_every_slow_test_is_marked():
    # each test named in SLOW is collected (a rename fails here), and none is left once "not slow" deselects
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider", *SLOW]
    every = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    assert every.returncode == 0, every.stdout[-2000:]
    ids = [line for line in every.stdout.splitlines() if "::" in line]
    assert [name for name in SLOW if not any(i.startswith(name) for i in ids)] == []
    fast = subprocess.run([*argv, "-m", "not slow"], cwd=ROOT, capture_output=True, text=True)
    assert fast.returncode == 5, fast.stdout[-2000:]  # 5: no test left to run
