"""Every shipped model maps to a registered family, and every use is supported or refused by the family's own
message, which names the model (engine/domain/families)."""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.domain import models
from engine.domain.families import FAMILIES, Use, family_of, refuse, shape_of
from tests.domain.conftest import ROOT

RECORDS = models.load_models(ROOT)
ALL = set(Use)
# what each shipped model's family supports; every other use is refused by name
SUPPORTED = {
    "standard": ALL, "gated_deltanet": ALL - {Use.CALCULATORS}, "mamba": ALL - {Use.CALCULATORS}, "kda": ALL - {Use.CALCULATORS},
    "compressed": {Use.COUNT, Use.KV_PER_TOKEN, Use.STATE, Use.STATE_TP}, "layerwise": {Use.COUNT, Use.KV_PER_TOKEN, Use.STATE},
}
EXCEPTIONS = {  # a flag of the shape that takes a use away: DSA from the general calculators, K3's full-rank gates from the ledger
    "model:deepseek-v3.2": ALL - {Use.CALCULATORS}, "model:kimi-k3": ALL - {Use.CALCULATORS, Use.LEDGER},
}


def test_the_registry_holds_each_derived_family_once():
    names = [name for family in {id(f): f for f in FAMILIES.values()}.values() for name in family.derived_families]
    assert sorted(names) == sorted(FAMILIES) == ["compressed_moe", "dense", "hybrid", "hybrid_mla_moe", "hybrid_moe", "layerwise_dense",
                                                 "mla_moe", "moe"]


def test_every_shipped_model_maps_to_a_registered_family():
    found = {mid: family_of(shape_of(rec)).name for mid, rec in RECORDS.items()}
    assert set(found.values()) == set(SUPPORTED)  # every family module has a shipped model
    assert found["model:qwen3-next-80b-a3b"] == "gated_deltanet" and found["model:nemotron-h-8b"] == "mamba"
    assert found["model:kimi-linear-48b-a3b"] == found["model:kimi-k3"] == "kda" and found["model:openelm-450m"] == "layerwise"
    assert found["model:deepseek-v4-flash"] == "compressed" and found["model:deepseek-v3.2"] == "standard"


@pytest.mark.parametrize("mid", sorted(RECORDS))
def test_every_use_is_supported_or_refused_by_name(mid):
    shape = shape_of(RECORDS[mid])
    family = family_of(shape)
    supported = EXCEPTIONS.get(mid, SUPPORTED[family.name])
    for use in Use:
        why = family.refusal(use, shape)
        assert (why == "") == (use in supported), (mid, use, why)
        if why:
            assert mid in why or shape.short_id in why, (mid, use, why)
            with pytest.raises(InputError) as info:
                refuse(use, shape)
            assert info.value.message == why and info.value.field == ("--tp" if use == Use.STATE_TP else "--model")
        else:
            refuse(use, shape)


@pytest.mark.parametrize("mid", sorted(RECORDS))
def test_every_family_counts_and_sizes_its_models(mid):
    record = RECORDS[mid]
    assert models.parameter_count(record, ROOT)["total"] > 0
    assert models.kv_bytes_per_token(record, ROOT, 2) > 0
