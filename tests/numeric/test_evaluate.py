"""engine.numeric.evaluate: numeric evaluation of compiled formulas, points and ranges.

The formulas are built here from raw records (no files) and compiled once for the module.
Expected numbers are hand arithmetic written next to each assertion; error tests compare
the project's own message text.
"""

from __future__ import annotations

import math

import pytest

from engine.core.errors import EvaluationError, InputError
from engine.kb.formulas import FormulaSet, build_formula
from engine.numeric import compiled
from engine.numeric.evaluate import evaluate

GIB = 2**30  # 1 GiB = 1073741824 B


def sym(desc: str, unit: str, domain: str = "positive", **extra) -> dict:
    return {"desc": desc, "unit": unit, "domain": domain, **extra}


def raw_formula(fid: str, output: tuple[str, str], symbols: dict, expr: str | None = None, **extra) -> dict:
    raw = {
        "id": fid,
        "name": f"test formula {fid}",
        "section": "B.2.1",
        "defined_in": "infra:1.1",
        "output": {"symbol": output[0], "unit": output[1], "desc": f"output of {fid}"},
        "symbols": symbols,
        "examples": [{"set": {}, "expect": 1.0, "source": "not checked by these tests"}],
        **extra,
    }
    if expr is not None:
        raw["expr"] = expr
    return raw


RAW = [
    # transfer time = bytes / bandwidth, with units that need scaling (GiB, GB/s)
    raw_formula(
        "F901", ("transfer_time", "s"),
        {"b": sym("bytes to move", "GiB"),
         "bw": sym("link bandwidth", "GB/s", default=2, default_source="a 2 GB/s test link")},
        "b / bw",
    ),
    # energy = power * time, output in kWh
    raw_formula("F902", ("energy", "kWh"), {"p": sym("power", "kW"), "t": sym("time", "h")}, "p * t"),
    # not monotone: falls to 5 at x = 5, then rises
    raw_formula("F903", ("vee", "1"), {"x": sym("position", "1", "real")}, "Max(x, 10 - x)"),
    # not monotone: rises to 5 at x = 5, then falls
    raw_formula("F904", ("tent", "1"), {"y": sym("position", "1", "real")}, "Piecewise((y, y < 5), (10 - y, True))"),
    # cards needed = ceiling(memory / capacity)
    raw_formula(
        "F905", ("cards", "1"),
        {"mem": sym("memory needed", "GiB"),
         "cap": sym("memory per card", "GiB", default="80GiB", default_source="an 80 GiB card")},
        "ceiling(mem / cap)",
    ),
    # domains
    raw_formula(
        "F906", ("scaled", "1"),
        {"u": sym("utilisation", "1", "fraction"),
         "k": sym("card count", "1", "positive_integer"),
         "z": sym("offset", "1", "nonnegative")},
        "u * k + z",
    ),
    # a categorical selector picks the variant (Young's interval, sqrt(2 * stall * MTBF))
    raw_formula(
        "F907", ("interval", "s"),
        {"mode": {"desc": "checkpoint mode", "domain": "categorical", "values": ["sync", "async"]},
         "stall": sym("synchronous stall", "s"),
         "pause": sym("asynchronous pause", "s"),
         "mtbf": sym("mean time between failures", "s")},
        selector="mode",
        variants=[
            {"when": "sync", "expr": "sqrt(2 * stall * mtbf)", "name": "synchronous"},
            {"when": "async", "expr": "sqrt(2 * pause * mtbf)", "name": "asynchronous"},
        ],
    ),
    # the same with a default selector value
    raw_formula(
        "F908", ("interval2", "s"),
        {"mode2": {"desc": "checkpoint mode", "domain": "categorical", "values": ["sync", "async"],
                   "default": "async", "default_source": "most jobs save asynchronously"},
         "stall2": sym("synchronous stall", "s"),
         "pause2": sym("asynchronous pause", "s")},
        selector="mode2",
        variants=[
            {"when": "sync", "expr": "2 * stall2"},
            {"when": "async", "expr": "2 * pause2"},
        ],
    ),
    # evaluation errors
    raw_formula("F909", ("root", "1"), {"r": sym("a real number", "1", "real")}, "sqrt(r)"),
    raw_formula("F910", ("inverse", "1"), {"q": sym("a real number", "1", "real")}, "1 / q"),
    raw_formula("F911", ("half_power", "1"), {"w": sym("a real number", "1", "real")}, "w ** 0.5"),
    # padding waste: tokens added to round n up to a multiple of 4 (a sawtooth in n)
    raw_formula("F912", ("padding", "tokens"), {"n": sym("sequence length", "tokens")}, "ceiling(n / 4) * 4 - n"),
    # money: the records write USD; a price given in CNY makes the result CNY (nothing converted)
    raw_formula("F913", ("bill", "USD"), {"e": sym("energy", "kWh"), "price": sym("price", "USD/kWh")}, "e * price"),
    raw_formula("F915", ("total", "USD"), {"c1": sym("capex", "USD"), "c2": sym("opex", "USD")}, "c1 + c2"),
    # the half-open and lower-bounded domains
    raw_formula(
        "F914", ("mixed", "1"),
        {"h": sym("hit rate", "1", "fraction_below_one"),
         "a": sym("overhead factor", "1", "ge_one"),
         "p": sym("ranks", "1", "ge_two_integer")},
        "a * p * (1 - h)",
    ),
]


