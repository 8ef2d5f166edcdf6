"""Decision-tree proofs: every tree of a root checked and its nodes proven, cached by file contents.

``analyse`` walks with :mod:`engine.trees.walk` and proves with :mod:`engine.trees.regions`;
``problems`` is what ``aiinfra check`` reports.
"""

from __future__ import annotations

from pathlib import Path

from engine.core.errors import AiinfraError, Problem
from engine.numeric.calculators import Graph
from engine.trees.walk import FOLDER, Report, Runner, load, structure_problems, tree_files

ANALYSIS_VERSION = "1"
# structure problems after which the tree cannot be proven (unused inputs or an orphan leaf do not stop it)
_FATAL = ("neither a node nor a leaf", "the nodes form a cycle", "is both a node and a leaf")
_OWN = tuple(f"engine/trees/{m}.py" for m in ("records", "symbols", "state", "runner", "structure", "literals", "algebra", "decide", "boundaries", "proofs")) + tuple(f"engine/numeric/{m}.py" for m in ("calculators", "calc_records", "calc_plan", "calc_run", "calc_ranges", "calc_sweep", "calc_conditions", "calc_problems")) + ("engine/core/expr.py", "engine/core/codegen.py", "engine/numeric/compiled.py", "engine/core/units.py", "engine/core/dimensions.py", "engine/core/symbolic.py")


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


def _analyse(root: Path, knowledge) -> Report:
    from engine.numeric import compiled

    trees, problems = load(root)
    report = Report(problems=list(problems))
    try:
        module = compiled.load(root)
    except AiinfraError:
        report.problems.append(Problem(FOLDER, "", "", "not analysed: the formulas do not load (see their problems)"))
        return report
    if knowledge is None:
        from engine.kb.knowledge import Knowledge

        knowledge = Knowledge.load(root, strict=False)
    calc_records = dict(knowledge.calculators) if knowledge.calculators else {}
    graph = Graph(module)
    from engine.trees import regions as trees_symbolic

    def one(item):
        tid, tree = item
        found = structure_problems(tree, graph, knowledge, calc_records)
        if any(any(f in p.message for f in _FATAL) or ".when" in p.path or ".input" in p.path for p in found):
            return found, None  # the proofs need parsed conditions and resolved targets
        result = trees_symbolic.prove(Runner(tree, module, calc_records))
        return found, (result.problems, result.notes, result.proofs, result.regions)

    from engine.core.forked import forked_map

    items = sorted(trees.items())
    for (tid, _), (found, proved) in zip(items, forked_map(one, items), strict=True):  # each tree alone: over forked workers
        report.problems += found
        if proved is None:
            continue
        problems, notes, proofs, regions = proved
        report.problems += problems
        report.notes += notes
        report.proofs[tid] = proofs
        report.regions[tid] = regions
    report.problems = sorted(set(report.problems))
    report.notes = sorted(set(report.notes))
    return report


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
