"""gpt-oss-120b: gpt-oss-20b's architecture at 36 layers and 128 experts, checked against the Hub's counts.

Config: openai/gpt-oss-120b config.json (revision b5c939de8f754692c1647ca79fbf85e8c1e70f8a, the sha the
Hugging Face API reports), read from verbatim copies (see the record's source note): 36 layers, 128 local
experts, 4 per token, hidden 2880, intermediate 2880, 64 query and 8 KV heads of 64, sliding window 128 on
every other layer, vocab 201088, untied embeddings, attention biases. Published figures:
- the Hub's safetensors count at that revision as huggingface/huggingface.js asserts it
  (packages/hub/src/lib/parse-safetensors-metadata.spec.ts @00d37b2d311335bdb3a8331503cc0b162a1e2926):
  BF16 2,167,371,072 + U8 114,661,785,600 (57,330,892,800 packed bytes x 2, the 3,583,180,800 scales
  excluded) = 116,829,156,672; counting the scales gave 120,412,337,472, the figure in the API dump
  (BF16 2167371072, U8 118244966400) of daniel-p-green/alain-ai-learning-platform@552f1c7f;
- the tensor bytes of the 15 shards, 65,248,815,744, as a third-party inventory states them;
- the model card (OpenAI, arXiv:2508.10925, Table 1): 116.83B total, 5.13B active, 60.8 GiB checkpoint.
Every expected number below is hand arithmetic on the config's fields, written out.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from engine.cli.main import main
from engine.domain import ledger, state
from engine.domain.model_count import _Evaluator, formula_module
from engine.domain.models import import_config, kv_bytes_per_token, load_models, parameter_count
from engine.numeric.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[2]

H, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, EXPERTS, TOP_K, VOCAB, WINDOW = 2880, 36, 64, 8, 64, 2880, 128, 4, 201088, 128

# hand arithmetic, one layer (the attention block is gpt-oss-20b's: same widths)
ATTENTION = (H * HEADS * HEAD_DIM + HEADS * HEAD_DIM      # q_proj 2880 x 4096 + bias = 11800576
             + 2 * (H * KV_HEADS * HEAD_DIM + KV_HEADS * HEAD_DIM)  # k_proj, v_proj 2880 x 512 + bias = 1475072 each
             + HEADS * HEAD_DIM * H + H                   # o_proj 4096 x 2880 + bias = 11799360
             + HEADS)                                     # sinks: one logit per head = 64
ROUTER = H * EXPERTS + EXPERTS                            # Linear(2880, 128) with bias = 368768
EXPERT = H * 2 * FFN + 2 * FFN + FFN * H + H              # gate_up 2880 x 5760 + 5760, down 2880 x 2880 + 2880 = 24891840
NORMS = 2 * H                                             # input and post-attention RMSNorm = 5760
LAYER = ATTENTION + ROUTER + EXPERTS * EXPERT + NORMS     # 3213080192
EMBEDDINGS = 2 * VOCAB * H                                # untied: embed_tokens and lm_head, 579133440 each
TOTAL = LAYERS * LAYER + EMBEDDINGS + H                   # + final norm

# MXFP4: the routed experts' weight values, 4 bits each in U8 blocks (2 per byte) plus one U8 E8M0 scale per 32
EXPERT_VALUES = LAYERS * EXPERTS * (H * 2 * FFN + FFN * H)
BLOCK_BYTES, SCALE_BYTES = EXPERT_VALUES // 2, EXPERT_VALUES // 32
BF16 = TOTAL - EXPERT_VALUES                              # every other parameter, 2 B each


@pytest.fixture(scope="module")
def record() -> dict:
    return load_models(ROOT)["model:gpt-oss-120b"]


def test_hand_arithmetic_of_one_layer():
    assert ATTENTION == 11800576 + 2 * 1475072 + 11799360 + 64 == 26550144
    assert ROUTER == 368640 + 128 == 368768
    assert EXPERT == 24891840 and LAYER == 26550144 + 368768 + 128 * 24891840 + 5760 == 3213080192
    assert TOTAL == 36 * 3213080192 + 1158266880 + 2880 == 116829156672


def test_the_architecture_gives_the_hub_count(record):
    counted = parameter_count(record, ROOT)
    assert counted["total"] == TOTAL == record["parameters"]["total"] == 116_829_156_672
    assert record["parameters"]["matches"] == "checkpoint"
    assert counted["extras"] == {
        "attention_biases": LAYERS * (HEADS * HEAD_DIM + 2 * KV_HEADS * HEAD_DIM + H),  # 36 x 8000
        "router_bias": LAYERS * EXPERTS,
        "expert_biases": LAYERS * EXPERTS * (2 * FFN + H),                            # 36 x 128 x 8640
        "attention_sinks": LAYERS * HEADS,
    }


def test_the_hub_counts_per_dtype():
    # huggingface.js at b5c939de: U8 counts each packed byte as two values, scales excluded
    assert EXPERT_VALUES == 36 * 128 * (16588800 + 8294400) == 114_661_785_600 == 2 * 57_330_892_800
    assert BF16 == 2_167_371_072
    assert 2_167_371_072 + 114_661_785_600 == 116_829_156_672
    # the older count (the API dump at the same sha) also counted the 3,583,180,800 U8 scales
    assert SCALE_BYTES == 3_583_180_800 and 114_661_785_600 + 3_583_180_800 == 118_244_966_400
    assert 2_167_371_072 + 118_244_966_400 == 120_412_337_472 == TOTAL + SCALE_BYTES


def test_the_storage_is_the_tensor_bytes(record):
    # BF16 x 2 B + the MXFP4 blocks + the E8M0 scales = the 15 shards' tensor bytes
    assert 2 * 2_167_371_072 + 57_330_892_800 + 3_583_180_800 == 65_248_815_744
    assert round(65_248_815_744 / 2**30, 1) == 60.8                          # the model card's checkpoint size
    storage = record["storage"]
    assert (storage["weight_bytes"], storage["quantised_format"]) == (65_248_815_744, "mxfp4")
    assert (storage["quantised_parameters"], storage["unquantised_bytes"]) == (EXPERT_VALUES, 2)


def test_fx650_and_fx652_give_the_record_storage(record):
    # FX650 mxfp4: 4 + 8/32 bits = 0.53125 B per value; FX652: values x 0.53125 + the rest x 2 B
    storage = record["storage"]
    ev = _Evaluator(formula_module(ROOT))
    (fmt,) = (o.value for o in evaluate(ev.module.FORMULAS["FX650"], ev.module, {"storage_format": "mxfp4"}).outputs.values())
    assert fmt == 0.53125 and EXPERT_VALUES * 17 // 32 == 60_914_073_600 == BLOCK_BYTES + SCALE_BYTES
    mixed = evaluate(ev.module.FORMULAS["FX652"], ev.module, {"format_bytes": fmt, "quantised_params": storage["quantised_parameters"],
                                                               "params": TOTAL, "bytes_unquantised": storage["unquantised_bytes"]})
    (value,) = (o.value for o in mixed.outputs.values())
    assert value == storage["weight_bytes"] == 60_914_073_600 + 4_334_742_144


def test_active_parameters_match_the_model_card(record):
    # a token uses 4 of the 128 experts in each layer; the card's 5.13B leaves out the input embedding (a gather)
    active = TOTAL - LAYERS * (EXPERTS - TOP_K) * EXPERT
    assert active == 116829156672 - 36 * 124 * 24891840 == 5711982912
    assert parameter_count(record, ROOT)["active"] == active
    assert round((active - VOCAB * H) / 1e9, 2) == 5.13                 # 5132849472


def test_the_ledger_stores_every_parameter(record):
    catalog = ledger.load_root(ROOT)
    led = ledger.forward_record(record, catalog.templates, tokens=1, history=8192)
    assert led.totals["parameters"] == TOTAL and led.warnings == []
    rows = {r.name: r for r in led.rows}
    assert rows["attention_sinks"].parameters == LAYERS * HEADS
    assert rows["router"].parameters == LAYERS * ROUTER


def test_kv_of_sliding_layers_stops_at_the_window(record):
    per_layer_token = 2 * KV_HEADS * HEAD_DIM * 2                       # K and V, BF16: 2048 B
    assert kv_bytes_per_token(record, ROOT, 2) == LAYERS * per_layer_token == 73728
    result = state.request_state(record, 8192)
    # 18 full layers hold every token, 18 sliding layers 128
    assert {r.kind: (r.layers, r.tokens_held, r.bytes_per_request) for r in result.rows} == {
        "full_attention": (18, 8192, 18 * 2048 * 8192), "sliding_attention": (18, 128, 18 * 2048 * 128)}
    assert result.total == 301989888 + 4718592 == 306708480


def test_cli_state_on_h100(capsys):
    # the K/V budget as every command takes it (FX72, vLLM's rule): 0.9 x the driver total 79.18 GiB (85,018,877,624.32 B,
    # the h100-sxm record's vLLM start-up log) - 5 GiB engine overhead - 65,248,815,744 B of stored weights
    # = 76,516,989,861.9 - 5,368,709,120 - 65,248,815,744 = 5,899,464,997.9 B; / 306,708,480 B a request = 19.2 -> 19
    assert main(["state", "--model", "gpt-oss-120b", "--context", "8192", "--device", "h100-sxm", "--format", "json"]) == 0
    fit = json.loads(capsys.readouterr().out)["device"]
    assert fit["weight_bytes"] == 65248815744 and fit["requests"] == 19


def test_reimporting_the_config_reproduces_the_record(record):
    again = import_config(copy.deepcopy(record["config"]), "gpt-oss-120b", params=TOTAL)
    assert again["config"] == record["config"] and again["derived"] == record["derived"]
