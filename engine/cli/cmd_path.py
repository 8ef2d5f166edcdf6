"""``aiinfra path list|show|for|prereq|check``: the books' reading paths, action words and
chapter prerequisites (logic in ``engine.reading.paths``; this module parses and prints)."""

from __future__ import annotations

from engine.cli.common import emit, root_of
from engine.cli.render import table, to_json

_HERE = "engine.cli.cmd_path"
_KINDS = ("goal", "problem", "role")
_STEP_COLUMNS = [("n", "#"), ("id", "step"), ("title", "title"), ("title_zh", "title_zh"), ("how", "how")]

FOR_EXAMPLES = """examples:
  aiinfra path for 上线一个推理服务         # a goal path of the book, in order
  aiinfra path for launch an inference service
  aiinfra path for reduce GPU cost          # no title says so: the titles sharing its words (Bring costs down)
  aiinfra path for KV cache                 # the sections whose title has both words, and the paths reading them
  aiinfra path for 微调                     # the goal path, then the action word's chapters
"""

PREREQ_EXAMPLES = """examples:
  aiinfra path prereq 24                  # infra:ch24; also ch24, infra:ch24, 22.4 (a section)
  aiinfra path prereq quant:ch8           # the 12-chapter book; or: prereq 8 --book quant
"""


def add_parsers(verbs, Parser, shared) -> None:
    import argparse

    raw = argparse.RawDescriptionHelpFormatter
    path = verbs.add_parser("path", help="reading paths, action words and chapter prerequisites",
                            description="Reading paths of both books (goal paths, the problem-first index, role routes), the action-word index, and what to read before a chapter.")
    pverbs = path.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    pverbs.required = True
    p = pverbs.add_parser("list", help="every reading path", description="List the reading paths: id, kind, book, title, title_zh and number of steps.")
    p.add_argument("--kind", choices=_KINDS, help="only paths of this kind")
    _leaf(p, shared, "list_")
    p = pverbs.add_parser("show", help="one path, step by step", description="Show a path's steps in the book's order with English and Chinese titles; conditional steps with their condition, placeholders and deliberate returns with their note.")
    p.add_argument("id", metavar="ID", help="path id, e.g. inference-service or path:quant-model-apps")
    _leaf(p, shared, "show")
    p = pverbs.add_parser("for", help="the paths and action words matching your goal", formatter_class=raw, epilog=FOR_EXAMPLES,
                          description="Match goal words, English or Chinese, against the paths' titles (goal paths first, then the problem-first index and role routes) and then the action words, by substring or with the words in order; "
                                      "failing that, an English goal matches the titles sharing at least half of its content words (stemmed, with the synonyms of knowledge/goal_words.yaml). "
                                      "An English goal also lists the chapters and sections whose title has all its content words, and the paths that read them.")
    p.add_argument("words", nargs="+", metavar="WORDS", help="what you want to do, e.g. 上线一个推理服务")
    _leaf(p, shared, "for_")
    p = pverbs.add_parser("prereq", help="what to read before a chapter or section", formatter_class=raw, epilog=PREREQ_EXAMPLES,
                          description="Every chapter a chapter or section builds on, transitively, from the chapters' dependency declarations, prerequisites first (ties in book order).")
    p.add_argument("chapter", metavar="CHAPTER", help="24, ch24, infra:ch24, quant:ch8 or a section such as 22.4")
    p.add_argument("--book", default="infra", metavar="BOOK", help="the book of a bare number (default infra; quant for the 12-chapter book)")
    _leaf(p, shared, "prereq")
    p = pverbs.add_parser("check", help="steps that break a dependency declaration",
                          description="Report every path step that comes after a step building on it, with the declared edge it crosses; list deliberate returns (revisit or conditional) apart. Exit 1 when a step breaks a declaration.")
    _leaf(p, shared, "check")


def _leaf(p, shared, func: str) -> None:
    shared(p, False)
    p.set_defaults(handler=f"{_HERE}:{func}")


