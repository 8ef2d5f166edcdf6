"""engine.core.suggest: the case-insensitive match and the "did you mean" text every look-up uses."""

from __future__ import annotations

from engine.core.suggest import close, did_you_mean, known, match

DEVICES = ["a100-sxm-80gb", "h100-nvl", "h100-pcie", "h100-sxm", "h200"]


def test_match_ignores_case_and_spaces():
    assert match(" H100-SXM ", DEVICES) == "h100-sxm"
    assert match("h100", DEVICES) is None


def test_close_compares_without_case_and_keeps_the_names_spelling():
    assert close("H100-SX", DEVICES) == ["h100-sxm", "h100-nvl", "h100-pcie"]
    assert close("FX1000", ["F8", "FX100"]) == ["FX100"]


def test_did_you_mean_is_empty_when_nothing_is_close():
    assert did_you_mean("tpu", DEVICES) == ""
    assert did_you_mean("h20", DEVICES, 1) == "did you mean h200? "


def test_known_is_the_inside_of_the_parentheses():
    assert known("h100-sx", ["h100-nvl", "h100-sxm", "tpu-v4"]) == "did you mean h100-sxm or h100-nvl? known: h100-nvl, h100-sxm, tpu-v4"
    assert known("x", []) == "known: none"
