"""Issue 12 (behaviour, not timing): preset tables kept in the process and refreshed on an edit,
exact ranges from plain-float corners without NumPy, and the public names of the split module (issue 14).

The H100 SXM TDP is 700 W (NVIDIA H100 datasheet, knowledge/hardware/h100-sxm.yaml); the edit
below makes it 650 W by hand.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.domain import presets

REPO = Path(__file__).resolve().parents[2]


def test_presets_are_kept_in_the_process(monkeypatch):
    presets.forget()
    first = presets.load(REPO, "llama-3.1-70b", "h100-sxm")

    def no_rebuild(*args, **kwargs):
        raise AssertionError("rebuilt a preset table that was kept")

    monkeypatch.setattr(presets, "build", no_rebuild)
    monkeypatch.setattr(presets, "FRESH_INTERVAL", 0.0)  # stat on every call: still no rebuild when nothing changed
    again = presets.load(REPO, "llama-3.1-70b", "h100-sxm")
    assert again == first and again is not first  # a new dict each call
    assert first["gpu_tdp"][0] == 700


def test_an_edited_record_is_seen(tmp_path, monkeypatch):
    for folder in ("formulas", "knowledge/models", "knowledge/hardware"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    monkeypatch.setattr(presets, "FRESH_INTERVAL", 0.0)
    assert presets.cached(tmp_path, None, "h100-sxm")["gpu_tdp"][0] == 700
    path = tmp_path / "knowledge/hardware/h100-sxm.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("  value: 700W", "  value: 650W", 1), encoding="utf-8")
    assert presets.cached(tmp_path, None, "h100-sxm")["gpu_tdp"][0] == 650


def test_kept_presets_match_a_fresh_build():
    presets.forget()
    kept = presets.cached(REPO, "qwen3-8b", "h100-sxm")
    built = presets.build(REPO, "qwen3-8b", "h100-sxm")
    assert {k: (list(v[0]) if isinstance(v[0], list) else v[0], v[1]) for k, v in kept.items()} == built


def test_an_exact_range_needs_no_numpy():
    # kv-concurrency over context 4k..32k: F9 and FX71 are monotone in context_tokens, so the
    # range is the two corners through the plain-float chain
    script = (
        "import sys, json\n"
        "from engine import api\n"
        "r = api.calculator('kv-concurrency').run(model='qwen3-8b', device='h100-sxm', kv_bytes=2, context_tokens='4k..32k')\n"
        "print(json.dumps(['numpy' in sys.modules, sorted({v.method for v in r.outputs.values()})]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert json.loads(out) == [False, ["exact"]]


@pytest.mark.parametrize("name", ["Calculator", "CalcResult", "Graph", "MissingInputs", "_Missing", "_Plan", "_chain", "cached_records",
                                  "condition_error", "condition_function", "condition_source", "field_place", "load_records", "problems",
                                  "run", "sweep", "MARKDOWN", "FOLDER", "LEFT_OUT", "MAX_POINTS"])
def test_the_split_keeps_every_public_name(name):
    from engine.numeric import calculators

    assert hasattr(calculators, name)


def test_markdown_hook_set_on_the_facade_is_used():
    from engine.numeric import calculators
    from engine.numeric.calc_records import CalcResult, Calculator

    calc = Calculator("calc:x", "X", "X", [], [], {}, [])
    result = CalcResult(calc, {}, {}, [], [], [], [])
    saved = calculators.MARKDOWN
    try:
        calculators.MARKDOWN = lambda r: f"md {r.calculator}"
        assert result._repr_markdown_() == "md calc:x"
    finally:
        calculators.MARKDOWN = saved
