"""engine.core.symbolic: the SymPy builder refuses what SymPy finds undefined; monotonicity runs under a time budget.

The parser (engine.core.expr) refuses constant cases; these are the ones only SymPy's own
simplification reveals, which the compiled-module build reports at the record's file:line.
"""

from __future__ import annotations

import logging
import time

import pytest
import sympy as sp

from engine.core import symbolic
from engine.core.errors import ExprError, KnowledgeError
from engine.core.expr import parse
from engine.kb.formulas import build_formula
from engine.numeric import compiled

POSITIVE = {"a": "positive", "b": "positive", "x": "positive"}


def build(text: str):
    return symbolic.to_sympy(parse(text, set(POSITIVE)), symbolic.make_symbols(POSITIVE))


@pytest.mark.parametrize("text, start", [
    # x > 0, so SymPy rewrites log(-x) as log(x) + I*pi and sqrt(-x) as I*sqrt(x); Max then raises
    ("Max(log(-x), b)", "cannot be built symbolically: "),
    ("Min(sqrt(-x), b)", "cannot be built symbolically: "),
    ("x * log(-x)", "is undefined, infinite or not real: SymPy reduces 'x * log(-x)' to "),
    # sqrt(a + b) and sqrt(b + a) are one SymPy object, so the difference is 0 and 1/0 is zoo
    ("a / (sqrt(a + b) - sqrt(b + a))", "is undefined, infinite or not real: SymPy reduces "),
])
def test_expressions_sympy_reduces_to_undefined_values_are_refused(text, start):
    with pytest.raises(ExprError) as info:
        build(text)
    assert info.value.reason.startswith(start), info.value.reason


def test_an_ordinary_expression_still_builds():
    a, b = sp.symbols("a b", positive=True)
    assert build("a * log(b) + sqrt(a)") == a * sp.log(b) + sp.sqrt(a)


def _formula(expr: str):
    raw = {
        "id": "F1", "name": "F1", "section": "B.2.1", "defined_in": "infra:6.2",
        "output": {"symbol": "y", "unit": "1", "desc": "y"},
        "symbols": {"x": {"desc": "x", "unit": "1", "domain": "positive"}}, "expr": expr,
        "examples": [{"set": {"x": 1}, "expect": 1, "source": "not evaluated here"}],
    }
    formula, problems = build_formula(raw, "formulas/t.yaml:3")
    assert problems == []  # the parser cannot see that x > 0 makes log(-x) complex
    return formula


def test_the_compiled_build_reports_a_sympy_refusal_at_the_record_place():
    with pytest.raises(KnowledgeError) as info:
        compiled.generate([_formula("x * log(-x)")])
    [problem] = info.value.problems
    assert (problem.place, problem.id, problem.path) == ("formulas/t.yaml:3", "F1", "expr")
    assert problem.message.startswith("is undefined, infinite or not real: SymPy reduces 'x * log(-x)' to ")


# ------------------------------------------------------------------ monotonicity time budget


def test_monotonicity_past_its_budget_is_unknown_with_one_line(monkeypatch, caplog):
    def endless(expr, symbol, checks=None):
        time.sleep(30)
        return "increasing"

    monkeypatch.setattr(symbolic, "_monotonicity", endless)
    monkeypatch.setattr(symbolic, "_structural", lambda expr, symbol, ends=None: None)  # the slow path is taken
    x = sp.Symbol("x", positive=True)
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="aiinfra"):
        assert symbolic.monotonicity(2 * x, x, seconds=0.2) is None
    assert time.monotonic() - start < 5
    assert caplog.messages == ["monotonicity of 2*x in x could not be decided within 0.2 s; treated as unknown"]


def test_a_slow_real_simplification_is_cut_off():
    # (a - b)**63 * (a + c)**63 - a*(b - c)**40: SymPy does not sign this derivative in 20 s here,
    # and factoring it can sit in one C-level gcd the budget's signal cannot interrupt, so powers
    # above MAX_FACTORED_POWER are left unknown before factoring
    a, b, c = sp.symbols("a b c", positive=True)
    start = time.monotonic()
    assert symbolic.monotonicity((a - b) ** 63 * (a + c) ** 63 - a * (b - c) ** 40, a, seconds=0.05) is None
    assert time.monotonic() - start < 2


def test_monotonicity_within_budget_is_unchanged():
    x = sp.Symbol("x", positive=True)
    assert symbolic.monotonicity(2 * x + 1, x) == "increasing"
    assert symbolic.monotonicity(1 / x, x) == "decreasing"


