"""``aiinfra formula list`` and ``aiinfra formula show ID``."""

from __future__ import annotations

from engine.cli.common import emit, root_of
from engine.cli.render import table, to_json
from engine.core.errors import InputError
from engine.core.humanize import number
from engine.core.ids import Kind, parse_user_id
from engine.kb.knowledge import Knowledge


def list_(args) -> int:
    k = Knowledge.load(root_of(args))
    rows = [
        dict(id=f.id, section=f.section, name=f.name, name_zh=f.name_zh, output=f.output.symbol, unit=f.output.unit_text,
             defined_in=f.defined_in, variants=[v.key for v in f.variants if v.key])
        for f in k.formulas
    ]
    cols = [("id", "id"), ("section", "section"), ("name", "name"), ("output", "output"), ("unit", "unit"), ("defined_in", "defined in")]
    if args.format in ("json", "csv"):
        cols += [("name_zh", "name_zh"), ("variants", "variants")]
    emit(table(rows, cols, args.format, droppable=("section", "defined_in", "unit")))  # narrow terminals lose these first
    return 0


def find(k: Knowledge, text: str):
    try:
        fid = parse_user_id(text, Kind.FORMULA).name
    except ValueError as exc:
        raise InputError("ID", str(exc)) from None
    if fid not in k.formulas:
        from engine.core.suggest import known

        raise InputError("ID", f"no formula {fid} ({known(fid, [f.id for f in k.formulas])})")
    return k.formulas.get(fid)


def describe(k: Knowledge, f) -> dict:
    from engine.core import symbolic

    numeric = {n: s for n, s in f.symbols.items() if not s.categorical}
    table_ = symbolic.make_symbols({n: s.domain for n, s in numeric.items()})
    variants = []
    for v in f.variants:
        expr = symbolic.to_sympy(v.tree, table_)
        variants.append({"when": v.key or None, "name": v.name, "expr": v.expr, "latex": symbolic.latex(expr, f.output.symbol),
                         "assumptions": list(v.assumptions), "notes": v.notes})
    section = k.sections.get(f.defined_in)
    return {
        "id": f.id,
        "name": f.name,
        "name_zh": f.name_zh,
        "section": f.section,
        "defined_in": f.defined_in,
        "defined_in_title": section.title if section else None,
        "also_in": list(f.also_in),
        "output": {"symbol": f.output.symbol, "unit": f.output.unit_text, "desc": f.output.desc, "per": f.output.per or None},
        "symbols": {
            n: {"desc": s.desc, "unit": s.unit_text or None, "domain": s.domain, "values": list(s.values) or None,
                "default": (s.default if isinstance(s.default, str) or s.default is None else s.default.value),
                "default_source": s.default_source or None}
            for n, s in f.symbols.items()
        },
        "selector": f.selector or None,
        "variants": variants,
        "assumptions": list(f.assumptions),
        "metric": f.metric or None,
        "notes": f.notes or None,
        "sources": list(f.sources),
        "examples": [{"set": e.set, "expect": e.expect, "rel_tol": e.rel_tol, "source": e.source} for e in f.examples],
        "inputs_from": {n: k.formulas.producers[n][0] for n in f.inputs if n in k.formulas.producers},
        "used_by": k.formulas.used_by(f.id),
    }


def show(args) -> int:
    from engine.cli.common import one_record

    k = Knowledge.load(root_of(args), strict=False)
    d = describe(k, one_record(lambda: find(k, args.id), k.problems))
    if args.format == "json":
        emit(to_json(d))
        return 0
    if args.format == "csv":
        rows = [dict(symbol=n, role="input", unit=s["unit"], domain=s["domain"], default=s["default"], desc=s["desc"]) for n, s in d["symbols"].items()]
        rows.insert(0, dict(symbol=d["output"]["symbol"], role="output", unit=d["output"]["unit"], domain="", default="", desc=d["output"]["desc"]))
        emit(table(rows, [(c, c) for c in ("symbol", "role", "unit", "domain", "default", "desc")], "csv"))
        return 0
    emit(_document(d, md=args.format == "md"))
    return 0


def _document(d: dict, md: bool) -> str:
    title = f"{d['id']} · {d['name']}" + (f" ({d['name_zh']})" if d["name_zh"] else "")
    where = f"Appendix {d['section']}; defined in {d['defined_in']}" + (f" ({d['defined_in_title']})" if d["defined_in_title"] else "")
    if d["also_in"]:
        where += "; also in " + ", ".join(d["also_in"])
    out = [f"# {title}" if md else title, "", where, ""]
    for v in d["variants"]:
        label = f"{d['selector']} = {v['when']}: " if v["when"] else ""
        if md:
            out += [f"{label}$$ {v['latex']} $$" if not label else f"- {label}$ {v['latex']} $"]
        else:
            out += [f"  {label}{d['output']['symbol']} = {v['expr']}", f"    LaTeX: {v['latex']}"]
        out += [f"    - {a}" for a in v["assumptions"]]
    out += ["", "Output:", f"  {d['output']['symbol']} [{d['output']['unit']}]: {d['output']['desc']}" + (f" (per {d['output']['per']})" if d["output"]["per"] else ""), "", "Inputs:"]
    rows = []
    for n, s in d["symbols"].items():
        kind = s["domain"] if not s["values"] else "one of " + "|".join(s["values"])
        default = "" if s["default"] is None else (s["default"] if isinstance(s["default"], str) else number(s["default"]))
        src = f" ({s['default_source']})" if s["default_source"] else ""
        origin = f" <- {d['inputs_from'][n]}" if n in d["inputs_from"] else ""
        rows.append(dict(symbol=n, unit=s["unit"] or "", domain=kind, default=default + src, desc=s["desc"] + origin))
    out.append(table(rows, [("symbol", "symbol"), ("unit", "unit"), ("domain", "domain"), ("default", "default"), ("desc", "meaning")], "md" if md else "text"))
    for heading, key in (("Assumptions", "assumptions"), ("Sources", "sources")):
        if d[key]:
            out += ["", f"{heading}:"] + [f"  - {a}" for a in d[key]]
    for heading, key in (("Metric", "metric"), ("Notes", "notes")):
        if d[key]:
            out += ["", f"{heading}: {d[key]}"]
    out += ["", "Worked examples:"]
    for e in d["examples"]:
        sets = ", ".join(f"{k}={v}" for k, v in e["set"].items())
        out.append(f"  - {sets} -> {number(e['expect'])} {d['output']['unit']} (±{e['rel_tol']:g} rel; {e['source']})")
    out += ["", "Used by: " + (", ".join(d["used_by"]) or "none")]
    return "\n".join(out)
