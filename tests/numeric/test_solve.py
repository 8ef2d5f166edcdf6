"""engine.numeric.solve: closed forms, --eq values and inequality intervals, in the symbols' declared units.

Formulas are built from dicts with engine.kb.formulas.build_formula (no files). ``F2`` has the
shape of the book's training-duration formula (formulas/compute.yaml, Appendix B.2.1):
train_time = train_flops / (n_gpus * peak_flops * mfu). Every expected number is hand
arithmetic written beside it.
"""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.kb.formulas import build_formula
from engine.numeric.solve import solve


def make(fid: str, output: dict, symbols: dict, expr: str | None = None, **extra):
    raw = {
        "id": fid, "name": fid, "section": "B.2.1", "defined_in": "infra:6.2",
        "output": output, "symbols": symbols,
        "examples": [{"set": {}, "expect": 1, "source": "not evaluated here"}],
        **extra,
    }
    if expr is not None:
        raw["expr"] = expr
    formula, problems = build_formula(raw, "t:1")
    assert problems == [], problems
    return formula


F2 = make(
    "F2",
    {"symbol": "train_time", "unit": "s", "desc": "ideal compute time"},
    {
        "train_flops": {"desc": "training compute", "unit": "FLOP", "domain": "positive"},
        "n_gpus": {"desc": "cards", "unit": "GPU", "domain": "positive_integer"},
        "peak_flops": {"desc": "per-card peak", "unit": "FLOP/s", "domain": "positive"},
        "mfu": {"desc": "model FLOPs utilisation", "unit": "1", "domain": "positive_fraction"},
    },
    "train_flops / (n_gpus * peak_flops * mfu)",
)
INPUTS = "train_flops, n_gpus, peak_flops, mfu"
# 8e18 FLOP on 8 cards of 1e15 FLOP/s: 8e18 / (8 * 1e15) = 1000 s at mfu 1
RUN = {"train_flops": "8e18", "n_gpus": "8", "peak_flops": "1e15"}

# y = c * x with c of unknown sign
LINEAR = make(
    "FX1",
    {"symbol": "y", "unit": "1", "desc": "y"},
    {"c": {"desc": "coefficient", "unit": "1", "domain": "real"}, "x": {"desc": "x", "unit": "1", "domain": "positive"}},
    "c * x",
)

# an input declared in hours, the output in seconds
HOURS_IN = make(
    "FX2",
    {"symbol": "t", "unit": "s", "desc": "time"},
    {"wall": {"desc": "wall time", "unit": "h", "domain": "positive"}, "speedup": {"desc": "speed-up", "unit": "1", "domain": "positive"}},
    "wall / speedup",
)

# an input declared in seconds, the output in hours
HOURS_OUT = make(
    "FX3",
    {"symbol": "t_h", "unit": "h", "desc": "time"},
    {"busy": {"desc": "busy time", "unit": "s", "domain": "positive"}, "util": {"desc": "utilisation", "unit": "1", "domain": "positive_fraction"}},
    "busy / util",
)

# the good fixture's F1, with a default
KV = make(
    "F1",
    {"symbol": "kv_bytes_per_token", "unit": "B/tokens", "per": "tokens", "desc": "KV bytes per token"},
    {
        "layers": {"desc": "layers", "unit": "1", "domain": "positive_integer"},
        "kv_heads": {"desc": "kv heads", "unit": "1", "domain": "positive_integer"},
        "head_dim": {"desc": "head dim", "unit": "1", "domain": "positive_integer"},
        "kv_bytes": {"desc": "bytes per element", "unit": "B", "domain": "positive", "default": 2, "default_source": "BF16"},
    },
    "2 * layers * kv_heads * head_dim * kv_bytes",
)

# a formula with variants
ATTN = make(
    "F8",
    {"symbol": "kv_per_layer", "unit": "1", "desc": "cached vectors per layer and token"},
    {
        "attn": {"desc": "attention kind", "domain": "categorical", "values": ["mha", "mqa"]},
        "layers": {"desc": "layers", "unit": "1", "domain": "positive_integer"},
        "heads": {"desc": "heads", "unit": "1", "domain": "positive_integer"},
    },
    selector="attn",
    variants=[{"when": "mha", "expr": "2 * layers * heads"}, {"when": "mqa", "expr": "2 * layers"}],
)


def input_error(*args, **kwargs) -> str:
    with pytest.raises(InputError) as info:
        solve(*args, **kwargs)
    return str(info.value)


# ------------------------------------------------------------------ closed forms


