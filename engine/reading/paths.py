"""Reading paths as a reader uses them: ids as people type them, steps with titles, goal words
matched to paths and action words, prerequisites from the dependency declarations, and the
declared edge behind every step that returns to a prerequisite.

Whether a path breaks a declaration is decided by ``engine.check.integrity`` (rule 4), not here;
this module only explains its verdict.
"""

from __future__ import annotations

import re
from collections import deque
from types import SimpleNamespace

from engine.core.errors import InputError
from engine.core.ids import DEFAULT_BOOK
from engine.core.record import dataclass, replace

KINDS = ("goal", "problem", "role")  # path kinds, in the order ``path for`` ranks them
GROUPS = {"goal": 0, "problem": 1, "role": 2, "action": 3}  # goals first, then action words
QUALITIES = ("exact", "substring", "in order", "shared words")  # the last only when none of the others matches

_CHAPTER_NAME = re.compile(r"(?:ch|§)?(\d+|[A-Za-z])", re.IGNORECASE)
_SECTION_NAME = re.compile(r"§?((?:\d+|[A-Z])(?:\.\d+)+)")
_STEP_OF = re.compile(r"\(step (\d+)\)")
_INDEX = re.compile(r"steps\[(\d+)\]")


# ----------------------------------------------------------------------------- ids people type
def resolve_path(k, text: str):
    """``path:inference-service`` or ``inference-service`` -> the ReadingPath; else InputError with close ids."""
    name = text.strip().lower()
    name = name.split(":", 1)[1] if name.startswith("path:") else name
    if f"path:{name}" in k.paths:
        return k.paths[f"path:{name}"]
    import difflib  # imported only when a name is not found
    close = difflib.get_close_matches(name, [p.split(":", 1)[1] for p in k.paths], n=3, cutoff=0.5)
    raise InputError("ID", f"{text!r} is not a reading path{_hint(close, 'aiinfra path list')}")


def resolve_node(k, text: str, book: str = DEFAULT_BOOK, field: str = "CHAPTER") -> str:
    """``24``, ``ch24``, ``infra:ch24``, ``quant:ch8``, ``quant:8``, ``22.4``, ``E`` -> a chapter or section id."""
    raw = text.strip()
    prefix, sep, name = raw.rpartition(":")
    book = prefix.removeprefix("book:") if sep else book
    books = sorted(b.split(":", 1)[1] for b in k.books)
    if book not in books:
        raise InputError(field, f"{raw!r} names no known book (books: {', '.join(books)})")
    if m := _CHAPTER_NAME.fullmatch(name.strip()):
        part = m.group(1)
        ident = f"{book}:ch{_number(part) if part.isdigit() else part.upper()}"
    elif m := _SECTION_NAME.fullmatch(name.strip()):
        ident = f"{book}:{m.group(1)}"
    else:
        raise InputError(field, f"{raw!r} is not a chapter or section (expected e.g. 24, ch24, infra:ch24, quant:ch8 or 22.4)")
    if ident in k.chapters or ident in k.sections:
        return ident
    raise InputError(field, f"{ident} is not in book:{book}{_node_hint(k, ident, book)}")


def _node_hint(k, ident: str, book: str) -> str:
    chapter = _chapter_id(ident)
    if chapter != ident and chapter in k.chapters:
        every = sorted((s.id for s in k.chapters[chapter].sections), key=chapter_key)
        sections = [s for s in every if s.count(".") == ident.count(".")] or every
        shown = [s.split(":", 1)[1] for s in sections[:10]]
        return f" ({chapter} has sections {', '.join(shown)}{', ...' if len(shown) < len(sections) else ''})" if shown else f" ({chapter} lists no sections)"
    names = [c for c in sorted(k.chapters, key=chapter_key) if c.startswith(f"{book}:")]
    numbered = [c for c in names if c.split(":ch", 1)[1].isdigit()]
    letters = [c for c in names if not c.split(":ch", 1)[1].isdigit()]
    span = ", ".join(f"{group[0].split(':', 1)[1]}-{group[-1].split(':', 1)[1]}" for group in (numbered, letters) if group)
    return f" (book:{book} has {span})"


def _hint(close: list[str], fallback: str) -> str:
    return f" (close: {', '.join(close)}; see {fallback})" if close else f" (see {fallback})"


