"""The labs' pages: an index and one page per lab (knowledge/labs/lab-NN.yaml) with its question,
success criterion, inputs, the expectation the engine computes from them, what it links, the
reading paths through its chapters and the commands. Pure functions of the site data."""

from __future__ import annotations

import json

from engine.core.humanize import friendly, number
from engine.site.context import Page, SiteData, md_escape, rel, split_place

INDEX = "labs/index.md"


def lab_page(lid: str) -> str:
    return f"labs/lab-{int(lid.split(':', 1)[1]):02d}.md"


def pages(data: SiteData) -> list[Page]:
    from engine.domain.labs import ordered

    labs = getattr(data.k, "labs", {}) or {}
    if not labs:
        return []
    return [index(data)] + [page(data, r) for r in ordered(labs)]


def index(data: SiteData) -> Page:
    from engine.domain.labs import ordered

    lines = ["# Labs", "", "The book's hands-on labs (labs/README.md). Level: L0 no GPU · L1 one GPU · L2 one multi-GPU node · "
             "L3 a cluster. Each lab's success criterion is computed from its inputs where it is a number or a yes/no; "
             "the others link the calculators and trees that size them. `aiinfra lab show N` prints the same.", "",
             "| lab | 中文标题 | title | level | chapters |", "| --- | --- | --- | --- | --- |"]
    for r in ordered(data.k.labs):
        chapters = ", ".join(data.link(INDEX, c) for c in r["chapters"])
        lines.append(f"| {r['number']} | [{md_escape(r['title_zh'])}]({rel(INDEX, lab_page(r['id']))}) | {md_escape(r['title'])} | "
                     f"{'/'.join(r['levels'])} | {chapters} |")
    return Page(INDEX, "\n".join(lines) + "\n", "Labs")


def _value(value) -> str:
    if isinstance(value, (dict, list)):
        return f"`{md_escape(json.dumps(value, ensure_ascii=False))}`"
    return md_escape("-" if value is None else value)


def page(data: SiteData, r: dict) -> Page:
    from engine.core.errors import AiinfraError
    from engine.domain.labs import expectation
    from engine.reading.labs import paths_to_lab

    here = lab_page(r["id"])
    lines = [f"# Lab {r['number']} · {md_escape(r['title'])}", "", f"**{r['title_zh']}**", "",
             f"`{r['id']}` · level {', '.join(r['levels'])}" + (f" ({md_escape(r['level_note'])})" if r.get("level_note") else ""), "",
             f"**Chapters:** {data.links(here, r['chapters'], with_title=True)}", ""]
    if r.get("sections"):
        lines += [f"**Sections:** {data.links(here, r['sections'], with_title=True)}", ""]
    lines += ["## Question", "", md_escape(r["question"].strip()), "", "## Success criterion", "", md_escape(r["criterion"].strip()), ""]
    if r.get("inputs"):
        lines += ["## Inputs", "", "| input | value | unit | description | source |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| `{i['name']}` | {_value(i['value'])} | {md_escape(i.get('unit', ''))} | {md_escape(i['description'])} | {md_escape(i['source'])} |"
                  for i in r["inputs"]]
        lines.append("")
    lines += ["## Computed expectation", ""]
    try:
        result = expectation(r, data.module)
    except AiinfraError as e:  # aiinfra check reports it; the page says so rather than failing the build
        result = None
        lines += [f"The computation does not run on these inputs: {md_escape(str(e))}", ""]
    if result is not None:
        if result.check is None and not result.outputs:
            lines += ["This lab's criterion is observed on the running system; the engine links what sizes it (below).", ""]
        if result.check is not None:
            mark = "holds" if result.check.passed else "does not hold"
            lines += [f"**{result.check.check}:** {md_escape(result.check.verdict)} (criterion {mark})", ""]
            lines += [f"- {md_escape(line)}" for line in result.check.lines] + [""]
        if result.outputs:
            lines += ["| formula | quantity | value | unit | reading |", "| --- | --- | --- | --- | --- |"]
            lines += [f"| {data.link(here, o.formula)} | {md_escape(o.name)} (`{o.symbol}`) | {number(o.value)} | {md_escape(o.unit)} | "
                      f"{md_escape(friendly(o.value, o.unit))} |" for o in result.outputs]
            lines.append("")
    links = r.get("links", {})
    rows = [(label, links.get(key, [])) for key, label in (("formulas", "Formulas"), ("calculators", "Calculators"), ("trees", "Decision trees"),
                                                            ("labs", "Related labs"))]
    if any(ids for _, ids in rows):
        lines += ["## Links", ""] + [f"- **{label}:** {data.links(here, ids, with_title=True)}" for label, ids in rows if ids] + [""]
    paths = paths_to_lab(data.k, r)
    lines += ["## Reading paths through its chapters", ""]
    lines += [f"- {data.link(here, p['id'], with_title=True)}: step {p['step']}, {data.link(here, p['to'])}" for p in paths] or ["- none"]
    lines += ["", "## Commands", "", "```bash", *r["commands"], "```", ""]
    if r.get("notes"):
        lines += ["## Notes", "", md_escape(r["notes"].strip()), ""]
    lines += [f"*Source: {md_escape(r['source'])}*", ""]
    file, line = split_place(data.k.places.get(r["id"], ""))
    return Page(here, "\n".join(lines), f"Lab {r['number']} · {r['title']}", file, line)
