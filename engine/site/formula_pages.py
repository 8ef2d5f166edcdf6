"""Formula pages and the Appendix B index, generated from ``formulas/*.yaml``.

Every formula page shows the LaTeX of each variant (``sympy.latex`` through
``engine.core.symbolic``), the symbols with units, domains and defaults, the assumptions and
metric definition, the worked examples evaluated now by the numeric engine next to the value
their source states, an interactive form, and every place that uses the formula.
"""

from __future__ import annotations

from collections import defaultdict

from engine.core import symbolic
from engine.core.humanize import friendly, number
from engine.site import forms
from engine.site.context import (
    APPENDIX_PAGE,
    SYMBOLS_PAGE,
    Page,
    SiteData,
    formula_page,
    md_escape,
    rel,
    split_place,
)

SECTION_TITLES = {
    "B.2.1": "Training compute and duration",
    "B.2.2": "Memory",
    "B.2.3": "KV cache",
    "B.2.4": "Throughput, MFU and serving",
    "B.2.5": "Communication",
    "B.2.6": "Offload",
    "B.2.7": "Checkpoints and reliability",
    "B.2.8": "Capacity, power and cost (this project's extension)",
}


def pages(data: SiteData) -> list[Page]:
    out = [appendix_index(data), symbol_index(data)]
    out += [formula(data, f) for f in data.k.formulas]
    return out


# ---------------------------------------------------------------------- one formula


def formula(data: SiteData, f) -> Page:
    here = formula_page(f.id)
    title = f"{f.id} · {f.name}"
    lines = [f"# {md_escape(title)}", ""]
    if f.name_zh:
        lines += [f"**{f.name_zh}**", ""]
    where = [f"Appendix {f.section}", f"defined in {data.link(here, f.defined_in, with_title=True)}"]
    if f.also_in:
        where.append("also in " + data.links(here, f.also_in))
    lines += [" · ".join(where), ""]
    lines += _expressions(f)
    lines += _output(f)
    lines += _symbols(data, here, f)
    if f.assumptions:
        lines += ["## Assumptions", ""] + [f"- {md_escape(a)}" for a in f.assumptions] + [""]
    if f.metric:
        lines += ["## Metric definition", "", md_escape(f.metric), ""]
    if f.notes:
        lines += ["## Notes", "", md_escape(f.notes), ""]
    lines += _examples(data, f)
    lines += ["## Try it", "", "The form runs the same expression in your browser (generated from SymPy; no network). "
              "It starts from the first worked example.", "", forms.html_block(form_spec(data, f)), ""]
    lines += _used(data, here, f)
    if f.sources:
        lines += ["## Sources", ""] + [f"- {md_escape(s)}" for s in f.sources] + [""]
    file, line = split_place(f.place)
    lines += [f"*Defined in `{file}` line {line}.*", ""]
    return Page(here, "\n".join(lines), title, file, line)


def _expressions(f) -> list[str]:
    numeric = {n: s for n, s in f.symbols.items() if not s.categorical}
    table = symbolic.make_symbols({n: s.domain for n, s in numeric.items()})
    out = ["## Expression", ""]
    for v in f.variants:
        tex = symbolic.latex(symbolic.to_sympy(v.tree, table), f.output.symbol)
        if v.key:
            label = f"**{f.selector} = {v.key}**" + (f" ({md_escape(v.name)})" if v.name else "")
            out += [label, ""]
        out += ["$$", tex, "$$", "", f"Plain: `{f.output.symbol} = {v.expr}`", ""]
        out += [f"- {md_escape(a)}" for a in v.assumptions]
        if v.assumptions:
            out.append("")
        if v.notes:
            out += [md_escape(v.notes), ""]
    return out


def _output(f) -> list[str]:
    per = f" (per {f.output.per.rstrip('s')})" if f.output.per and f"/{f.output.per}" not in f.output.unit_text else ""
    return ["## Output", "", f"`{f.output.symbol}` [{f.output.unit_text}]{per}: {md_escape(f.output.desc)}", ""]


def _symbols(data: SiteData, here: str, f) -> list[str]:
    producers = data.k.formulas.producers
    out = ["## Symbols", "", "| symbol | meaning | unit | domain | default | from |", "|---|---|---|---|---|---|"]
    for name in f.inputs:
        s = f.symbols[name]
        domain = "one of " + ", ".join(f"`{v}`" for v in s.values) if s.categorical else s.domain
        if s.default is None:
            default = ""
        else:
            value = s.default if isinstance(s.default, str) else number(s.default.value)
            default = f"{value} ({md_escape(s.default_source)})" if s.default_source else value
        origin = ", ".join(data.link(here, p) for p in producers.get(name, [])) or "input"
        unit = "" if s.categorical else f"`{s.unit_text}`"
        out.append(f"| `{name}` | {md_escape(s.desc)} | {unit} | {domain} | {default} | {origin} |")
    return out + [""]


def example_results(data: SiteData, f) -> list[tuple]:
    """(example, computed value or None, error text) for each worked example, evaluated now."""
    from engine.core.errors import AiinfraError
    from engine.numeric.evaluate import evaluate

    meta = data.module.FORMULAS[f.id]
    out = []
    for e in f.examples:
        try:
            result = evaluate(meta, data.module, dict(e.set))
            out.append((e, result.outputs[f.output.symbol].value, ""))
        except AiinfraError as exc:
            out.append((e, None, str(exc)))
    return out


