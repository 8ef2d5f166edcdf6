"""The trees' proofs shipped with the engine (engine/trees/proven.json): current, faithful, and
never used for a tree that changed (issue 24: a cold ``check`` reuses them instead of SymPy)."""

from __future__ import annotations

import copy
import shutil
import types
from pathlib import Path

import pytest

from engine.core.paths import shipped_root
from engine.kb.knowledge import Knowledge
from engine.numeric import compiled
from engine.numeric.calculators import Graph
from engine.trees import proofs, proven
from engine.trees.walk import Runner, load_trees

N_TREES = len(list((Path(shipped_root()) / "decision_trees").glob("*.yaml")))  # one tree per file
REFRESH = "stale engine/trees/proven.json: run  python -m engine.trees.proofs --write"


@pytest.fixture(scope="module")
def shipped():
    root = Path(shipped_root())
    k = Knowledge.load(root, strict=False)
    module = compiled.load(root)
    return root, load_trees(root), module, Graph(module), dict(k.calculators)


def _keys(shipped) -> dict[str, str]:
    root, trees, module, graph, calcs = shipped
    return {tid: proven.key(root, tree, graph, calcs) for tid, tree in trees.items()}


def test_the_shipped_table_is_current(shipped):
    """Every shipped tree has its entry under its present key, and nothing else is in the table:
    edit a tree, a formula a tree reads or a proving source and this fails until the table is refreshed."""
    keys = _keys(shipped)
    assert len(keys) == N_TREES and None not in keys.values()
    assert set(proven.shipped()) == set(keys.values()), REFRESH


@pytest.mark.slow  # SymPy proves three trees again
@pytest.mark.parametrize("name", ["training-divergence", "checkpoint-strategy", "rl-layout"])
def test_a_shipped_entry_is_what_sympy_proves(shipped, name):
    from engine.trees import regions

    root, trees, module, graph, calcs = shipped
    tree = trees[f"tree:{name}"]
    fresh = regions.prove(Runner(tree, module, calcs))
    entry = proven.lookup(proven.key(root, tree, graph, calcs))
    assert entry is not None, REFRESH
    assert proven.as_json(entry) == proven.as_json((fresh.problems, fresh.notes, fresh.proofs, fresh.regions))


def test_a_tree_key_follows_the_formulas_it_reads_and_no_others(shipped):
    root, trees, module, graph, calcs = shipped
    tree = trees["tree:checkpoint-strategy"]
    before = proven.key(root, tree, graph, calcs)
    read = proven.reads(tree)
    reading = next(fid for fid, meta in module.FORMULAS.items() if meta["output"]["symbol"] in read)  # a producer of a symbol it names
    unrelated = next(fid for fid, meta in module.FORMULAS.items() if not ({meta["output"]["symbol"]} | set(meta["symbols"])) & read)

    def edited(fid):
        table = copy.deepcopy(module.FORMULAS)
        first = next(iter(table[fid]["variants"].values()))
        first["expr"] = f"2 * ({first['expr']})"
        fake = types.SimpleNamespace(FORMULAS=table)
        return proven.key(root, tree, Graph(fake), calcs)

    assert edited(reading) != before
    assert edited(unrelated) == before


def test_an_edited_tree_is_proven_again(tmp_path, monkeypatch):
    """A root holding the shipped trees with one condition changed: that tree alone is proven with
    SymPy (its new overlap is found), every other tree's proof comes from the shipped table."""
    from engine.trees import regions

    source = Path(shipped_root())
    for folder in ("formulas", "decision_trees", "knowledge/calculators"):
        shutil.copytree(source / folder, tmp_path / folder)
    k = Knowledge.load(tmp_path, strict=False)
    module = compiled.load(tmp_path)
    stale = {tid for tid, tree in load_trees(tmp_path).items() if proven.lookup(proven.key(tmp_path, tree, Graph(module), dict(k.calculators))) is None}
    path = tmp_path / "decision_trees" / "training-divergence.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count('"spike_step > warmup_steps"') == 1
    path.write_text(text.replace('"spike_step > warmup_steps"', '"spike_step >= warmup_steps"'), encoding="utf-8")

    proved = []
    real = regions.prove

    def counting(runner):
        proved.append(runner.tree.id)
        return real(runner)

    monkeypatch.setattr(regions, "prove", counting)
    monkeypatch.setenv("AIINFRA_JOBS", "1")  # prove here, where the count is kept
    report = proofs._analyse(tmp_path, None)
    assert "tree:training-divergence" not in stale  # (stale: trees the table misses before the edit, none once it is current)
    assert sorted(proved) == sorted(stale | {"tree:training-divergence"})
    assert len(report.proofs) == N_TREES
    found = [str(p) for p in report.problems if p.id == "tree:training-divergence"]
    assert len(found) == 1 and "overlap: branches[0] and branches[1] both hold at" in found[0] and "(exact witness)" in found[0], found
    assert [str(p) for p in report.problems if p.id != "tree:training-divergence"] == []


def test_without_the_table_every_tree_is_proven(shipped, monkeypatch):
    from engine.trees import regions

    proved = []
    monkeypatch.setattr(regions, "prove", lambda runner: proved.append(runner.tree.id) or regions.Proofs())
    monkeypatch.setenv("AIINFRA_JOBS", "1")
    root = shipped[0]
    proofs._analyse(root, None, shipped=False)
    assert len(proved) == N_TREES
