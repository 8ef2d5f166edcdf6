"""Kimi K2 (moonshotai/Kimi-K2-Instruct, Kimi-K2-Base): model_type ``kimi_k2`` imports as the DeepSeek-V3 layout.

Kimi K2 reuses the DeepSeek-V3 architecture (architectures DeepseekV3ForCausalLM, its
configuration_deepseek.py) under model_type ``kimi_k2``; MoonshotAI's deploy guide
(github.com/MoonshotAI/Kimi-K2, docs/deploy_guidance.md) says setting model_type back to
deepseek_v3 runs it unchanged. The model card's Model Summary gives: 61 layers of which 1 dense,
attention hidden 7168, expert hidden 2048, 64 attention heads, 384 experts, 8 selected per token,
1 shared expert, MLA, SwiGLU, vocabulary "160K". The remaining fields below (MLA ranks as in
DeepSeek-V3, dense intermediate 18432, vocabulary 163840, untied head, n_group 1, FP8 block
quantisation) are as third-party copies of the published config.json show them. knowledge/models/
kimi-k2-instruct.yaml holds the config a third-party inspection of the downloaded checkpoint printed;
its tensor total, less the FP8 block scales counted by hand, is the count below.

Every expected number is hand arithmetic on this config, written out next to the assertion.
"""

from __future__ import annotations

import copy
import json

import pytest

from engine.cli.main import main
from engine.core.errors import InputError
from engine.domain.models import import_config, parameter_count

KIMI_K2 = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", "attention_bias": False, "first_k_dense_replace": 1,
    "hidden_act": "silu", "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 131072,
    "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 384, "n_shared_experts": 1,
    "norm_topk_prob": True, "num_attention_heads": 64, "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 64,
    "num_nextn_predict_layers": 0, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "routed_scaling_factor": 2.827,
    "scoring_func": "sigmoid", "tie_word_embeddings": False, "topk_group": 1, "topk_method": "noaux_tc", "v_head_dim": 128,
    "vocab_size": 163840, "rope_theta": 50000.0, "rms_norm_eps": 1e-06,
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]},
}

# Hand arithmetic, one MLA block (hidden 7168, 64 heads, q_lora 1536, kv_lora 512, rope 64, nope 128, v 128):
#   q_a 7168 x 1536 = 11010048, q_a norm 1536, q_b 1536 x 64 x (128 + 64) = 18874368,
#   kv_a 7168 x (512 + 64) = 4128768, kv_a norm 512, kv_b 512 x 64 x (128 + 128) = 8388608,
#   o 64 x 128 x 7168 = 58720256                                              -> 101124096
ATTENTION = 11010048 + 1536 + 18874368 + 4128768 + 512 + 8388608 + 58720256
NORMS = 2 * 7168                                  # input and post-attention RMSNorm per layer
DENSE_MLP = 3 * 7168 * 18432                      # layer 0: gate, up, down = 396361728
EXPERT = 3 * 7168 * 2048                          # one expert = 44040192
MOE_LAYER = (384 + 1) * EXPERT + 384 * 7168 + 384  # routed + shared experts, router, e_score_correction_bias
EMBEDDINGS = 2 * 163840 * 7168                    # embedding and untied LM head = 2348810240
TOTAL = 61 * (ATTENTION + NORMS) + DENSE_MLP + 60 * MOE_LAYER + EMBEDDINGS + 7168  # + final norm
# active: 8 routed + 1 shared expert of each MoE layer, with the whole router
ACTIVE = 61 * (ATTENTION + NORMS) + DENSE_MLP + 60 * (9 * EXPERT + 384 * 7168 + 384) + EMBEDDINGS + 7168


def test_hand_arithmetic_is_what_the_comments_say():
    assert ATTENTION == 101124096
    assert MOE_LAYER == 16958226816
    assert TOTAL == 1026408232448
    assert ACTIVE == 32861500928


