"""``aiinfra lab list`` and ``aiinfra lab show N``: the book's eleven labs (knowledge/labs/), each
with its question, inputs, the expectation the engine computes from them (engine.domain.labs) and
the commands that reproduce it.

Parsers are added by :func:`add_parsers` (engine.cli.main imports this module only to build them,
so the top of this module imports nothing heavy); each handler loads what it needs.
"""

from __future__ import annotations

LIST_COLUMNS = [("n", "lab"), ("title_zh", "title_zh"), ("title", "title"), ("levels", "levels"), ("chapters", "chapters"),
                ("computes", "computes")]
INPUT_COLUMNS = [("name", "input"), ("value", "value"), ("unit", "unit"), ("description", "description")]
OUTPUT_COLUMNS = [("formula", "formula"), ("symbol", "symbol"), ("value", "value"), ("unit", "unit"), ("reading", "reading")]


def add_parsers(verbs, Parser, shared) -> None:
    lab = verbs.add_parser("lab", help="the book's labs: question, inputs, computed expectation, commands",
                           description="The book's hands-on labs (knowledge/labs/*.yaml). Each lab's success criterion is computed "
                                       "from its inputs: a check (lab 2 interconnect domain, 4 gang admission, 8 endpoint picking, "
                                       "10 trace spans, 11 ML-BOM admission) and/or formulas; the others link their calculators and trees.")
    lverbs = lab.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    lverbs.required = True
    p = lverbs.add_parser("list", help="every lab", description="List the labs: number, titles, levels (L0-L3), chapters, what each computes.")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_lab:list_")
    p = lverbs.add_parser("show", help="one lab: question, inputs, computed expectation, commands",
                          description="Show a lab: its question and success criterion, its inputs with sources, the expectation "
                                      "computed from them, the formulas, calculators and trees it links, the reading paths through "
                                      "its chapters and the commands that reproduce it.",
                          epilog="examples:\n  aiinfra lab show 2\n  aiinfra lab show lab:4 --format json")
    p.add_argument("id", metavar="N", help="lab number, e.g. 4 or lab:4")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_lab:show")


# ---------------------------------------------------------------------- handlers


def _records(args) -> dict:
    from engine.cli.common import root_of
    from engine.kb.folders import folder_view

    return folder_view(root_of(args), "labs").labs


def _computes(r: dict) -> str:
    compute = r.get("compute") or {}
    parts = ([compute["check"]] if compute.get("check") else []) + list(compute.get("formulas", []))
    if parts:
        return ", ".join(parts)
    links = r.get("links", {})
    linked = list(links.get("calculators", [])) + list(links.get("trees", []))
    return "links " + ", ".join(linked) if linked else "-"


def list_(args) -> int:
    from engine.cli.common import emit
    from engine.cli.render import table
    from engine.domain import labs

    rows = [dict(n=r["number"], title_zh=r["title_zh"], title=r["title"], levels="/".join(r["levels"]), chapters=", ".join(r["chapters"]),
                 computes=_computes(r)) for r in labs.ordered(_records(args))]
    if args.format == "json":
        from engine.cli.render import to_json

        emit(to_json([{**row, "id": f"lab:{row['n']}"} for row in rows]))
    else:
        emit(table(rows, LIST_COLUMNS, args.format))
    return 0


def show(args) -> int:
    from engine.cli.common import emit, root_of
    from engine.cli.render import to_json
    from engine.core.errors import InputError
    from engine.domain import labs
    from engine.numeric import compiled

    if args.format == "csv":
        raise InputError("--format", "lab show prints one record: text, json or md (csv is for lab list)")
    root = root_of(args)
    record = labs.find(_records(args), args.id)
    result = labs.expectation(record, compiled.memoised(root))
    paths = _paths(root, record)
    if args.format == "json":
        emit(to_json({**record, "expectation": result.to_json(), "paths": paths}))
    else:
        emit(_document(record, result, paths, md=args.format == "md"))
    return 0


def _paths(root, record: dict) -> list[dict]:
    """Reading paths with a step on one of the lab's chapters or sections (or a section of its chapters)."""
    from engine.kb.knowledge import Knowledge
    from engine.reading.labs import paths_to_lab

    return paths_to_lab(Knowledge.load(root, strict=False), record)


def _value(value) -> str:
    if isinstance(value, (dict, list)):
        import json

        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 60 else f"{text[:57]}..."
    return "-" if value is None else str(value)


def _document(record: dict, result, paths: list[dict], md: bool) -> str:
    from engine.cli.render import table
    from engine.core.humanize import friendly, number

    fmt = "md" if md else "text"
    head = (lambda t: f"## {t}\n") if md else (lambda t: f"{t}:")
    title = f"{record['id']} · {record['title']}"
    out = [f"# {title}" if md else title, "", record["title_zh"], "",
           f"Level: {', '.join(record['levels'])}" + (f" ({record['level_note']})" if record.get("level_note") else ""),
           f"Chapters: {', '.join(record['chapters'])}" + (f"; sections: {', '.join(record['sections'])}" if record.get("sections") else ""),
           "", head("Question"), record["question"].strip(), "", head("Success criterion"), record["criterion"].strip()]
    if record.get("inputs"):
        rows = [dict(name=i["name"], value=_value(i["value"]), unit=i.get("unit", ""), description=i["description"]) for i in record["inputs"]]
        out += ["", head("Inputs"), table(rows, INPUT_COLUMNS, fmt), ""]
        out += [f"- {i['name']}: {i['source']}" for i in record["inputs"]]
    out += ["", head("Computed expectation")]
    if result.check is None and not result.outputs:
        out.append("This lab's criterion is observed on the running system; the engine links what sizes it (below).")
    if result.check is not None:
        mark = "holds" if result.check.passed else "does not hold"
        out += [f"{result.check.check}: {result.check.verdict} (criterion {mark})"] + [f"- {line}" for line in result.check.lines]
    if result.outputs:
        rows = [dict(formula=o.formula, symbol=o.symbol, value=number(o.value), unit=o.unit, reading=friendly(o.value, o.unit)) for o in result.outputs]
        out += ["", table(rows, OUTPUT_COLUMNS, fmt)]
    links = record.get("links", {})
    linked = [(k, links[k]) for k in ("formulas", "calculators", "trees", "labs") if links.get(k)]
    if linked:
        out += ["", head("Links")] + [f"- {k}: {', '.join(v)}" for k, v in linked]
    out += ["", head("Reading paths through its chapters")]
    out += [f"- {p['id']} ({p['title']}): step {p['step']} {p['to']}" for p in paths] or ["- none"]
    out += ["", head("Commands")]
    out += (["```bash", *record["commands"], "```"] if md else [f"  {c}" for c in record["commands"]])
    if record.get("notes"):
        out += ["", head("Notes"), record["notes"].strip()]
    out += ["", head("Source"), f"- {record['source']}"]
    return "\n".join(out)