def test_closed_forms_of_f2():
    assert solve(F2, "mfu", {}).closed_form == ["mfu = train_flops/(n_gpus*peak_flops*train_time)"]
    assert solve(F2, "n_gpus", {}).closed_form == ["n_gpus = train_flops/(mfu*peak_flops*train_time)"]
    assert solve(F2, "train_flops", {}).closed_form == ["train_flops = mfu*n_gpus*peak_flops*train_time"]


def test_a_closed_form_without_a_bound_has_no_values():
    sol = solve(F2, "mfu", {})
    assert (sol.relation, sol.bound, sol.values, sol.interval, sol.unit) == ("eq", None, [], "", "1")


# ------------------------------------------------------------------ --eq


def test_eq_gives_the_value():
    sol = solve(F2, "mfu", RUN, "eq", "2000")
    # 8e18 / (8 * 1e15 * 2000) = 8e18 / 1.6e19 = 0.5
    assert sol.values == [pytest.approx(0.5)]
    assert sol.bound == 2000
    assert sol.inputs == {"train_flops": 8e18, "n_gpus": 8, "peak_flops": 1e15}
    assert sol.notes == []


def test_eq_reads_inputs_and_the_bound_with_unit_suffixes():
    given = {"train_flops": "14.4EFLOP", "n_gpus": "8", "peak_flops": "1PFLOPS"}
    sol = solve(F2, "mfu", given, "eq", "1h")
    # 14.4 EFLOP = 1.44e19 FLOP; 1 PFLOPS = 1e15 FLOP/s; 1 h = 3600 s
    assert sol.inputs["train_flops"] == pytest.approx(1.44e19)
    assert sol.inputs["peak_flops"] == pytest.approx(1e15)
    assert sol.bound == 3600
    # 1.44e19 / (8 * 1e15 * 3600) = 1.44e19 / 2.88e19 = 0.5
    assert sol.values == [pytest.approx(0.5)]


def test_eq_with_no_value_in_the_domain():
    sol = solve(F2, "mfu", RUN, "eq", "500")
    # 8e18 / (8 * 1e15 * 500) = 2, above the positive_fraction cap of 1
    assert sol.values == []
    assert sol.notes == ["no value of mfu in its domain (positive_fraction) gives train_time = 500"]


def test_eq_with_inputs_left_unset():
    sol = solve(F2, "mfu", {"train_flops": "8e18"}, "eq", "2000")
    assert sol.values == []
    assert sol.notes == ["set n_gpus, peak_flops to get a number"]


def test_a_default_is_used_and_noted():
    sol = solve(KV, "layers", {"kv_heads": "8", "head_dim": "128"}, "eq", "147456")
    # Qwen3-8B (config.json): 147456 / (2 * 8 * 128 * 2) = 147456 / 4096 = 36 layers
    assert sol.values == [pytest.approx(36)]
    assert sol.notes == ["kv_bytes = 2 B (default: BF16)"]
    assert sol.inputs == {"kv_heads": 8, "head_dim": 128, "kv_bytes": 2}
    assert sol.closed_form == ["layers = kv_bytes_per_token/(2*head_dim*kv_bytes*kv_heads)"]


def test_a_variant_is_chosen_by_the_selector():
    sol = solve(ATTN, "heads", {"attn": "mha", "layers": "4"}, "eq", "64")
    # 64 / (2 * 4) = 8 heads
    assert sol.values == [pytest.approx(8)]
    assert "attn" not in sol.inputs


# ------------------------------------------------------------------ inequalities


def test_le_gives_an_interval_capped_by_the_domain():
    sol = solve(F2, "mfu", RUN, "le", "2000")
    # 1000 / mfu <= 2000  <=>  mfu >= 0.5; positive_fraction caps it at 1
    assert sol.interval == "[0.5, 1]"
    assert sol.values == []


def test_ge_gives_an_interval_open_at_zero():
    sol = solve(F2, "mfu", RUN, "ge", "2000")
    # 1000 / mfu >= 2000  <=>  mfu <= 0.5; positive_fraction excludes 0
    assert sol.interval == "(0, 0.5]"


def test_no_value_satisfies_an_inequality():
    sol = solve(F2, "mfu", RUN, "le", "500")
    # 1000 / mfu <= 500 needs mfu >= 2, outside (0, 1]
    assert sol.interval == "empty"
    assert sol.notes == ["no value of mfu in its domain satisfies it"]


def test_unknown_sign_of_a_real_coefficient_is_said():
    sol = solve(LINEAR, "x", {}, "le", "4")
    assert sol.interval == ""
    assert sol.notes == ["the sign of the coefficient of x (c) is unknown; set c to solve"]


