"""Ranges composed under a formula's orderings (issue 12): FX134 assumes tpot_target > step_overhead_time
and FX151 ttft_target > queue_time; their directions are used only where the ranges keep the
ordering, so a range that crosses it is sampled, and exact corners equal the sampled extremes."""

from __future__ import annotations

import pytest

from engine import api
from engine.kb.formulas import build_formula

FLEET = dict(model="qwen3-8b", device="h100-sxm", prompt_tokens=2048, avg_output_tokens=256, ttft_target="1s",
             tpot_target="50ms", kv_bytes=2, engine_overhead_bytes="4GiB")


def test_a_qps_range_is_composed_exactly_without_sampling():
    r = api.calculator("serving-fleet").run(**FLEET, qps="40..60")
    sampled = {n for n, v in r.outputs.items() if v.method != "exact"}
    # decode_batch, tpot and ttft no longer depend on qps at all; they stay exact
    assert {"decode_batch", "tpot", "ttft", "tp_size"}.isdisjoint(sampled)
    # token_demand = qps x 256 tokens (FX86): 40 x 256 = 10240 and 60 x 256 = 15360 tokens/s
    demand = r.outputs["token_demand"]
    assert (demand.low, demand.high, demand.method) == (10240, 15360, "exact")


def test_a_range_that_crosses_an_ordering_is_sampled():
    c = api.calculator("serving-fleet")
    # queue 0.1..0.5 s under a 1 s TTFT target: ttft_target > queue_time over the whole box, so
    # FX151's directions hold and the TP group, TTFT and batch come from exact corners
    held = c.run(**{**FLEET, "queue_time": "0.1..0.5"}, qps=50, mfu=0.4)
    assert {held.outputs[n].method for n in ("tp_size", "ttft", "decode_batch")} == {"exact"}
    # TTFT = queue + prefill (FX77): with the MFU fixed the prefill of 2048 tokens does not depend
    # on the queue, so the TTFT range is the queue range shifted by one prefill time: 0.5 - 0.1 s
    ttft = held.outputs["ttft"]
    assert ttft.high - ttft.low == pytest.approx(0.4, rel=1e-12)
    # a target of 0.4..1 s against the same queue: at (0.4, 0.5) the queue exceeds the target,
    # the ordering fails inside the box, and the ranges are sampled rather than composed
    crossed = c.run(**{**FLEET, "queue_time": "0.1..0.5", "ttft_target": "0.4..1"}, qps=50)
    assert crossed.outputs["tp_size"].method == "sampled"


def test_an_ordering_must_name_two_inputs_of_the_formula():
    raw = {"id": "FX999", "name": "t", "section": "B.2.4", "defined_in": "infra:1.1", "ordered": ["a > c"],
           "output": {"symbol": "y", "unit": "s", "desc": "y"}, "expr": "a - b",
           "symbols": {"a": {"desc": "a", "unit": "s", "domain": "positive"}, "b": {"desc": "b", "unit": "s", "domain": "positive"}},
           "examples": [{"set": {"a": 2, "b": 1}, "expect": 1, "source": "hand arithmetic: 2 - 1 = 1"}]}
    formula, problems = build_formula(raw, "formulas/t.yaml:1")
    assert formula is None and [p.path for p in problems] == ["ordered[0]"]
    assert "c is not one" in problems[0].message
    raw["ordered"] = ["a > b"]
    formula, problems = build_formula(raw, "formulas/t.yaml:1")
    assert problems == [] and formula.ordered == (("a", "b"),)


def test_little_law_goodput_does_not_move_with_qps():
    # FX138 qps x L_out x B / concurrency with concurrency = qps x E2E (FX81): qps cancels, so one
    # instance's goodput is B x L_out / E2E at any arrival rate; with the MFU fixed it is one number
    # and the instance count alone follows the demand (FX87)
    r = api.calculator("serving-fleet").run(**FLEET, qps="40..60", mfu=0.4)
    goodput = r.outputs["instance_goodput"]
    assert goodput.method == "exact" and goodput.low == goodput.high == pytest.approx(goodput.value)
    demand = r.outputs["token_demand"]
    assert (demand.low, demand.high) == (40 * 256, 60 * 256)
    assert r.outputs["n_instances"].method == "exact" and r.outputs["n_instances"].low < r.outputs["n_instances"].high
