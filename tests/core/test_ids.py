"""engine.core.ids: one parser and one formatter for every kind of id (DESIGN.md, "Ids")."""

from __future__ import annotations

import pytest

from engine.core.ids import Id, Kind, format_id, parse_id, parse_user_id

ANY = "F8, infra:ch22, infra:22.6 or kind:name such as concept:roofline"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("F8", Id(Kind.FORMULA, "F8")),
        ("F22", Id(Kind.FORMULA, "F22")),
        ("FX12", Id(Kind.FORMULA, "FX12")),
        ("infra:ch22", Id(Kind.CHAPTER, "22", "infra")),
        ("quant:ch8", Id(Kind.CHAPTER, "8", "quant")),
        ("infra:chB", Id(Kind.CHAPTER, "B", "infra")),
        ("infra:22.6", Id(Kind.SECTION, "22.6", "infra")),
        ("infra:4.10", Id(Kind.SECTION, "4.10", "infra")),
        ("infra:14.4.3", Id(Kind.SECTION, "14.4.3", "infra")),
        ("infra:B.2.3", Id(Kind.SECTION, "B.2.3", "infra")),
        ("sym:kv_bytes", Id(Kind.SYMBOL, "kv_bytes")),
        ("sym:T_durable", Id(Kind.SYMBOL, "T_durable")),
        ("book:infra", Id(Kind.BOOK, "infra")),
        ("concept:roofline", Id(Kind.CONCEPT, "roofline")),
        ("calc:kv-concurrency", Id(Kind.CALC, "kv-concurrency")),
        ("tree:pd-disaggregation", Id(Kind.TREE, "pd-disaggregation")),
        ("path:inference-service", Id(Kind.PATH, "inference-service")),
        ("model:qwen3-8b", Id(Kind.MODEL, "qwen3-8b")),
        ("model:llama-3.1-8b", Id(Kind.MODEL, "llama-3.1-8b")),
        ("hw:h100-sxm", Id(Kind.HW, "h100-sxm")),
        ("arch:gqa", Id(Kind.ARCH, "gqa")),
    ],
)
def test_parse_and_format_round_trip(text, expected):
    ident = parse_id(text)
    assert ident == expected
    assert format_id(ident) == text
    assert str(ident) == text


def test_chapter_numbers_are_normalised():
    assert parse_id("infra:ch022") == Id(Kind.CHAPTER, "22", "infra")
    assert str(parse_id("infra:ch022")) == "infra:ch22"


def test_section_numbers_are_strings_not_floats():
    """DESIGN.md: "4.10" is not 4.1."""
    assert parse_id("infra:4.10") != parse_id("infra:4.1")


@pytest.mark.parametrize(
    ("text", "chapter"),
    [
        ("infra:22.6", "infra:ch22"),
        ("infra:14.4.3", "infra:ch14"),
        ("quant:8.1", "quant:ch8"),
        ("infra:B.2.3", "infra:chB"),
        ("infra:ch6", "infra:ch6"),
    ],
)
def test_chapter_of_a_section(text, chapter):
    assert str(parse_id(text).chapter) == chapter


def test_ids_outside_the_book_have_no_chapter():
    assert parse_id("F8").chapter is None
    assert parse_id("concept:roofline").chapter is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("f8", f"'f8' is not an id (expected {ANY})"),
        ("F", f"'F' is not an id (expected {ANY})"),
        ("foo:bar", f"'foo:bar' is not an id (expected {ANY})"),
        ("concept:Roofline", f"'concept:Roofline' is not an id (expected {ANY})"),
        ("concept:", f"'concept:' is not an id (expected {ANY})"),
        ("roofline", f"'roofline' is not an id (expected {ANY})"),
        ("22", f"'22' is not an id (expected {ANY})"),
        ("infra:ch", f"'infra:ch' is not an id (expected {ANY})"),
        (" F8", f"' F8' is not an id (expected {ANY})"),
        ("sym:", f"'sym:' is not an id (expected {ANY})"),
    ],
)
def test_bad_ids_are_refused(text, message):
    with pytest.raises(ValueError) as info:
        parse_id(text)
    assert str(info.value) == message


