"""engine.core.units: unit strings, dimensions and ``--set`` quantities (DESIGN.md, "Outputs").

Every expected number is hand arithmetic written next to it; error tests compare the
project's own message text (STYLE.md habit 7).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core.errors import UnitError
from engine.core.units import (
    DIMENSIONLESS,
    ONE,
    Quantity,
    Unit,
    format_dims,
    lookup,
    parse_quantity,
    parse_unit,
)

KNOWN = (
    "is not a known unit (expected B, bit, FLOP, FLOPS, s, min, h, d, yr, tokens, requests, "
    "W, J, Wh, USD, CNY, gCO2e, GPU, %, 1, with prefixes k M G T P, Ki Mi Gi Ti, or m u n on times)"
)


def dims(**powers: float) -> tuple[float, ...]:
    """Exponents in the order of engine.core.units.BASE: B, FLOP, s, tokens, requests, J, USD, gCO2e."""
    order = ("B", "FLOP", "s", "tokens", "requests", "J", "USD", "g")
    return tuple(float(powers.get(name, 0)) for name in order)


def point(text: str, unit: str) -> float:
    q = parse_quantity(text, unit)
    assert q.low == q.value == q.high, f"{text!r} should be a point quantity, got {q}"
    return q.value


# ------------------------------------------------------------------ DESIGN.md "Outputs" examples


@pytest.mark.parametrize(
    ("text", "unit", "expected"),
    [
        # 80 GiB = 80 * 2**30 B = 80 * 1073741824 = 85899345920 B
        ("80GiB", "B", 85899345920.0),
        # 3.35 TB/s = 3.35 * 10**12 B/s
        ("3.35TB/s", "B/s", 3.35e12),
        # 400 Gb/s = 400e9 bit/s / 8 bit per byte = 5e10 B/s
        ("400Gb/s", "B/s", 5e10),
        # 2 us = 2 * 10**-6 s
        ("2us", "s", 2e-6),
        # 200 ms = 200 * 10**-3 s = 0.2 s
        ("200ms", "s", 0.2),
        # 2.7 h = 2.7 * 3600 s = 9720 s
        ("2.7h", "s", 9720.0),
        # 3 d = 3 * 86400 s = 259200 s
        ("3d", "s", 259200.0),
        # 1 kWh = 1000 W * 3600 s = 3.6e6 J, so 0.1 USD/kWh = 0.1 / 3.6e6 USD/J
        ("0.1USD/kWh", "USD/J", 0.1 / 3.6e6),
        # whitespace between number and unit: still 80 * 2**30 B
        ("80 GiB", "B", 85899345920.0),
        # 1 yr = 365 d = 365 * 86400 s = 31536000 s (units.py: "8760 h")
        ("1yr", "s", 31536000.0),
        # 8760 h = 8760 * 3600 s = 31536000 s, the same year
        ("8760h", "s", 31536000.0),
        # 1 kWh = 1000 * 3600 J = 3600000 J
        ("1kWh", "J", 3.6e6),
        # 1 Gbps = 1e9 bit/s / 8 = 1.25e8 B/s
        ("1Gbps", "B/s", 1.25e8),
        # 1 Kib = 1024 bit = 1024 / 8 B = 128 B
        ("1Kib", "B", 128.0),
        # 1 kB = 1000 B (decimal k)
        ("1kB", "B", 1000.0),
        # 1.5 min = 90 s
        ("1.5min", "s", 90.0),
        # 2 wk = 14 d = 14 * 86400 s = 1209600 s
        ("2wk", "s", 1209600.0),
        # 5 % = 0.05 of a dimensionless 1
        ("5%", "1", 0.05),
        # declared in GiB: 2 TiB = 2 * 1024 GiB = 2048 GiB
        ("2TiB", "GiB", 2048.0),
        # declared in h: 90 min = 1.5 h
        ("90min", "h", 1.5),
        # a bare number is in the declared unit, whatever that unit is
        ("80", "GiB", 80.0),
        # underscores group digits: 1_000 = 1000
        ("1_000", "B", 1000.0),
        # exponent notation: 1.5e3 s = 1500 s
        ("1.5e3s", "s", 1500.0),
        ("-5", "1", -5.0),
        # 3 EB = 3 * 10**18 B (E is exa, not the start of an exponent)
        ("3EB", "B", 3e18),
    ],
)
def test_point_quantities_convert_to_the_declared_unit(text, unit, expected):
    assert point(text, unit) == pytest.approx(expected, rel=1e-12), f"{text} in {unit}"


@pytest.mark.parametrize(
    ("text", "unit", "expected"),
    [
        # 128k with declared unit tokens: the bare prefix k scales it, 128 * 1000 = 128000
        ("128k", "tokens", 128000.0),
        ("128k", "token", 128000.0),
        ("128k", "requests", 128000.0),
        # 4 Ki in B: 4 * 1024 = 4096
        ("4Ki", "B", 4096.0),
        # 2 M FLOP: 2 * 10**6
        ("2M", "FLOP", 2e6),
    ],
)
def test_a_bare_prefix_scales_the_declared_unit(text, unit, expected):
    assert point(text, unit) == expected


# ---------------------------------------------------------------------------------- ranges


@pytest.mark.parametrize("text", ["1h..3h", "1..3h", " 1h .. 3h "])
def test_ranges_with_one_or_both_units_agree(text):
    q = parse_quantity(text, "s")
    # 1 h = 3600 s, 3 h = 10800 s; the value is the midpoint (3600 + 10800) / 2 = 7200 s
    assert (q.low, q.value, q.high) == (3600.0, 7200.0, 10800.0)
    assert q.is_range


def test_range_of_negative_numbers():
    q = parse_quantity("-3..-1", "1")
    # midpoint (-3 + -1) / 2 = -2
    assert (q.low, q.value, q.high) == (-3.0, -2.0, -1.0)


@pytest.mark.parametrize("text", ["40±10%", "40+-10%", "40+/-10%", "40 ± 10%"])
def test_percentage_spread(text):
    q = parse_quantity(text, "1")
    # 10 % of 40 = 4, so 36 .. 44 around 40
    assert (q.low, q.value, q.high) == (36.0, 40.0, 44.0)


def test_absolute_spread_in_the_centres_unit():
    q = parse_quantity("40±5", "1")
    assert (q.low, q.value, q.high) == (35.0, 40.0, 45.0)


def test_spread_with_its_own_unit():
    q = parse_quantity("2h±30min", "s")
    # 2 h = 7200 s, 30 min = 1800 s: 5400 .. 9000 s
    assert (q.low, q.value, q.high) == (5400.0, 7200.0, 9000.0)


def test_spread_borrows_the_centres_unit():
    q = parse_quantity("2h±0.5", "s")
    # the spread 0.5 takes the centre's unit h: 0.5 h = 1800 s
    assert (q.low, q.value, q.high) == (5400.0, 7200.0, 9000.0)


def test_point_quantity_is_not_a_range():
    q = Quantity.point(3.0)
    assert (q.low, q.value, q.high) == (3.0, 3.0, 3.0)
    assert not q.is_range


# -------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("text", "unit", "message"),
    [
        ("80s", "B", "'80s': has unit s (s), expected a quantity in B (B)"),
        ("3TB", "B/s", "'3TB': has unit TB (B), expected a quantity in B/s (B/s)"),
        ("1h", "USD/h", "'1h': has unit h (s), expected a quantity in USD/h (USD/s)"),
        ("80mB", "B", f"'mB': {KNOWN}"),
        ("1KB", "B", f"'KB': {KNOWN}"),
        ("1m", "s", f"'m': {KNOWN}"),
        ("3..1", "1", "'3..1': has its low end 3 above its high end 1 (1)"),
        ("2h..1h", "s", "'2h..1h': has its low end 7200 above its high end 3600 (s)"),
        ("5±-1", "1", "'5±-1': has a negative spread after ±"),
        ("1e400", "1", "'1e400': is not a finite number"),
        # 1e300 EiB = 1e300 * 2**60 B, about 1.15e318 B: above the largest float (about 1.8e308)
        ("1e300EiB", "B", "'1e300EiB': is out of range"),
        ("abc", "1", "'abc': is not a number with an optional unit (expected e.g. 80GiB, 3.35TB/s, 1h..3h, 40±10%)"),
        ("", "1", "'': is not a number with an optional unit (expected e.g. 80GiB, 3.35TB/s, 1h..3h, 40±10%)"),
        ("1..", "1", "'1..': is not a number with an optional unit (expected e.g. 80GiB, 3.35TB/s, 1h..3h, 40±10%)"),
        ("nan", "1", "'nan': is not a number with an optional unit (expected e.g. 80GiB, 3.35TB/s, 1h..3h, 40±10%)"),
        ("inf", "1", "'inf': is not a number with an optional unit (expected e.g. 80GiB, 3.35TB/s, 1h..3h, 40±10%)"),
        ("1\x00", "1", "'1\\x00': is not a readable quantity"),
        ("1" * 201, "1", f"{'1' * 40!r}: is not a readable quantity"),
    ],
)
def test_bad_quantities_are_refused_with_their_message(text, unit, message):
    with pytest.raises(UnitError) as info:
        parse_quantity(text, unit)
    assert str(info.value) == message


def test_small_prefix_on_bytes_is_refused_not_read_as_a_fraction():
    """80mB must not become 0.08 B (units.py: small prefixes apply to time and energy only)."""
    with pytest.raises(UnitError):
        parse_unit("mB")
    with pytest.raises(UnitError):
        parse_unit("mb")
    with pytest.raises(UnitError):
        parse_unit("uFLOP")


def test_capital_k_is_not_a_prefix():
    """DESIGN.md names k M G T P and Ki Mi Gi Ti; 'K' alone is neither (so KB is ambiguous)."""
    with pytest.raises(UnitError) as info:
        lookup("KB")
    assert str(info.value) == f"'KB': {KNOWN}"
    # while KiB is 2**10 = 1024 B and kB is 10**3 = 1000 B
    assert parse_unit("KiB").scale == 1024.0
    assert parse_unit("kB").scale == 1000.0


# ------------------------------------------------------------------------------ unit strings


def test_gpu_hours_are_a_time():
    unit = parse_unit("GPU·h")
    # GPU is dimensionless, h = 3600 s
    assert unit.dims == dims(s=1)
    assert unit.scale == 3600.0
    assert format_dims(unit.dims) == "s"
    # juxtaposition and * read the same
    assert parse_unit("GPU h").same_as(unit)
    assert parse_unit("GPU*h").same_as(unit)


def test_flops_is_flop_per_second():
    assert parse_unit("FLOPS").same_as(parse_unit("FLOP/s"))
    assert format_dims(parse_unit("FLOPS").dims) == "FLOP/s"
    # 1 TFLOPS = 10**12 FLOP/s
    assert parse_unit("TFLOPS").scale == 1e12


def test_watts_are_joules_per_second_and_bits_are_eighth_bytes():
    assert parse_unit("W").same_as(parse_unit("J/s"))
    # 1 bit = 1/8 B = 0.125 B
    assert parse_unit("bit").same_as(Unit(0.125, dims(B=1)))
    # 1 Wh = 3600 J
    assert parse_unit("Wh").same_as(Unit(3600.0, dims(J=1)))
    # 1 MW = 10**6 J/s
    assert parse_unit("MW").same_as(Unit(1e6, dims(J=1, s=-1)))


def test_year_is_365_days():
    # units.py defines yr as 365 * 86400 s (8760 h); not the 365.25-day Julian year
    assert parse_unit("yr").scale == 365 * 86400.0
    assert parse_unit("yr").same_as(parse_unit("d") * Unit(365.0, DIMENSIONLESS))


@pytest.mark.parametrize(
    ("text", "scale", "expected_dims"),
    [
        ("B/s", 1.0, dims(B=1, s=-1)),
        ("FLOP/(s*GPU)", 1.0, dims(FLOP=1, s=-1)),
        # 1 USD/kWh = 1 USD / 3.6e6 J
        ("USD/kWh", 1 / 3.6e6, dims(USD=1, J=-1)),
        ("s^2", 1.0, dims(s=2)),
        ("s**2", 1.0, dims(s=2)),
        # 1/h = 1/3600 per s
        ("h^-1", 1 / 3600, dims(s=-1)),
        ("1", 1.0, DIMENSIONLESS),
        ("%", 0.01, DIMENSIONLESS),
        ("GPUs", 1.0, DIMENSIONLESS),
        # 1 tCO2e = 10**6 gCO2e
        ("tCO2e", 1e6, dims(g=1)),
        ("kgCO2e/kWh", 1e3 / 3.6e6, dims(g=1, J=-1)),
        # 1 GiB/s = 2**30 B/s = 1073741824 B/s
        ("GiB/s", 1073741824.0, dims(B=1, s=-1)),
        ("B/tokens", 1.0, dims(B=1, tokens=-1)),
        ("tokens/(s·GPU)", 1.0, dims(tokens=1, s=-1)),
        ("((((((((B))))))))", 1.0, dims(B=1)),
    ],
)
def test_parse_unit(text, scale, expected_dims):
    unit = parse_unit(text)
    assert unit.dims == expected_dims, text
    assert unit.scale == pytest.approx(scale, rel=1e-12), text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "'': is empty (expected a unit such as B, B/s, FLOP/s or 1)"),
        ("   ", "'   ': is empty (expected a unit such as B, B/s, FLOP/s or 1)"),
        ("Bytes", f"'Bytes': {KNOWN}"),
        ("B^5", "'B^5': has an exponent that is not an integer from -4 to 4"),
        ("B^x", "'B^x': has an exponent that is not an integer from -4 to 4"),
        ("(((((((((B)))))))))", "'(((((((((B)))))))))': nests parentheses too deeply"),
        ("(B", "'(B': is missing ')'"),
        ("B)", "'B)': has an unexpected ')'"),
        ("B/", "'B/': has 'nothing' where a unit name was expected"),
        ("2", "'2': has '2' where a unit name was expected"),
        ("B#", "'B#': has an unexpected character '#'"),
        ("x" * 201, "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...': is too long for a unit"),
    ],
)
def test_bad_units_are_refused_with_their_message(text, message):
    with pytest.raises(UnitError) as info:
        parse_unit(text)
    assert str(info.value) == message


def test_unit_arithmetic():
    kib = parse_unit("KiB")
    s = parse_unit("s")
    assert (kib / s).same_as(parse_unit("KiB/s"))
    assert (kib * kib).same_as(parse_unit("KiB^2"))
    # (KiB^2)^0.5 = KiB: scale (1024**2)**0.5 = 1024
    assert (kib**2) ** 0.5 == kib
    assert ONE.dimensionless and not kib.dimensionless
    assert kib.same_dimension(parse_unit("B")) and not kib.same_as(parse_unit("B"))


# --------------------------------------------------------------------------------- format_dims


@pytest.mark.parametrize(
    ("powers", "expected"),
    [
        (dims(), "1"),
        (dims(B=1), "B"),
        (dims(B=1, s=-1), "B/s"),
        (dims(s=-1), "1/s"),
        (dims(FLOP=1, s=-1, tokens=-1), "FLOP/(s·tokens)"),
        (dims(B=2), "B^2"),
        (dims(B=0.5), "B^0.5"),
        (dims(s=-2), "1/s^2"),
        (dims(USD=1, J=-1), "USD/J"),
        (dims(g=1), "gCO2e"),
        (dims(B=1, FLOP=1), "B·FLOP"),
        (dims(J=1, s=-1), "J/s"),
    ],
)
def test_format_dims(powers, expected):
    assert format_dims(powers) == expected


# ------------------------------------------------------------------------ float limits


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # (2**60)**4 = 2**240, then **4 = 2**960, then **4 = 2**3840; and (2**60)**5 = 2**300,
        # then **4 = 2**1200. Both are above the float maximum (about 2**1024): float ** overflows
        ("((EiB^4)^4)^4", "'((EiB^4)^4)^4': has a scale too large to represent"),
        ("(EiB EiB EiB EiB EiB)^4", "'(EiB EiB EiB EiB EiB)^4': has a scale too large to represent"),
        # EiB^4 = 2**240; six of them multiplied = 2**1440 > 2**1024: the product becomes inf
        ("EiB^4*EiB^4*EiB^4*EiB^4*EiB^4*EiB^4",
         "'EiB^4*EiB^4*EiB^4*EiB^4*EiB^4*EiB^4': has a scale too large or too small to represent"),
        # 1 / (2**960)**3 = 2**-2880, below the smallest float (about 2**-1074): the scale becomes 0
        ("1/(EiB^4)^4/(EiB^4)^4/(EiB^4)^4",
         "'1/(EiB^4)^4/(EiB^4)^4/(EiB^4)^4': has a scale too large or too small to represent"),
    ],
)
def test_a_unit_scale_beyond_float_range_is_refused(text, message):
    with pytest.raises(UnitError) as info:
        parse_unit(text)
    assert str(info.value) == message


def test_range_midpoint_of_large_ends_is_finite():
    q = parse_quantity("1e308..1e308", "1")
    # both ends are 1e308 (below the float maximum, about 1.797e308), so the midpoint is 1e308;
    # (lo + hi) / 2 would overflow to inf on the way
    assert (q.low, q.value, q.high) == (1e308, 1e308, 1e308)


@pytest.mark.parametrize("text", ["1.7e308+-100%", "1e308±1e308"])
def test_spread_that_overflows_is_refused(text):
    # 1.7e308 + 100 % = 3.4e308 and 1e308 + 1e308 = 2e308: both above the float maximum
    with pytest.raises(UnitError) as info:
        parse_quantity(text, "1")
    assert str(info.value) == f"{text!r}: is out of range"


@pytest.mark.parametrize("text", ["1e308E", "1e308P", "9e307k", "1e308Ei"])
def test_a_bare_prefix_that_overflows_is_refused(text):
    # 1e308 * 1e18 (E), 1e308 * 1e15 (P), 9e307 * 1e3 (k) and 1e308 * 2**60 (Ei) are all above
    # the float maximum (about 1.797e308): the point path used to return inf
    with pytest.raises(UnitError) as info:
        parse_quantity(text, "B")
    assert str(info.value) == f"{text!r}: is out of range"


def test_an_overflowing_prefix_names_the_set_field():
    from engine.core.errors import InputError
    from engine.numeric.evaluate import read_input

    with pytest.raises(InputError) as info:
        read_input("hbm", "1e308E", {"unit": "B"})
    assert str(info.value) == "--set hbm: '1e308E' is out of range"


# ------------------------------------------------------------------------------- random text

_UNIT_TOKENS = st.sampled_from(
    ["B", "GiB", "EiB", "kB", "KB", "mB", "b", "s", "ms", "h", "yr", "GPU", "FLOPS", "W", "kWh", "USD",
     "tokens", "%", "1", "2", "-1", "4", "5", "^", "**", "*", "·", "/", "(", ")", " ", "µ", "$", "_",
     "\x00", "..", "±", "+-", "e", "E", "1e308", "0", ".", "-", "k", "Ki", "1e-320"]
)
_UNIT_TEXT = st.one_of(st.text(max_size=40), st.lists(_UNIT_TOKENS, max_size=14).map("".join))
_QUANTITY_TEXT = st.one_of(
    st.text(max_size=40),
    st.lists(st.one_of(_UNIT_TOKENS, st.sampled_from(["3", "3.5", "80", "1_0", ".5", "+"])), max_size=14).map("".join),
)
_FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow])


@_FUZZ
@given(_UNIT_TEXT)
def test_parse_unit_returns_a_unit_or_raises_unit_error(text):
    try:
        unit = parse_unit(text)
    except UnitError:
        return
    assert isinstance(unit, Unit)
    assert len(unit.dims) == 8


@_FUZZ
@given(_QUANTITY_TEXT, st.sampled_from(["B", "s", "1", "B/s", "USD/J", "tokens", "GPU·h"]))
def test_parse_quantity_returns_a_quantity_or_raises_unit_error(text, unit):
    try:
        q = parse_quantity(text, unit)
    except UnitError:
        return
    assert isinstance(q, Quantity)


@pytest.mark.parametrize(
    ("text", "unit", "base"),
    [
        ("100KiB", "B/tokens", 102_400.0),  # issue 28: --le 100KiB for bytes per token means 100 KiB per token
        ("1GB", "B/requests", 1e9),  # per request
        ("2TFLOP", "FLOP/tokens", 2e12),
    ],
)
def test_a_quantity_per_count_accepts_the_amount_per_one(text, unit, base):
    assert parse_quantity(text, unit).value == pytest.approx(base)


@pytest.mark.parametrize(("text", "unit"), [("100tokens", "tokens/s"), ("1GB", "B/s"), ("100tokens", "FLOP")])
def test_only_a_count_is_implied_never_time(text, unit):
    with pytest.raises(UnitError, match="has unit"):
        parse_quantity(text, unit)
