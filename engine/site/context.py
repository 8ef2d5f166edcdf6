"""What every page generator reads: the loaded knowledge, page locations, links and backlinks.

``engine.site.data.load(root)`` loads the knowledge root once (strictly: a site is never built from
a root with problems), the compiled formula module and, when their engines exist, the
calculators and decision trees. Page paths live here and only here, so every generator
links to every other page the same way.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict

from engine.core.ids import Kind, parse_id
from engine.core.record import dataclass, field


@dataclass
class Page:
    """One generated Markdown page: its path under the docs folder and where it is defined."""

    path: str
    text: str
    title: str
    source: str = ""  # the YAML file that defines the thing ("formulas/kv_cache.yaml")
    line: int = 0
    search: bool = True


def split_place(place: str) -> tuple[str, int]:
    """``"formulas/kv_cache.yaml:5"`` -> ``("formulas/kv_cache.yaml", 5)``."""
    if not place:
        return "", 0
    file, _, line = place.partition(":")
    return file, int(line.split(":")[0]) if line.split(":")[0].isdigit() else 0


# ---------------------------------------------------------------------- page locations


def formula_page(fid: str) -> str:
    return f"formulas/{fid}.md"


def chapter_page(cid: str) -> str:
    ident = parse_id(cid, Kind.CHAPTER)
    return f"books/{ident.book}/ch{ident.name}.md"


def book_page(book: str) -> str:
    return f"books/{book.split(':', 1)[-1]}/index.md"


def section_anchor(sid: str) -> str:
    return "s" + parse_id(sid, Kind.SECTION).name.replace(".", "-")


def calculator_page(cid: str) -> str:
    return f"calculators/{cid.split(':', 1)[1]}.md"


def path_page(pid: str) -> str:
    return f"paths/{pid.split(':', 1)[1]}.md"


def tree_page(tid: str) -> str:
    return f"trees/{tid.split(':', 1)[1]}.md"


def anchor_name(ident: str) -> str:
    """An HTML id for a record shown inside a list page (``concept:roofline`` -> ``roofline``)."""
    return ident.split(":", 1)[-1].replace(".", "-").replace("+", "-")


CONCEPTS_PAGE = "concepts/index.md"
HARDWARE_PAGE = "hardware/index.md"
MODELS_PAGE = "models/index.md"
APPENDIX_PAGE = "formulas/index.md"
SYMBOLS_PAGE = "formulas/symbols.md"


def source_page(file: str) -> str:
    """The page that shows a YAML file of the root (the 'edit this page' target offline)."""
    return f"source/{file}.md"


def rel(from_page: str, to_page: str, anchor: str = "") -> str:
    """A relative Markdown link target from one page to another (mkdocs checks both ends)."""
    target = to_page if posixpath.dirname(from_page) == "" else posixpath.relpath(to_page, posixpath.dirname(from_page))
    if to_page == from_page:
        target = posixpath.basename(to_page)
    return target + (f"#{anchor}" if anchor else "")


def md_escape(text: str) -> str:
    """Text safe inside a Markdown table cell or link text."""
    out = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("[", "\\[").replace("]", "\\]")
    return out.replace("<", "&lt;").replace("*", "\\*").replace("`", "\\`")


# ---------------------------------------------------------------------- the data


@dataclass
class SiteData:
    k: object  # engine.kb.knowledge.Knowledge
    module: object  # the compiled formula module
    root: str
    calculators: dict = field(default_factory=dict)  # calc id -> Calculator
    trees: dict = field(default_factory=dict)  # tree id -> engine.trees.walk.Tree (empty before the tree engine exists)
    reach: dict = field(default_factory=dict)  # calc id -> formula ids it can reach
    formula_calcs: dict = field(default_factory=dict)  # formula id -> [calc ids]
    formula_trees: dict = field(default_factory=dict)  # formula id -> [tree ids]
    chapter_trees: dict = field(default_factory=dict)  # chapter id -> [tree ids]
    chapter_calcs: dict = field(default_factory=dict)  # chapter id -> [calc ids]
    archs: dict = field(default_factory=dict)  # arch id -> record (empty before engine.domain.archs and its records exist)
    arch_reports: dict = field(default_factory=dict)  # arch id -> engine.domain.archs.Report

    @classmethod
    def load_base(cls, root: str) -> SiteData:
        """The knowledge, the compiled module and the calculators; ``engine.site.data.load`` adds trees and architectures."""
        from engine.kb.knowledge import Knowledge
        from engine.numeric import compiled

        k = Knowledge.load(root)
        data = cls(k, compiled.load(root), str(root))
        data._calculators()
        return data

    def _calculators(self) -> None:
        from engine.numeric.calculators import Calculator, Graph

        graph = Graph(self.module)
        byf, byc = defaultdict(list), defaultdict(list)
        for cid, rec in sorted(self.k.calculators.items()):
            calc = Calculator.from_record(rec)
            self.calculators[cid] = calc
            fids, _ = graph.reach(calc)
            self.reach[cid] = sorted(fids, key=_fid_key)
            for fid in fids:
                byf[fid].append(cid)
            chapters = set(calc.chapters) | {self.chapter_of(s) for s in calc.sections}
            for ch in chapters:
                byc[ch].append(cid)
        self.formula_calcs, self.chapter_calcs = dict(byf), dict(byc)

    def _tree_links(self) -> None:
        byf, byc = defaultdict(list), defaultdict(list)
        for tid, tree in sorted(self.trees.items()):
            for fid in formulas_of(tree):
                byf[fid].append(tid)
            chapters = set(tree.chapters) | {self.chapter_of(s) for s in tree.sections}
            for ch in sorted(chapters):
                byc[ch].append(tid)
        self.formula_trees, self.chapter_trees = dict(byf), dict(byc)

    # ------------------------------------------------------------------ lookups
    def chapter_of(self, ident: str) -> str:
        try:
            chapter = parse_id(ident).chapter
        except ValueError:
            return ident
        return str(chapter) if chapter is not None else ident

    def formula_chapters(self, f) -> list[str]:
        seen = []
        for sid in (f.defined_in, *f.also_in):
            ch = self.chapter_of(sid)
            if ch not in seen:
                seen.append(ch)
        return seen

    def paths_through(self, idents) -> list[str]:
        """Reading paths with a step on any of ``idents`` (chapters or sections) or their chapters."""
        wanted = set(idents) | {self.chapter_of(i) for i in idents}
        out = []
        for pid, p in self.k.paths.items():
            steps = {s.to for s in p.steps if s.to} | {self.chapter_of(s.to) for s in p.steps if s.to}
            if steps & wanted:
                out.append(pid)
        return sorted(out)

    # ------------------------------------------------------------------ links
    def href(self, from_page: str, ident: str) -> str | None:
        """The relative link target of any id the site has a page or an anchor for; else None."""
        k = self.k
        if ident in k.formulas:
            return rel(from_page, formula_page(ident))
        if ident in k.chapters:
            return rel(from_page, chapter_page(ident))
        if ident in k.sections:
            return rel(from_page, chapter_page(self.chapter_of(ident)), section_anchor(ident))
        if ident in k.concepts:
            return rel(from_page, CONCEPTS_PAGE, anchor_name(ident))
        if ident in k.paths:
            return rel(from_page, path_page(ident))
        if ident in self.calculators:
            return rel(from_page, calculator_page(ident))
        if ident in self.trees:
            return rel(from_page, tree_page(ident))
        if ident in k.hardware:
            return rel(from_page, HARDWARE_PAGE, anchor_name(ident))
        if ident in k.models:
            return rel(from_page, MODELS_PAGE, anchor_name(ident))
        if ident in k.books:
            return rel(from_page, book_page(ident))
        if ident in self.archs:
            return rel(from_page, arch_page(ident))
        if ident in (getattr(k, "labs", None) or {}):
            return rel(from_page, f"labs/lab-{int(ident.split(':', 1)[1]):02d}.md")
        return None

    def title(self, ident: str) -> str:
        k = self.k
        if ident in self.calculators:
            return self.calculators[ident].title
        if ident in self.trees:
            return self.trees[ident].title
        if ident in self.archs:
            return self.archs[ident]["title"]
        if ident in (getattr(k, "labs", None) or {}):
            return k.labs[ident]["title"]
        for table in (k.hardware, k.models):
            if ident in table:
                return table[ident].get("name", ident)
        return k.title(ident)

    def link(self, from_page: str, ident: str, text: str | None = None, with_title: bool = False) -> str:
        """``[text](target)`` for a known id, else the id in code."""
        target = self.href(from_page, ident)
        label = text if text is not None else ident
        if with_title:
            title = self.title(ident)
            if title and title != ident:
                label = f"{label} · {title}"
        if target is None:
            return f"`{ident}`"
        return f"[{md_escape(label)}]({target})"

    def links(self, from_page: str, idents, with_title: bool = False, sep: str = ", ") -> str:
        items = [self.link(from_page, i, with_title=with_title) for i in idents]
        return sep.join(items) if items else "none"


def _fid_key(fid: str) -> tuple[int, int]:
    return (1, int(fid[2:])) if fid.startswith("FX") else (0, int(fid[1:]))


fid_key = _fid_key


def arch_page(rid: str) -> str:
    return f"architectures/{rid.split(':', 1)[-1]}.md"


def formulas_of(tree) -> list[str]:
    out = [f for leaf in tree.leaves.values() for f in leaf.formulas]
    out += [i.produced_by for i in tree.inputs.values() if i.produced_by and not i.produced_by.startswith("calc:")]
    return list(dict.fromkeys(out))
