"""engine.core.codegen and engine.core.symbolic: both are built from one parsed Node and must agree.

The generated Python (math and NumPy flavours) and the SymPy expression are evaluated at the
same points; a few values are also checked against hand arithmetic. monotonicity() is
checked on cases whose answer follows from calculus by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from engine.core import codegen, symbolic
from engine.core.expr import parse

DOMAINS = {"a": "positive", "b": "positive", "x": "positive", "r": "real", "f": "fraction", "k": "positive_integer"}
TABLE = symbolic.make_symbols(DOMAINS)


def compile_both(text: str):
    """(math function, numpy function, sympy expression, input names) for one expression."""
    node = parse(text, set(DOMAINS))
    inputs = sorted(node.symbols())
    names = {n: f"v_{n}" for n in inputs}
    args = ", ".join(names[n] for n in inputs)
    source = "\n".join(
        [
            codegen.PRELUDE,
            f"def fn({args}):\n    return {codegen.to_python(node, names)}",
            f"def fn_np({args}):\n    import numpy as _np\n    return {codegen.to_python(node, names, numpy=True)}",
        ]
    )
    namespace: dict = {}
    exec(compile(source, f"<codegen {text}>", "exec"), namespace)  # source built from a whitelisted tree
    return namespace["fn"], namespace["fn_np"], symbolic.to_sympy(node, TABLE), inputs


def sympy_value(expr, point: dict[str, float]) -> float:
    """SymPy's value at the decimal numbers as written (0.7 is 7/10 exactly, not the binary float)."""
    value = expr.subs({TABLE[n]: sp.Rational(repr(v)) for n, v in point.items()})
    return float(sp.N(value, 30))


CASES = [
    "2*a + b/x",
    "-a + 0.1*b",
    "sqrt(a*b)",
    "x**(1/2) * a**-2",
    "log(x)",
    "log(x, 2)",
    "exp(-x/a)",
    "ceiling(a/b)",
    "floor(a/b) + ceiling(x)",
    "Min(a, b, x)",
    "Max(a - b, 0)",
    "Abs(a - b*x)",
    "Piecewise((a, x < 1), (b, x < 2), (a + b, True))",
    "Piecewise((a*x, x > 1 and a < b), (b, not x > 2), (x, True))",
    "Piecewise((Min(a, x), x <= 1 or x >= 3), (Max(b, x) ** 2, True))",
    "ceiling(Max(a, x) / 2) * sqrt(b)",
]
POINTS = [
    {"a": 3.0, "b": 4.0, "x": 0.5},
    {"a": 3.0, "b": 4.0, "x": 1.5},
    {"a": 5.0, "b": 2.5, "x": 3.0},
    {"a": 0.7, "b": 9.0, "x": 2.25},
]


@pytest.mark.parametrize("text", CASES)
def test_generated_python_agrees_with_sympy(text):
    fn, fn_np, expr, inputs = compile_both(text)
    for point in POINTS:
        args = [point[n] for n in inputs]
        expected = sympy_value(expr, {n: point[n] for n in inputs})
        got = fn(*args)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), (text, point)
        got_np = float(fn_np(*[np.float64(v) for v in args]))
        assert got_np == pytest.approx(expected, rel=1e-12, abs=1e-12), (text, point, "numpy")


