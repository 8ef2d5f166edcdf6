"""Every generated page, the navigation and the generated script, as plain data.

``generate(root)`` is a pure function of the knowledge root (and the hand-written pages it is
told about): it returns a :class:`Site` whose pages are Markdown text. The mkdocs hooks
(``engine.site.hooks``) hand them to mkdocs; tests and other site generators can call it
directly.
"""

from __future__ import annotations

from engine.core.record import dataclass, field
from engine.site import (
    accuracy_pages,
    arch_pages,
    book_pages,
    calculator_pages,
    formula_pages,
    jsgen,
    knowledge_pages,
    lab_pages,
    source_pages,
    trees,
)
from engine.site.context import (
    APPENDIX_PAGE,
    CONCEPTS_PAGE,
    HARDWARE_PAGE,
    MODELS_PAGE,
    SYMBOLS_PAGE,
    Page,
    SiteData,
    calculator_page,
    formula_page,
    path_page,
    tree_page,
)
from engine.site.data import load as load_site_data
from engine.site.formula_pages import SECTION_TITLES

FORMULAS_JS = "assets/aiinfra/aiinfra-formulas.js"


@dataclass
class Site:
    pages: list[Page]
    nav: list = field(default_factory=list)  # mkdocs nav entries for the generated sections
    generated: dict[str, str] = field(default_factory=dict)  # site path -> text (generated scripts, the accuracy scatters)

    def page(self, path: str) -> Page:
        for p in self.pages:
            if p.path == path:
                return p
        raise KeyError(path)


def generate(root: str, hand_pages: dict[str, str] | None = None, data: SiteData | None = None) -> Site:
    """All generated pages for ``root``; ``hand_pages`` (site/ file -> text) get source views too."""
    data = data or load_site_data(root)
    pages: list[Page] = []
    pages += formula_pages.pages(data)
    pages += calculator_pages.pages(data)
    pages += trees.pages(data)
    pages += arch_pages.pages(data)
    pages += book_pages.pages(data)
    pages += knowledge_pages.pages(data)
    pages += lab_pages.pages(data)
    accuracy, figures = accuracy_pages.pages(root)
    pages += accuracy
    pages += source_pages.pages(root, {f"site/{name}": text for name, text in (hand_pages or {}).items()})
    conditions = {**calculator_pages.conditions(data), **trees.conditions(data)}
    script = formulas_script(data, conditions)
    return Site(pages, navigation(data, bool(accuracy)), {FORMULAS_JS: script, **figures})


def formulas_script(data: SiteData, conditions: dict) -> str:
    from engine.numeric.calculators import Graph

    meta = {}
    for fid, m in data.module.FORMULAS.items():
        variants = {k: {"inputs": v["inputs"], "expr": v["expr"]} for k, v in m["variants"].items()}
        meta[fid] = {"id": fid, "name": m["name"], "selector": m["selector"], "output": m["output"], "symbols": m["symbols"],
                     "variants": variants}
    graph = Graph(data.module)
    graph_js = {"producer": graph.producer, "symbols": graph.symbols, "units": graph.units}
    return jsgen.formulas_module(data.k.formulas, meta, graph_js, conditions)


def navigation(data: SiteData, accuracy: bool = False) -> list:
    k = data.k
    sections: dict[str, list] = {}
    for f in k.formulas:
        sections.setdefault(f.section, []).append({f"{f.id} · {f.name}": formula_page(f.id)})
    appendix = [{"Appendix B": APPENDIX_PAGE}, {"Symbols": SYMBOLS_PAGE}]
    for section in sorted(sections, key=formula_pages._section_key):
        appendix.append({f"{section} {SECTION_TITLES.get(section, '')}".strip(): sections[section]})
    nav: list = [{"Appendix B · formulas": appendix}]
    if data.calculators:
        nav.append({"Calculators": [{"All calculators": calculator_pages.INDEX}]
                    + [{c.title: calculator_page(cid)} for cid, c in sorted(data.calculators.items())]})
    if accuracy:
        nav.append({"Accuracy": accuracy_pages.ACCURACY_PAGE})
    if data.trees:
        nav.append({"Decision trees": [{"All trees": trees.INDEX}] + [{t.title: tree_page(tid)} for tid, t in sorted(data.trees.items())]})
    if data.archs:
        nav.append({"Reference architectures": [{"All tiers": arch_pages.INDEX}]
                    + [{f"{rid.split(':', 1)[-1]} · {r['title']}": arch_pages.arch_page(rid)} for rid, r in sorted(data.archs.items())]})
    books = [{"Both books": book_pages.BOOKS_INDEX}]
    for bid in sorted(k.books):
        b = k.books[bid]
        chapters = [{f"{book_pages.chapter_label(k.chapters[c])} · {k.chapters[c].title_zh}": _chapter_path(c)}
                    for c in book_pages.chapters_of(data, bid)]
        from engine.site.context import book_page

        books.append({f"{b.title}": [{"Contents": book_page(bid)}, *chapters]})
    nav.append({"Books": books})
    labs = getattr(k, "labs", None) or {}
    if labs:
        from engine.domain.labs import ordered

        nav.append({"Labs": [{"All labs": lab_pages.INDEX}] + [{f"Lab {r['number']} · {r['title_zh']}": lab_pages.lab_page(r["id"])} for r in ordered(labs)]})
    nav.append({"Reading paths": [{"All paths": knowledge_pages.PATHS_INDEX}]
                + [{p.title: path_page(pid)} for pid, p in sorted(k.paths.items())]})
    nav.append({"Concepts": CONCEPTS_PAGE})
    nav.append({"Hardware": HARDWARE_PAGE})
    nav.append({"Models": MODELS_PAGE})
    return nav


def _chapter_path(cid: str) -> str:
    from engine.site.context import chapter_page

    return chapter_page(cid)