def _examples(data: SiteData, f) -> list[str]:
    unit = f.output.unit_text
    out = ["## Worked examples", "", "Each row is evaluated by the engine when the site is built and compared with the value its source gives.", "",
           "| inputs | computed | source says | agrees | source |", "|---|---|---|---|---|"]
    for e, value, error in example_results(data, f):
        sets = ", ".join(f"`{k}={v}`" for k, v in e.set.items())
        if value is None:
            computed, agrees = f"error: {md_escape(error)}", "✗"
        else:
            nice = friendly(value, unit)
            computed = f"{number(value)} {unit}" + (f" ({nice})" if nice else "")
            ok = abs(value - e.expect) <= e.rel_tol * max(abs(e.expect), 1e-300)
            agrees = f"✓ (±{e.rel_tol:g})" if ok else f"✗ (±{e.rel_tol:g})"
        note = f" {md_escape(e.note)}" if e.note else ""
        out.append(f"| {sets} | {computed} | {number(e.expect)} | {agrees} | {md_escape(e.source)}{note} |")
    return out + [""]


def form_spec(data: SiteData, f) -> dict:
    meta = data.module.FORMULAS[f.id]
    first = f.examples[0].set if f.examples else {}
    fields = []
    for name, spec in meta["symbols"].items():
        initial = _initial(name, first.get(name), spec)
        fields.append(forms.field(name, spec, initial))
    return {"kind": "formula", "id": f.id, "fields": fields}


def _initial(name: str, raw, spec: dict):
    """A worked example's value in the symbol's declared unit (``80GiB`` -> bytes)."""
    if raw is None:
        return None
    if spec.get("values"):
        return str(raw)
    from engine.numeric.evaluate import read_input

    return read_input(name, raw, spec).value


def _used(data: SiteData, here: str, f) -> list[str]:
    k = data.k
    rows = [
        ("Calculators", data.formula_calcs.get(f.id, [])),
        ("Decision trees", data.formula_trees.get(f.id, [])),
        ("Chapters", data.formula_chapters(f)),
        ("Reading paths", data.paths_through([f.defined_in, *f.also_in])),
        ("Formulas that use its output", k.formulas.used_by(f.id)),
        ("Formulas whose outputs it uses", sorted({p for n in f.inputs for p in k.formulas.producers.get(n, [])}, key=_fid_key)),
    ]
    out = ["## Where it is used", ""]
    for label, idents in rows:
        out.append(f"- **{label}:** {data.links(here, idents, with_title=label != 'Reading paths')}")
    return out + [""]


def _fid_key(fid: str):
    from engine.site.context import fid_key

    return fid_key(fid)


# ---------------------------------------------------------------------- Appendix B


def appendix_index(data: SiteData) -> Page:
    here = APPENDIX_PAGE
    by_section = defaultdict(list)
    for f in data.k.formulas:
        by_section[f.section].append(f)
    lines = ["# Appendix B · every formula by number", "", "**附录 B 估算公式速查与符号表**", "",
             "F1–F22 are the book's own Appendix B numbers; FX*n* are this project's extensions, filed under the "
             "B.2.x section where they belong. Each formula is stored once, in `formulas/*.yaml`; the calculators, "
             "decision trees, CLI and these pages are generated from it.", "",
             f"See also the [symbol table]({rel(here, SYMBOLS_PAGE)}) (one meaning, one unit, one producer per symbol).", ""]
    for section in sorted(by_section, key=_section_key):
        lines += [f"## {section} · {SECTION_TITLES.get(section, '')}".rstrip(" ·"), "",
                  "| id | name | output | unit | defined in |", "|---|---|---|---|---|"]
        for f in by_section[section]:
            name = md_escape(f.name) + (f" · {f.name_zh}" if f.name_zh else "")
            lines.append(f"| {data.link(here, f.id)} | {name} | `{f.output.symbol}` | `{f.output.unit_text}` | {data.link(here, f.defined_in)} |")
        lines.append("")
    return Page(here, "\n".join(lines), "Appendix B", "formulas/README.md", 1)


def _section_key(section: str):
    return tuple(int(p) if p.isdigit() else 0 for p in section.split(".")[1:])


def symbol_index(data: SiteData) -> Page:
    here = SYMBOLS_PAGE
    k = data.k
    seen: dict[str, dict] = {}
    for f in k.formulas:
        seen.setdefault(f.output.symbol, {"unit": f.output.unit_text, "desc": f.output.desc})
        for name in f.inputs:
            s = f.symbols[name]
            seen.setdefault(name, {"unit": "" if s.categorical else s.unit_text, "desc": s.desc})
    lines = ["# Symbols", "", "Every symbol of every formula, with its one unit, the formula that produces it (none for an external input) "
             "and the formulas that use it.", "", "| symbol | unit | meaning | produced by | used by |", "|---|---|---|---|---|"]
    for name in sorted(seen, key=str.lower):
        info = seen[name]
        producer = data.links(here, k.formulas.producers.get(name, [])) if name in k.formulas.producers else "input"
        users = data.links(here, sorted(set(k.formulas.consumers.get(name, [])), key=_fid_key))
        unit = f"`{info['unit']}`" if info["unit"] else ""
        lines.append(f"| `{name}` | {unit} | {md_escape(info['desc'])} | {producer} | {users} |")
    return Page(here, "\n".join(lines) + "\n", "Symbols", "formulas/README.md", 1)
