"""Book and chapter pages, generated from ``knowledge/book.yaml``, ``books.yaml`` and ``chapters/``.

A chapter page lists its sections (each with an anchor other pages link to), the formulas
defined and used there, the concepts it defines, references and extends, the chapters it
builds on and those that build on it, the decision trees, calculators and reading paths that
point at it, and what a reader should be able to do afterwards.
"""

from __future__ import annotations

from collections import defaultdict

from engine.site.context import (
    Page,
    SiteData,
    book_page,
    chapter_page,
    md_escape,
    rel,
    section_anchor,
    split_place,
)

BOOKS_INDEX = "books/index.md"


def pages(data: SiteData) -> list[Page]:
    k = data.k
    out = [books_index(data)]
    for bid in sorted(k.books):
        out.append(book(data, bid))
    reverse = _dependents(data)
    formulas = _formulas_by_chapter(data)
    for cid in _ordered_chapters(data):
        out.append(chapter(data, cid, reverse, formulas))
    return out


def chapter_label(ch) -> str:
    if ch.number == "0":
        return "Front matter"
    if not str(ch.number).isdigit():
        return f"Appendix {ch.number}"
    return f"Chapter {ch.number}"


def _ordered_chapters(data: SiteData) -> list[str]:
    def key(cid):
        ch = data.k.chapters[cid]
        n = str(ch.number)
        return (ch.book, 0 if n.isdigit() else 1, int(n) if n.isdigit() else 0, n)

    return sorted(data.k.chapters, key=key)


def chapters_of(data: SiteData, bid: str) -> list[str]:
    return [c for c in _ordered_chapters(data) if data.k.chapters[c].book == bid]


def _dependents(data: SiteData) -> dict[str, set[str]]:
    """chapter -> chapters whose chapter or sections build on it (or on one of its sections)."""
    out = defaultdict(set)
    for cid, ch in data.k.chapters.items():
        deps = list(ch.depends_on) + [d for s in ch.sections for d in s.depends_on]
        for dep in deps:
            target = data.chapter_of(dep)
            if target != cid:
                out[target].add(cid)
    return out


def _formulas_by_chapter(data: SiteData):
    defined, used = defaultdict(list), defaultdict(list)
    for f in data.k.formulas:
        defined[f.defined_in].append(f.id)
        for sid in f.also_in:
            used[sid].append(f.id)
    return defined, used


def books_index(data: SiteData) -> Page:
    lines = ["# The books", "", "Chapters, sections, dependencies and concepts of both books, as recorded in `knowledge/`.", ""]
    for bid in sorted(data.k.books):
        b = data.k.books[bid]
        count = len(chapters_of(data, bid))
        lines.append(f"- [{md_escape(b.title)} · {b.title_zh}]({rel(BOOKS_INDEX, book_page(bid))}) — {count} chapter records")
    return Page(BOOKS_INDEX, "\n".join(lines) + "\n", "Books", "knowledge/books.yaml", 1)


def book(data: SiteData, bid: str) -> Page:
    b = data.k.books[bid]
    here = book_page(bid)
    lines = [f"# {md_escape(b.title)}", "", f"**{b.title_zh}**", ""]
    facts = [f"`{bid}`"] + ([f"author {b.author}"] if b.author else []) + ([f"version {b.version}"] if b.version else [])
    lines += [" · ".join(facts), ""]
    if b.notes:
        lines += [md_escape(b.notes), ""]
    chapters = chapters_of(data, bid)
    placed = set()
    for part in b.parts:
        lines += [f"## Part {part['number']} · {part['title_zh']}", "", md_escape(part.get("title", "")), ""]
        for cid in part.get("chapters", ()):
            if cid in data.k.chapters:
                lines.append(_chapter_item(data, here, cid))
                placed.add(cid)
        lines.append("")
    rest = [c for c in chapters if c not in placed]
    if rest:
        lines += ["## Chapters" if not b.parts else "## Outside the parts", ""] + [_chapter_item(data, here, c) for c in rest] + [""]
    if b.decisions:
        lines += ["## Settled conflicts between versions", ""]
        for d in b.decisions:
            topic = d.get("topic") or d.get("id", "")
            lines.append(f"- **{md_escape(topic)}** (`{d.get('id', '')}`): {md_escape(d.get('choice', ''))}")
        lines.append("")
    file, line = split_place(b.place)
    return Page(here, "\n".join(lines), b.title, file, line)


def _chapter_item(data: SiteData, here: str, cid: str) -> str:
    ch = data.k.chapters[cid]
    return f"- [{chapter_label(ch)} · {ch.title_zh}]({rel(here, chapter_page(cid))}) — {md_escape(ch.title)}"