def test_non_string_id_is_refused():
    with pytest.raises(ValueError) as info:
        parse_id(22)
    assert str(info.value) == "expected an id string, got int 22"


@pytest.mark.parametrize(
    ("text", "expect", "message"),
    [
        ("F8", Kind.CHAPTER, "'F8' is a formula id, expected infra:ch22 or 22"),
        ("infra:ch22", Kind.SECTION, "'infra:ch22' is a chapter id, expected infra:22.6 or 22.6"),
        ("concept:roofline", Kind.FORMULA, "'concept:roofline' is a concept id, expected F8 or FX12"),
        ("hw:h100-sxm", Kind.MODEL, "'hw:h100-sxm' is a hw id, expected model:name"),
        ("book:infra", Kind.SYMBOL, "'book:infra' is a book id, expected sym:kv_bytes"),
    ],
)
def test_expected_kind_is_enforced(text, expect, message):
    with pytest.raises(ValueError) as info:
        parse_id(text, expect)
    assert str(info.value) == message


def test_expected_kind_that_matches_is_accepted():
    assert parse_id("F8", Kind.FORMULA) == Id(Kind.FORMULA, "F8")


# ------------------------------------------------------------------------------ user input


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("22", Kind.CHAPTER, "infra:ch22"),
        ("ch22", Kind.CHAPTER, "infra:ch22"),
        (" 22 ", Kind.CHAPTER, "infra:ch22"),
        ("022", Kind.CHAPTER, "infra:ch22"),
        ("quant:ch8", Kind.CHAPTER, "quant:ch8"),
        ("22.6", Kind.SECTION, "infra:22.6"),
        ("4.10", Kind.SECTION, "infra:4.10"),
        ("ch22", Kind.SECTION, "infra:ch22"),
        ("22.6", Kind.CHAPTER, "infra:22.6"),
        ("infra:22.6", Kind.SECTION, "infra:22.6"),
        ("f8", Kind.FORMULA, "F8"),
        ("fx12", Kind.FORMULA, "FX12"),
        ("F8", Kind.FORMULA, "F8"),
        ("roofline", Kind.CONCEPT, "concept:roofline"),
        ("concept:roofline", Kind.CONCEPT, "concept:roofline"),
        ("qwen3-8b", Kind.MODEL, "model:qwen3-8b"),
        ("h100-sxm", Kind.HW, "hw:h100-sxm"),
        ("kv-concurrency", Kind.CALC, "calc:kv-concurrency"),
    ],
)
def test_parse_user_id(text, kind, expected):
    assert str(parse_user_id(text, kind)) == expected


def test_parse_user_id_uses_the_given_book():
    assert str(parse_user_id("8", Kind.CHAPTER, book="quant")) == "quant:ch8"
    assert str(parse_user_id("8.1", Kind.SECTION, book="quant")) == "quant:8.1"


@pytest.mark.parametrize(
    ("text", "kind", "message"),
    [
        ("x", Kind.FORMULA, "'x' is not a formula id (expected F8 or FX12)"),
        ("F8", Kind.CONCEPT, "'F8' is not a concept id (expected concept:name)"),
        ("Roofline", Kind.CONCEPT, "'Roofline' is not a concept id (expected concept:name)"),
        ("concept:roofline", Kind.CALC, "'concept:roofline' is not a calc id (expected calc:name)"),
        ("chB", Kind.CHAPTER, "'chB' is not a chapter id (expected infra:ch22 or 22)"),
        ("twenty", Kind.SECTION, "'twenty' is not a section id (expected infra:22.6 or 22.6)"),
    ],
)
def test_parse_user_id_refusals(text, kind, message):
    with pytest.raises(ValueError) as info:
        parse_user_id(text, kind)
    assert str(info.value) == message


# ------------------------------------------------------------------------- known engine bugs


@pytest.mark.parametrize("text", ["sym:1x", "sym:kv-bytes", "sym:x.y"])
def test_symbol_ids_must_be_symbol_names(text):
    with pytest.raises(ValueError):
        parse_id(text)