# ------------------------------------------------------------------ monotonicity over bounded domains (#12)


def test_a_bounded_domain_signs_one_minus_the_fraction():
    # prefill time F = P (1 - h) / (T p m): dF/dm = -P (1 - h) / (T p m^2) < 0 because h < 1
    names = ("P", "T", "pk", "m")
    P, T, pk, m = sp.symbols(names, positive=True)
    h = sp.Symbol("h", nonnegative=True)
    expr = P * (1 - h) / (T * pk * m)
    assert symbolic.monotonicity(expr, m) is None  # without h's upper end the sign of 1 - h is unknown
    domains = {h: "fraction_below_one", m: "fraction", P: "positive", T: "positive_integer", pk: "positive"}
    assert symbolic.monotonicity(expr, m, domains=domains) == "decreasing"
    assert symbolic.monotonicity(expr, h, domains=domains) == "decreasing"
    # the TP degree from a TTFT target: Max(1, 2**ceiling(log2(...))) falls as m rises
    tp = sp.Max(1, 2 ** sp.ceiling(sp.log(expr, 2)))
    assert symbolic.monotonicity(tp, m, domains=domains) == "decreasing"


_X = sp.Symbol("x", nonnegative=True)


@pytest.mark.parametrize("expr, domain, expected", [
    (_X * (1 - _X), "fraction", None),             # rises to x = 1/2, then falls
    ((_X - 1) * _X, "fraction", None),             # falls to x = 1/2, then rises; x - 1 < 0 there
    (sp.exp(-_X) * _X, None, None),                # x >= 0: rises to x = 1, then falls
    (sp.exp(-_X) * _X, "fraction", "increasing"),  # on [0, 1] it only rises: d/dx = (1 - x) e^-x
    (sp.log(_X * (2 - _X) + 1), None, None),       # the argument peaks at x = 1
    ((1 - _X) ** 3, "fraction", "decreasing"),
    (_X / (1 + _X), None, "increasing"),           # through the derivative: 1/(1 + x)**2
])
def test_the_structural_rules_refuse_what_is_not_monotone(expr, domain, expected):
    assert symbolic.monotonicity(expr, _X, domains={_X: domain} if domain else None) == expected


def test_indicators_and_nonnegative_factors_compose():
    d, n, g, c = sp.symbols("d n g c", nonnegative=True)
    covered = sp.Piecewise((1, d <= n * g), (0, True))  # FX146: 1 while the demand fits the capacity
    assert symbolic.monotonicity(covered, d) == "decreasing"
    assert symbolic.monotonicity(covered, g) == "increasing"
    backlog = sp.Max(0, d - n * g) * c  # FX147: the cold start may be 0 (a factor >= 0, not > 0)
    assert symbolic.monotonicity(backlog, d) == "increasing"
    assert symbolic.monotonicity(backlog, g) == "decreasing"
    assert symbolic.monotonicity(backlog, c) == "increasing"
    assert symbolic.monotonicity(sp.Max(0, d - 1) * (d - 2), d) is None  # d - 2 may be negative


def test_scaling_shapes_find_where_an_input_cancels():
    from engine.numeric.calc_ranges import _degree

    q, L, B, c, d, g, n, h = sp.symbols("qps L B conc demand gpus load h", positive=True)
    shape = symbolic.scaling_shape(sp.Min(q * L * B / c, d * g / n))
    # conc, demand and load all scale with qps (degree 1): both parts have degree 1 - 1 = 0
    assert _degree(shape, {"qps": 1.0, "conc": 1.0, "demand": 1.0, "load": 1.0}) == 0.0
    assert _degree(shape, {"qps": 1.0, "conc": 1.0, "demand": 1.0}) is None  # the parts disagree (0 and 1)
    assert _degree(symbolic.scaling_shape(q * (1 - h)), {"qps": 1.0}) == 1.0
    assert _degree(symbolic.scaling_shape(q * (1 - h)), {"h": 1.0}) is None  # h sits inside another factor
    assert _degree(symbolic.scaling_shape(q + 1), {"qps": 1.0}) is None  # not homogeneous
    assert _degree(symbolic.scaling_shape(sp.ceiling(q / c)), {"qps": 1.0, "conc": 1.0}) == 0.0
    assert symbolic.scaling_shape(sp.Piecewise((q, q > 1), (1, True))) is None
