"""engine.api: the Python API gives the same numbers as the CLI."""

from __future__ import annotations

import pytest

from engine import api
from engine.core.errors import InputError


def test_evaluate_takes_numbers_and_unit_strings():
    # Qwen/Qwen3-8B config.json: 36 layers, 8 KV heads, head_dim 128; BF16: 2*36*8*128*2 = 147456 B
    r = api.evaluate("F8", attention="gqa", layers=36, kv_heads=8, head_dim=128, kv_bytes="2B")
    assert r.outputs["kv_bytes_per_token"].value == 147456.0


def test_evaluate_propagates_ranges():
    # T = 6.3e24 / (1024 * 1e15 * mfu): mfu 0.35..0.45 -> 17578125 .. 13671875 s
    r = api.evaluate("F2", train_flops=6.3e24, n_gpus=1024, peak_flops="1PFLOPS", mfu="0.35..0.45")
    out = r.outputs["train_time"]
    assert (out.low, out.high, out.method) == (pytest.approx(13671875.0), pytest.approx(17578125.0), "exact")


def test_solve_and_check():
    # mfu for T = 120 d = 10368000 s: 6.3e24 / (1024 * 1e15 * 10368000)
    sol = api.solve("F2", "mfu", train_flops=6.3e24, n_gpus=1024, peak_flops="1PFLOPS", eq="120d")
    assert sol.values[0] == pytest.approx(6.3e24 / (1024 * 1e15 * 10368000))
    assert api.check() == []


def test_unknown_formula_is_an_input_error():
    with pytest.raises(InputError, match="no formula 'F99'"):
        api.evaluate("F99")