def _chapter_id(ident: str) -> str:
    book, _, name = ident.partition(":")
    return ident if name.startswith("ch") else f"{book}:ch{_number(name.split('.')[0])}"


def _number(text: str) -> str:
    """``024`` -> ``24``; a digit string too long to be a chapter stays as written (never past int()'s 4,300 digits)."""
    return str(_whole(text)) if text.isdigit() and len(text) <= _LONGEST else text


_LONGEST = 18  # digits; longer numbers are no chapter or section of any book


def _whole(text: str) -> int:
    return int(text) if len(text) <= _LONGEST else 10**_LONGEST


def chapter_key(ident: str) -> tuple:
    """Book, then numbered chapters before appendices, then the number: a stable reading order."""
    book, _, name = ident.partition(":")
    name = name.removeprefix("ch")
    head, *rest = name.split(".")
    return (book, 0 if head.isdigit() else 1, _whole(head) if head.isdigit() else 0, head, *(_whole(x) for x in rest if x.isdigit()))


# ----------------------------------------------------------------------------- titles and steps
def titles(k, ident: str) -> tuple[str, str]:
    rec = k.chapters.get(ident) or k.sections.get(ident)
    return (rec.title, rec.title_zh) if rec is not None else ("", "")


def step_rows(k, path) -> list[dict]:
    """One row per step, in the book's order: id, chapter, titles, how it is taken and its note."""
    rows = []
    for n, step in enumerate(path.steps, 1):
        if step.placeholder:
            rows.append(dict(n=n, id="", chapter="", title="", title_zh=step.placeholder, how="placeholder", condition="", note=step.note))
            continue
        title, title_zh = titles(k, step.to)
        how = "conditional" if step.condition else "revisit" if step.revisit else ""
        rows.append(dict(n=n, id=step.to, chapter=_chapter_id(step.to), title=title, title_zh=title_zh, how=how,
                         condition=step.condition, note=step.note))
    return rows


def describe_path(k, path) -> dict:
    """A path for output. Its record's ``source`` (the files and commits it was read from, the seed snapshots it was
    checked against) is ``provenance``: for --format json, never printed in text."""
    return dict(id=path.id, kind=path.kind, book=path.book, title=path.title, title_zh=path.title_zh,
                audience=path.audience, provenance=path.source, steps=step_rows(k, path))


def describe_action(k, action) -> dict:
    """An action word for output; its record's ``source`` is ``provenance``, as describe_path's."""
    targets = [dict(id=t, title=titles(k, t)[0], title_zh=titles(k, t)[1]) for t in action.targets]
    return dict(id=action.id, kind="action", word=action.word, word_zh=action.word_zh, note=action.note, provenance=action.source, targets=targets)


# ----------------------------------------------------------------------------- goal words
@dataclass(frozen=True)
class Match:
    kind: str  # goal | problem | role | action
    id: str
    field: str  # title | title_zh | word | word_zh
    quality: str  # exact | substring | in order | shared words
    words: tuple[str, ...] = ()  # shared words: the goal's words the title holds, as typed


def match(k, words: str) -> list[Match]:
    """Paths and action words whose English or Chinese title matches ``words``.

    Goal paths first, then problem and role paths, then action words; within a kind an exact
    match before a substring match before the words or characters found in order. When none
    matches so and the goal is English, the titles that share at least half of its content
    words (engine.reading.words), more shared words first within a kind.
    """
    if len(_normal(words)) < 2:
        raise InputError("GOAL", f"{words!r} is too short to match (give at least two letters or characters)")
    candidates = [(p.kind, p.id, (("title_zh", p.title_zh), ("title", p.title))) for p in k.paths.values()]
    candidates += [("action", a.id, (("word_zh", a.word_zh), ("word", a.word))) for a in k.actions.values()]
    found = []
    for order, (kind, ident, fields) in enumerate(candidates):
        graded = [(QUALITIES.index(q), name) for name, text in fields if (q := _quality(words, text))]
        if graded:
            best, name = min(graded)
            found.append((GROUPS.get(kind, len(GROUPS)), best, order, Match(kind, ident, name, QUALITIES[best])))
    if not found and words.isascii():
        found = _by_shared_words(k, words, candidates)
    return [m for *_, m in sorted(found, key=lambda t: t[:3])]


