"""``aiinfra formula eval``: the numeric fast path (compiled module; no sympy, no YAML)."""

from __future__ import annotations

from engine.cli.common import emit, parse_sets, root_of
from engine.cli.render import table, to_json
from engine.core.errors import InputError
from engine.core.humanize import friendly, number, value_range
from engine.numeric import compiled
from engine.numeric.evaluate import FormulaResult, evaluate


def run(args) -> int:
    root = root_of(args)
    module = compiled.load(root, strict=False)  # a formula refused elsewhere stops only itself (#24)
    fid = formula_id(args.id, module.FORMULAS, module)
    result = evaluate(module.FORMULAS[fid], module, parse_sets(args.sets))
    emit(render(result, module.FORMULAS[fid], args.format))
    return 0


def formula_id(text: str, table_: dict, module=None) -> str:
    """``f8`` and ``F8`` name F8; a formula ``module`` was compiled without is its broken record (KnowledgeError,
    #24), anything else not in the compiled table an InputError. Another refused formula is one warning."""
    fid = text.strip().upper()
    refused = compiled.refused_problems(module) if module is not None else []
    if fid not in table_ and refused:
        error = compiled.refused_error(module, fid)
        if error is not None:
            raise error
    if refused and fid in table_:
        from engine.kb.folders import warn_ignored

        warn_ignored(refused)
    if fid not in table_:
        from engine.core.suggest import known

        ids = sorted(table_, key=lambda f: (f.startswith("FX"), int(f.lstrip("FX"))))
        raise InputError("ID", f"no formula {text!r} ({known(fid, ids)})")
    return fid


def render(result: FormulaResult, meta: dict, fmt: str) -> str:
    if fmt == "json":
        return to_json(result.to_json())
    if fmt == "csv":
        rows = [dict(kind="input", name=n, value=v.value, unit=v.unit, low=v.low, high=v.high, note=v.source) for n, v in result.inputs.items()]
        rows += [dict(kind="output", name=n, value=v.value, unit=v.unit, low=v.low, high=v.high, note=v.method) for n, v in result.outputs.items()]
        cols = [(k, k) for k in ("kind", "name", "value", "unit", "low", "high", "note")]
        return table(rows, cols, "csv")
    md = fmt == "md"
    head = f"{result.formula} · {result.name}" + (f" ({result.variant})" if result.variant else "")
    lines = [f"## {head}" if md else head, ""]
    lines.append(f"`{meta['output']['symbol']} = {result.expr}`" if md else f"  {meta['output']['symbol']} = {result.expr}")
    lines.append("")
    rows = [dict(name=n, value=value_range(v), unit=v.unit, source=v.source) for n, v in result.inputs.items()]
    lines.append(table(rows, [("name", "input"), ("value", "value"), ("unit", "unit"), ("source", "source")], "md" if md else "text"))
    lines.append("")
    for name, out in result.outputs.items():
        extra = friendly(out.value, out.unit)
        text = f"{name} = {number(out.value)} {out.unit}" + (f"  ({extra})" if extra else "")
        lines.append(f"**{text}**" if md else text)
        if out.low != out.high:
            lines.append(f"{'- ' if md else '  '}range {number(out.low)} .. {number(out.high)} {out.unit} ({out.method})")
    if result.assumptions:
        lines += ["", "Assumptions:" if not md else "### Assumptions"]
        lines += [f"- {a}" for a in result.assumptions]
    if result.warnings:
        lines += ["", "Warnings:"] + [f"- {w}" for w in result.warnings]
    return "\n".join(lines)