def _load(args, books_only: bool = False):
    """The loaded root; with ``books_only`` the books, chapters, paths and action words alone
    (no formulas or single-record folders: a cached index once the root loads cleanly)."""
    from engine.kb.knowledge import Knowledge, load_books

    return load_books(root_of(args)) if books_only else Knowledge.load(root_of(args))


# ----------------------------------------------------------------------------- list
def list_(args) -> int:
    k = _load(args, books_only=True)
    rows = [dict(id=p.id.split(":", 1)[1], kind=p.kind, book=p.book.split(":", 1)[1], title=p.title, title_zh=p.title_zh, steps=len(p.steps))
            for p in k.paths.values() if args.kind in (None, p.kind)]
    cols = [("id", "id"), ("kind", "kind"), ("book", "book"), ("title", "title"), ("title_zh", "title_zh"), ("steps", "steps")]
    emit(table(rows, cols, args.format) if rows or args.format in ("json", "csv") else "no reading paths")
    return 0


# ----------------------------------------------------------------------------- show
def show(args) -> int:
    from engine.reading.paths import describe_path, resolve_path

    k = _load(args, books_only=True)
    path = resolve_path(k, args.id)
    d = {**describe_path(k, path), "labs": _labs(args, path)}
    if args.format == "json":
        emit(to_json(d))
    elif args.format == "csv":
        emit(table(d["steps"], [(c, c) for c in ("n", "id", "chapter", "title", "title_zh", "how", "condition", "note")], "csv"))
    else:
        emit(_path_document(d, args.format == "md"))
    return 0


def _path_document(d: dict, md: bool) -> str:
    head = f"## {d['id']}: {d['title_zh']}" if md else f"{d['id']}  ({d['kind']} path, {d['book']})"
    lines = [head, "", f"{d['title_zh']} ({d['title']})" if not md else d["title"]]
    if d["audience"]:
        lines.append(f"audience: {d['audience']}")
    shown = [{**s, "id": s["id"] or "-"} for s in d["steps"]]
    lines += ["", table(shown, _STEP_COLUMNS, "md" if md else "text")]
    notes = [_step_note(s) for s in d["steps"] if s["condition"] or s["note"]]
    if notes:
        lines += ["", "notes:" if not md else "Notes:", *(f"- {n}" if md else f"  {n}" for n in notes)]
    if d.get("labs"):
        lines += ["", "labs on this path (aiinfra lab show N):" if not md else "Labs on this path:",
                  *(f"{'- ' if md else '  '}{lab['id']} {lab['title_zh']} ({lab['title']}): step {lab['step']} {lab['to']}" for lab in d["labs"])]
    return "\n".join(lines)  # the record's provenance (files, commits, seed snapshots) is for --format json only


def _labs(args, path) -> list[dict]:
    """The book's labs whose chapters the path's steps land on (engine.reading.labs)."""
    from engine.kb.folders import folder_view
    from engine.reading.labs import labs_on_path

    return labs_on_path(folder_view(root_of(args), "labs", strict=False).labs, path)


def _step_note(step: dict) -> str:
    label = f"step {step['n']}" + (f" ({step['how']})" if step["how"] else "")
    if step["condition"]:
        return f"{label}: {step['condition']}" + (f"; {step['note']}" if step["note"] else "")
    return f"{label}: {step['note']}"


