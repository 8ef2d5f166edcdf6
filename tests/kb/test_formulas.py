"""engine.kb.formulas: every shipped worked example reproduces its cited value; symbol rules hold.

The expected values live in the YAML next to their sources (paper tables, datasheets,
official configs, the book's worked numbers, hand arithmetic); this test evaluates each
one through the compiled numeric path and prints the source when it fails.
"""

from __future__ import annotations

import math

import pytest

from engine.kb.formulas import FormulaSet, build_formula
from engine.kb.knowledge import Knowledge
from engine.numeric import compiled
from engine.numeric.evaluate import evaluate

SHIPPED = Knowledge.load(None, strict=False)
EXAMPLES = [(f.id, i) for f in SHIPPED.formulas for i in range(len(f.examples))]


@pytest.fixture(scope="module")
def module():
    return compiled.from_formulas(SHIPPED.formulas)


@pytest.mark.parametrize("fid, index", EXAMPLES, ids=[f"{f}-ex{i}" for f, i in EXAMPLES])
def test_worked_example(fid, index, module):
    f = SHIPPED.formulas.get(fid)
    ex = f.examples[index]
    got = evaluate(module.FORMULAS[fid], module, ex.set).outputs[f.output.symbol].value
    assert math.isclose(got, ex.expect, rel_tol=ex.rel_tol), f"{fid} example {index}: got {got}, expected {ex.expect} (source: {ex.source})"


def test_every_formula_has_a_cited_example():
    for f in SHIPPED.formulas:
        assert f.examples, f.id
        assert all(len(e.source) > 10 for e in f.examples), f.id


def test_formulas_cover_several_appendix_b_areas():
    assert len(SHIPPED.formulas) >= 15
    assert len({f.section for f in SHIPPED.formulas}) >= 6


def _raw(fid, out_symbol, out_unit, symbols, expr):
    return {
        "id": fid, "name": fid, "section": "B.2.1", "defined_in": "infra:6.2",
        "output": {"symbol": out_symbol, "unit": out_unit, "desc": out_symbol},
        "symbols": symbols, "expr": expr,
        "examples": [{"set": {}, "expect": 1, "source": "not evaluated here"}],
    }


def test_records_build_without_files_and_chain_through_the_graph():
    a, problems_a = build_formula(_raw("F1", "flops", "FLOP", {"n": {"desc": "n", "unit": "FLOP", "domain": "positive"}}, "2 * n"), "t:1")
    b, problems_b = build_formula(_raw("F2", "time", "s", {"flops": {"desc": "c", "unit": "FLOP", "domain": "positive"}, "rate": {"desc": "r", "unit": "FLOP/s", "domain": "positive"}}, "flops / rate"), "t:2")
    assert problems_a == problems_b == []
    fs = FormulaSet([a, b])
    assert fs.problems() == []
    assert fs.used_by("F1") == ["F2"]
    g = fs.graph()
    assert g.edges["flops", "time"]["formula"] == "F2"


def test_a_cycle_between_formulas_is_reported_with_its_path():
    a, _ = build_formula(_raw("F1", "x", "s", {"y": {"desc": "y", "unit": "s", "domain": "positive"}}, "2 * y"), "t:1")
    b, _ = build_formula(_raw("F2", "y", "s", {"x": {"desc": "x", "unit": "s", "domain": "positive"}}, "x / 2"), "t:2")
    messages = [p.message for p in FormulaSet([a, b]).problems()]
    assert any(m.startswith("the formula graph has a cycle: ") and " --> " in m for m in messages), messages


def test_variants_must_cover_every_selector_value():
    raw = _raw("F1", "x", "B", {"mode": {"desc": "m", "domain": "categorical", "values": ["a", "b"]}, "y": {"desc": "y", "unit": "B", "domain": "positive"}}, "")
    del raw["expr"]
    raw["selector"] = "mode"
    raw["variants"] = [{"when": "a", "expr": "y"}, {"when": "c", "expr": "2 * y"}]
    _, problems = build_formula(raw, "t:1")
    assert [str(p) for p in problems] == [
        "t:1 F1 variants[1].when: 'c' is not one of mode's values (a, b)",
        "t:1 F1 variants: mode=b needs exactly one variant, found 0",
    ]


def test_an_unused_symbol_is_reported():
    _, problems = build_formula(_raw("F1", "x", "B", {"y": {"desc": "y", "unit": "B", "domain": "positive"}, "z": {"desc": "z", "unit": "B", "domain": "positive"}}, "y"), "t:1")
    assert [str(p) for p in problems] == ["t:1 F1 symbols.z: is declared but no expression uses it"]


