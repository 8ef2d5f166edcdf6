"""``aiinfra arch list|show ID``: the book's reference architectures (logic in ``engine.domain.archs``; this module parses and prints)."""

from __future__ import annotations

from engine.cli.common import emit, root_of
from engine.cli.render import table, to_json

_HERE = "engine.cli.cmd_arch"
_LIST_COLUMNS = [("id", "id"), ("title", "title"), ("title_zh", "title_zh"), ("tier", "tier"), ("trains", "trains"), ("serves", "serves"),
                 ("hardware", "hardware"), ("gpus", "gpus"), ("upgrade", "moves to")]
_RUN_COLUMNS = [("run", "run"), ("calculator", "calculator"), ("output", "output"), ("value", "value"), ("unit", "unit"),
                ("low", "low"), ("high", "high"), ("book", "book"), ("status", "status")]

SHOW_EXAMPLES = """examples:
  aiinfra arch show ra-01                 # also arch:ra-01 or 1
  aiinfra arch show ra-02 --format json   # every run's full calculator result
"""


def add_parsers(verbs, Parser, shared) -> None:
    import argparse

    arch = verbs.add_parser("arch", help="the book's reference architectures ra-01..ra-07",
                            description="Reference architectures (knowledge/reference_architectures/): each tier's hardware, counts, network and workload, run through the calculators that apply to it, with the book's numbers beside ours, the failure boundaries and the upgrade path.")
    averbs = arch.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    averbs.required = True
    p = averbs.add_parser("list", help="every tier", description="List the tiers: id, titles, whether it trains or serves, hardware, GPUs and where its failure boundaries lead.")
    shared(p, False)
    p.set_defaults(handler=f"{_HERE}:list_")
    p = averbs.add_parser("show", help="one tier, its calculator runs and failure boundaries", formatter_class=argparse.RawDescriptionHelpFormatter,
                          epilog=SHOW_EXAMPLES,
                          description="Show a tier: hardware, counts, network, workload, failure domain; every calculator run that applies (capacity, power, cost) with its inputs' sources and the book's printed number beside ours; each failure boundary (met, not met, or stated) and the upgrade path.")
    p.add_argument("id", metavar="ID", help="tier id, e.g. ra-01 or arch:ra-01")
    shared(p, False)
    p.set_defaults(handler=f"{_HERE}:show")


def list_(args) -> int:
    from engine.domain import archs
    from engine.site.arch_text import _yes

    records = archs.cached_records(root_of(args))
    rows = []
    for rid, rec in sorted(records.items()):
        pools = rec["hardware"]["pools"]
        hw = " + ".join(f"{p['nodes']}x{p['gpus_per_node']} {archs.short(p['device'])}" for p in pools)
        targets = []
        for step in archs._upgrade_path(rec):
            name = archs.short(step["to"]) if step["to"] else "(beyond)"
            if name not in targets:
                targets.append(name)
        rows.append(dict(id=archs.short(rid), title=rec["title"], title_zh=rec["title_zh"], tier=rec["tier"], trains=_yes(rec["trains"]),
                         serves=_yes(rec["serves"]), hardware=hw, gpus=sum(p["nodes"] * p["gpus_per_node"] for p in pools), upgrade=", ".join(targets)))
    if args.format == "json":
        emit(to_json(rows))
    else:
        emit(table(rows, _LIST_COLUMNS, args.format, droppable=("title_zh", "trains", "serves", "upgrade")))  # narrow terminals lose these first
    return 0


def show(args) -> int:
    from engine.domain import archs
    from engine.site.arch_text import document

    report = archs.evaluate(root_of(args), args.id)
    if args.format == "json":
        emit(to_json(report.to_json()))
    elif args.format == "csv":
        emit(table(_run_rows(report), _RUN_COLUMNS, "csv"))
    else:
        emit(document(report, md=args.format == "md"))
    return 0


def _run_rows(report) -> list[dict]:
    rows = []
    for run in report.runs:
        if run.status != "ok":
            rows.append(dict(run=run.id, calculator=run.calculator, status=f"{run.status}: {run.message}"))
            continue
        for name, v in run.result.outputs.items():
            book = run.book if run.book and run.book["output"] == name else None
            rows.append(dict(run=run.id, calculator=run.calculator, output=name, value=v.value, unit=v.unit, low=v.low, high=v.high,
                             book=book.get("value", "") if book else "", status="ok"))
    return rows
