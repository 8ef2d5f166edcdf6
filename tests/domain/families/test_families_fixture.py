"""A new family is one module and one registry line: the fixture family of cross_layer_family.py, registered here
for the length of each test, is counted, sized and refused through the engine's own entry points (model_count,
state, presets, the forward ledger), none of which names it."""

from __future__ import annotations

import copy

import pytest

from engine.core.errors import InputError
from engine.domain import models, presets, state
from engine.domain.families import FAMILIES
from tests.domain.conftest import ROOT
from tests.domain.families.cross_layer_family import FAMILY


@pytest.fixture(scope="module")
def qwen3_8b() -> dict:
    return models.load_models(ROOT)["model:qwen3-8b"]


@pytest.fixture
def record(qwen3_8b) -> dict:
    """Qwen3-8B's shape with every two layers sharing one K/V cache (36 layers, 18 caches)."""
    rec = copy.deepcopy(qwen3_8b)
    rec["id"] = "model:qwen3-8b-cla"
    rec["derived"]["family"] = "cross_layer_dense"
    rec["derived"]["kv_sharing"] = {"share": 2}
    return rec


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(FAMILIES, "cross_layer_dense", FAMILY)  # the one registry line


def test_an_unregistered_family_is_refused_by_name(record):
    with pytest.raises(InputError) as info:
        models.parameter_count(record, ROOT)
    assert info.value.field == "derived.family"
    assert info.value.message.startswith("model:qwen3-8b-cla: 'cross_layer_dense' is not a family the engine knows (compressed_moe, dense, ")


def test_the_registered_family_counts_and_sizes_through_the_engine(registered, record, qwen3_8b):
    # the weights of Qwen3-8B (8,190,735,360: FX17 + tied-embedding terms, as model show gives them)
    assert models.parameter_count(record, ROOT)["total"] == models.parameter_count(qwen3_8b, ROOT)["total"] == 8_190_735_360
    # F8 over 18 cached layers: 2 x 18 x 8 KV heads x 128 x 2 B = 73,728 B, half of Qwen3-8B's 147,456
    assert models.kv_bytes_per_token(record, ROOT, 2) == 2 * 18 * 8 * 128 * 2 == 73_728
    result = state.request_state(record, 1000, 2, ROOT)
    assert result.total == 73_728 * 1000 and [(r.kind, r.layers) for r in result.rows] == [("full_attention", 18)]


def test_the_registered_family_refuses_what_it_does_not_support(registered, record, run):
    with pytest.raises(InputError) as info:
        presets.model_values(record, ROOT, "calc:kv-concurrency")
    assert info.value.field == "--model" and info.value.message.startswith(
        "model:qwen3-8b-cla is cross-layer K/V sharing (one K/V cache per 2 layers): the calculators' formulas hold one kind of attention layer")
    with pytest.raises(InputError, match=r"is cross-layer K/V sharing .* the forward ledger has no operator template for it yet"):
        run(record, 1)
    with pytest.raises(InputError) as info:
        state.per_gpu_bytes(record, state.request_state(record, 10, 2, ROOT), 2, ROOT)
    assert info.value.field == "--tp" and "cross-layer K/V sharing" in info.value.message
