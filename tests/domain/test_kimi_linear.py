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
    assert (d["family"], d["attention"], d["attention_layers"], d["linear_attention"]["layers"]) == ("hybrid_mla_moe", "mla", 7, 20)
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
    # kv-concurrency: the 7 MLA layers' latent and the 20 KDA states (1,122,304 B each in BF16)
    values = model_values(record, None, "calc:kv-concurrency")
    assert (values["layers"][0], values["attention"][0], values["recurrent_state_bytes_per_request"][0]) == (7, "mla", 20 * 1_122_304)


# ------------------------------------------------------------------ the forward ledger (knowledge/operators/hybrid_mla_moe.yaml)

# the `run` fixture (the forward ledger with the shipped templates) is in tests/domain/conftest.py


def test_ledger_stores_the_checkpoint_parameters(record, run):
    result = run(record, 4)
    assert result.template == "operators:hybrid_mla_moe" and result.warnings == []
    assert result.totals["parameters"] == REPORTED


def test_decode_step_by_hand(record, run):
    """One decode step (B = 1, S = 1) after 8,191 cached tokens, absorbed MLA (the decode path)."""
    rows = {r.name: r for r in run(record, 1, history=8191).rows}
    # the 7 MLA layers read the latent of 512 + 64 elements per cached token, BF16
    assert rows["attention_scores"].kv_read_bytes == 7 * 8191 * 576 * 2 == 66_052_224
    # scores over the latent: 2 FLOPs x 32 heads x 576 x 8192 cells (8191 cached + the new token) per layer
    assert rows["attention_scores"].attention_matrix_flops == 7 * 2 * 32 * 576 * 8192
    # the 20 KDA layers read and write their state (32 heads x 128 x 128) and convolution windows (3 columns of q, k, v)
    assert rows["kda_recurrence"].kv_read_bytes == rows["kda_recurrence"].kv_write_bytes == 20 * 32 * 128 * 128 * 2
    assert rows["kda_conv"].kv_read_bytes == 20 * 3 * 3 * 4096 * 2
    # together: the 1,122,304 B per KDA layer the record's notes state (FX800 in BF16)
    assert (rows["kda_recurrence"].kv_read_bytes + rows["kda_conv"].kv_read_bytes) // 20 == 1_122_304
    assert rows["kda_recurrence"].matrix_flops == 20 * 3 * 2 * 32 * 128 * 128     # 3 MACs per state element
    assert rows["q_proj"].matrix_flops == 7 * 2 * 2304 * 32 * 192                  # no query compression
    assert rows["expert_gate_up_proj"].matrix_flops == 26 * 2 * 8 * 2304 * 2 * 1024
    assert "rope" not in rows                                                      # mla_use_nope: no rotary embedding


def test_prefill_runs_mla_expanded_and_reads_no_state(record, run):
    result = run(record, 16)
    rows = {r.name: r for r in result.rows}
    assert "kv_b_expand" in rows and "q_absorb" not in rows
    assert rows["kda_recurrence"].kv_read_bytes == 0 and rows["kda_conv"].kv_read_bytes == 0
    assert rows["kda_recurrence"].kv_write_bytes == 20 * 32 * 128 * 128 * 2
    # causal cells of 16 new tokens: 16 x 17 / 2 = 136 per head; expanded scores over 192 = 128 + 64 dimensions
    assert rows["attention_scores_expanded"].attention_matrix_flops == 7 * 2 * 32 * 192 * 136


def test_a_compressed_query_kda_model_is_refused_by_name(record, run):
    import copy

    other = copy.deepcopy(record)
    other["derived"]["mla"]["q_lora_rank"] = 1536
    with pytest.raises(InputError, match="the forward ledger has no operator template for it yet"):
        run(other, 1)