def build(raw: dict):
    formula, problems = build_formula(raw, "test.yaml:1")
    assert problems == [], [str(p) for p in problems]
    return formula


@pytest.fixture(scope="module")
def module():
    return compiled.from_formulas(FormulaSet([build(raw) for raw in RAW]))


def run(module, fid: str, **given):
    return evaluate(module.FORMULAS[fid], module, given)


def only_output(result):
    (output,) = result.outputs.values()
    return output


def input_error(module, fid: str, **given) -> str:
    with pytest.raises(InputError) as info:
        run(module, fid, **given)
    return str(info.value)


# ------------------------------------------------------------------------------ point values


def test_point_value_with_a_default(module):
    result = run(module, "F901", b="1GiB")
    out = result.outputs["transfer_time"]
    # 1 GiB / 2 GB/s = 1073741824 B / 2e9 B/s = 0.536870912 s
    assert out.value == pytest.approx(0.536870912, rel=1e-12)
    assert (out.low, out.high) == (out.value, out.value)
    assert (out.unit, out.method) == ("s", "exact")
    b, bw = result.inputs["b"], result.inputs["bw"]
    assert (b.value, b.unit, b.low, b.high, b.source) == (1.0, "GiB", 1.0, 1.0, "given")
    assert (bw.value, bw.unit, bw.source) == (2.0, "GB/s", "default: a 2 GB/s test link")


def test_plain_numbers_are_in_the_declared_unit(module):
    out = only_output(run(module, "F901", b=2, bw=4))
    # 2 GiB / 4 GB/s = 2 * 1073741824 / 4e9 = 0.536870912 s
    assert out.value == pytest.approx(2 * GIB / 4e9, rel=1e-12)
    assert out.value == pytest.approx(0.536870912, rel=1e-12)


def test_suffixes_convert_to_the_declared_unit(module):
    out = only_output(run(module, "F901", b="512MiB", bw="8Gb/s"))
    # 512 MiB = 2**29 B = 536870912 B; 8 Gb/s = 1e9 B/s -> 0.536870912 s
    assert out.value == pytest.approx(0.536870912, rel=1e-12)


def test_output_in_a_scaled_unit(module):
    out = only_output(run(module, "F902", p=2, t="3h"))
    # 2 kW * 3 h = 6 kWh (= 2000 W * 10800 s = 2.16e7 J = 2.16e7 / 3.6e6 kWh)
    assert out.value == pytest.approx(6.0, rel=1e-12)
    assert out.unit == "kWh"


