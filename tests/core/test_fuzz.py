"""Fuzzing the trust boundary: expression strings and quantity strings from hostile files or flags.

Random expressions (numbers, declared symbols, operators, the allowed functions, Piecewise,
and junk text spliced in) go through parse, the SymPy build, the dimension check and the
code generator; random quantity strings go through parse_quantity. The contract: each
either succeeds or raises one of the project's error classes (engine/core/errors.py), never
anything else. The budget is fixed (derandomized, a set number of examples) so the test
is repeatable and stays within a few seconds.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core import codegen, symbolic
from engine.core.dimensions import dimension_of
from engine.core.errors import AiinfraError
from engine.core.expr import parse
from engine.core.units import parse_quantity, parse_unit

DOMAINS = {"a": "positive", "b": "nonnegative", "n": "positive_integer", "f": "fraction", "r": "real", "t": "positive"}
UNITS = {"a": "B", "b": "B", "n": "1", "f": "1", "r": "1", "t": "s"}
DIMS = {name: parse_unit(unit).dims for name, unit in UNITS.items()}
TABLE = symbolic.make_symbols(DOMAINS)
NAMES = {name: f"v_{name}" for name in DOMAINS}
FUZZ = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))

# --------------------------------------------------------------------- expression grammar

numbers = st.one_of(
    st.sampled_from(["0", "1", "-1", "2"]),  # the edges: x/0, sqrt(-1), log(0), log(x, 1)
    st.integers(-3, 12).map(str),
    st.sampled_from(["0", "0.0", "1e30", "1e31", "1e308", "1e-320", "10**30", "2**64", "0x10", "1_000", "1" * 45, "0x" + "f" * 40]),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
)
symbols = st.sampled_from([*DOMAINS, "zz", "__class__", "I", "E"])
leaves = st.one_of(numbers, symbols)


def _compound(children):
    pair = st.tuples(children, children)
    return st.one_of(
        st.tuples(children, st.sampled_from(["+", "-", "*", "/", "**", "//", "%", "<", "and"]), children).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        children.map(lambda c: f"-({c})"),
        st.tuples(st.sampled_from(["sqrt", "exp", "ceiling", "floor", "Abs", "log", "eval", "Min", "Max"]), st.lists(children, min_size=1, max_size=3)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"
        ),
        st.tuples(st.sampled_from(["Min", "Max"]), pair).map(lambda t: f"{t[0]}({t[1][0]}, {t[1][1]})"),
        st.tuples(pair, children).map(lambda t: f"Piecewise(({t[0][0]}, {t[0][1]} > {t[1]}), ({t[1]}, True))"),
        st.tuples(children, st.integers(-70, 70)).map(lambda t: f"({t[0]})**{t[1]}"),
    )


expressions = st.recursive(leaves, _compound, max_leaves=12)


@st.composite
def mangled(draw, base):
    """An expression with junk text spliced in somewhere."""
    text = draw(base)
    junk = draw(st.one_of(st.text(max_size=6), st.sampled_from(["\n", "\x00", "(", ")", ",", ".__class__", "[0]", "lambda: 1", "'", "**", "1e", "..", "Â"])))
    at = draw(st.integers(0, len(text)))
    return text[:at] + junk + text[at:]


def _through_the_pipeline(text: str) -> None:
    try:
        tree = parse(text, set(DOMAINS))
        symbolic.to_sympy(tree, TABLE)
        dimension_of(tree, DIMS)
        for numpy in (False, True):
            compile(codegen.to_python(tree, NAMES, numpy=numpy), "<fuzz>", "eval")  # the generated text is valid Python
    except AiinfraError:
        pass


@FUZZ
@given(expressions)
def test_grammar_expressions_meet_the_contract(text):
    _through_the_pipeline(text)


@FUZZ
@given(st.one_of(mangled(expressions), st.text(max_size=40)))
def test_expressions_with_junk_meet_the_contract(text):
    _through_the_pipeline(text)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(expressions)
def test_monotonicity_of_grammar_expressions_meets_the_contract(text):
    try:
        expr = symbolic.to_sympy(parse(text, set(DOMAINS)), TABLE)
    except AiinfraError:
        return
    if not expr.is_Boolean:
        assert symbolic.monotonicity(expr, TABLE["a"], seconds=0.5) in ("increasing", "decreasing", "constant", None)


# ------------------------------------------------------------------------ quantity strings

quantity_numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e308", "9e307", "1.7e308", "nan", "inf", "-inf", "1_0", "1" * 199, "1" * 400, ".5", "-0", "1e-400"]),
    st.integers(-(10**20), 10**20).map(str),
)
quantity_units = st.sampled_from(["", "k", "M", "G", "T", "P", "E", "Ki", "Ei", "GiB", "TB/s", "ms", "h", "kWh", "%", "USD/h", "mB", "B/s/s", "("])
near_the_top = st.tuples(st.sampled_from(["1e308", "9e307", "1.7e308", "1e300"]), st.sampled_from(["k", "P", "E", "Ei", "EB", "TB/s", ""])).map("".join)
quantity_texts = st.one_of(
    near_the_top,
    st.tuples(quantity_numbers, quantity_units).map("".join),
    st.tuples(quantity_numbers, quantity_units, quantity_numbers, quantity_units).map(lambda t: f"{t[0]}{t[1]}..{t[2]}{t[3]}"),
    st.tuples(near_the_top, near_the_top).map("..".join),
    st.tuples(quantity_numbers, quantity_units, st.sampled_from(["±", "+-", "+/-"]), quantity_numbers, quantity_units).map("".join),
    st.text(max_size=30),
)


@FUZZ
@given(quantity_texts, st.sampled_from(["B", "B/s", "s", "1", "W", "USD/h"]))
def test_quantity_strings_meet_the_contract(text, unit):
    try:
        q = parse_quantity(text, unit)
    except AiinfraError:
        return
    assert all(math.isfinite(v) for v in q) and q.low <= q.value <= q.high, (text, q)