@pytest.mark.parametrize("text", CASES)
def test_numpy_twin_is_elementwise(text):
    fn, fn_np, _expr, inputs = compile_both(text)
    columns = [np.array([p[n] for p in POINTS]) for n in inputs]
    vector = np.asarray(fn_np(*columns), dtype=float) * np.ones(len(POINTS))
    scalar = [fn(*[p[n] for n in inputs]) for p in POINTS]
    assert vector == pytest.approx(scalar, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(
    ("text", "point", "expected"),
    [
        # Piecewise picks the first true branch: x = 0.5 < 1 -> a = 3; x = 1.5 -> b = 4; x = 3 -> a + b = 7
        ("Piecewise((a, x < 1), (b, x < 2), (a + b, True))", {"a": 3.0, "b": 4.0, "x": 0.5}, 3.0),
        ("Piecewise((a, x < 1), (b, x < 2), (a + b, True))", {"a": 3.0, "b": 4.0, "x": 1.5}, 4.0),
        ("Piecewise((a, x < 1), (b, x < 2), (a + b, True))", {"a": 3.0, "b": 4.0, "x": 3.0}, 7.0),
        # log(8, 2) = 3 since 2**3 = 8
        ("log(x, 2)", {"x": 8.0}, 3.0),
        # sqrt(3 * 12) = sqrt(36) = 6
        ("sqrt(a*b)", {"a": 3.0, "b": 12.0}, 6.0),
        # ceiling(7 / 2) = ceiling(3.5) = 4; floor(7 / 2) = 3
        ("ceiling(a/b)", {"a": 7.0, "b": 2.0}, 4.0),
        ("floor(a/b)", {"a": 7.0, "b": 2.0}, 3.0),
        # Max(3 - 4, 0) = Max(-1, 0) = 0; Min(3, 4, 0.5) = 0.5
        ("Max(a - b, 0)", {"a": 3.0, "b": 4.0}, 0.0),
        ("Min(a, b, x)", {"a": 3.0, "b": 4.0, "x": 0.5}, 0.5),
        # 0.3 / 0.1 is 3 in exact arithmetic but 3.0000000000000004 in binary floats; the
        # generated ceiling forgives that noise (codegen.py docstring), so the answer is 3, not 4
        ("ceiling(a/b)", {"a": 0.3, "b": 0.1}, 3.0),
        ("floor(a/b)", {"a": 0.7, "b": 0.1}, 7.0),  # 0.7/0.1 = 6.999999999999999 in floats; exactly 7
    ],
)
def test_hand_computed_values(text, point, expected):
    fn, fn_np, expr, inputs = compile_both(text)
    args = [point[n] for n in inputs]
    assert fn(*args) == expected
    assert float(fn_np(*args)) == expected
    assert sympy_value(expr, point) == pytest.approx(expected, rel=1e-15)


def test_ceiling_of_constant_noise_agrees_with_exact_sympy():
    fn, _fn_np, expr, _inputs = compile_both("ceiling(0.3/0.1)")
    # SymPy builds 3/10 / (1/10) = 3 exactly from the Fractions the parser keeps
    assert expr == sp.Integer(3)
    assert fn() == 3


def test_literals_are_emitted_as_floats():
    assert codegen.to_python(parse("0.25 + 2", set()), {}) == "((0.25) + 2.0)"
    # 1/3 stays a division of two literals
    assert codegen.to_python(parse("1/3", set()), {}) == "(1.0 / 3.0)"
    assert codegen.to_python(parse("-x", {"x"}), {"x": "v_x"}) == "(-v_x)"


def test_sympy_built_from_the_tree():
    a, b, x = TABLE["a"], TABLE["b"], TABLE["x"]
    assert symbolic.to_sympy(parse("2*a + b/x", set(DOMAINS)), TABLE) == 2 * a + b / x
    # 0.1 is kept exact: the Rational 1/10, not a Float
    assert symbolic.to_sympy(parse("0.1*a", set(DOMAINS)), TABLE) == sp.Rational(1, 10) * a
    pw = symbolic.to_sympy(parse("Piecewise((a, x < 1), (b, True))", set(DOMAINS)), TABLE)
    assert pw == sp.Piecewise((a, x < 1), (b, True))


def test_make_symbols_carries_domain_assumptions():
    assert TABLE["a"].is_positive
    assert TABLE["k"].is_integer and TABLE["k"].is_positive
    assert TABLE["f"].is_nonnegative and TABLE["f"].is_positive is None
    assert TABLE["r"].is_real and TABLE["r"].is_positive is None


def test_latex_sets_long_names_upright():
    table = symbolic.make_symbols({"kv_heads": "positive"})
    expr = symbolic.to_sympy(parse("kv_heads", {"kv_heads"}), table)
    assert symbolic.latex(expr) == "\\mathrm{kv\\_heads}"
    assert symbolic.latex(expr, "y") == "y = \\mathrm{kv\\_heads}"


# ------------------------------------------------------------------------------ monotonicity


def mono(text: str, var: str = "x"):
    expr = symbolic.to_sympy(parse(text, set(DOMAINS)), TABLE)
    return symbolic.monotonicity(expr, TABLE[var])


@pytest.mark.parametrize(
    ("text", "var", "expected"),
    [
        ("2*x", "x", "increasing"),  # d/dx = 2 > 0
        ("1/x", "x", "decreasing"),  # d/dx = -1/x**2 < 0
        ("x**2", "x", "increasing"),  # 2x > 0 for positive x
        ("r**2", "r", None),  # 2r has no fixed sign for real r
        ("exp(-x)", "x", "decreasing"),
        ("log(x)", "x", "increasing"),
        ("sqrt(x)", "x", "increasing"),
        ("x/(x + 1)", "x", "increasing"),  # d/dx = 1/(x + 1)**2 > 0
        ("1 - f", "f", "decreasing"),
        ("a", "x", "constant"),  # x does not appear
        ("ceiling(x/4)", "x", "increasing"),  # ceiling is non-decreasing
        ("floor(x)", "x", "increasing"),
        ("ceiling(a/k)", "k", "decreasing"),
        ("Min(x, 5)", "x", "increasing"),
        ("-Min(x, 5)", "x", "decreasing"),
        ("3 + 2*Max(x, a)", "x", "increasing"),
        ("Max(x, 10 - x)", "x", None),  # falls then rises
        ("Piecewise((x, x < 5), (10 - x, True))", "x", None),  # rises then falls
        ("x*r", "x", None),  # the sign of r decides
        ("Abs(r)", "r", None),
    ],
)
def test_monotonicity(text, var, expected):
    assert mono(text, var) == expected


@pytest.mark.parametrize(
    "text",
    [
        # x = 1 -> ceiling(1/4)*4 - 1 = 3; x = 4 -> 4 - 4 = 0: not constant, not monotone
        "ceiling(x/4)*4 - x",
        # x = 2 -> 2 - 1 = 1; x = 2.5 -> 2.5 - 2 = 0.5; x = 4 -> 4 - 2 = 2: falls then rises
        "x - ceiling(x/2)",
        # x = 1 -> 0; x = 1.5 -> 0.5; x = 2 -> 0: a sawtooth
        "x - floor(x)",
    ],
)
def test_monotonicity_of_sawtooth_expressions_is_unknown(text):
    assert mono(text) is None