def test_ceiling_formula_with_default(module):
    out = only_output(run(module, "F905", mem="200GiB"))
    # ceiling(200 / 80) = ceiling(2.5) = 3 cards
    assert out.value == 3.0


def test_to_json_shape(module):
    data = run(module, "F901", b="1GiB").to_json()
    assert set(data) == {"formula", "name", "variant", "expr", "inputs", "outputs", "formulas", "assumptions", "warnings"}
    assert data["formula"] == "F901" and data["formulas"] == ["F901"] and data["variant"] is None
    assert set(data["inputs"]["b"]) == {"value", "unit", "low", "high", "source"}
    assert set(data["outputs"]["transfer_time"]) == {"value", "unit", "low", "high", "method"}
    assert data["inputs"]["b"]["value"] == data["inputs"]["b"]["low"] == data["inputs"]["b"]["high"] == 1.0


# ----------------------------------------------------------------------------------- ranges


def test_exact_range_uses_the_right_corners(module):
    result = run(module, "F901", b="1GiB..2GiB", bw="1..2")
    out = result.outputs["transfer_time"]
    assert out.method == "exact"
    # increasing in b, decreasing in bw:
    # low  = 1 GiB / 2 GB/s = 1073741824 / 2e9 = 0.536870912 s
    # high = 2 GiB / 1 GB/s = 2147483648 / 1e9 = 2.147483648 s
    assert out.low == pytest.approx(0.536870912, rel=1e-12)
    assert out.high == pytest.approx(2.147483648, rel=1e-12)
    # the value uses the midpoints: 1.5 GiB / 1.5 GB/s = 1073741824 / 1e9 = 1.073741824 s
    assert out.value == pytest.approx(1.073741824, rel=1e-12)
    b = result.inputs["b"]
    assert (b.low, b.value, b.high) == (1.0, 1.5, 2.0)


def test_exact_range_with_percent_spread(module):
    out = only_output(run(module, "F902", p="2±50%", t=3))
    # p = 1 .. 3 kW, t = 3 h: 3 .. 9 kWh around 6
    assert out.method == "exact"
    assert (out.low, out.value, out.high) == pytest.approx((3.0, 6.0, 9.0), rel=1e-12)


def test_exact_range_through_ceiling(module):
    out = only_output(run(module, "F905", mem="100GiB..200GiB"))
    # ceiling is non-decreasing: ceiling(100/80) = ceiling(1.25) = 2, ceiling(200/80) = 3;
    # the midpoint 150 GiB gives ceiling(1.875) = 2
    assert out.method == "exact"
    assert (out.low, out.value, out.high) == (2.0, 2.0, 3.0)


def test_max_formula_is_sampled(module):
    out = only_output(run(module, "F903", x="0..10"))
    # Max(x, 10 - x) on 0..10: 10 at both ends, 5 at the midpoint x = 5 (its minimum)
    assert out.method == "sampled"
    assert (out.low, out.value, out.high) == (5.0, 5.0, 10.0)


def test_piecewise_formula_is_sampled(module):
    out = only_output(run(module, "F904", y="0..10"))
    # y for y < 5, 10 - y otherwise: 0 at both ends, 10 - 5 = 5 at the midpoint (its maximum)
    assert out.method == "sampled"
    assert (out.low, out.value, out.high) == (0.0, 5.0, 5.0)


def test_integer_range_accepts_whole_ends(module):
    out = only_output(run(module, "F906", u=0.5, k="1..4", z=0))
    # u * k + z with u = 0.5: 0.5 .. 2 for k = 1 .. 4; the midpoint k = 2.5 gives 1.25
    assert out.method == "exact"
    assert (out.low, out.value, out.high) == (0.5, 1.25, 2.0)


# --------------------------------------------------------------------------- input problems


