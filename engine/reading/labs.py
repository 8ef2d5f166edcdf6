"""Reading paths that reach a lab: a lab is reached from every path with a step on one of its
chapters or sections, or on a section of one of its chapters (``aiinfra path show`` lists the labs
of a path's steps; ``aiinfra lab show`` the paths through a lab)."""

from __future__ import annotations


def _chapter(ident: str) -> str:
    book, _, rest = ident.partition(":")
    return ident if rest.startswith("ch") else f"{book}:ch{rest.split('.', 1)[0]}"


def paths_to_lab(k, record: dict) -> list[dict]:
    """``[{id, title, step, to}]``: the first step of each reading path that lands on the lab's
    chapters (or their sections), in path-id order."""
    from engine.domain.labs import chapters_of

    wanted = set(chapters_of(record))
    out = []
    for pid, p in sorted(k.paths.items()):
        for n, s in enumerate(p.steps, 1):
            if s.to and _chapter(s.to) in wanted:
                out.append({"id": pid, "title": p.title, "step": n, "to": s.to})
                break
    return out


def labs_on_path(labs: dict, path) -> list[dict]:
    """``[{id, title, title_zh, step, to}]``: the labs whose chapters a path's steps land on, each at
    its first such step, in lab order."""
    from engine.domain.labs import chapters_of, ordered

    out = []
    for r in ordered(labs or {}):
        wanted = set(chapters_of(r))
        for n, s in enumerate(path.steps, 1):
            if s.to and _chapter(s.to) in wanted:
                out.append({"id": r["id"], "title": r["title"], "title_zh": r["title_zh"], "step": n, "to": s.to})
                break
    return out
