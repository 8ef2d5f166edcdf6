"""Issue 30: every chapter of both books has a selection tree of its own (a decision_trees/ file lists it
in ``chapters``) or says in ``no_tree`` why it has none, never both; the chapter page prints the reason."""

from __future__ import annotations

import pytest

from engine.core.paths import shipped_root
from engine.kb.knowledge import Knowledge
from engine.trees.walk import load_trees


@pytest.fixture(scope="module")
def shipped():
    root = shipped_root()
    k = Knowledge.load(root)
    own: dict[str, list[str]] = {}
    for tid, tree in load_trees(root).items():
        for cid in tree.chapters:
            own.setdefault(cid, []).append(tid)
    return k, own


def test_every_chapter_has_a_tree_or_says_why_not(shipped):
    k, own = shipped
    missing = [cid for cid, ch in k.chapters.items() if cid not in own and not ch.no_tree]
    assert missing == []


def test_no_chapter_has_a_tree_and_a_reason_for_having_none(shipped):
    k, own = shipped
    both = [(cid, own[cid]) for cid, ch in k.chapters.items() if cid in own and ch.no_tree]
    assert both == []


def test_the_quant_chapters_with_a_selection_section_have_trees(shipped):
    _, own = shipped
    assert {cid: sorted(own.get(cid, [])) for cid in ("quant:ch8", "quant:ch9", "quant:ch11", "quant:ch12")} == {
        "quant:ch8": ["tree:quant-inference-config"],
        "quant:ch9": ["tree:quant-pd-placement"],
        "quant:ch11": ["tree:quant-agent-environment"],
        "quant:ch12": ["tree:quant-edge-cloud", "tree:quant-session-migration"],
    }


def test_the_chapter_page_prints_the_reason():
    from engine.site import book_pages
    from engine.site.data import load

    data = load(shipped_root())
    pages = {p.path: p.text for p in book_pages.pages(data)}
    ch3 = next(text for path, text in pages.items() if path.endswith("infra/ch3.md"))
    line = next(ln for ln in ch3.splitlines() if ln.startswith("- **Decision trees:**"))
    assert "no selection tree of its own: The one chapter without the 选型决策树 segment" in line, line
    ch8 = next(text for path, text in pages.items() if path.endswith("quant/ch8.md"))
    line = next(ln for ln in ch8.splitlines() if ln.startswith("- **Decision trees:**"))
    assert "quant-inference-config" in line and "no selection tree of its own" not in line, line