def test_missing_input(module):
    assert input_error(module, "F901") == "--set b: F901 needs a value for b (GiB, bytes to move)"


def test_several_missing_inputs_are_listed(module):
    assert input_error(module, "F902") == "--set p: F902 needs a value for p (kW, power); t (h, time)"


def test_unknown_input(module):
    assert input_error(module, "F901", b=1, q=2) == "--set q: is not an input of F901 (its inputs: b, bw)"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"b": -1}, "--set b: expected a number > 0 GiB, got -1"),
        ({"b": 0}, "--set b: expected a number > 0 GiB, got 0"),
        ({"b": "0..1"}, "--set b: expected a number > 0 GiB, got 0"),
        ({"b": "1s"}, "--set b: '1s' has unit s (s), expected a quantity in GiB (B)"),
        ({"b": "80mB"}, "--set b: 'mB' is not a known unit (expected B, bit, FLOP, FLOPS, s, min, h, d, yr, tokens, requests, W, J, Wh, USD, CNY, gCO2e, GPU, %, 1, with prefixes k M G T P, Ki Mi Gi Ti, or m u n on times)"),
        ({"b": float("nan")}, "--set b: expected a finite number in GiB"),
        ({"b": float("inf")}, "--set b: expected a finite number in GiB"),
        ({"b": "3..1"}, "--set b: '3..1' has its low end 3 above its high end 1 (GiB)"),
    ],
)
def test_bad_values_for_a_positive_input(module, given, message):
    assert input_error(module, "F901", **given) == message


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"u": 1.5, "k": 1, "z": 0}, "--set u: expected a fraction from 0 to 1, got 1.5"),
        ({"u": -0.1, "k": 1, "z": 0}, "--set u: expected a fraction from 0 to 1, got -0.1"),
        ({"u": 0.5, "k": 2.5, "z": 0}, "--set k: expected a whole number >= 1, got 2.5"),
        ({"u": 0.5, "k": 0, "z": 0}, "--set k: expected a whole number >= 1, got 0"),
        ({"u": 0.5, "k": "1..2.5", "z": 0}, "--set k: expected a whole number >= 1, got 2.5"),
        ({"u": 0.5, "k": 1, "z": -0.5}, "--set z: expected a number >= 0, got -0.5"),
    ],
)
def test_domain_errors(module, given, message):
    assert input_error(module, "F906", **given) == message


def test_domain_edges_are_accepted(module):
    out = only_output(run(module, "F906", u=1, k=1, z=0))
    # 1 * 1 + 0 = 1
    assert out.value == 1.0
    out = only_output(run(module, "F906", u=0, k=3, z=2))
    # 0 * 3 + 2 = 2
    assert out.value == 2.0


# ---------------------------------------------------------------------- categorical selector


def test_selector_picks_the_variant(module):
    result = run(module, "F907", mode="sync", stall=50, mtbf="1h")
    # sqrt(2 * 50 s * 3600 s) = sqrt(360000) = 600 s
    assert only_output(result).value == pytest.approx(600.0, rel=1e-12)
    assert result.variant == "sync"
    assert result.expr == "sqrt(2 * stall * mtbf)"
    mode = result.inputs["mode"]
    assert (mode.value, mode.unit, mode.low, mode.high, mode.source) == ("sync", "", "sync", "sync", "given")


def test_other_variant_needs_only_its_own_inputs(module):
    result = run(module, "F907", mode="async", pause=2, mtbf=10000)
    # sqrt(2 * 2 s * 10000 s) = sqrt(40000) = 200 s; stall is not needed
    assert only_output(result).value == pytest.approx(200.0, rel=1e-12)
    assert set(result.inputs) == {"mode", "pause", "mtbf"}


def test_selector_value_is_stripped(module):
    assert run(module, "F907", mode=" async ", pause=2, mtbf=10000).variant == "async"


def test_missing_selector_without_default(module):
    assert input_error(module, "F907", stall=1, mtbf=1) == "--set mode: F907 needs mode, one of sync, async"