def test_the_sign_decides_the_direction_once_the_coefficient_is_set():
    # 2 x <= 4  <=>  x <= 2, and x is positive
    assert solve(LINEAR, "x", {"c": "2"}, "le", "4").interval == "(0, 2]"
    # -2 x <= 4  <=>  x >= -2: every positive x
    assert solve(LINEAR, "x", {"c": "-2"}, "le", "4").interval == "(0, inf)"


def test_an_inequality_with_a_nonlinear_unset_input():
    sol = solve(F2, "mfu", {"train_flops": "8e18", "peak_flops": "1e15"}, "le", "2000")
    assert sol.interval == ""
    assert sol.notes == ["set n_gpus to solve the inequality"]


# ------------------------------------------------------------------ declared units


def test_an_input_in_hours_and_an_output_in_seconds_solve_in_declared_units():
    sol = solve(HOURS_IN, "wall", {"speedup": "0.5"}, "eq", "14400")
    # t[s] = wall[h] * 3600 / speedup, so wall = speedup * t / 3600; 0.5 * 14400 / 3600 = 2 h
    assert sol.closed_form == ["wall = speedup*t/3600"]
    assert sol.unit == "h"
    assert sol.values == [pytest.approx(2)]


def test_the_other_input_of_the_hours_formula():
    sol = solve(HOURS_IN, "speedup", {"wall": "2"}, "eq", "14400")
    # 2 h = 7200 s; 7200 / 14400 = 0.5
    assert sol.closed_form == ["speedup = 3600*wall/t"]
    assert sol.values == [pytest.approx(0.5)]
    # 7200 / speedup <= 14400  <=>  speedup >= 0.5
    assert solve(HOURS_IN, "speedup", {"wall": "120min"}, "le", "4h").interval == "[0.5, inf)"


def test_an_input_in_seconds_and_an_output_in_hours():
    sol = solve(HOURS_OUT, "busy", {"util": "0.5"}, "eq", "2")
    # t[h] = busy[s] / util / 3600, so busy = 3600 * t * util; 3600 * 2 * 0.5 = 3600 s
    assert sol.closed_form == ["busy = 3600*t_h*util"]
    assert sol.unit == "s"
    assert sol.values == [pytest.approx(3600)]
    # a bound with its own unit: 120 min = 2 h
    assert solve(HOURS_OUT, "busy", {"util": "0.5"}, "eq", "120min").values == [pytest.approx(3600)]


# ------------------------------------------------------------------ bad input


def test_setting_the_target_is_an_input_error():
    with pytest.raises(InputError) as info:
        solve(F2, "mfu", {**RUN, "mfu": "0.5"}, "eq", "2000")
    assert info.value.field == "--set mfu"
    assert str(info.value) == "--set mfu: is the symbol being solved for; do not set it"


def test_a_bound_in_the_wrong_unit_is_an_input_error():
    assert input_error(F2, "mfu", RUN, "le", "2000GB") == "--le: '2000GB': has unit GB (B), expected a quantity in s (s)"
    assert input_error(F2, "mfu", RUN, "eq", "3PFLOP") == "--eq: '3PFLOP': has unit PFLOP (FLOP), expected a quantity in s (s)"


def test_an_input_in_the_wrong_unit_is_an_input_error():
    assert input_error(F2, "mfu", {**RUN, "peak_flops": "1TB/s"}, "eq", "2000") == (
        "--set peak_flops: '1TB/s' has unit TB/s (B/s), expected a quantity in FLOP/s (FLOP/s)"
    )


def test_a_range_bound_or_input_is_refused():
    assert input_error(F2, "mfu", RUN, "le", "1h..2h") == "--le: takes a single value"
    assert input_error(F2, "mfu", {**RUN, "n_gpus": "8..16"}, "eq", "2000") == (
        "--set n_gpus: takes a single value when solving (ranges are for formula eval)"
    )


def test_an_input_outside_its_domain_is_refused():
    assert input_error(F2, "mfu", {**RUN, "n_gpus": "0.5"}, "eq", "2000") == "--set n_gpus: expected a whole number >= 1 GPU, got 0.5"


def test_an_inequality_needs_a_bound():
    assert input_error(F2, "mfu", RUN, "ge") == "--ge: needs a value V"


def test_unknown_target_and_unknown_input():
    assert input_error(F2, "train_time", {}) == f"--for: 'train_time' is not a numeric input of F2 (its inputs: {INPUTS})"
    assert input_error(F2, "mfu", {"gpus": "8"}) == f"--set gpus: is not an input of F2 (its inputs: {INPUTS})"


