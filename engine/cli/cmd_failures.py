"""``aiinfra failures list`` and ``aiinfra failures show ID``: failure taxonomies
(knowledge/failure_taxonomies/), the root causes of a training job's interruptions, with each
category's share (FX500), job MTBF (FX501) and per-GPU MTBF (FX502).

Parsers are added by :func:`add_parsers` (engine.cli.main imports this module only to build them,
so the top of this module imports nothing heavy); each handler loads the folder it needs.
"""

from __future__ import annotations

LIST_COLUMNS = [("id", "id"), ("name", "name"), ("days", "days"), ("gpus", "GPUs"), ("total", "interruptions"),
                ("unexpected", "unexpected"), ("categories", "categories"), ("job_mtbf_h", "job MTBF (h, unexpected)")]
SHOW_COLUMNS = [("name", "category"), ("component", "component"), ("kind", "kind"), ("count", "count"), ("printed", "printed %"),
                ("share_pct", "count/base %"), ("mtbf_h", "job MTBF (h)"), ("per_gpu_years", "per-GPU MTBF (years)")]
YEAR_S = 365 * 86400


def add_parsers(verbs, Parser, shared) -> None:
    failures = verbs.add_parser("failures", help="failure taxonomies: root causes of training interruptions",
                                description="Failure taxonomies (knowledge/failure_taxonomies/*.yaml): a job's interruptions over an "
                                            "observation window by root-cause category, each with its source; show prints per category "
                                            "the share (FX500), the job MTBF (FX501: period / count) and the per-GPU MTBF (FX502).")
    fverbs = failures.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    fverbs.required = True
    p = fverbs.add_parser("list", help="every failure taxonomy", description="List the failure taxonomies: window, GPUs, interruptions, categories.")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_failures:list_")
    p = fverbs.add_parser("show", help="one failure taxonomy in full",
                          description="Show a failure taxonomy: per category its count, printed share, count/base share (FX500), job MTBF (FX501) "
                                      "and per-GPU MTBF (FX502); notes name the rows whose printed share is not count/base to its rounding.")
    p.add_argument("id", metavar="ID", help="taxonomy id, e.g. llama3-405b or ft:llama3-405b")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_failures:show")


# ---------------------------------------------------------------------- handlers


def _records(args) -> dict:
    from engine.cli.common import root_of
    from engine.kb.folders import folder_view

    return folder_view(root_of(args), "failure_taxonomies").failure_taxonomies


def _module(args):
    from engine.cli.common import root_of
    from engine.domain.model_count import formula_module

    return formula_module(root_of(args))


def list_(args) -> int:
    from engine.cli.common import emit
    from engine.cli.render import table
    from engine.domain import failures

    rows = []
    for ident, r in sorted(_records(args).items()):
        counts = r["interruptions"]
        rows.append(dict(id=ident.split(":", 1)[1], name=r["name"], days=r["period"]["days"], gpus=r["gpus"]["count"], total=counts["total"],
                         unexpected=counts.get("unexpected", "-"), categories=len(r["categories"]),
                         job_mtbf_h=round(failures.job_mtbf_s(r) / 3600, 3) if counts.get("unexpected") else "-"))
    emit(table(rows, LIST_COLUMNS, args.format, droppable=("categories", "total")))  # narrow terminals lose these first
    return 0


def show(args) -> int:
    from engine.cli.common import emit
    from engine.cli.render import to_json
    from engine.core.errors import InputError
    from engine.domain import failures

    if args.format == "csv":
        raise InputError("--format", "failures show prints one record: text, json or md (csv is for failures list)")
    record = failures.find(_records(args), args.id)
    figures = failures.figures(record, _module(args))
    notes = failures.notes(record)
    if args.format == "json":
        emit(to_json({**record, "figures": figures, "share_notes": notes}))
    else:
        emit(_document(record, figures, notes, md=args.format == "md"))
    return 0


def _document(record: dict, figures: list[dict], notes: list[str], md: bool) -> str:
    from engine.cli.render import table
    from engine.domain import failures

    counts = record["interruptions"]
    title = f"{record['id']} · {record['name']}"
    out = [f"# {title}" if md else title, "", f"Job: {record['job']}",
           f"Window: {record['period']['days']:g} days [{record['period']['source']}]",
           f"GPUs: {record['gpus']['count']}" + (f" x {record['gpus']['device']}" if record["gpus"].get("device") else "") + f" [{record['gpus']['source']}]"]
    split = ", ".join(f"{counts[k]} {k}" for k in ("planned", "unexpected") if k in counts)
    out.append(f"Interruptions: {counts['total']}" + (f" ({split})" if split else "") + f"; shares are of the {counts.get('share_base', 'total')} ones [{counts['source']}]")
    if counts.get("unexpected"):
        out.append(f"Job MTBF, unexpected interruptions: {failures.job_mtbf_s(record) / 3600:.3f} h")
    rows = [dict(name=f["name"], component=f["component"], kind=f["kind"], count=f["count"],
                 printed="-" if f["printed_share"] is None else f"{f['printed_share']:g}",
                 share_pct="-" if f["share"] is None else f"{100 * f['share']:.1f}",
                 mtbf_h="-" if f["mtbf_s"] is None else f"{f['mtbf_s'] / 3600:.2f}",
                 per_gpu_years="-" if f["per_gpu_mtbf_s"] is None else f"{f['per_gpu_mtbf_s'] / YEAR_S:.2f}") for f in figures]
    out += ["", table(rows, SHOW_COLUMNS, "md" if md else "text", droppable=("printed", "component"))]  # narrow terminals lose these first
    if notes:
        out += ["", "## Printed shares off count/base" if md else "Printed shares off count/base:"] + [f"- {n}" for n in notes]
    row_notes = [f"- {r['name']}: {r['note']}" for r in record["categories"] if r.get("note")]
    if row_notes:
        out += ["", "## Row notes" if md else "Row notes:"] + row_notes
    out += ["", "## Source" if md else "Source:", f"- {record['source']}"]
    if record.get("notes"):
        out += ["", f"Notes: {record['notes']}"]
    return "\n".join(out)
