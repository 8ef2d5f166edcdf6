"""Ids: one parser and one formatter for every kind (DESIGN.md, "Ids").

Chapters and sections carry their book (``infra:ch22``, ``infra:22.6``); formulas are
``F8`` or ``FX12``; everything else is ``kind:name``. Graph nodes are these strings.
"""

from __future__ import annotations

import re
from collections import namedtuple
from enum import StrEnum

DEFAULT_BOOK = "infra"


class Kind(StrEnum):
    BOOK = "book"
    CHAPTER = "chapter"
    SECTION = "section"
    FORMULA = "formula"
    SYMBOL = "sym"
    CONCEPT = "concept"
    CALC = "calc"
    TREE = "tree"
    PATH = "path"
    MODEL = "model"
    HW = "hw"
    SYSTEM = "sys"
    GRID = "grid"
    ARCH = "arch"
    ACTION = "action"
    WORDS = "words"


_NAME = r"[a-z0-9][a-z0-9_.+-]*"
_BOOK = r"[a-z][a-z0-9]*"
_SECTION = r"(?:\d+|[A-Z])(?:\.\d+)*"
_FORMULA = re.compile(r"F\d+|FX\d+")
_CHAPTER = re.compile(rf"({_BOOK}):ch(\d+|[A-Z])")
_SECTION_RE = re.compile(rf"({_BOOK}):({_SECTION})")
_PREFIXED = re.compile(rf"([a-z]+):({_NAME})")
_SYMBOL = re.compile(r"sym:([A-Za-z_][A-Za-z0-9_]*)")
_BARE_CHAPTER = re.compile(r"(?:ch)?(\d+)")
_BARE_SECTION = re.compile(_SECTION)

_PREFIX_KINDS = {k.value: k for k in Kind if k not in (Kind.CHAPTER, Kind.SECTION, Kind.FORMULA, Kind.SYMBOL)}


class Id(namedtuple("Id", "kind name book", defaults=("",))):
    """kind: a Kind; name: "22", "B" (appendix), "22.6", "F8", "roofline"; book: chapters and sections only."""

    __slots__ = ()

    def __str__(self) -> str:
        return format_id(self)

    @property
    def chapter(self) -> Id | None:
        """The chapter (or appendix, ``infra:chB``) a chapter or section belongs to."""
        if self.kind is Kind.CHAPTER:
            return self
        if self.kind is Kind.SECTION:
            return Id(Kind.CHAPTER, _chapter_number(self.name.split(".")[0]), self.book)
        return None


def _chapter_number(text: str) -> str:
    """``024`` -> ``24``; a digit string too long to be a chapter stays as written (int() stops at 4,300 digits)."""
    return str(int(text)) if text.isdigit() and len(text) <= 18 else text


def format_id(ident: Id) -> str:
    if ident.kind is Kind.CHAPTER:
        return f"{ident.book}:ch{ident.name}"
    if ident.kind is Kind.SECTION:
        return f"{ident.book}:{ident.name}"
    if ident.kind is Kind.FORMULA:
        return ident.name
    return f"{ident.kind.value}:{ident.name}"


def parse_id(text: object, expect: Kind | None = None) -> Id:
    """Parse a full id string; raise ValueError with the expected forms on failure."""
    if not isinstance(text, str):
        raise ValueError(f"expected an id string, got {type(text).__name__} {text!r}")
    ident = _parse(text)
    if ident is None:
        raise ValueError(f"{text!r} is not an id (expected {_expected(expect)})")
    if expect is not None and ident.kind is not expect:
        raise ValueError(f"{text!r} is a {ident.kind.value} id, expected {_expected(expect)}")
    return ident


def _parse(text: str) -> Id | None:
    if _FORMULA.fullmatch(text):
        return Id(Kind.FORMULA, text)
    if m := _CHAPTER.fullmatch(text):
        return Id(Kind.CHAPTER, _chapter_number(m.group(2)), m.group(1))
    if m := _SYMBOL.fullmatch(text):
        return Id(Kind.SYMBOL, m.group(1))
    if (m := _PREFIXED.fullmatch(text)) and m.group(1) in _PREFIX_KINDS:
        return Id(_PREFIX_KINDS[m.group(1)], m.group(2))
    if m := _SECTION_RE.fullmatch(text):
        return Id(Kind.SECTION, m.group(2), m.group(1))
    return None


def parse_user_id(text: str, kind: Kind, book: str = DEFAULT_BOOK) -> Id:
    """Parse what a user typed: the full id, or the bare name where the kind is clear.

    ``22`` and ``ch22`` are chapters of the default book, ``22.6`` a section, ``roofline``
    a concept when ``kind`` is CONCEPT.
    """
    text = text.strip()
    ident = _parse(text)
    if ident is not None and (ident.kind is kind or kind in (Kind.CHAPTER, Kind.SECTION)):
        return ident
    if kind in (Kind.CHAPTER, Kind.SECTION):
        if m := _BARE_CHAPTER.fullmatch(text):
            if kind is Kind.CHAPTER or text.startswith("ch"):
                return Id(Kind.CHAPTER, _chapter_number(m.group(1)), book)
        if _BARE_SECTION.fullmatch(text):
            return Id(Kind.SECTION, text, book)
    elif kind is Kind.FORMULA:
        if _FORMULA.fullmatch(text.upper()):
            return Id(Kind.FORMULA, text.upper())
    elif re.fullmatch(_NAME, text):
        return Id(kind, text)
    raise ValueError(f"{text!r} is not a {kind.value} id (expected {_expected(kind)})")


_EXAMPLES = {
    Kind.BOOK: "book:infra",
    Kind.CHAPTER: "infra:ch22 or 22",
    Kind.SECTION: "infra:22.6 or 22.6",
    Kind.FORMULA: "F8 or FX12",
    Kind.SYMBOL: "sym:kv_bytes",
}


def _expected(kind: Kind | None) -> str:
    if kind is None:
        return "F8, infra:ch22, infra:22.6 or kind:name such as concept:roofline"
    return _EXAMPLES.get(kind, f"{kind.value}:name")
