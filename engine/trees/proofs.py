"""Decision-tree proofs: every tree of a root checked and its nodes proven, cached by file contents.

``analyse`` walks with :mod:`engine.trees.walk` and proves with :mod:`engine.trees.regions`;
``problems`` is what ``aiinfra check`` reports. A tree's proof comes from the table shipped with
the engine (:mod:`engine.trees.proven`) while the tree, the formulas it reads and the proving
code are those it was written for; any other tree is proven with SymPy.
"""

from __future__ import annotations

from pathlib import Path

from engine.core.errors import AiinfraError, Problem
from engine.numeric.calculators import Graph
from engine.trees.walk import FOLDER, Report, Runner, load, structure_problems, tree_files

ANALYSIS_VERSION = "1"
# structure problems after which the tree cannot be proven (unused inputs or an orphan leaf do not stop it)
_FATAL = ("neither a node nor a leaf", "the nodes form a cycle", "is both a node and a leaf")
_OWN = tuple(f"engine/trees/{m}.py" for m in ("records", "symbols", "state", "runner", "structure", "literals", "algebra", "decide", "boundaries", "proofs")) + tuple(f"engine/numeric/{m}.py" for m in ("calculators", "calc_records", "calc_plan", "calc_run", "calc_ranges", "calc_sweep", "calc_conditions", "calc_problems")) + ("engine/core/expr.py", "engine/core/codegen.py", "engine/numeric/compiled.py", "engine/core/units.py", "engine/core/dimensions.py", "engine/core/symbolic.py", "engine/trees/proven.py", "engine/trees/proven.json")


def analyse(root, knowledge=None) -> Report:
    """Load every tree of ``root``, check its structure and prove its nodes; cached by file contents."""
    root = Path(root)
    if not tree_files(root):
        return Report()
    from engine.numeric import compiled

    key = compiled.files_key(root, (FOLDER, "formulas", "knowledge"), _OWN, ANALYSIS_VERSION)
    cached = _cache_read(key)
    if cached is not None:
        return cached
    report = _analyse(root, knowledge)
    _cache_write(key, report)
    return report


def _analyse(root: Path, knowledge, shipped: bool = True) -> Report:
    """Every tree of ``root`` checked and proven, uncached; ``shipped``: take a tree's proof from
    the table shipped with the engine (engine.trees.proven) when its key is there."""
    report = Report()
    proved = _prove(root, knowledge, shipped, report)
    for tid, (_, (problems, notes, proofs, regions)) in sorted(proved.items()):
        report.problems += problems
        report.notes += notes
        report.proofs[tid] = proofs
        report.regions[tid] = regions
    report.problems = sorted(set(report.problems))
    report.notes = sorted(set(report.notes))
    return report


def prove_all(root, shipped: bool = True) -> dict[str, tuple]:
    """key (engine.trees.proven) -> (problems, notes, proofs, regions) of every provable tree of ``root``."""
    return {k: found for k, found in _prove(Path(root), None, shipped, Report()).values() if k is not None}


def _prove(root: Path, knowledge, shipped: bool, report: Report) -> dict[str, tuple]:
    """tree id -> (its key, (problems, notes, proofs, regions)) of every tree that can be proven;
    the structure problems of every tree (and load problems) go to ``report``. Only the trees
    missing from the shipped table are proven, over forked workers (SymPy is imported only then)."""
    from engine.numeric import compiled
    from engine.trees import proven

    trees, problems = load(root)
    report.problems += problems
    try:
        module = compiled.load(root)
    except AiinfraError:
        report.problems.append(Problem(FOLDER, "", "", "not analysed: the formulas do not load (see their problems)"))
        return {}
    if knowledge is None:
        from engine.kb.knowledge import Knowledge

        knowledge = Knowledge.load(root, strict=False)
    calc_records = dict(knowledge.calculators) if knowledge.calculators else {}
    graph = Graph(module)
    out: dict[str, tuple] = {}
    todo = []
    for tid, tree in sorted(trees.items()):
        found = structure_problems(tree, graph, knowledge, calc_records)
        report.problems += found
        if any(any(f in p.message for f in _FATAL) or ".when" in p.path or ".input" in p.path for p in found):
            continue  # the proofs need parsed conditions and resolved targets
        k = proven.key(root, tree, graph, calc_records)
        hit = proven.lookup(k) if shipped else None
        if hit is not None:
            out[tid] = (k, hit)
        else:
            todo.append((tid, tree, k))
    if todo:
        from engine.core.forked import forked_map
        from engine.trees import regions as trees_symbolic

        def one(item):
            result = trees_symbolic.prove(Runner(item[1], module, calc_records))
            return result.problems, result.notes, result.proofs, result.regions

        for (tid, _, k), found in zip(todo, forked_map(one, todo), strict=True):  # each tree alone: over forked workers
            out[tid] = (k, found)
    return out


def problems(root, knowledge=None) -> list[Problem]:
    """Integrity of every decision tree of ``root``, for ``aiinfra check``.

    Schema, references (chapters, sections, formulas), symbols, units of conditions, bare
    numbers, ask options without a branch, unreachable nodes and leaves, unused inputs, and
    at every test node a gap or overlap proven (linear) or found by seeded sampling, each
    with the point that shows it. Pass the already-loaded Knowledge to skip reloading it.
    """
    return analyse(root, knowledge).problems


def _cache_read(key: str) -> Report | None:
    from engine.core import cache

    value = cache.read_json(f"trees_{key}.json")
    if value is None:
        return None
    try:
        return Report.from_json(value)
    except (ValueError, KeyError, TypeError, AttributeError):
        cache.discard(f"trees_{key}.json")
        return None


def _cache_write(key: str, report: Report) -> None:
    from engine.core import cache

    if cache.write_json(f"trees_{key}.json", report.to_json()):  # a cache that cannot be written only costs time
        cache.prune("trees_", ".json", keep=64)


if __name__ == "__main__":
    import argparse
    import os

    from engine.trees import proven

    ap = argparse.ArgumentParser(description="Write engine/trees/proven.json, the shipped proofs of the decision trees")
    ap.add_argument("--write", action="store_true", help="prove every tree of --root with SymPy and write the table")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    a = ap.parse_args()
    if a.write:
        print(f"{proven.write(prove_all(a.root, shipped=False))} trees written to {proven.SHIPPED}")