def _by_shared_words(k, words: str, candidates) -> list[tuple]:
    from engine.reading.words import Vocabulary

    vocab = Vocabulary.of(k.goal_words.values())
    need = (len(vocab.content(words)) + 1) // 2
    found = []
    for order, (kind, ident, fields) in enumerate(candidates):
        name, text = fields[1]  # the English title or word
        shared = vocab.shared(words, text)
        if need and len(shared) >= need:
            found.append((GROUPS.get(kind, len(GROUPS)), -len(shared), order, Match(kind, ident, name, QUALITIES[-1], tuple(shared))))
    return found


def chapters_about(k, words: str) -> list[dict]:
    """Chapters and sections whose English title holds every content word of an English goal, in
    book order, each with the paths that read it (a step to it, to its chapter or, for a chapter,
    to one of its sections); [] for a goal with Chinese in it."""
    if not words.isascii():
        return []
    from engine.reading.words import Vocabulary

    vocab = Vocabulary.of(k.goal_words.values())
    wanted = vocab.content(words)
    if not wanted:
        return []
    rows = []
    for ident in sorted((*k.chapters, *k.sections), key=chapter_key):
        rec = k.chapters.get(ident) or k.sections[ident]
        if set(wanted) <= set(vocab.content(rec.title)):
            kind = "chapter" if ident in k.chapters else "section"
            rows.append(dict(id=ident, kind=kind, title=rec.title, title_zh=rec.title_zh, paths=_paths_reading(k, ident, kind)))
    return rows


def _paths_reading(k, ident: str, kind: str) -> list[str]:
    def reads(step) -> bool:
        return bool(step.to) and (step.to == ident or (_chapter_id(step.to) == ident if kind == "chapter" else step.to == _chapter_id(ident)))

    return [p.id for p in _ranked_paths(k) if any(reads(s) for s in p.steps)]


def reading_paths(k, rows: list[dict]) -> list[str]:
    """The paths that read any of ``rows`` (from :func:`chapters_about`), goal paths first."""
    named = {p for r in rows for p in r["paths"]}
    return [p.id for p in _ranked_paths(k) if p.id in named]


def _ranked_paths(k) -> list:
    return sorted(k.paths.values(), key=lambda p: KINDS.index(p.kind) if p.kind in KINDS else len(KINDS))


def close_titles(k, words: str) -> list[str]:
    every = [t for p in k.paths.values() for t in (p.title_zh, p.title)] + [t for a in k.actions.values() for t in (a.word_zh, a.word)]
    import difflib  # imported only when a name is not found
    return difflib.get_close_matches(words.strip(), every, n=3, cutoff=0.4)


