"""Reference-architecture pages: each tier run through the calculators that apply to it.

The pages appear when ``engine.domain.archs`` and ``knowledge/reference_architectures/*.yaml`` exist.
The text is the Markdown document ``aiinfra arch show ID --format md`` prints (one renderer for
the command line and the site), so the capacities on the page are the ones the engine computes
when the site is built.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from engine.site.context import Page, SiteData, arch_page, md_escape, split_place

INDEX = "architectures/index.md"


def available(root: str) -> bool:
    folder = Path(root, "knowledge", "reference_architectures")
    return importlib.util.find_spec("engine.domain.archs") is not None and folder.is_dir() and any(folder.glob("*.yaml"))


def load(data: SiteData) -> dict:
    if not available(data.root):
        return {}
    from engine.domain import archs

    return archs.load_records(data.root)


def reports(data: SiteData) -> dict:
    """arch id -> ``engine.domain.archs.Report`` (every calculator run of the tier), evaluated once per build."""
    if not data.archs:
        return {}
    from engine.domain import archs

    return {rid: archs.evaluate(data.root, rid) for rid in sorted(data.archs)}


def calculator_runs(data: SiteData, cid: str) -> list[tuple[str, object]]:
    """(arch id, run) for every successful run of calculator ``cid`` in a reference architecture."""
    out = []
    for rid, report in data.arch_reports.items():
        for run in report.runs:
            if run.calculator in (cid, cid.split(":", 1)[1]) and run.status == "ok":
                out.append((rid, run))
    return out


def pages(data: SiteData) -> list[Page]:
    records = data.archs
    if not records:
        return []
    from engine.domain import archs
    from engine.site.arch_text import document

    out = []
    lines = ["# Reference architectures", "", "The book's tiers, each declared in `knowledge/reference_architectures/` and run through the "
             "calculators that apply to it (training only where the tier trains, serving only where it serves) when this site is built.", "",
             "| tier | title | 中文 |", "|---|---|---|"]
    for rid, rec in sorted(records.items()):
        lines.append(f"| [{archs.short(rid)}]({Path(arch_page(rid)).name}) | {md_escape(rec['title'])} | {rec['title_zh']} |")
    out.append(Page(INDEX, "\n".join(lines) + "\n", "Reference architectures", "knowledge/reference_architectures", 0))
    for rid in sorted(records):
        text = document(data.arch_reports[rid], md=True)
        place = data.k.places.get(rid, "") or f"knowledge/reference_architectures/{archs.short(rid)}.yaml:1"
        file, line = split_place(place)
        out.append(Page(arch_page(rid), text + f"\n\n*Defined in `{file}` line {line}.*\n", records[rid]["title"], file, line))
    return out