def test_per_token_outputs_check_their_count_unit():
    raw = _raw("F1", "bpt", "B/tokens", {"y": {"desc": "y", "unit": "B", "domain": "positive"}}, "y")
    _, problems = build_formula(raw, "t:1")
    assert [str(p) for p in problems] == ["t:1 F1 expr: the expression is in B but the output bpt is declared in B/tokens (B/tokens)"]
    raw["output"]["per"] = "tokens"
    assert build_formula(raw, "t:1")[1] == []


# ------------------------------------------------------- hostile records refused, never a traceback

POSITIVE_B = {"desc": "y", "unit": "B", "domain": "positive"}


def test_a_symbol_name_that_is_not_an_identifier_is_a_problem_without_the_schema():
    _, problems = build_formula(_raw("F1", "x", "B", {"y\n": POSITIVE_B}, "y"), "t:1")
    assert [str(p) for p in problems] == ["t:1 F1 symbols.y\n: 'y\\n' is not a symbol name (expected a letter, then letters, digits or _)"]
    _, problems = build_formula(_raw("F1", "x-1", "B", {"y": POSITIVE_B}, "y"), "t:1")
    assert [str(p) for p in problems] == ["t:1 F1 output.symbol: 'x-1' is not a symbol name (expected a letter, then letters, digits or _)"]


def test_a_formula_id_with_a_trailing_newline_is_a_problem():
    _, problems = build_formula(_raw("F1\n", "x", "B", {"y": POSITIVE_B}, "y"), "t:1")
    assert [str(p) for p in problems] == ["t:1 F1\n id: 'F1\\n' is not a formula id (expected F<n> or FX<n>)"]


@pytest.mark.parametrize("expr, reason", [
    ("Max(y/0, y)", "'y / 0' divides by zero"),
    ("Min(sqrt(-1), y)", "'sqrt(-1)' takes the square root of a negative number (the result is not real)"),
    ("y * log(0, 0)", "'log(0, 0)' takes the logarithm of zero (the result is not a real number)"),
])
def test_expressions_sympy_cannot_build_are_refused_at_load_with_their_place(expr, reason):
    _, problems = build_formula(_raw("F1", "x", "B", {"y": POSITIVE_B}, expr), "formulas/t.yaml:3")
    assert [str(p) for p in problems] == [f"formulas/t.yaml:3 F1 expr: {reason}"]


def test_an_example_too_large_for_a_float_is_a_problem_not_an_overflow():
    raw = _raw("F1", "x", "B", {"y": POSITIVE_B}, "y")
    raw["examples"][0]["expect"] = 10**400  # float(10**400) raises OverflowError
    _, problems = build_formula(raw, "t:1")
    # 10**400 needs floor(400 * log2(10)) + 1 = floor(1328.77) + 1 = 1329 bits
    assert [str(p) for p in problems] == ["t:1 F1 examples[0].expect: a 1329-bit integer is not a finite number below 1.8e308"]


def test_a_default_with_more_than_4300_digits_is_a_problem_not_a_value_error():
    symbols = {"y": {**POSITIVE_B, "default": 10**5000, "default_source": "s"}}
    _, problems = build_formula(_raw("F1", "x", "B", symbols, "y"), "t:1")
    # 10**5000: floor(5000 * log2(10)) + 1 = floor(16609.64) + 1 = 16610 bits
    assert [str(p) for p in problems] == ["t:1 F1 symbols.y.default: a 16610-bit integer is not a finite number below 1.8e308"]


def test_an_expression_error_points_at_the_line_of_its_field(tmp_path):
    # the record starts on line 1; its expr is on line 7, and that is the line a reader must open
    from engine.kb.formulas import build_formula
    from engine.kb.yamlio import load_yaml

    text = """- id: FX999
  name: bad
  output: {symbol: zz_out, unit: s, desc: x}
  symbols:
    px: {unit: s, domain: positive, desc: x}
    py: {unit: s, domain: positive, desc: x}
  expr: Max(px/0, py)
  examples: []
"""
    (tmp_path / "f.yaml").write_text(text)
    data, problems = load_yaml(tmp_path / "f.yaml", "f.yaml")
    assert problems == []
    _, problems = build_formula(data[0], "f.yaml:1")
    assert [(p.place, p.path) for p in problems] == [("f.yaml:7", "expr")]
