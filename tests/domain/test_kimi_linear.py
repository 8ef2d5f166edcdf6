"""Kimi Linear 48B-A3B as a model record: Kimi Delta Attention with MLA at every fourth layer, counted exactly.

The config is moonshotai/Kimi-Linear-48B-A3B-Instruct's config.json as a third-party inspection of the downloaded
checkpoint prints it; that inspection reports 49,122,681,728 parameters and lists every tensor's shape. Each part
below is hand arithmetic on those shapes.
"""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.domain import state
from engine.domain.models import import_config, kv_bytes_per_token, load_models, parameter_count
from engine.domain.presets import model_values

REPORTED = 49_122_681_728
KDA = 3 * 4096 * 2304 + 3 * 4096 * 4 + 32 + 4096 + 32 * 2304 + 2 * (128 * 2304 + 4096 * 128) + 128 + 2304 * 4096
MLA = 6144 * 2304 + 576 * 2304 + 512 + 8192 * 512 + 2304 * 4096       # q_proj without compression, kv_a, norm, kv_b, o_proj
DENSE = 3 * 9216 * 2304                                                 # layer 1 (1-based): gate, up, down
MOE = 257 * 3 * 1024 * 2304 + 256 * 2304 + 256                          # 256 routed + 1 shared, router, e_score_correction_bias


@pytest.fixture(scope="module")
def record():
    return load_models(shipped_root())["model:kimi-linear-48b-a3b"]


def test_the_reported_total_is_reproduced_exactly(record):
    assert (KDA, MLA) == (39_514_272, 29_114_880)
    expected = 20 * KDA + 7 * MLA + DENSE + 26 * MOE + 27 * 2 * 2304 + 2304 + 2 * 163840 * 2304
    assert expected == REPORTED
    counted = parameter_count(record)
    assert counted["total"] == REPORTED and record["parameters"]["matches"] == "checkpoint"
    assert counted["parts"]["linear_attention"] == 20 * KDA and counted["parts"]["attention"] == 7 * MLA
    # active: 8 routed + 1 shared expert instead of 257 in each of 26 MoE layers
    assert counted["active"] == REPORTED - 26 * 248 * 3 * 1024 * 2304 == 3_484_459_904


def test_layer_kinds_follow_the_one_based_lists(record):
    d = record["derived"]
    assert (d["family"], d["attention"], d["attention_layers"], d["linear_attention"]["layers"]) == ("hybrid_moe", "mla", 7, 20)
    assert d["position"] == "none" and d["mla"]["q_lora_rank"] is None
    assert kv_bytes_per_token(record, kv_bytes=2) == 7 * 576 * 2 == 8064   # the MLA latent of the 7 MLA layers


def test_state_of_a_million_token_request(record):
    # latent 8064 B x 1048576 tokens; KDA state 32 heads x 128 x 128 plus a 3-column window over q, k and v of 4096 each
    result = state.request_state(record, 1_048_576)
    assert result.total == 8064 * 1_048_576 + 20 * (32 * 128 * 128 + 3 * 3 * 4096) * 2 == 8_478_162_944


def test_broken_layer_lists_are_refused(record):
    cfg = dict(record["config"])
    bad = dict(cfg, linear_attn_config=dict(cfg["linear_attn_config"], full_attn_layers=[4, 8, 12, 16, 20, 24]))
    with pytest.raises(InputError, match="linear_attn_config: full_attn_layers and kda_layers must number the layers 1..27"):
        import_config(bad, "x")
    assert import_config(dict(cfg), "x", params=REPORTED)["parameters"]["total"] == REPORTED
    with pytest.raises(InputError) as info:
        model_values(record, None)
    assert "is a hybrid (20 KDA : 7 MLA (linear_attn_config))" in info.value.message