# ----------------------------------------------------------------------------- for
def for_(args) -> int:
    from engine.core.errors import InputError
    from engine.reading.paths import (
        chapters_about,
        close_titles,
        describe_action,
        describe_path,
        match,
        reading_paths,
    )

    k = _load(args, books_only=True)
    words = " ".join(args.words).strip()
    found = match(k, words)
    chapters = chapters_about(k, words)
    if not found and not chapters:
        close = close_titles(k, words)
        hint = f" (close: {', '.join(close)}; see aiinfra path list)" if close else " (see aiinfra path list)"
        raise InputError("GOAL", f"no reading path or action word matches {words!r}{hint}")
    results = [{**(describe_action(k, k.actions[m.id]) if m.kind == "action" else describe_path(k, k.paths[m.id])),
                "matched": {"field": m.field, "how": m.quality, **({"words": list(m.words)} if m.words else {})}} for m in found]
    reading = reading_paths(k, chapters)
    if args.format == "json":
        emit(to_json(dict(query=words, results=results, chapters=chapters, paths=reading)))
    elif args.format == "csv":
        emit(table(list(_for_rows(results, chapters)), [(c, c) for c in ("match", "kind", "id", "n", "step", "title", "title_zh", "how")], "csv"))
    else:
        md = args.format == "md"
        docs = [_result_document(r, md) for r in results]
        if len(results) > 1:
            docs.insert(0, f"{len(results)} matches (goal paths first, then problem and role paths, then action words): {', '.join(r['id'] for r in results)}")
        if chapters:  # the paths that read them only where no title matched (a broad word reaches most paths)
            docs.append(_chapters_document(chapters, [] if results else reading, words, k, md))
        emit("\n\n".join(docs))
    return 0


def _for_rows(results: list[dict], chapters: list[dict]):
    for i, r in enumerate(results, 1):
        items = r["steps"] if r["kind"] != "action" else [dict(n=j, id=t["id"], title=t["title"], title_zh=t["title_zh"], how="") for j, t in enumerate(r["targets"], 1)]
        for s in items:
            yield dict(match=i, kind=r["kind"], id=r["id"], n=s["n"], step=s["id"] or s["title_zh"], title=s["title"], title_zh=s["title_zh"], how=s["how"])
    for i, c in enumerate(chapters, len(results) + 1):
        yield dict(match=i, kind=c["kind"], id=c["id"], n=1, step=c["id"], title=c["title"], title_zh=c["title_zh"], how="")


def _chapters_document(chapters: list[dict], reading: list[str], words: str, k, md: bool) -> str:
    from engine.reading.words import Vocabulary

    said = " and ".join(Vocabulary.of(k.goal_words.values()).content(words).values())
    head = f"{len(chapters)} chapter{'s' * (len(chapters) != 1)} and sections whose title has {said}"
    lines = [f"## {head}" if md else f"{head}:", "", table(chapters, [("id", "id"), ("title", "title"), ("title_zh", "title_zh")], "md" if md else "text")]
    if reading:
        lines += ["", f"read on the paths: {', '.join(reading)} (aiinfra path show ID)"]
    return "\n".join(lines)


def _result_document(r: dict, md: bool) -> str:
    shared = f": {', '.join(r['matched']['words'])}" if r["matched"].get("words") else ""
    how = f"matched on {r['matched']['field']} ({r['matched']['how']}{shared})"
    if r["kind"] != "action":
        head, rest = _path_document(r, md).split("\n", 1)
        return f"{head}  {how}\n{rest}"
    head = f"## {r['id']}: {r['word_zh']}" if md else f"{r['id']}  (action word {r['word_zh']} / {r['word']})"
    rows = [dict(n=j, id=t["id"], title=t["title"], title_zh=t["title_zh"]) for j, t in enumerate(r["targets"], 1)]
    body = table(rows, _STEP_COLUMNS[:4], "md" if md else "text")
    return "\n".join([f"{head}  {how}", "", body, "", f"note: {r['note']}"])