def test_bad_selector_value(module):
    assert input_error(module, "F907", mode="lazy") == "--set mode: 'lazy' is not one of sync, async"


def test_missing_input_of_the_selected_variant(module):
    assert input_error(module, "F907", mode="async", mtbf=1) == (
        "--set pause: F907 needs a value for pause (s, asynchronous pause)"
    )


def test_default_selector_value(module):
    result = run(module, "F908", pause2=3)
    # the default variant is async: 2 * 3 s = 6 s
    assert only_output(result).value == 6.0
    assert result.variant == "async"
    assert result.inputs["mode2"].source == "default: most jobs save asynchronously"
    # and it can be overridden: sync, 2 * 5 s = 10 s
    assert only_output(run(module, "F908", mode2="sync", stall2=5)).value == 10.0


# ------------------------------------------------------------------------ evaluation errors


def test_math_domain_error(module):
    with pytest.raises(EvaluationError) as info:
        run(module, "F909", r=-4)
    assert str(info.value) == "F909: cannot be evaluated for these inputs (math domain error)"


def test_division_by_zero(module):
    with pytest.raises(EvaluationError) as info:
        run(module, "F910", q=0)
    assert str(info.value) == "F910: division by zero for these inputs"


def test_real_input_accepts_negative_values(module):
    # 1 / -4 = -0.25
    assert only_output(run(module, "F910", q=-4)).value == -0.25


# ------------------------------------------------------------------------- known engine bugs


def test_negative_base_to_a_fractional_power_is_an_evaluation_error(module):
    # (-4) ** 0.5 has no real value
    with pytest.raises(EvaluationError):
        run(module, "F911", w=-4)


def test_sawtooth_formula_range_is_not_collapsed(module):
    out = only_output(run(module, "F912", n="1..7"))
    # n = 1: ceiling(1/4) * 4 - 1 = 4 - 1 = 3 padding tokens; n = 4: 4 - 4 = 0; n = 7: 8 - 7 = 1.
    # The engine reports low = high = 0 (the midpoint n = 4).
    assert out.method == "sampled"
    assert out.low == 0.0
    assert out.high >= 3.0
    assert math.isfinite(out.high)


# ------------------------------------------------------------------------------ money and the new domains


def test_money_formula_carries_the_currency_of_its_price(module):
    # 1000 kWh x 0.6 CNY/kWh = 600 CNY; the label follows the price, the number is not converted
    r = run(module, "F913", e=1000, price="0.6CNY/kWh")
    assert only_output(r).value == pytest.approx(600)
    assert only_output(r).unit == "CNY"
    assert r.inputs["price"].unit == "CNY/kWh"
    assert r.assumptions[0] == "Money is in CNY, the currency of the price inputs; nothing is converted (the formula records write money as USD)."
    plain = run(module, "F913", e=1000, price=0.6)  # a bare number is in the declared USD/kWh
    assert only_output(plain).unit == "USD"


def test_money_in_two_currencies_is_refused(module):
    assert input_error(module, "F915", c1="100USD", c2="50CNY") == (
        "--set c2: is in CNY but c1 is in USD; give every price in one currency (nothing is converted)")


@pytest.mark.parametrize("given, message", [
    (dict(h=1, a=1, p=2), "--set h: expected a fraction from 0 up to but not including 1, got 1"),
    (dict(h=0, a=0.9, p=2), "--set a: expected a number >= 1, got 0.9"),
    (dict(h=0, a=1, p=1), "--set p: expected a whole number >= 2, got 1"),
])
def test_half_open_and_lower_bounded_domains(module, given, message):
    assert input_error(module, "F914", **given) == message


def test_domain_edges_that_are_inside(module):
    # h = 0, a = 1, p = 2 are in their domains: 1 x 2 x (1 - 0) = 2
    assert only_output(run(module, "F914", h=0, a=1, p=2)).value == 2
