"""The shipped knowledge base is complete: every Appendix B formula, both books, all concepts and paths.

Counts come from the books themselves (BOOK.md, which records the sources):
Appendix B has F1..F22 (@1e2232bb); book "infra" has 31 chapters in 7 parts; book "quant"
has 12 chapters (seed 000's table); the definition registry @8e80088d has 23 rows; the
README and outline give 14 goal paths; chapter 1 §1.7.2 lists 9 problem-first entries.
"""

from __future__ import annotations

import re

import pytest

from engine.kb.knowledge import Knowledge

K = Knowledge.load(None, strict=False)

# a checkable source names a document a reader can open, or shows the arithmetic
CHECKABLE = re.compile(
    r"arithmetic|@[0-9a-f]{7,40}|\b(19|20)\d\d\b|datasheet|config(\.json)?|table|§|section|fig|eq\.|README",
    re.IGNORECASE,
)


def test_every_appendix_b_formula_is_present():
    missing = [f"F{n}" for n in range(1, 23) if f"F{n}" not in K.formulas]
    assert missing == []


def test_at_least_80_formulas():
    assert len(K.formulas) >= 80


@pytest.mark.parametrize("fid", sorted(K.formulas.by_id))
def test_every_example_has_a_checkable_source(fid):
    f = K.formulas.get(fid)
    assert f.examples
    for ex in f.examples:
        assert CHECKABLE.search(ex.source), f"{fid}: {ex.source!r} names nothing a reader can check"


def test_formulas_sit_in_appendix_b_sections():
    assert {f.section for f in K.formulas} <= {f"B.2.{n}" for n in range(1, 9)}


def test_both_books_and_their_chapters():
    infra = [c for c in K.chapters.values() if c.book == "book:infra" and c.number.isdigit() and c.number != "0"]
    quant = [c for c in K.chapters.values() if c.book == "book:quant"]
    assert sorted(int(c.number) for c in infra) == list(range(1, 32))
    assert sorted(int(c.number) for c in quant) == list(range(1, 13))
    assert all(c.title_zh and c.title for c in infra + quant)
    assert all(c.key_question_zh for c in quant)


def test_seven_parts_cover_the_31_chapters():
    book = K.books["book:infra"]
    numbers = sorted(int(cid.split(":ch")[1]) for part in book.parts for cid in part["chapters"])
    assert len(book.parts) == 7
    assert numbers == list(range(1, 32))


def test_the_registry_concepts_each_have_one_definition():
    assert len(K.concepts) == 23
    definers = {c: [s.id for s in K.sections.values() if c in s.defines] for c in K.concepts}
    assert all(len(v) == 1 for v in definers.values()), {c: v for c, v in definers.items() if len(v) != 1}


def test_acceleration_taxonomy_is_defined_in_22_6():
    # the registry, the book's stated source of truth, says §22.6 (the outline and prompts say §22.5)
    defining = [s.id for s in K.sections.values() if any("acceleration" in c for c in s.defines)]
    assert defining == ["infra:22.6"]


def test_reading_paths():
    kinds = [p.kind for p in K.paths.values()]
    assert kinds.count("goal") == 14
    assert kinds.count("problem") == 9
    assert kinds.count("role") >= 1
    placeholders = [s.placeholder for p in K.paths.values() for s in p.steps if s.placeholder]
    assert "对应领域章" in placeholders
    assert any(s.to == "infra:chE" for p in K.paths.values() for s in p.steps)


def test_action_words():
    assert {a.word_zh for a in K.actions.values()} >= {"训练", "微调", "部署", "优化", "评测"}


def test_the_pinned_version_and_the_settled_conflicts():
    book = K.books["book:infra"]
    assert book.pinned_version.startswith("0.2.0")
    assert len(book.decisions) >= 7
    assert all(d["sources"] for d in book.decisions)
