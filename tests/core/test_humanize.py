"""engine.core.humanize: friendly numbers and second readings for text and Markdown output.

Expected strings are worked out by hand from the rules in engine/core/humanize.py: integers
below 1e7 print exactly (grouped by a narrow no-break space, U+202F, from 10 000 up);
otherwise 4 significant digits, in exponent form outside [1e-3, 1e6).
"""

from __future__ import annotations

import pytest

from engine.core.humanize import friendly, number

NB = "\u202f"  # narrow no-break space, the thousands separator


@pytest.mark.parametrize("x, text", [
    (0, "0"),
    (0.0, "0"),
    (8, "8"),
    (9999, "9999"),
    (10000, f"10{NB}000"),
    (147456, f"147{NB}456"),  # 2 * 36 * 8 * 128 * 2, Qwen3-8B KV bytes per token
    (147456.0, f"147{NB}456"),
    (-20000, f"-20{NB}000"),
    (1500000.0, f"1{NB}500{NB}000"),
    (9999999, f"9{NB}999{NB}999"),
    (10000000, "1e7"),  # 1e7 is no longer below 1e7: 1.000e+07 -> "1e7"
    (17090000.0, "1.709e7"),  # 1.709e+07
    (0.4, "0.4"),
    (0.5, "0.5"),
    (1234.5678, "1235"),  # 4 significant digits
    (3.14159, "3.142"),
    (0.001, "0.001"),
    (0.0001234, "1.234e-4"),  # below 1e-3: 1.234e-04
    (2.5e-5, "2.5e-5"),  # 2.500e-05, trailing zeros dropped
    (1234567.5, "1.235e6"),  # not an integer and >= 1e6
    (-0.25, "-0.25"),
])
def test_number(x, text):
    assert number(x) == text


def test_number_digits():
    assert number(3.14159, digits=3) == "3.14"
    assert number(0.0001234, digits=2) == "1.2e-4"


def test_number_passes_strings_through():
    assert number("mha") == "mha"
    assert number("") == ""


@pytest.mark.parametrize("x, text", [(float("inf"), "inf"), (float("-inf"), "-inf"), (float("nan"), "nan")])
def test_number_of_non_finite_values(x, text):
    assert number(x) == text


@pytest.mark.parametrize("value, unit, text", [
    # 147456 / 1024 = 144 KiB; 147456 / 1000 = 147.456 -> 147.5 kB
    (147456, "B", "144 KiB = 147.5 kB"),
    # 80 GiB = 80 * 2**30 = 85899345920 B; / 1e9 = 85.899... -> 85.9 GB
    (80 * 2**30, "B", "80 GiB = 85.9 GB"),
    (1024, "B", "1 KiB = 1.024 kB"),
    (1023, "B", ""),
    (7200, "s", "2 h"),  # 7200 / 3600
    (90, "s", "1.5 min"),  # 90 / 60
    (30, "s", ""),  # seconds already read well
    (1, "s", ""),
    (0.002, "s", "2 ms"),
    (3e-6, "s", "3 us"),
    (5e-10, "s", "0.5 ns"),  # below 1 ns: 5e-10 * 1e9 = 0.5
    (17089920, "s", "197.8 d"),  # 197.8 * 86400 = 17089920
    (31536000, "s", "1 yr"),  # 365 * 86400
    (-7200, "s", "-2 h"),
    (3.35e12, "B/s", "3.35 TB/s"),  # H100 SXM HBM3 bandwidth, 3.35 TB/s datasheet figure
    (989e12, "FLOP/s", "989 TFLOP/s"),  # H100 SXM dense BF16, 989 TFLOPS datasheet figure
    (700e3, "W", "700 kW"),
    (700, "W", ""),  # no prefix: nothing to add
    (3.6e6, "J", "3.6 MJ"),
    (2.5e3, "tokens/s", "2.5 ktokens/s"),
    (4e11, "bit/s", "400 Gbit/s"),
    (6e20, "FLOP", "600 EFLOP"),  # largest prefix is E (1e18): 6e20 / 1e18 = 600
])
def test_friendly(value, unit, text):
    assert friendly(value, unit) == text


@pytest.mark.parametrize("value, unit", [
    (0, "B"),
    (float("nan"), "B"),
    (float("inf"), "s"),
    ("80GiB", "B"),
    (147456, "B/tokens"),
    (5, "GPU"),
    (5, "1"),
])
def test_friendly_has_nothing_to_add(value, unit):
    assert friendly(value, unit) == ""
