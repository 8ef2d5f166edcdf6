"""gpt-oss-20b: per-layer heterogeneity (alternating sliding/full layers), biased experts, attention sinks.

Config: openai/gpt-oss-20b config.json at revision 6cee5e81ee83917806bbde320786a8fb61efebee,
read from copies (EchoCog/gpt-oss-20b@52971a17bf2f66dd519c8d26217b1405e425a246 config.json and a
Modular MAX test file; see the record's source note). Published figures: the Hugging Face API's
safetensors metadata at that revision (BF16 1804459584, U8 19707494400, total 21511953984) and
the model card's "21B parameters with 3.6B active". Every expected number below is hand
arithmetic on the config's fields, written out.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from engine.core.errors import InputError
from engine.domain import ledger
from engine.domain.models import import_config, kv_bytes_per_token, load_models, parameter_count

ROOT = Path(__file__).resolve().parents[2]

# the architecture fields of the config (the record keeps them under the same names)
H, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, EXPERTS, TOP_K, VOCAB, WINDOW = 2880, 24, 64, 8, 64, 2880, 32, 4, 201088, 128

# hand arithmetic, one layer
ATTENTION = (H * HEADS * HEAD_DIM + HEADS * HEAD_DIM      # q_proj 2880 x 4096 + bias = 11800576
             + 2 * (H * KV_HEADS * HEAD_DIM + KV_HEADS * HEAD_DIM)  # k_proj, v_proj 2880 x 512 + bias = 1475072 each
             + HEADS * HEAD_DIM * H + H                   # o_proj 4096 x 2880 + bias = 11799360
             + HEADS)                                     # sinks: one logit per head = 64
ROUTER = H * EXPERTS + EXPERTS                            # Linear(2880, 32) with bias = 92192
EXPERT = H * 2 * FFN + 2 * FFN + FFN * H + H              # gate_up 2880 x 5760 + 5760, down 2880 x 2880 + 2880 = 24891840
NORMS = 2 * H                                             # input and post-attention RMSNorm = 5760
LAYER = ATTENTION + ROUTER + EXPERTS * EXPERT + NORMS     # 823186976
EMBEDDINGS = 2 * VOCAB * H                                # untied: embed_tokens and lm_head, 579133440 each
TOTAL = LAYERS * LAYER + EMBEDDINGS + H                   # + final norm


@pytest.fixture(scope="module")
def record() -> dict:
    return load_models(ROOT)["model:gpt-oss-20b"]


def test_hand_arithmetic_of_one_layer():
    assert ATTENTION == 11800576 + 2 * 1475072 + 11799360 + 64 == 26550144
    assert EXPERT == 24891840 and LAYER == 823186976
    assert TOTAL == 24 * 823186976 + 1158266880 + 2880 == 20914757184


def test_the_architecture_gives_the_hand_count(record):
    counted = parameter_count(record, ROOT)
    assert counted["total"] == TOTAL == record["parameters"]["total"]
    assert counted["extras"] == {
        "attention_biases": LAYERS * (HEADS * HEAD_DIM + 2 * KV_HEADS * HEAD_DIM + H),  # 24 x 8000
        "router_bias": LAYERS * EXPERTS,
        "expert_biases": LAYERS * EXPERTS * (2 * FFN + H),                            # 24 x 32 x 8640
        "attention_sinks": LAYERS * HEADS,
    }


def test_the_safetensors_total_counts_storage_elements_not_parameters():
    # routed expert weights are MXFP4: 4-bit values plus one E8M0 scale (a U8) per 32 values
    expert_values = LAYERS * EXPERTS * (H * 2 * FFN + FFN * H)
    assert expert_values == 19110297600
    assert expert_values + expert_values // 32 == 19707494400          # the U8 figure: values + scales
    assert TOTAL - expert_values == 1804459584                          # the BF16 figure: every other parameter
    assert 1804459584 + 19707494400 == 21511953984 == TOTAL + expert_values // 32


def test_active_parameters_match_the_model_card(record):
    # a token uses 4 of the 32 experts in each layer; the card's 3.6B leaves out the input embedding (a gather)
    active = TOTAL - LAYERS * (EXPERTS - TOP_K) * EXPERT
    assert active == 20914757184 - 24 * 28 * 24891840 == 4187440704
    assert parameter_count(record, ROOT)["active"] == active
    assert round((active - VOCAB * H) / 1e9, 1) == 3.6                  # 3608307264


def test_the_ledger_stores_every_parameter(record):
    catalog = ledger.load_root(ROOT)
    led = ledger.forward_record(record, catalog.templates, tokens=1, history=8192)
    assert led.totals["parameters"] == TOTAL and led.warnings == []
    rows = {r.name: r for r in led.rows}
    assert rows["attention_sinks"].parameters == LAYERS * HEADS
    assert rows["router"].parameters == LAYERS * ROUTER


def test_kv_of_sliding_layers_stops_at_the_window(record):
    per_layer_token = 2 * KV_HEADS * HEAD_DIM * 2                       # K and V, BF16: 2048 B
    assert kv_bytes_per_token(record, ROOT, 2) == LAYERS * per_layer_token == 49152
    catalog = ledger.load_root(ROOT)
    led = ledger.forward_record(record, catalog.templates, tokens=1, history=8192)
    # 12 full layers hold every token, 12 sliding layers min(context, 128)
    assert led.totals["kv_bytes_before"] == 12 * per_layer_token * 8192 + 12 * per_layer_token * WINDOW == 204472320
    assert led.totals["kv_bytes_after"] == 12 * per_layer_token * 8193 + 12 * per_layer_token * WINDOW
    short = ledger.forward_record(record, catalog.templates, tokens=1, history=99)
    assert short.totals["kv_bytes_after"] == LAYERS * per_layer_token * 100  # under the window every layer holds all


def _config(record) -> dict:
    return copy.deepcopy(record["config"])


def test_reimporting_the_config_reproduces_the_record(record):
    again = import_config(_config(record), "gpt-oss-20b", params=TOTAL)
    assert again["config"] == record["config"] and again["derived"] == record["derived"]


@pytest.mark.parametrize(("change", "message"), [
    ({"layer_types": None}, "layer_types: missing: gpt_oss interleaves sliding-window and full-attention layers"),
    ({"experts_per_token": 2}, "experts_per_token: is 2, but num_experts_per_tok is 4: the config contradicts itself"),
    ({"attention_bias": False}, "attention_bias: False is a variant the importer does not understand (it counts gpt_oss models with attention_bias = true)"),
])
def test_gpt_oss_variants_are_refused(record, change, message):
    cfg = _config(record)
    for key, value in change.items():
        if value is None:
            cfg.pop(key)
        else:
            cfg[key] = value
    with pytest.raises(InputError) as info:
        import_config(json.loads(json.dumps(cfg)), "x")
    assert str(info.value).startswith(message)
