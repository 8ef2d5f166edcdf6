"""``aiinfra calc list`` and ``aiinfra calc <name>``: calculators declared in knowledge/calculators/."""

from __future__ import annotations

from engine import compiled
from engine.cli.common import emit, parse_sets, root_of
from engine.cli.render import table, to_json
from engine.humanize import friendly, number, value_range


def list_(args) -> int:
    from engine.calculators import load_records

    records = load_records(root_of(args))
    rows = [dict(id=cid, title=r["title"], title_zh=r["title_zh"], outputs=r["outputs"]) for cid, r in sorted(records.items())]
    if args.format == "json":
        emit(to_json(rows))
    else:
        emit(table(rows, [("id", "id"), ("title", "title"), ("title_zh", "title_zh"), ("outputs", "outputs")], args.format))
    return 0


def run(args) -> int:
    from engine.calculators import Calculator, load_records
    from engine.calculators import run as run_calc

    root = root_of(args)
    records = load_records(root)
    calc = Calculator.from_record(records[f"calc:{args.action}"])
    result = run_calc(calc, compiled.load(root), parse_sets(args.sets))
    emit(render(result, args.format, explain=getattr(args, "explain", False)))
    return 0


def help_text(record: dict, module) -> str:
    """The inputs of a calculator with units, defaults and descriptions (for ``--help``)."""
    from engine.calculators import Calculator, Graph

    calc = Calculator.from_record(record)
    graph = Graph(module)
    lines = ["inputs (--set NAME=VALUE; a bare number is in the unit shown):"]
    for name, spec in calc.inputs.items():
        sym = graph.spec(name) if graph.known(name) else {"unit": "?", "desc": "", "values": [], "default": None, "default_source": ""}
        unit = "one of " + "|".join(sym["values"]) if sym["values"] else sym["unit"]
        default = spec.get("default")
        source = spec.get("source", "")
        if default is None and sym["default"] is not None:
            default = sym["default"] if isinstance(sym["default"], str) else number(sym["default"][0])
            source = sym["default_source"]
        lines.append(f"  {name} [{unit}]" + (f" default {default}" if default is not None else " (required unless derivable)"))
        lines.append(f"      {spec.get('description') or sym['desc']}" + (f" (default from: {source})" if default is not None else ""))
    lines.append("outputs: " + ", ".join(calc.outputs))
    lines.append("Any intermediate symbol of the chain may be given with --set; the chain then stops there.")
    return "\n".join(lines)


def render(result, fmt: str, explain: bool = False) -> str:
    if fmt == "json":
        data = result.to_json()
        if explain:
            data["explain"] = result.steps
        return to_json(data)
    if fmt == "csv":
        rows = [dict(kind="input", name=n, value=v.value, unit=v.unit, low=v.low, high=v.high, note=v.source) for n, v in result.inputs.items()]
        rows += [dict(kind="output", name=n, value=v.value, unit=v.unit, low=v.low, high=v.high, note=v.method) for n, v in result.outputs.items()]
        return table(rows, [(k, k) for k in ("kind", "name", "value", "unit", "low", "high", "note")], "csv")
    md = fmt == "md"
    lines = [f"## {result.calculator} · {result.title}" if md else f"{result.calculator} · {result.title}", ""]
    rows = [dict(name=n, value=value_range(v), unit=v.unit, source=v.source) for n, v in result.inputs.items()]
    lines += [table(rows, [("name", "input"), ("value", "value"), ("unit", "unit"), ("source", "source")], "md" if md else "text"), ""]
    rows = [dict(name=n, value=value_range(v), unit=v.unit, friendly=friendly(v.value, v.unit), method=v.method) for n, v in result.outputs.items()]
    lines += [table(rows, [("name", "output"), ("value", "value"), ("unit", "unit"), ("friendly", ""), ("method", "range")], "md" if md else "text"), ""]
    lines.append("Formulas: " + " -> ".join(result.formulas))
    if explain:
        lines += ["", "### Chain" if md else "Chain:"]
        for s in result.steps:
            variant = f" ({s['variant']})" if s["variant"] else ""
            lines.append(f"{'- ' if md else '  '}{s['id']} {s['name']}{variant}")
            lines.append(f"    {s['symbol']} = {s['expr']}")
            lines.append(f"      = {s['substituted']}")
            lines.append(f"      = {s['value']:.10g} {s['unit']}")
    if result.assumptions:
        lines += ["", "### Assumptions" if md else "Assumptions:"] + [f"- {a}" for a in result.assumptions]
    if result.warnings:
        lines += ["", "### Warnings" if md else "Warnings:"] + [f"- {w}" for w in result.warnings]
    return "\n".join(lines)