def test_kimi_k2_imports_as_mla_moe_and_counts_exactly():
    rec = import_config(copy.deepcopy(KIMI_K2), "kimi-k2-instruct", "moonshotai/Kimi-K2-Instruct")
    d = rec["derived"]
    assert (d["family"], d["attention"], d["head_dim"]) == ("mla_moe", "mla", 192)
    moe = d["moe"]
    assert (moe["experts"], moe["experts_per_token"], moe["shared_experts"], moe["dense_first_layers"]) == (384, 8, 1, 1)
    assert moe["routing"] == "sigmoid_topk"       # n_group 1: no group-limited routing, unlike DeepSeek-V3's 8 groups
    count = parameter_count(rec)
    assert count["total"] == TOTAL == rec["parameters"]["total"]
    assert count["active"] == ACTIVE
    assert count["extras"] == {"router_bias": 60 * 384}
    assert "quantization_config (fp8)" in rec["notes"]


def test_the_model_card_rounds_the_same_total_to_1t_and_32b_active():
    # model card Model Summary: Total Parameters 1T, Activated Parameters 32B
    assert round(TOTAL / 1e12) == 1
    assert int(ACTIVE / 1e9) == 32


def test_the_same_config_as_deepseek_v3_counts_the_same():
    rec_k2 = import_config(copy.deepcopy(KIMI_K2), "a")
    as_v3 = dict(copy.deepcopy(KIMI_K2), model_type="deepseek_v3")
    rec_v3 = import_config(as_v3, "b")
    assert rec_k2["derived"] == rec_v3["derived"]
    assert rec_k2["parameters"]["total"] == rec_v3["parameters"]["total"]


def test_import_with_the_params_check(tmp_path, capsys):
    src = tmp_path / "config.json"
    src.write_text(json.dumps(KIMI_K2))
    out = tmp_path / "out"
    out.mkdir()
    rc = main(["model", "import", str(src), "--id", "kimi-k2-instruct", "--repo", "moonshotai/Kimi-K2-Instruct",
               "--params", str(TOTAL), "--out", str(out)])
    assert rc == 0
    assert (out / "kimi-k2-instruct.yaml").is_file()
    assert f"{TOTAL} parameters" in capsys.readouterr().out


def test_a_wrong_total_is_refused_with_the_computed_one(tmp_path, capsys):
    src = tmp_path / "config.json"
    src.write_text(json.dumps(KIMI_K2))
    rc = main(["model", "import", str(src), "--id", "k2", "--params", "1040000000000", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "--params" in err[0] and str(TOTAL) in err[0]


@pytest.mark.parametrize("key, value, field", [
    ("topk_method", "greedy", "topk_method"),          # only noaux_tc routing (with its router bias) is counted
    ("q_lora_rank", None, "q_lora_rank"),               # MLA without query compression
    ("index_topk", 2048, "index_topk"),                 # DeepSeek sparse attention's indexer is still refused by name
])
def test_kimi_k2_variants_the_layout_does_not_count_are_refused(key, value, field):
    cfg = dict(copy.deepcopy(KIMI_K2), **{key: value})
    with pytest.raises(InputError) as exc:
        import_config(cfg, "k2")
    assert exc.value.field == field


def test_the_checkpoint_inventory_less_its_scales_is_the_count(capsys):
    """A third-party inspection of the Kimi-K2-Instruct checkpoint counts 1,026,470,731,056 stored elements. FP8
    E4M3 projections carry one F32 scale per 128 x 128 block (quantization_config weight_block_size), and 61
    rotary inv_freq buffers of 56 elements are stored too; ceil-divided by 128 per dimension:"""
    blocks = lambda rows, cols: -(-rows // 128) * -(-cols // 128)  # noqa: E731
    attention = blocks(1536, 7168) + blocks(12288, 1536) + blocks(576, 7168) + blocks(16384, 512) + blocks(7168, 8192)
    assert attention == 672 + 1152 + 280 + 512 + 3584 == 6200
    dense = 2 * blocks(18432, 7168) + blocks(7168, 18432)            # 24192
    experts = 385 * 60 * (2 * blocks(2048, 7168) + blocks(7168, 2048))  # routed + shared, 60 MoE layers: 62092800
    scales = 61 * attention + dense + experts
    assert scales == 62_495_192
    assert 1_026_470_731_056 - scales - 61 * 56 == TOTAL
    assert main(["model", "show", "kimi-k2-instruct", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["computed"]["total"], shown["computed"]["active"]) == (TOTAL, ACTIVE)
    assert shown["computed"]["reproduces_reference"] is True
