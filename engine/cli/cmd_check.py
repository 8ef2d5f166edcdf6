"""``aiinfra check``: every integrity rule over the knowledge root."""

from __future__ import annotations

from engine.cli.common import emit, root_of
from engine.cli.render import table, to_json


def _report_repaired_cache() -> None:
    """check reads the same digest-checked cache the other commands use: say what it repaired."""
    import sys

    from engine.core import cache

    if cache.repaired:
        names = ", ".join(sorted(set(cache.repaired)))
        sys.stderr.write(f"aiinfra check: warning: discarded and rebuilt cache files whose content did not match their digest: {names}\n")


def run(args) -> int:
    from engine.check import integrity

    root = root_of(args)
    counts, problems = integrity.cached_outcome(root, lambda: _fresh(root))
    _report_repaired_cache()
    if args.format == "json":
        emit(to_json({"ok": not problems, "counts": counts, "problems": [p.__str__() for p in problems]}))
    elif args.format == "csv":
        rows = [dict(place=p.place, id=p.id, field=p.path, message=p.message) for p in problems]
        emit(table(rows, [("place", "place"), ("id", "id"), ("field", "field"), ("message", "message")], "csv"))
    else:
        summary = ", ".join(f"{v} {_singular(k) if v == 1 else k}" for k, v in counts.items())
        for p in problems:
            emit(f"- {p}" if args.format == "md" else str(p))
        n = len(problems)
        emit(f"{'ok' if not n else 'FAILED'}: {summary}; {n} problem{'s' if n != 1 else ''}")
    return 1 if problems else 0


def _fresh(root) -> tuple[dict, list]:
    """Load the root and run every rule: (counts, problems)."""
    from engine.check import integrity
    from engine.core.progress import note
    from engine.kb.knowledge import Knowledge
    from engine.trees.walk import tree_files

    note("loading the knowledge root...")
    with integrity.measurements_meanwhile(root) as measured:  # read by a forked worker meanwhile
        knowledge = Knowledge.load(root, strict=False)
        note("checking references, units, worked examples and trees...")
        problems = integrity.check(knowledge, measured)
    counts = {
        "formulas": len(knowledge.formulas),
        "examples": sum(len(f.examples) for f in knowledge.formulas),
        "books": len(knowledge.books),
        "chapters": len(knowledge.chapters),
        "sections": len(knowledge.sections),
        "concepts": len(knowledge.concepts),
        "paths": len(knowledge.paths),
        "actions": len(knowledge.actions),
        "models": len(knowledge.models),
        "devices": len(knowledge.hardware),
        "calculators": len(knowledge.calculators),
        "architectures": len(knowledge.reference_architectures),
        "systems": len(knowledge.systems),
        "grid presets": len(knowledge.carbon_intensity),
        "failure taxonomies": len(getattr(knowledge, "failure_taxonomies", {}) or {}),
        "scaling laws": len(getattr(knowledge, "scaling_laws", {}) or {}),
        "labs": len(getattr(knowledge, "labs", {}) or {}),
        "trees": len(tree_files(knowledge.root)),
    }
    return counts, problems


def _singular(noun: str) -> str:
    """'failure taxonomies' -> 'failure taxonomy', 'trees' -> 'tree' (for a count of one)."""
    if noun.endswith("ies"):
        return noun[:-3] + "y"
    if noun.endswith("ches") or noun.endswith("ses"):
        return noun[:-2]
    return noun[:-1] if noun.endswith("s") else noun