def _normal(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def _quality(words: str, text: str) -> str | None:
    q, t = _normal(words), _normal(text)
    if not t:
        return None
    if q == t:
        return "exact"
    if q in t or (len(t) >= 2 and t in q):
        return "substring"
    return "in order" if _in_order(words, text) else None


def _in_order(words: str, text: str) -> bool:
    """Chinese: every character of the query in order, within twice its length (规划新集群 in 规划一个新集群).
    Latin: two or more query words, each the start of a later title word (plan cluster in Plan a new cluster)."""
    if words.isascii():
        qw, tw = re.findall(r"[a-z0-9]+", words.casefold()), iter(re.findall(r"[a-z0-9]+", text.casefold()))
        return len(qw) >= 2 and all(any(w.startswith(q) for w in tw) for q in qw)
    q, t = _normal(words), _normal(text)
    return any(_span(q, t, start) <= 2 * len(q) for start in range(len(t)) if t[start] == q[0])


def _span(q: str, t: str, start: int) -> int:
    pos = start
    for ch in q[1:]:
        pos = t.find(ch, pos + 1)
        if pos < 0:
            return len(t) + len(q) * 2 + 1  # longer than any accepted span
    return pos - start + 1


# ----------------------------------------------------------------------------- prerequisites
def declared(graph, ident: str) -> list[tuple[str, str]]:
    """(declarer, target) for every depends_on edge that applies to ``ident``: its own, its
    chapter's (a section inherits them) and its sections' (a chapter includes them)."""
    g = graph.g
    if ident not in g:
        return []
    sources = {ident}
    kind = g.nodes[ident].get("kind")
    if kind == "chapter":
        sources |= {u for u, _, rel in g.in_edges(ident, data="rel") if rel == "part_of"}
    elif kind == "section":
        sources.add(graph.chapter_of(ident))
    return sorted((src, v) for src in sources if src in g for _, v, rel in g.out_edges(src, data="rel") if rel == "depends_on")


def prerequisites(k, graph, ident: str) -> list[dict]:
    """Every chapter ``ident`` builds on, prerequisites first (ties in book order), with what is reached in it."""
    reach = graph.reachable(ident)
    direct = {graph.chapter_of(target) for _, target in declared(graph, ident)}
    rows = []
    for chapter in graph.reading_order(sorted(graph.prerequisites(ident), key=chapter_key)):
        sections = sorted((n for n in reach if n != chapter and graph.chapter_of(n) == chapter), key=chapter_key)
        title, title_zh = titles(k, chapter)
        rows.append(dict(chapter=chapter, title=title, title_zh=title_zh, whole=chapter in reach, sections=sections,
                         declared="direct" if chapter in direct else "transitive"))
    return rows


# ----------------------------------------------------------------------------- backward steps
@dataclass(frozen=True)
class Hop:
    source: str
    target: str
    declared_by: str
    place: str

    def __str__(self) -> str:
        return f"{self.declared_by} depends_on {self.target}" + (f" ({self.place})" if self.place else "")


@dataclass(frozen=True)
class Backward:
    """Step ``later`` (1-based) comes after step ``earlier``, which builds on it."""

    path: str
    earlier: int
    later: int
    earlier_id: str
    later_id: str
    excuse: str  # "" (breaks the declaration), "revisit" or "conditional"
    problem: object  # the integrity Problem
    chain: tuple[Hop, ...]

    @property
    def edge(self) -> str:
        return " --> ".join([self.chain[0].source] + [h.target for h in self.chain]) if self.chain else ""


def backward_steps(k, graph) -> list[Backward]:
    """Every step that returns to a prerequisite of an earlier step, by integrity's rule 4.

    Integrity reports the ones not marked; running the same rule with the marks cleared
    gives the deliberate ones (``revisit: true`` or a ``condition``) as well.
    """
    from engine.check.integrity import _paths

    breaking = set(_paths(k, graph))
    unmarked = {pid: replace(p, steps=tuple(replace(s, revisit=False, condition="") for s in p.steps)) for pid, p in k.paths.items()}
    out = []
    for problem in sorted(_paths(SimpleNamespace(paths=unmarked), graph)):
        path = k.paths[problem.id]
        later = int(_INDEX.fullmatch(problem.path).group(1))
        earlier = int(_STEP_OF.search(problem.message).group(1)) - 1
        a, b = path.steps[earlier], path.steps[later]
        excuse = "" if problem in breaking else "conditional" if b.condition else "revisit"
        out.append(Backward(path.id, earlier + 1, later + 1, a.to, b.to, excuse, problem, edge_chain(k, graph, a.to, b.to)))
    return out


def edge_chain(k, graph, start: str, goal: str) -> tuple[Hop, ...]:
    """The shortest chain of declared edges from ``start`` to ``goal`` (a section: that section;
    a chapter: anything in it), else to anything in ``goal``'s chapter, which is what rule 4 asks."""
    chapter = graph.chapter_of(goal)
    exact = _search(graph, start, lambda n: n == goal or graph.chapter_of(n) == goal)
    found = exact or _search(graph, start, lambda n: graph.chapter_of(n) == chapter)
    return _unwind(k, *found) if found else ()


def _search(graph, start: str, done) -> tuple[dict, str] | None:
    parent: dict[str, tuple[str, str] | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for declarer, target in declared(graph, node):
            if target in parent:
                continue
            parent[target] = (node, declarer)
            if done(target):
                return parent, target
            queue.append(target)
    return None


def _unwind(k, parent: dict, node: str) -> tuple[Hop, ...]:
    hops = []
    while parent[node] is not None:
        source, declarer = parent[node]
        rec = k.chapters.get(declarer) or k.sections.get(declarer)
        hops.append(Hop(source, node, declarer, rec.place if rec is not None else ""))
        node = source
    return tuple(reversed(hops))
