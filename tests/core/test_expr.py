"""engine.core.expr: the whitelisted expression parser refuses everything outside its grammar.

Refusals compare the project's own reason text (STYLE.md habit 7). The random-text tests
accept exactly two outcomes: a Node, or an ExprError.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core import symbolic
from engine.core.errors import ExprError
from engine.core.expr import MAX_DEPTH, MAX_LENGTH, Node, constant_value, parse, parse_condition

ABX = frozenset({"a", "b", "x"})
ALLOWED = "(expected numbers, declared symbols, + - * / **, comparisons and sqrt, log, exp, ceiling, floor, Min, Max, Abs, Piecewise)"
FUNCS = "(expected one of sqrt, log, exp, ceiling, floor, Min, Max, Abs, Piecewise)"


def refusal(text: object, symbols=ABX) -> ExprError:
    with pytest.raises(ExprError) as info:
        parse(text, symbols)
    return info.value


# ----------------------------------------------------------------------- malicious input

# each case: (expression, the reason ExprError gives)
MALICIOUS = [
    ("x.__class__", f"attribute access is not allowed {ALLOWED}"),
    ("().__class__.__bases__", f"attribute access is not allowed {ALLOWED}"),
    ("x.__class__.__mro__[1].__subclasses__()", f"calling 'x.__class__.__mro__[1].__subclasses__' is not allowed {FUNCS}"),
    ("x[0]", f"subscripting is not allowed {ALLOWED}"),
    ("x[1:2]", f"subscripting is not allowed {ALLOWED}"),
    ("lambda: 1", f"lambda is not allowed {ALLOWED}"),
    ("(lambda q: q)(x)", f"calling 'lambda q: q' is not allowed {FUNCS}"),
    ("'os'", "the constant 'os' is not allowed (expected a number)"),
    ("b'os'", "the constant b'os' is not allowed (expected a number)"),
    ("f'{x}'", f"an f-string is not allowed {ALLOWED}"),
    ("y", "the name 'y' is not a declared symbol"),
    ("x + y", "the name 'y' is not a declared symbol"),
    ("foo(x)", f"the function 'foo' is not allowed {FUNCS}"),
    ("eval('1')", f"the function 'eval' is not allowed {FUNCS}"),
    ("open('/etc/passwd')", f"the function 'open' is not allowed {FUNCS}"),
    ("__import__('os')", f"the function '__import__' is not allowed {FUNCS}"),
    ("__import__('os').system('true')", f"calling \"__import__('os').system\" is not allowed {FUNCS}"),
    ("__builtins__", "the name '__builtins__' is not allowed (dunder names are refused)"),
    ("__class__ + x", "the name '__class__' is not allowed (dunder names are refused)"),
    ("sqrt(x=1)", "sqrt() takes no keyword arguments"),
    ("Max(a, b, key=x)", "Max() takes no keyword arguments"),
    ("Min(*x)", "Min() takes no starred arguments"),
    ("Max(**x)", "Max() takes no keyword arguments"),
    ("9**9**9**9", "the exponent in '9 ** 9 ** 9' is itself a power (exponent towers are refused)"),
    ("x**2**3", "the exponent in 'x ** 2 ** 3' is itself a power (exponent towers are refused)"),
    ("x**exp(2)", "the exponent in 'x ** exp(2)' is itself a power (exponent towers are refused)"),
    ("x**1000", "the exponent in 'x ** 1000' is too large (at most 64 in magnitude)"),
    ("x**-101", "the exponent in 'x ** (-101)' is too large (at most 64 in magnitude)"),
    ("10**(99*99)", "the exponent in '10 ** (99 * 99)' is too large (at most 64 in magnitude)"),
    ("x\x00", "contains a NUL byte"),
    ("\x00", "contains a NUL byte"),
    ("(" * 500 + "x" + ")" * 500, f"nests too deeply (at most {MAX_DEPTH} levels)"),
    # 50 digits: more than MAX_DIGITS = 40, so refused before any arithmetic on it
    ("1" * 50, "the number 11111111111111111111... is too large (at most 1e+30)"),
    # 10**30 + 1 has 31 digits but exceeds MAX_LITERAL = 10**30; the message shows its first 20 digits
    ("1" + "0" * 29 + "1", "the number 10000000000000000000... is too large (at most 1e+30)"),
    # 1e400 is above the float maximum (about 1.8e308): Python reads it as inf
    ("1e400", "the number inf is too large (at most 1e+30)"),
    ("1j", "the constant 1j is not allowed (expected a number)"),
    ("...", "the constant Ellipsis is not allowed (expected a number)"),
    ("None", "the constant None is not allowed (expected a number)"),
    ("True", "the constant True is not allowed (expected a number)"),
    ("Piecewise((a, x > 1))", "Piecewise needs a default branch: make the last pair (value, True)"),
    ("Piecewise((a, x > 1), (b, x <= 1))", "Piecewise needs a default branch: make the last pair (value, True)"),
    ("Piecewise((a, True), (b, True))", "Piecewise has a True condition before its last branch"),
    ("Piecewise(a, True)", "Piecewise argument 1 must be a pair (value, condition)"),
    ("Piecewise((a, x > 1, b), (b, True))", "Piecewise argument 1 must be a pair (value, condition)"),
    ("a if b else x", f"a conditional expression (use Piecewise) is not allowed {ALLOWED}"),
    ("(x := 1)", f"an assignment expression is not allowed {ALLOWED}"),
    ("[x for x in a]", f"a comprehension is not allowed {ALLOWED}"),
    ("(x for x in a)", f"a comprehension is not allowed {ALLOWED}"),
    ("{x: 1 for x in a}", f"a comprehension is not allowed {ALLOWED}"),
    ("[x]", f"a list is not allowed {ALLOWED}"),
    ("(a, b)", f"a tuple is not allowed {ALLOWED}"),
    ("{a: b}", f"a dict is not allowed {ALLOWED}"),
    ("a and b", "'and'/'or' are only allowed inside a Piecewise condition"),
    ("a or b", "'and'/'or' are only allowed inside a Piecewise condition"),
    ("not x", "'not' in 'not x' is only allowed inside a Piecewise condition"),
    ("~x", "the unary operator in '~x' is not allowed"),
    ("x // 2", "the operator '//' is not allowed (expected + - * / **)"),
    ("x % 2", "the operator '%' is not allowed (expected + - * / **)"),
    ("x @ a", "the operator '@' is not allowed (expected + - * / **)"),
    ("x << 2", "the operator '<<' is not allowed (expected + - * / **)"),
    ("a is b", "the comparison 'a is b' is only allowed as a Piecewise condition"),
    ("a in b", "the comparison 'a in b' is only allowed as a Piecewise condition"),
    ("Piecewise((a, a is b), (b, True))", "the comparison Is is not allowed (expected < <= > >= == !=)"),
    ("sqrt", "the function 'sqrt' must be called with arguments"),
    ("sqrt()", "sqrt() takes 1 argument, got 0"),
    ("sqrt(a, b)", "sqrt() takes 1 argument, got 2"),
    ("log(a, b, x)", "log() takes 1 to 2 arguments, got 3"),
    ("Max(a)", "Max() takes 2 to 16 arguments, got 1"),
    ("x +", "is not a valid expression (invalid syntax)"),
    ("", "is empty"),
    ("   ", "is empty"),
    (5, "expected an expression string, got int"),
    (None, "expected an expression string, got NoneType"),
]


@pytest.mark.parametrize(("text", "reason"), MALICIOUS, ids=[repr(t)[:40] for t, _ in MALICIOUS])
def test_malicious_or_malformed_expressions_are_refused(text, reason):
    error = refusal(text)
    assert error.reason == reason
    assert str(error) == f"expr: {reason}"


def test_dunder_names_are_refused_even_when_declared():
    assert refusal("__x", {"__x"}).reason == "the name '__x' is not allowed (dunder names are refused)"


def test_an_expression_over_the_length_limit_is_refused():
    text = "x+" * 2500  # 5000 characters
    assert len(text) == 5000
    assert refusal(text).reason == f"is 5000 characters long (at most {MAX_LENGTH})"


def test_deep_nesting_without_many_parentheses_is_refused():
    # 45 nested calls: 45 '(' is under the 4 * MAX_DEPTH = 160 parenthesis guard, but the tree
    # is 45 levels deep, over MAX_DEPTH = 40
    text = "sqrt(" * 45 + "x" + ")" * 45
    assert refusal(text).reason == f"nests too deeply (at most {MAX_DEPTH} levels)"


def test_a_long_left_deep_sum_is_refused_as_too_deep():
    # x+x+...+x with 100 terms parses left-deep: 99 levels of '+'
    assert refusal("+".join(["x"] * 100)).reason == f"nests too deeply (at most {MAX_DEPTH} levels)"


def test_a_wide_shallow_tree_over_the_node_limit_is_refused():
    # 3 Max calls of 16 products of 30 x's: a product of 30 x's is 30 names + 29 '*' = 59
    # nodes, so the tree has 1 + 3 * (1 + 16 * 59) = 2836 nodes > MAX_NODES = 2000, with depth
    # about 32 and under 4000 characters
    chain = "*".join(["x"] * 30)
    text = "Max(" + ",".join(["Max(" + ",".join([chain] * 16) + ")"] * 3) + ")"
    assert len(text) < MAX_LENGTH
    assert refusal(text).reason == "is too large (at most 2000 nodes)"


def test_unary_minus_tower_is_refused():
    assert refusal("-" * 3990 + "x").reason in {
        "cannot be parsed (too deep or too large)",
        f"nests too deeply (at most {MAX_DEPTH} levels)",
    }


def test_error_can_be_located():
    error = refusal("y").located("formulas/memory.yaml:42", "F6", "variants[1].expr")
    assert str(error) == "formulas/memory.yaml:42 F6 variants[1].expr: the name 'y' is not a declared symbol"


# ---------------------------------------------------------------------- accepted expressions


def test_simple_expression_tree():
    node = parse("2*x + 1", ABX)
    two, x = Node("num", Fraction(2), src="2"), Node("sym", "x", src="x")
    assert node == Node("bin", "+", (Node("bin", "*", (two, x), "2 * x"), Node("num", Fraction(1), src="1")), "2 * x + 1")
    assert node.symbols() == {"x"}


def test_decimal_literals_are_exact_fractions():
    assert parse("0.1", ABX).value == Fraction(1, 10)
    assert parse("-3", ABX) == Node("num", Fraction(-3), src="-3")
    assert parse("+x", ABX) == Node("sym", "x", src="x")


def test_chained_comparison_becomes_and():
    node = parse("Piecewise((a, a < b <= x), (b, True))", ABX)
    cond = node.args[1]
    assert cond.kind == "and"
    assert [(c.kind, c.value, c.src) for c in cond.args] == [("cmp", "<", "a < b"), ("cmp", "<=", "b <= x")]


def test_piecewise_layout_is_value_cond_then_default():
    node = parse("Piecewise((a, x > 1), (b, x > 2 and not x > 3), (x, True))", ABX)
    assert node.kind == "piecewise"
    assert [n.kind for n in node.args] == ["sym", "cmp", "sym", "and", "sym"]
    assert node.args[3].args[1].kind == "not"
    assert node.symbols() == {"a", "b", "x"}


@pytest.mark.parametrize(
    "text",
    ["x**64", "x**-64", "x**(1/2)", "x**x", "sqrt(a*b)", "log(x, 2)", "ceiling(a/b)", "floor(x)", "Abs(a - b)",
     "Min(a, b, x)", "exp(-x)", "1" + "0" * 30, "Piecewise((a, True))"],
)
def test_allowed_expressions_parse(text):
    assert isinstance(parse(text, ABX), Node)


def test_constant_value():
    assert constant_value(parse("1/2", ABX)) == Fraction(1, 2)
    assert constant_value(parse("-(3 - 5) * 2", ABX)) == Fraction(4)  # -(3 - 5) * 2 = 2 * 2 = 4
    one_over_zero = Node("bin", "/", (Node("num", Fraction(1)), Node("num", Fraction(0))))  # parse refuses 1/0
    assert constant_value(one_over_zero) is None
    assert constant_value(parse("x + 1", ABX)) is None


# ------------------------------------------------------------- SymPy names are ordinary symbols


def test_sympy_names_stay_ordinary_symbols():
    names = {"I", "E", "N", "S", "beta", "gamma", "Q"}
    table = symbolic.make_symbols({n: "positive" for n in names})
    node = parse("I*E", names)
    expr = symbolic.to_sympy(node, table)
    assert expr.free_symbols == {table["I"], table["E"]}
    assert not expr.has(sp.I) and not expr.has(sp.E)

    node = parse("N*S + beta*gamma - Q", names)
    expr = symbolic.to_sympy(node, table)
    assert expr.free_symbols == {table[n] for n in ("N", "S", "beta", "gamma", "Q")}
    assert all(isinstance(s, sp.Symbol) for s in expr.free_symbols)
    # a numeric check: I=2, E=3 -> I*E = 6, not 2j * e
    assert symbolic.to_sympy(parse("I*E", names), table).subs({table["I"]: 2, table["E"]: 3}) == 6


# ------------------------------------------------------------------- constant powers, conditions


def test_left_nested_constant_power_tower_is_refused():
    # ((10**30)**60) = 1e1800 already exceeds 1e300; SymPy would otherwise build 10**(30*60**4)
    assert refusal("((((10**30)**60)**60)**60)**60").reason == (
        "the power '(10 ** 30) ** 60' is too large (a constant power must stay below 1e300)"
    )


def test_a_constant_power_below_the_cap_is_kept():
    # 10**30 ** 2 = 1e60 < 1e300
    assert parse("(10**30)**2 * x", ABX).kind == "bin"


@pytest.mark.parametrize(
    "text, reason",
    [
        ("x + (a < b)", "the comparison 'a < b' is only allowed as a Piecewise condition"),
        ("Min(a < b, x)", "the comparison 'a < b' is only allowed as a Piecewise condition"),
        ("Piecewise((a, x + 1), (b, True))", "the condition 'x + 1' is not a comparison (expected e.g. x > 0, joined with and/or/not)"),
        ("Piecewise((a, -True), (b, True))", "the condition '-True' is not a comparison (expected e.g. x > 0, joined with and/or/not)"),
        ("Piecewise((a, x > 1 and 2), (b, True))", "the condition '2' is not a comparison (expected e.g. x > 0, joined with and/or/not)"),
    ],
)
def test_comparisons_only_as_conditions_and_conditions_only_boolean(text, reason):
    assert refusal(text).reason == reason


def test_conditions_with_and_or_not_build_in_sympy():
    table = symbolic.make_symbols({n: "positive" for n in ABX})
    node = parse("Piecewise((a, (x > 1 and not a < b) or b >= 3), (b, True))", ABX)
    expr = symbolic.to_sympy(node, table)
    # x=2, a=5, b=1: (2 > 1 and not 5 < 1) -> True -> a = 5
    assert expr.subs({table["x"]: 2, table["a"]: 5, table["b"]: 1}) == 5


# ------------------------------------------------------------------------------- random text

_TOKENS = st.sampled_from(
    ["a", "b", "x", "y", "I", "0", "1", "9", "10", "0.5", "1e400", "1e3", "12345678901234567890123456789012345",
     "+", "-", "*", "/", "**", "//", "%", "@", "<", "<=", "==", "!=", ">", " and ", " or ", "not ", "~",
     "(", ")", ",", "__", "__class__", ".", "[", "]", "lambda", ":", ":=", "'", '"', "f'", "{", "}", "\x00",
     " ", "\n", "\\", "#", "Piecewise", "Max", "Min", "sqrt", "log", "exp", "ceiling", "Abs", "True", "False",
     " if ", " else ", " for ", " in ", "__import__", "import", "=", "*", "**", "j", "…", "ｘ", "\t", ";"]
)
_EXPR_TEXT = st.one_of(st.text(max_size=60), st.lists(_TOKENS, max_size=30).map("".join))
_FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow])


@_FUZZ
@given(_EXPR_TEXT)
def test_parse_returns_a_node_or_raises_expr_error(text):
    try:
        node = parse(text, {"a", "b", "x"})
    except ExprError:
        return
    assert isinstance(node, Node)
    assert node.symbols() <= {"a", "b", "x"}, f"{text!r} let an undeclared name through"


# ------------------------------------------- what SymPy may be asked: defined, real, bounded constants

DEGENERATE = [
    # constants SymPy turns into zoo, nan or I (and Max/Min then raise "not comparable")
    ("Max(x/0, b)", "'x / 0' divides by zero"),
    ("Max(x, 1/0)", "'1 / 0' divides by zero"),
    ("Min(sqrt(-1), x)", "'sqrt(-1)' takes the square root of a negative number (the result is not real)"),
    ("log(0, 0)", "'log(0, 0)' takes the logarithm of zero (the result is not a real number)"),
    ("x * log(-2)", "'log(-2)' takes the logarithm of a negative number (the result is not a real number)"),
    ("log(x, 1)", "'log(x, 1)' has a logarithm base that is not positive and different from 1"),
    ("(-8)**(1/3) * x", "'(-8) ** (1 / 3)' is not a real number"),
    # symbols that cancel: SymPy reduces x - x to 0 and x/x to 1 as it builds
    ("Max(x/(x - x), b)", "'x / (x - x)' divides by zero"),
    ("1/(a*b - b*a)", "'1 / (a * b - b * a)' divides by zero"),
    ("log(x/x - 1)", "'log(x / x - 1)' takes the logarithm of zero (the result is not a real number)"),
    ("(a - a)**(-1)", "'(a - a) ** (-1)' divides by zero"),
    # constant magnitude: exp(10**30) has about 4e29 digits; exp(691) > 1.8e308 overflows a float
    ("x * exp(10**30)", "'exp(10 ** 30)' is too large (a constant must stay below 1e300 in magnitude)"),
    ("x * floor(exp(691))", "'exp(691)' is too large (a constant must stay below 1e300 in magnitude)"),
    # (10**30)**9 = 1e270 and (10**30)**2 = 1e60 each pass; their product 1e330 does not
    ("ceiling((10**30)**9 * (10**30)**2) * x", "'(10 ** 30) ** 9 * (10 ** 30) ** 2' is too large (a constant must stay below 1e300 in magnitude)"),
    # degree: (x**64)**64 is x**4096; 64 + 64 + 1 = 129 > 128
    ("(x**64)**64", "has degree 4096 (at most 128): a power or product that large is refused"),
    ("x**64 * a**64 * b", "has degree 129 (at most 128): a power or product that large is refused"),
    ("x**(a - a + 200)", "has degree 201 (at most 128): a power or product that large is refused"),
]


@pytest.mark.parametrize("text, reason", DEGENERATE)
def test_expressions_sympy_would_make_undefined_are_refused(text, reason):
    assert refusal(text).reason == reason


@pytest.mark.parametrize("text", ["x * exp(690)", "x / (x + 1)", "log(x/x + 1)", "(a - b)**(-1)", "x**64 * a**64", "ceiling(10**30 / 7) * x"])
def test_defined_constants_and_non_cancelling_sums_are_accepted(text):
    # exp(690) = 1.1e299 < 1e300; x/x + 1 = 2; a - b does not cancel; degree 64 + 64 = 128
    assert isinstance(parse(text, ABX), Node)


def test_a_5000_digit_literal_is_refused_without_the_int_limit_escaping():
    # the text is over MAX_LENGTH; a 4,000-digit literal fits under it and is still only a number
    assert refusal("1" * 5000).reason == f"is 5000 characters long (at most {MAX_LENGTH})"
    assert refusal("1" * 3998 + "*x").reason == "the number 11111111111111111111... is too large (at most 1e+30)"
    assert refusal("x*" + "1" * 3998).reason == "the number 11111111111111111111... is too large (at most 1e+30)"


def test_a_hex_literal_past_4300_decimal_digits_is_refused_not_a_value_error():
    # 0x + 3998 f's is 16**3998 - 1: 4 * 3998 = 15992 bits, about 4814 decimal digits, so
    # str() of it raises ValueError (Python's 4,300-digit limit); the text is within MAX_LENGTH
    assert refusal("0x" + "f" * 3998).reason == "the number of 15992 bits is too large (at most 1e+30)"


@pytest.mark.parametrize("text, why", [
    ("a > 1), (1, b > 2", "is not a valid expression"),  # spliced into Piecewise((1, <text>), (0, True)) it would add a branch
    ("a > 1, b > 2", "is not one condition"),
    ("", "is empty"),
    ("a >", "is not a valid expression"),
])
def test_a_condition_must_be_one_expression_on_its_own(text, why):
    with pytest.raises(ExprError, match=why):
        parse_condition(text, {"a", "b"})


def test_a_condition_parses_to_one_and_zero_branches():
    tree = parse_condition("a > 1 and b <= 2", {"a", "b"})
    assert tree.kind == "piecewise" and sorted(tree.symbols()) == ["a", "b"]


def test_a_bad_literal_gives_one_expr_error_and_no_syntax_warning():
    # Python warns "invalid decimal literal" while parsing '1x'; a user must see only the ExprError
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ExprError, match="invalid decimal literal"):
            parse("1x + 2", {"x"})