def chapter(data: SiteData, cid: str, reverse, formulas) -> Page:
    k = data.k
    ch = k.chapters[cid]
    here = chapter_page(cid)
    defined, used = formulas
    title = f"{chapter_label(ch)} · {ch.title_zh}"
    lines = [f"# {md_escape(title)}", "", f"**{md_escape(ch.title)}**", ""]
    facts = [f"`{cid}`", f"in {data.link(here, ch.book, with_title=True)}"]
    if ch.part is not None:
        facts.append(f"part {ch.part}")
    lines += [" · ".join(facts), ""]
    if ch.track:
        lines += [f"**Thread:** {md_escape(ch.track)}", ""]
    if ch.key_question or ch.key_question_zh:
        lines += [f"**Key question:** {md_escape(ch.key_question)} {ch.key_question_zh}".rstrip(), ""]
    src = {"declaration": "the chapter file's own declaration", "outline": "the outline", "readme": "the README"}.get(ch.depends_source, "")
    lines += ["## Dependencies", "", f"- **Builds on:** {data.links(here, ch.depends_on, with_title=True)}" + (f" (from {src})" if src and ch.depends_on else ""),
              f"- **Built on by:** {data.links(here, sorted(reverse.get(cid, ())), with_title=True)}", ""]
    sec_ids = [s.id for s in ch.sections]
    f_defined = [f for s in sec_ids for f in defined.get(s, [])]
    f_used = [f for s in sec_ids for f in used.get(s, []) if f not in f_defined]
    concepts_defined = [c for s in ch.sections for c in s.defines]
    concepts_other = [c for s in ch.sections for c in (*s.references, *s.extends) if c not in concepts_defined]
    lines += ["## At a glance", "",
              f"- **Formulas defined here:** {data.links(here, f_defined, with_title=True)}",
              f"- **Formulas used here:** {data.links(here, f_used, with_title=True)}",
              f"- **Concepts defined here:** {data.links(here, concepts_defined, with_title=True)}",
              f"- **Concepts referenced or extended:** {data.links(here, list(dict.fromkeys(concepts_other)), with_title=True)}",
              f"- **Decision trees:** {data.links(here, data.chapter_trees.get(cid, []), with_title=True)}" + _no_tree(ch),
              f"- **Calculators:** {data.links(here, data.chapter_calcs.get(cid, []), with_title=True)}",
              f"- **Labs:** {data.links(here, _labs_of(data, cid), with_title=True)}",
              f"- **Reading paths through it:** {data.links(here, data.paths_through([cid, *sec_ids]), with_title=True)}", ""]
    if ch.deliverables:
        lines += ["## After this chapter you should be able to", "", "读完本章,你应当能…", ""] + [f"- {md_escape(d)}" for d in ch.deliverables] + [""]
    if ch.sections:
        lines += ["## Sections", ""]
        for s in ch.sections:
            lines += _section(data, here, s, defined.get(s.id, []), used.get(s.id, []))
    if ch.skeleton:
        lines += ["## Chapter skeleton", ""]
        for key, value in ch.skeleton.items():
            lines.append(f"- **{key.replace('_', ' ')}:** {md_escape(value)}")
        lines.append("")
    if ch.notes:
        lines += ["## Notes", "", md_escape(ch.notes), ""]
    if ch.source:
        lines += [f"*Source: {md_escape(ch.source)}*", ""]
    file, line = split_place(ch.place)
    return Page(here, "\n".join(lines), title, file, line)


def _section(data: SiteData, here: str, s, defined: list[str], used: list[str]) -> list[str]:
    number = s.id.split(":", 1)[1]
    zh = f" · {s.title_zh}" if s.title_zh else ""
    out = [f"### {number} {md_escape(s.title)}{zh} {{#{section_anchor(s.id)}}}", ""]
    facts = [("Defines", s.defines), ("References", s.references), ("Extends", s.extends), ("Builds on", s.depends_on),
             ("Formulas defined", defined), ("Formulas used", used)]
    for label, idents in facts:
        if idents:
            out.append(f"- **{label}:** {data.links(here, idents, with_title=True)}")
    if s.notes:
        out += ["", md_escape(s.notes)]
    return out + [""]


def _labs_of(data, cid: str) -> list[str]:
    """The book's labs that read chapter ``cid`` (engine.domain.labs)."""
    from engine.domain.labs import labs_of_chapter

    return labs_of_chapter(getattr(data.k, "labs", None) or {}, cid)


def _no_tree(ch) -> str:
    """The chapter's reason for having no selection tree of its own (knowledge/chapters/*.yaml ``no_tree``)."""
    return f" (no selection tree of its own: {md_escape(ch.no_tree)})" if ch.no_tree else ""
