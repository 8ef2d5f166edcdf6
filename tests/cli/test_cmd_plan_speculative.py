"""``aiinfra plan serve --speculative`` and ``aiinfra calc speculative-decoding`` as a user runs them (subprocess).

Expected numbers are hand arithmetic on Leviathan, Kalman and Matias 2023 (arXiv 2211.17192) eq. 1 and Theorem 3.8:
alpha 0.7, gamma 3: E = (1 - 0.7^4) / 0.3 = 2.533; with c = 0.05 the ideal speed-up is 2.533 / 1.15 = 2.2026.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SERVE = ["plan", "serve", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--prompt", "128", "--output", "64", "--ttft", "1s",
         "--tpot", "100ms", "--max-batch", "64", "--no-split"]


def aiinfra(*argv):
    return subprocess.run([sys.executable, "-m", "engine", *argv], capture_output=True, text=True, timeout=300)


def test_text_says_speculation_is_applied_and_where_it_stops_paying():
    # MFU and MBU pinned (0.5, 1): the roofline break-even batch depends on their ratio, and the defaults follow the
    # refitted serving calibration
    p = aiinfra(*SERVE, "--mfu", "0.5", "--mbu", "1", "--speculative", "draft_len=5,acceptance=0.6,draft_cost=0.1")
    assert p.returncode == 0, p.stderr
    assert "spec x" in p.stdout and "spec break-even batch" in p.stdout  # the front's columns
    # E = (1 - 0.6^6) / 0.4 = 2.38336; at most 2.38336 / (5 x 0.1 + 1) = 1.589x where verifying is free
    assert "E = 2.383 tokens per target step (FX80), at most 1.59x where verifying is free" in p.stdout
    # the best layout runs the largest batch, past FX963's break-even: said in capitals
    assert "speculative decoding at the best: STOPS PAYING at batch 64" in p.stdout
    assert "plain decoding is faster here" in p.stdout


def test_json_carries_the_speculation_and_per_row_terms():
    p = aiinfra(*SERVE, "--speculative", "draft_len=3,acceptance=0.7,draft_cost=0.05", "--format", "json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    s = data["speculative"]
    assert (s["method"], s["draft_len"], s["acceptance"], s["draft_cost"]) == ("draft", 3, [0.7], 0.05)
    assert s["tokens_per_step"] == pytest.approx(2.533, rel=1e-12)
    assert s["ideal_speedup"] == pytest.approx(2.533 / 1.15, rel=1e-12)
    assert s["pays_at_best"] is data["best"]["spec_pays"]
    for row in data["front"]:
        assert {"tpot_plain", "spec_verify_ratio", "spec_speedup", "spec_breakeven_batch", "spec_pays"} <= set(row)
        assert row["spec_verify_ratio"] >= 1  # the verify pass never costs less than a plain step


def test_plain_json_has_no_speculation():
    p = aiinfra(*SERVE, "--format", "json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["speculative"] is None and "spec_speedup" not in data["best"]


@pytest.mark.parametrize("value, message", [
    ("draft_len=3,acceptance=1.5", "--speculative acceptance: '1.5' is not a probability in [0, 1]"),
    ("draft_len=-2,acceptance=0.7", "--speculative draft_len: '-2' is not a positive integer"),
    ("draft_len=3,acceptance=0.7,draft_cost=x", "--speculative draft_cost: 'x' is not a number"),
    ("draft_len=3,acceptance=0.7,depth=2", "--speculative depth: is not a field (expected one of method, draft_len, acceptance, draft_cost)"),
    ("acceptance=0.7", "--speculative draft_len: is required with one acceptance rate (tokens the draft proposes per step, e.g. draft_len=3)"),
])
def test_bad_speculative_value_exits_2_with_one_line(value, message):
    p = aiinfra(*SERVE, "--speculative", value)
    assert p.returncode == 2
    assert p.stdout == "" and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [f"aiinfra: error: {message}"]


def test_plan_train_refuses_speculative():
    p = aiinfra("plan", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--gpus", "8", "--speculative", "draft_len=3,acceptance=0.7")
    assert p.returncode == 2
    assert p.stderr.strip() == "aiinfra: error: --speculative: applies to plan serve (decode TPOT); plan train does not take it"


def test_calc_speculative_decoding_json_and_bad_input():
    p = aiinfra("calc", "speculative-decoding", "--set", "spec_draft_len=5", "--set", "spec_acceptance_rate=0.8", "--set", "draft_cost_ratio=0",
                "--format", "json")
    assert p.returncode == 0, p.stderr
    outputs = json.loads(p.stdout)["outputs"]
    assert outputs["spec_tokens_per_step"]["value"] == pytest.approx(3.68928, rel=1e-12)  # (1 - 0.8^6) / 0.2
    bad = aiinfra("calc", "speculative-decoding", "--set", "spec_draft_len=5", "--set", "spec_acceptance_rate=1.2", "--set", "draft_cost_ratio=0")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "spec_acceptance_rate" in bad.stderr
