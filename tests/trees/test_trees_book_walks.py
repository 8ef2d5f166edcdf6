"""Issue 30's chapter and runbook trees walked to every leaf: one set of checks over the cases of
tests/trees/cases_chapters.py, cases_runbooks.py, cases_lifecycle.py and cases_quant.py (each case: tree, inputs from the book or
hand-picked on both sides of a threshold with the arithmetic beside it, the leaf expected)."""

from __future__ import annotations

import pytest

from engine.core.paths import shipped_root
from engine.trees import proofs as trees_proofs
from engine.trees import walk as trees
from tests.trees.cases_chapters import CASES as CHAPTERS
from tests.trees.cases_lifecycle import CASES as LIFECYCLE
from tests.trees.cases_quant import CASES as QUANT
from tests.trees.cases_runbooks import CASES as RUNBOOKS

CASES = [*CHAPTERS, *RUNBOOKS, *LIFECYCLE, *QUANT]
MINE = sorted({c[0] for c in CASES})


@pytest.fixture(scope="module")
def runners(module):
    shipped = trees.load_trees(shipped_root())
    return {name: trees.Runner(shipped[f"tree:{name}"], module) for name in MINE}


@pytest.mark.parametrize("name,inputs,expected", CASES, ids=[f"{c[0]}:{c[2]}:{i}" for i, c in enumerate(CASES)])
def test_walk_reaches_the_leaf(runners, name, inputs, expected):
    walk = runners[name].walk(dict(inputs))
    assert walk.leaf.id == expected, (name, inputs)


def test_every_leaf_of_every_new_tree_is_walked(runners):
    for name, run in runners.items():
        reached = {c[2] for c in CASES if c[0] == name}
        assert reached == set(run.tree.leaves), (name, set(run.tree.leaves) - reached)


def test_the_new_trees_are_proven_exactly_with_no_problems():
    report = trees_proofs.analyse(shipped_root())
    for name in MINE:
        tid = f"tree:{name}"
        assert [p for p in report.problems if p[1] == tid] == [], name
        assert [p for p in report.notes if p[1] == tid] == [], name
        assert all(p["method"] == "exact" and not p["found"] for p in report.proofs[tid]), name


def test_every_leaf_cites_a_section_and_every_threshold_has_a_source(runners):
    for name, run in runners.items():
        for leaf in run.tree.leaves.values():
            assert leaf.read and leaf.rationale, (name, leaf.id)
        for p in run.tree.parameters.values():
            assert p.source and p.description, (name, p.name)
