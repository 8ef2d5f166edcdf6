"""engine.kb.schema: JSON Schema checks of raw records, placed at file:line:col with a field path.

Messages are the project's own text (engine/kb/schema.py ``_message``); tests compare whole
strings (STYLE.md habit 7). Records are built as plain dicts (no place beyond the file
name) or read from YAML written to tmp files (placed at the offending value).
"""

from __future__ import annotations

import copy

import pytest

from engine.core.errors import Problem
from engine.kb.schema import field_path, validate
from engine.kb.yamlio import load_yaml

NUMBER_HINT = '(quote ids and section numbers: "4.10" is not 4.1)'
DOMAINS = "positive, nonnegative, positive_integer, nonnegative_integer, fraction, positive_fraction, fraction_below_one, ge_one, ge_two_integer, real, categorical"


def formula(**changes) -> dict:
    raw = {
        "id": "F9",
        "name": "Example",
        "section": "B.2.1",
        "defined_in": "infra:6.2",
        "output": {"symbol": "y", "unit": "B", "desc": "bytes"},
        "symbols": {"kv_bytes": {"desc": "bytes per element", "unit": "B", "domain": "positive"}},
        "expr": "2 * kv_bytes",
        "examples": [{"set": {"kv_bytes": 2}, "expect": 4, "source": "hand arithmetic 2 * 2 = 4"}],
    }
    raw.update(changes)
    return raw


def messages(kind: str, raw: object, display: str = "t.yaml", rid: str = "F9") -> list[str]:
    return sorted(str(p) for p in validate(kind, raw, display, rid))


