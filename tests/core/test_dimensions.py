"""engine.core.dimensions: the dimension walker accepts consistent expressions and names the bad term."""

from __future__ import annotations

import pytest

from engine.core.dimensions import dimension_of
from engine.core.errors import DimensionError
from engine.core.expr import parse
from engine.core.units import DIMENSIONLESS, format_dims, parse_unit

UNITS = {"m": "B", "t": "s", "n": "1", "bw": "B/s", "f": "FLOP", "p": "W"}
DIMS = {name: parse_unit(unit).dims for name, unit in UNITS.items()}


def dims_of(text: str) -> str:
    return format_dims(dimension_of(parse(text, set(DIMS)), DIMS))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("m", "B"),
        ("m / bw", "s"),  # B / (B/s) = s
        ("bw * t", "B"),  # B/s * s = B
        ("m + bw * t", "B"),
        ("m - m * n", "B"),
        ("-m", "B"),
        ("f / t", "FLOP/s"),
        ("p * t", "J"),  # W = J/s, times s = J
        ("m * m", "B^2"),
        ("m ** 2 / m", "B"),
        ("m ** -2", "1/B^2"),
        ("m ** (2 - 1)", "B"),  # a symbol-free exponent: 2 - 1 = 1
        ("m ** (1/2)", "B^0.5"),
        ("sqrt(m * m)", "B"),  # sqrt halves B^2 to B
        ("sqrt(m)", "B^0.5"),
        ("m ** 0", "1"),
        ("n ** n", "1"),
        ("exp(n)", "1"),
        ("log(n)", "1"),
        ("log(n, 2)", "1"),
        ("ceiling(m / bw)", "s"),
        ("floor(t)", "s"),
        ("Abs(m)", "B"),
        ("Min(m, bw * t)", "B"),
        ("Max(m, bw * t, 0)", "B"),  # a literal 0 fits any dimension
        ("m + 0", "B"),
        ("0 - t", "s"),
        ("Piecewise((m, n > 1), (bw * t, True))", "B"),
        ("Piecewise((0, n > 1), (m, True))", "B"),
        ("Piecewise((m, t > 0), (m, True))", "B"),
        ("Piecewise((m, m > bw * t and n < 2), (m, True))", "B"),
        ("n", "1"),
        ("3", "1"),
    ],
)
def test_consistent_expressions(text, expected):
    assert dims_of(text) == expected


def test_a_lone_zero_is_dimensionless():
    assert dimension_of(parse("0", set()), {}) == DIMENSIONLESS


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("m + t", "in 'm + t': the term 't' is in s but 'm' is in B"),
        ("m - bw", "in 'm - bw': the term 'bw' is in B/s but 'm' is in B"),
        ("n + m", "in 'n + m': the term 'm' is in B but 'n' is in 1"),
        ("Max(m, t)", "in 'Max(m, t)': the term 't' is in s but 'm' is in B"),
        ("Min(0, m, t)", "in 'Min(0, m, t)': the term 't' is in s but 'm' is in B"),
        (
            "Piecewise((m, n > 1), (t, True))",
            "in the branches of 'Piecewise((m, n > 1), (t, True))': the term 't' is in s but 'm' is in B",
        ),
        ("Piecewise((m, m > t), (m, True))", "in the comparison 'm > t': the term 't' is in s but 'm' is in B"),
        ("m ** n", "in 'm ** n': the base 'm' is in B, so the exponent must be a number"),
        ("m ** (n - n)", "in 'm ** (n - n)': the base 'm' is in B, so the exponent must be a number"),
        ("n ** m", "in 'n ** m': the exponent 'm' must be dimensionless, it is in B"),
        ("exp(m)", "in 'exp(m)': the argument 'm' of exp must be dimensionless, it is in B"),
        ("log(t)", "in 'log(t)': the argument 't' of log must be dimensionless, it is in s"),
        ("log(n, m)", "in 'log(n, m)': the argument 'm' of log must be dimensionless, it is in B"),
        ("sqrt(m + t)", "in 'm + t': the term 't' is in s but 'm' is in B"),
    ],
)
def test_inconsistent_expressions_name_the_offending_term(text, message):
    with pytest.raises(DimensionError) as info:
        dims_of(text)
    assert info.value.message == message
    assert str(info.value) == message