# ----------------------------------------------------------------------------- prereq
def prereq(args) -> int:
    from engine.reading.paths import prerequisites, resolve_node, titles

    k = _load(args)
    ident = resolve_node(k, args.chapter, args.book)
    rows = prerequisites(k, k.graph(), ident)
    title, title_zh = titles(k, ident)
    for i, r in enumerate(rows, 1):
        r["n"] = i
        r["via"] = "whole chapter" if r["whole"] else ", ".join(s.split(":", 1)[1] for s in r["sections"])
    if args.format == "json":
        emit(to_json(dict(id=ident, title=title, title_zh=title_zh, prerequisites=[{c: r[c] for c in ("chapter", "title", "title_zh", "whole", "sections", "declared")} for r in rows])))
        return 0
    cols = [("n", "#"), ("chapter", "chapter"), ("title", "title"), ("title_zh", "title_zh"), ("via", "needed"), ("declared", "declared")]
    if args.format == "csv":
        emit(table(rows, [(c, c) for c, _ in cols], "csv"))
        return 0
    head = f"Read before {ident} {title_zh} ({title}), from the dependency declarations:"
    emit(head + "\n\n" + table(rows, cols, args.format) if rows else f"{ident} {title_zh} ({title}) declares no dependencies: nothing to read first.")
    return 0


# ----------------------------------------------------------------------------- check
def check(args) -> int:
    from engine.reading.paths import backward_steps

    k = _load(args)
    found = backward_steps(k, k.graph())
    breaking = [b for b in found if not b.excuse]
    returns = _returns([b for b in found if b.excuse])
    steps = sum(len(p.steps) for p in k.paths.values())
    summary = (f"{len(k.paths)} path{'s' * (len(k.paths) != 1)}, {steps} steps: {len(breaking)} break a dependency declaration; "
               f"{len(returns)} deliberate returns to a prerequisite ({sum(r[0].excuse == 'revisit' for r in returns)} revisit, "
               f"{sum(r[0].excuse == 'conditional' for r in returns)} conditional)")
    if args.format == "json":
        emit(to_json(dict(paths=len(k.paths), steps=steps, violations=[_finding(b) for b in breaking],
                          returns=[{**_finding(r[0]), "also_after_steps": [b.earlier for b in r[1:]]} for r in returns])))
    elif args.format in ("csv", "md"):
        rows = [{**_finding(b), "status": "breaks"} for b in breaking] + [{**_finding(r[0]), "status": r[0].excuse} for r in returns]
        cols = [(c, c) for c in ("status", "path", "step", "id", "after_step", "after_id", "edge", "message")]
        body = table(rows, cols, args.format)
        emit(body if args.format == "csv" else f"{body}\n\n{summary}")
    else:
        emit("\n".join(_check_text(breaking, returns) + [summary]))
    return 1 if breaking else 0


def _returns(excused: list) -> list[list]:
    """Deliberate returns grouped by (path, step): the first earlier step carries the edge."""
    groups: dict[tuple[str, int], list] = {}
    for b in excused:
        groups.setdefault((b.path, b.later), []).append(b)
    return [sorted(g, key=lambda b: b.earlier) for _, g in sorted(groups.items())]


def _finding(b) -> dict:
    message = str(b.problem) if not b.excuse else f"{b.later_id} ({b.excuse}) comes after {b.earlier_id} (step {b.earlier}), which builds on it"
    return dict(path=b.path, step=b.later, id=b.later_id, after_step=b.earlier, after_id=b.earlier_id, edge=b.edge,
                declared=[str(h) for h in b.chain], message=message)


def _check_text(breaking: list, returns: list[list]) -> list[str]:
    lines = []
    for b in breaking:
        lines += [str(b.problem), f"  edge: {b.edge}; declared: {'; '.join(map(str, b.chain))}"]
    if returns:
        lines += ([""] if lines else []) + ["deliberate returns to a prerequisite (not violations):"]
    for group in returns:
        b = group[0]
        others = f" (and of steps {', '.join(str(o.earlier) for o in group[1:])})" if group[1:] else ""
        lines += [f"  {b.path} step {b.later} {b.later_id} ({b.excuse}) returns to a prerequisite of step {b.earlier} {b.earlier_id}{others}",
                  f"    edge: {b.edge}; declared: {'; '.join(map(str, b.chain))}"]
    return lines