def test_variant_errors():
    assert input_error(ATTN, "heads", {}) == "--set attn: F8 needs attn, one of mha, mqa"
    assert input_error(ATTN, "heads", {"attn": "gqa"}) == "--set attn: 'gqa' is not one of mha, mqa"
    assert input_error(ATTN, "heads", {"attn": "mqa"}) == "--for: 'heads' does not appear in F8 when attn=mqa"


def test_to_json():
    sol = solve(F2, "mfu", RUN, "le", "2000")
    assert sol.to_json() == {
        "formula": "F2", "for": "mfu", "unit": "1", "relation": "le", "bound": 2000.0,
        "closed_form": ["mfu = train_flops/(n_gpus*peak_flops*train_time)"],
        "closed_form_latex": sol.closed_form_latex,
        "values": [], "interval": "[0.5, 1]",  # 1000 / mfu <= 2000 within (0, 1]
        "inputs": {"train_flops": 8e18, "n_gpus": 8.0, "peak_flops": 1e15}, "notes": [], "method": "closed_form",
    }


# ------------------------------------------------------------------ limits of SymPy

CEILING = make(
    "FX9",
    {"symbol": "n", "unit": "1", "desc": "whole batches"},
    {"x": {"desc": "items", "unit": "1", "domain": "positive"}, "d": {"desc": "batch size", "unit": "1", "domain": "positive"}},
    "ceiling(x / d)",
)


def test_no_closed_form_is_a_note_not_an_exception():
    sol = solve(CEILING, "x", {"d": "2"}, "eq", "3")
    assert sol.closed_form == []
    assert "no closed form for x was found" in sol.notes


def test_no_closed_form_falls_back_to_a_numeric_root_quickly():
    # ceiling(x / 2) = 3 holds for x in (4, 6]; bisection lands on a value inside it
    import time

    start = time.monotonic()
    sol = solve(CEILING, "x", {"d": "2"}, "eq", "3")
    assert time.monotonic() - start < 5
    assert sol.method == "numeric" and sol.to_json()["method"] == "numeric"
    assert len(sol.values) == 1 and 4 < sol.values[0] <= 6 + 1e-9
    assert any(n.startswith("numeric: SymPy has no closed form, so the value was found by bisection") for n in sol.notes)


def test_a_numeric_root_that_a_step_jumps_over_is_said():
    # ceiling(x / 2) takes whole values only: 3.5 is stepped over at x = 6 (3 up to 6, 4 above)
    sol = solve(CEILING, "x", {"d": "2"}, "eq", "3.5")
    assert sol.values == [] and sol.method == "numeric"
    assert "numeric: FX9's output steps over 3.5 at x ≈ 6 without equalling it" in sol.notes


@pytest.mark.parametrize("relation, interval", [("le", "(0, 6]"), ("ge", "[4, inf)")])
def test_no_closed_form_inequality_gives_a_numeric_interval(relation, interval):
    # ceiling(x / 2) <= 3 for 0 < x <= 6; >= 3 for x > 4 (the boundary 4 itself is shown closed: bisection cannot tell)
    sol = solve(CEILING, "x", {"d": "2"}, relation, "3")
    assert sol.interval == interval and sol.method == "numeric"


def test_numeric_fallback_on_the_shipped_fx71(capsys):
    # FX71: floor(393216 / (ceiling(c / 16) * 16)) = 174 for 2240 < c <= 2256 (ceil(c/16)·16 = 2256, 393216 / 2256 = 174.3)
    from engine.cli.main import main

    assert main(["formula", "solve", "FX71", "--for", "context_tokens", "--set", "max_kv_tokens=393216", "--eq", "174", "--format", "json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert data["method"] == "numeric" and len(data["values"]) == 1 and 2240 < data["values"][0] <= 2256


# ------------------------------------------------------------------ bounds no input can reach

@pytest.mark.parametrize("relation, bound, shown", [("le", "0", "<= 0 s"), ("le", "-1h", "<= -3600 s"), ("eq", "0", "= 0 s")])
def test_a_bound_the_positive_output_cannot_reach_is_bad_input(relation, bound, shown):
    # train_flops / (n_gpus * peak_flops * mfu) with every input positive is positive: never <= 0 (-1 h = -3600 s)
    with pytest.raises(InputError) as err:
        solve(F2, "mfu", RUN, relation, bound)
    assert str(err.value) == f"--{relation}: train_time is positive for every input in its domain, so no value of mfu gives train_time {shown} (expected a bound above 0)"


def test_ge_zero_on_a_positive_output_is_still_solved():
    # 1000 / mfu >= 0 holds for every mfu in (0, 1]
    assert solve(F2, "mfu", RUN, "ge", "0").interval == "(0, 1]"