def load(tmp_path, text: str, name: str = "f.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    data, problems = load_yaml(path, name)
    assert problems == []
    return data


# ------------------------------------------------------------------ field paths


@pytest.mark.parametrize("path, text", [
    ([], ""),
    (["id"], "id"),
    (["symbols", "kv_bytes", "unit"], "symbols.kv_bytes.unit"),
    (["examples", 0, "set"], "examples[0].set"),
    (["variants", 1, "when"], "variants[1].when"),
    (["sections", 0, "defines", 2], "sections[0].defines[2]"),
])
def test_field_path(path, text):
    assert field_path(path) == text


# ------------------------------------------------------------------ raw dicts


def test_a_valid_record_has_no_problems():
    assert validate("formula", formula(), "t.yaml", "F9") == []


def test_a_number_where_a_string_is_expected():
    raw = formula()
    raw["symbols"]["kv_bytes"]["unit"] = 2
    assert validate("formula", raw, "t.yaml", "F9") == [
        Problem("t.yaml", "F9", "symbols.kv_bytes.unit", f"expected a string, got the number 2 {NUMBER_HINT}"),
    ]
    assert messages("formula", formula(section=2.10)) == [
        f"t.yaml F9 section: expected a string, got the number 2.1 {NUMBER_HINT}",
    ]


def test_a_bool_where_a_string_is_expected_is_not_called_a_number():
    assert messages("formula", formula(name=True)) == ["t.yaml F9 name: expected string, got boolean True"]


def test_wrong_type_inside_an_example():
    assert messages("formula", formula(examples=[{"set": 5, "expect": 4, "source": "hand"}])) == [
        "t.yaml F9 examples[0].set: expected object, got int 5",
    ]
    assert messages("formula", formula(examples=[{"set": {"kv_bytes": None}, "expect": "4", "source": "hand"}])) == [
        "t.yaml F9 examples[0].expect: expected number, got str '4'",
        "t.yaml F9 examples[0].set.kv_bytes: expected number or string, got null None",
    ]


def test_missing_required_field():
    raw = formula()
    del raw["name"]
    assert messages("formula", raw) == ["t.yaml F9: missing required field 'name'"]


def test_missing_unit_of_a_numeric_symbol_and_values_of_a_categorical_one():
    raw = formula()
    raw["symbols"] = {
        "kv_bytes": {"desc": "bytes per element", "domain": "positive"},
        "attn": {"desc": "attention kind", "domain": "categorical"},
    }
    assert messages("formula", raw) == [
        "t.yaml F9 symbols.attn: missing required field 'values'",
        "t.yaml F9 symbols.kv_bytes: missing required field 'unit'",
    ]


def test_unknown_field():
    assert messages("formula", formula(colour="red")) == ["t.yaml F9: unknown field(s) ('colour' was unexpected)"]
    raw = formula()
    raw["symbols"]["kv_bytes"]["units"] = "B"
    assert messages("formula", raw) == ["t.yaml F9 symbols.kv_bytes: unknown field(s) ('units' was unexpected)"]


def test_enum():
    raw = formula()
    raw["symbols"]["kv_bytes"]["domain"] = "integer"
    assert messages("formula", raw) == [f"t.yaml F9 symbols.kv_bytes.domain: 'integer' is not one of {DOMAINS}"]
    assert messages("chapter", {"id": "infra:ch6", "title": "T", "title_zh": "T", "depends_source": "book"}, rid="infra:ch6") == [
        "t.yaml infra:ch6 depends_source: 'book' is not one of declaration, outline, readme",
    ]


def test_pattern():
    assert messages("formula", formula(id="G9"), rid="G9") == [
        "t.yaml G9 id: 'G9' does not match the expected form ^(F|FX)[0-9]+$",
    ]


VARIANTS = [{"when": "mha", "expr": "2 * kv_bytes"}, {"when": "mqa", "expr": "kv_bytes"}]


def test_expr_and_variants_together():
    raw = formula(variants=copy.deepcopy(VARIANTS), selector="attn")
    assert messages("formula", raw) == ["t.yaml F9: give either expr or variants with a selector, not both"]


def test_variants_without_selector():
    raw = formula(variants=copy.deepcopy(VARIANTS))
    del raw["expr"]
    assert messages("formula", raw) == ["t.yaml F9: variants need a selector (the categorical symbol that picks one)"]


def test_neither_expr_nor_variants():
    raw = formula()
    del raw["expr"]
    assert messages("formula", raw) == ["t.yaml F9: needs either expr, or variants with a selector"]


def test_a_selector_beside_expr_is_not_told_it_lacks_expr():
    found = messages("formula", formula(selector="attn"))
    assert len(found) == 1
    assert found != ["t.yaml F9: needs either expr, or variants with a selector"]


def test_variants_with_selector_and_no_expr_are_valid():
    raw = formula(variants=copy.deepcopy(VARIANTS), selector="attn")
    del raw["expr"]
    assert messages("formula", raw) == []


def test_every_problem_is_reported_not_just_the_first():
    raw = formula(name=1, colour="red")
    raw["symbols"]["kv_bytes"]["domain"] = "integer"
    assert messages("formula", raw) == [  # sorted: "F9 " comes before "F9:"
        f"t.yaml F9 name: expected a string, got the number 1 {NUMBER_HINT}",
        f"t.yaml F9 symbols.kv_bytes.domain: 'integer' is not one of {DOMAINS}",
        "t.yaml F9: unknown field(s) ('colour' was unexpected)",
    ]


def test_other_kinds():
    assert messages("concept", {"id": "concept:x", "name": "X"}, rid="concept:x") == [
        "t.yaml concept:x: missing required field 'name_zh'",
    ]
    assert messages("path", {"id": "path:p", "title": "P", "title_zh": "P", "steps": [{"to": "infra:ch3", "revisit": "yes"}]}, rid="path:p") == [
        "t.yaml path:p steps[0]: {'to': 'infra:ch3', 'revisit': 'yes'} is not valid under any of the given schemas",
    ]
    assert messages("book", {"id": "book:infra", "title": "T", "title_zh": "T", "source": "s", "parts": [{"number": 0, "title": "P", "title_zh": "P", "chapters": []}]}, rid="book:infra") == [
        "t.yaml book:infra parts[0].number: 0 is less than the minimum of 1",
    ]


# ------------------------------------------------------------------ YAML files: file:line:col

FORMULA_YAML = """\
- id: F9
  name: Example
  section: B.2.1
  defined_in: "infra:6.2"
  output: {symbol: y, unit: B, desc: bytes}
  symbols:
    kv_bytes: {desc: bytes per element, unit: 2, domain: positive}
    n: {desc: count, unit: "1", domain: integer}
  expr: 2 * kv_bytes * n
  examples:
    - {set: 5, expect: 4, source: hand}
"""


def test_yaml_problems_are_placed_at_the_offending_value(tmp_path):
    data = load(tmp_path, FORMULA_YAML)
    assert messages("formula", data[0], "f.yaml") == [
        # line 11 "    - {set: 5, ...": '{' is column 7, "set" columns 8-10, the value 5 column 13
        "f.yaml:11:13 F9 examples[0].set: expected object, got int 5",
        # line 7 "    kv_bytes: {desc: bytes per element, unit: 2, ...": '{' column 15, "unit" 41-44, the 2 column 47
        f"f.yaml:7:47 F9 symbols.kv_bytes.unit: expected a string, got the number 2 {NUMBER_HINT}",
        # line 8 '    n: {desc: count, unit: "1", domain: integer}': "integer" starts at column 41
        f"f.yaml:8:41 F9 symbols.n.domain: 'integer' is not one of {DOMAINS}",
    ]


def test_yaml_missing_fields_at_the_record_unknown_fields_at_their_line(tmp_path):
    data = load(tmp_path, "- id: F9\n  colour: red\n  section: B.2.1\n", "g.yaml")
    # the record is the mapping that starts after "- " on line 1, column 3: missing fields are
    # placed there; an unknown field at its own value ("  colour: red": "red" is line 2, column 11)
    assert messages("formula", data[0], "g.yaml") == [
        "g.yaml:1:3 F9: missing required field 'defined_in'",
        "g.yaml:1:3 F9: missing required field 'examples'",
        "g.yaml:1:3 F9: missing required field 'name'",
        "g.yaml:1:3 F9: missing required field 'output'",
        "g.yaml:1:3 F9: missing required field 'symbols'",
        "g.yaml:1:3 F9: needs either expr, or variants with a selector",
        "g.yaml:2:11 F9: unknown field(s) ('colour' was unexpected)",
    ]


def test_yaml_chapter_section_number_written_as_a_float(tmp_path):
    text = 'chapters:\n  - id: "infra:ch6"\n    title: T\n    title_zh: T\n    sections:\n      - {id: 6.20, title: S}\n'
    data = load(tmp_path, text, "k.yaml")
    # line 6 "      - {id: 6.20, ...": '{' column 9, "id" 10-11, the value column 14; YAML reads 6.20 as 6.2
    assert messages("chapter", data["chapters"][0], "knowledge/k.yaml", "infra:ch6") == [
        f"knowledge/k.yaml:6:14 infra:ch6 sections[0].id: expected a string, got the number 6.2 {NUMBER_HINT}",
    ]


def test_yaml_type_messages_name_plain_types(tmp_path):
    data = load(tmp_path, "- {id: F9, name: [a, b]}\n", "h.yaml")
    found = [str(p) for p in validate("formula", data[0], "h.yaml", "F9") if p.path == "name"]
    # the same record written as a dict gives "got list ['a', 'b']"
    # "- {id: F9, name: [a, b]}": '{' column 3, "name" columns 12-15, '[' column 18
    assert found == ["h.yaml:1:18 F9 name: expected string, got list ['a', 'b']"]


# ------------------------------------------------------------- ids and symbols are identifiers

SYMBOL_NEWLINE_YAML = """\
- id: F9
  name: Example
  section: B.2.1
  defined_in: "infra:6.2"
  output: {symbol: y, unit: B, desc: bytes}
  symbols:
    "x\\n": {desc: bytes per element, unit: B, domain: positive}
  expr: 2 * x
  examples:
    - {set: {x: 2}, expect: 4, source: hand arithmetic 2 * 2 = 4}
"""


def test_a_symbol_with_a_trailing_newline_is_refused_at_its_line(tmp_path):
    # Python's re: '$' matches before a final newline, so "x\n" passed ^[A-Za-z][A-Za-z0-9_]*$
    data = load(tmp_path, SYMBOL_NEWLINE_YAML)
    assert list(data[0]["symbols"]) == ["x\n"]
    # line 7 '    "x\n": {...}': the quoted key starts at column 5
    assert messages("formula", data[0], "f.yaml") == [
        "f.yaml:7:5 F9 symbols: 'x\\n' does not match the expected form ^[A-Za-z][A-Za-z0-9_]*$",
    ]


@pytest.mark.parametrize("field, value, expected", [
    ("id", "F9\n", "t.yaml F9 id: 'F9\\n' does not match the expected form ^(F|FX)[0-9]+$"),
    ("output", {"symbol": "y\n", "unit": "B", "desc": "bytes"},
     "t.yaml F9 output.symbol: 'y\\n' does not match the expected form ^[A-Za-z][A-Za-z0-9_]*$"),
])
def test_ids_and_output_symbols_with_a_trailing_newline_are_refused(field, value, expected):
    assert messages("formula", formula(**{field: value})) == [expected]


def test_a_calculator_symbol_with_a_trailing_newline_is_refused():
    found = validate("calculator", {"id": "calc:x", "outputs": ["y\n"]}, "c.yaml", "calc:x")
    assert "c.yaml calc:x outputs[0]: 'y\\n' does not match the expected form ^[A-Za-z_][A-Za-z0-9_]*$" in [str(p) for p in found]
