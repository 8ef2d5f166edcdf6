"""Kimi K3 as a model record: KDA with gated MLA and a latent MoE, counted exactly (issue #15).

The config is moonshotai/Kimi-K3's config.json (revision 9f62e4e9fffbd0a83ddd60e1c209d828994b3569, the one independent
ports and converters pin) as a third-party inspection report of the downloaded checkpoint prints the raw file, with
transformers' serialised PretrainedConfig defaults in its text_config; that report lists every tensor's shape and
dtype. The index at that revision: total_size 1,560,860,324,864 B and 497,220 tensors (a header census of all 96
shards; an audit test asserting payload == index totalSize). Every number below is hand arithmetic on those shapes,
never a value copied from running this code.
"""

from __future__ import annotations

import copy

import pytest

from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.domain import state
from engine.domain.models import import_config, kv_bytes_per_token, load_models, parameter_count
from engine.domain.presets import model_values

REPO, REVISION = "moonshotai/Kimi-K3", "9f62e4e9fffbd0a83ddd60e1c209d828994b3569"
TOTAL_SIZE, TENSORS = 1_560_860_324_864, 497_220
FULL = [4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 93]
CONFIG = {
    "architectures": ["KimiK3ForConditionalGeneration"],
    "auto_map": {"AutoConfig": "configuration_kimi_k3.KimiK3Config", "AutoModel": "modeling_kimi_k3.KimiK3ForConditionalGeneration",
                 "AutoModelForCausalLM": "modeling_kimi_k3.KimiK3ForConditionalGeneration"},
    "bos_token_id": 163584, "dtype": "bfloat16", "eos_token_id": 163586, "ignore_index": -100,
    "image_placeholder": "<|kimi_image_placeholder|>", "media_placeholder_token_id": 163605, "model_type": "kimi_k3",
    "pad_token_id": 163839, "tie_word_embeddings": False,
    "text_config": {
        "activation_situ_beta": 4.0, "activation_situ_linear_beta": 25.0, "architectures": ["KimiLinearForCausalLM"],
        "attn_res_block_size": 12,
        "auto_map": {"AutoConfig": "configuration_kimi_k3.KimiLinearConfig", "AutoModel": "modeling_kimi_linear.KimiLinearModel",
                     "AutoModelForCausalLM": "modeling_kimi_linear.KimiLinearForCausalLM"},
        "bos_token_id": 163584, "dtype": "bfloat16", "eos_token_id": 163586, "first_k_dense_replace": 1, "hidden_act": "situ",
        "hidden_size": 7168, "initializer_range": 0.02, "intermediate_size": 33792, "kv_lora_rank": 512, "latent_moe_use_norm": True,
        "linear_attn_config": {"full_attn_layers": FULL, "gate_lower_bound": -5.0, "head_dim": 128,
                               "kda_layers": [i for i in range(1, 94) if i not in FULL], "num_heads": 96,
                               "short_conv_kernel_size": 4, "use_full_rank_gate": True},
        "max_position_embeddings": 1048576, "mla_use_nope": True, "mla_use_output_gate": True, "model_type": "kimi_linear",
        "moe_intermediate_size": 3072, "moe_layer_freq": 1, "moe_renormalize": True, "moe_router_activation_func": "sigmoid",
        "num_attention_heads": 96, "num_expert_group": 1, "num_experts": 896, "num_experts_per_token": 16, "num_hidden_layers": 93,
        "num_key_value_heads": 96, "num_nextn_predict_layers": 0, "num_shared_experts": 2, "pad_token_id": 163839,
        "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "quantization_config": {
            "config_groups": {"group_0": {"format": "mxfp4-pack-quantized", "input_activations": None, "output_activations": None,
                                          "targets": ["Linear"],
                                          "weights": {"actorder": None, "block_structure": None, "dynamic": False, "group_size": 32,
                                                      "num_bits": 4, "observer": "minmax", "observer_kwargs": {},
                                                      "scale_dtype": "torch.uint8", "strategy": "group", "symmetric": True,
                                                      "type": "float", "zp_dtype": None}}},
            "format": "mxfp4-pack-quantized", "global_compression_ratio": None,
            "ignore": ["re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*", "re:.*lm_head.*",
                       "re:.*vision_tower.*", "re:.*mm_projector.*"],
            "kv_cache_scheme": None, "quant_method": "compressed-tensors", "quantization_status": "compressed"},
        "rms_norm_eps": 1e-05, "routed_expert_hidden_size": 3584, "routed_scaling_factor": 1.0, "tie_word_embeddings": False,
        "topk_group": 1, "topk_method": "noaux_tc", "transformers_version": "4.56.2", "use_cache": True, "use_grouped_topk": True,
        "v_head_dim": 128, "vocab_size": 163840,
        # transformers PretrainedConfig defaults the serialised text_config carries
        "_name_or_path": "", "add_cross_attention": False, "bad_words_ids": None, "begin_suppress_tokens": None,
        "chunk_size_feed_forward": 0, "cross_attention_hidden_size": None, "decoder_start_token_id": None, "diversity_penalty": 0.0,
        "do_sample": False, "early_stopping": False, "encoder_no_repeat_ngram_size": 0, "exponential_decay_length_penalty": None,
        "finetuning_task": None, "forced_bos_token_id": None, "forced_eos_token_id": None, "id2label": {"0": "LABEL_0", "1": "LABEL_1"},
        "is_decoder": False, "is_encoder_decoder": False, "label2id": {"LABEL_0": 0, "LABEL_1": 1}, "length_penalty": 1.0,
        "max_length": 20, "min_length": 0, "no_repeat_ngram_size": 0, "num_beam_groups": 1, "num_beams": 1, "num_return_sequences": 1,
        "output_attentions": False, "output_hidden_states": False, "output_scores": False, "prefix": None, "problem_type": None,
        "pruned_heads": {}, "remove_invalid_values": False, "repetition_penalty": 1.0, "return_dict": True,
        "return_dict_in_generate": False, "sep_token_id": None, "suppress_tokens": None, "task_specific_params": None,
        "temperature": 1.0, "tf_legacy_loss": False, "tie_encoder_decoder": False, "tokenizer_class": None, "top_k": 50, "top_p": 1.0,
        "torchscript": False, "typical_p": 1.0, "use_bfloat16": False,
    },
    "vision_config": {
        "_attn_implementation": "flash_attention_2", "activation_func": "gelu_pytorch_tanh", "attn_bias": False,
        "init_pos_emb_height": 64, "init_pos_emb_time": 4, "init_pos_emb_width": 64, "linear_bias": False, "merge_kernel_size": [2, 2],
        "merge_type": "sd2_tpool", "mlp_type": "mlp2", "mm_hidden_size": 1024, "mm_projector_type": "patchmergerv2",
        "norm_type": "rmsnorm", "patch_embed_proj_bias": False, "patch_size": 14, "pos_emb_interpolation_mode": "bilinear",
        "pos_emb_type": "divided_fixed", "projector_hidden_act": "gelu", "projector_ln_eps": 1e-05, "qkv_hidden_size": 1536,
        "text_hidden_size": 7168, "vt_hidden_size": 1024, "vt_intermediate_size": 4096, "vt_num_attention_heads": 12,
        "vt_num_hidden_layers": 27,
    },
}

# --- per layer, from the checkpoint's shapes (d 7168, 96 heads of 128: P = 12288)
KDA_BF16 = 3 * 12288 * 7168 + 128 * 7168 + 12288 * 128 + 96 * 7168 + 12288 * 7168 + 7168 * 12288  # q/k/v, f_a, f_b, b, g, o
KDA_F32 = 3 * 12288 * 4 + 128 + 12288 + 128                            # q/k/v_conv1d, A_log (stored 128), dt_bias, o_norm
MLA = 1536 * 7168 + 1536 + 18432 * 1536 + 576 * 7168 + 512 + 24576 * 512 + 7168 * 12288 + 12288 * 7168   # ... o_proj, g_proj
COMMON = 6 * 7168                                                      # 2 layer norms, 2 AttnRes norms, 2 AttnRes projections
DENSE = 3 * 33792 * 7168
MOE_BF16 = 896 * 7168 + 3584 * 7168 + 3584 + 7168 * 3584 + 3 * 6144 * 7168   # gate, down, norm, up, shared gate/up/down
EXPERT = 3 * 3072 * 3584                                               # w1, w3 [3072, 3584], w2 [3584, 3072]
EMBED = 163840 * 7168


@pytest.fixture(scope="module")
def record():
    return load_models(shipped_root())["model:kimi-k3"]


def test_the_raw_config_imports_to_the_shipped_record(record):
    again = import_config(copy.deepcopy(CONFIG), "kimi-k3", REPO, REVISION, params=2_779_484_478_208)
    assert again["config"] == record["config"] and again["derived"] == record["derived"]
    assert again["config"]["model_type"] == "kimi_k3_text"          # the text_config's own kimi_linear is not its layout
    assert (record["source"]["repo"], record["source"]["revision"]) == (REPO, REVISION)
    d = record["derived"]
    assert (d["family"], d["attention_layers"], d["linear_attention"]["layers"], d["moe"]["latent_hidden"]) == ("hybrid_mla_moe", 24, 69, 3584)


def test_the_total_is_the_sum_of_the_listed_tensors(record):
    non_routed = (69 * (KDA_BF16 + KDA_F32) + 24 * MLA + 93 * COMMON + DENSE + 92 * (MOE_BF16 + 896)   # + e_score_correction_bias
                  + 2 * EMBED + 3 * 7168)                                                          # embed, lm_head; norm, output AttnRes
    assert (KDA_BF16 + KDA_F32, MLA, non_routed) == (443_740_416, 232_196_096, 56_743_648_000)
    total = non_routed + 92 * 896 * EXPERT
    assert total == 2_779_484_478_208
    counted = parameter_count(record)
    assert counted["total"] == total == record["parameters"]["total"] and record["parameters"]["matches"] == "checkpoint"
    assert counted["formulas"][-2:] == ["FX906", "FX907"]
    # A_log counted per head (96 of the stored 128) instead: 69 x 32 fewer
    assert total - 69 * 32 == 2_779_484_476_000
    # active: 16 of 896 routed experts in 92 layers, embedding and head counted as FX18 does; the card's 104B without the input embedding
    assert counted["active"] == non_routed + 92 * 16 * EXPERT == 105_364_019_968
    assert counted["active"] - EMBED == 104_189_614_848


def test_the_index_total_size_is_reproduced_to_the_byte(record):
    """MXFP4 routed experts: 0.5 B per weight plus one E8M0 scale byte per 32; BF16 2; F32 4 (the KDA convolutions,
    A_log, dt_bias, o_norm and the router's e_score_correction_bias). The vision tower and projector are BF16."""
    routed = 92 * 896 * EXPERT
    f32 = 69 * KDA_F32 + 92 * 896
    bf16 = parameter_count(record)["total"] - routed - f32
    assert (f32, bf16) == (11_122_432, 56_732_525_568)
    language_model = routed // 2 + routed // 32 + 2 * bf16 + 4 * f32
    assert language_model == record["storage"]["weight_bytes"] == 1_559_965_606_912
    vision = 27 * (4608 * 1024 + 1024 * 1536 + 4096 * 1024 + 1024 * 4096 + 2 * 1024) + 1024 + 64 * 64 * 1024 + 1024 * 3 * 14 * 14
    projector = 4096 * 4096 + 7168 * 4096 + 7168
    assert [p["parameters"] for p in record["parameters"]["outside_lm"]] == [vision, projector] == [401_214_464, 46_144_512]
    assert language_model + 2 * (vision + projector) == TOTAL_SIZE
    # the Hub's safetensors count (packed experts one element per weight): F32, BF16 with the vision parts, U8
    assert f32 + bf16 + vision + projector + routed == 2_779_931_837_184


def test_the_index_tensor_count_is_reproduced():
    # KDA 14 tensors, MLA 8, 6 norms and AttnRes per layer, the dense MLP 3, 8 non-routed MoE tensors in 92 layers; every
    # routed expert 3 matrices of packed weights and scales; embed, lm_head, norm, output AttnRes norm and projection;
    # the projector 3 and the vision tower 165 (27 x 6 + 3)
    assert 69 * 14 + 24 * 8 + 93 * 6 + 3 + 92 * 8 + 92 * 896 * 6 + 5 + 3 + (27 * 6 + 3) == TENSORS


def test_state_of_a_million_token_request(record):
    # 24 MLA layers x 576 latent elements x 2 B per token; 69 KDA states of 96 x 128 x 128 plus 3 columns of q, k, v (3 x 12288)
    result = state.request_state(record, 1_048_576)
    assert kv_bytes_per_token(record) == 24 * 576 * 2 == 27_648
    assert result.total == 27_648 * 1_048_576 + 69 * (96 * 128 * 128 + 3 * 3 * 12288) * 2 == 29_223_346_176
    assert state.request_state(record, 1_048_576, state_bytes=4).total == 27_648 * 1_048_576 + 69 * 3_366_912 * 2


def test_only_kv_concurrency_and_state_size_it(record, run):
    values = model_values(record, None, "calc:kv-concurrency")
    assert (values["layers"][0], values["attention"][0], values["recurrent_state_bytes_per_request"][0]) == (24, "mla", 69 * 3_366_912)
    with pytest.raises(InputError, match=r"is a hybrid \(69 KDA : 24 MLA"):
        model_values(record, None)
    with pytest.raises(InputError, match="the forward ledger has no operator template for it yet"):
        run(record, 1)


def _text(**change) -> dict:
    cfg = copy.deepcopy(CONFIG)
    cfg["text_config"].update(change)
    return cfg


@pytest.mark.parametrize(("cfg", "field", "text"), [
    (_text(linear_attn_config={**CONFIG["text_config"]["linear_attn_config"], "use_full_rank_gate": False}),
     "linear_attn_config.use_full_rank_gate", "false is a variant the importer does not count (it counts kimi_k3_text models with it true)"),
    (_text(mla_use_output_gate=False), "mla_use_output_gate", "False is a variant the importer does not understand"),
    (_text(q_lora_rank=None), "q_lora_rank", "null (MLA without query compression"),
    (_text(routed_expert_hidden_size=0), "routed_expert_hidden_size", "expected a whole number >= 1, got 0"),
    (_text(is_encoder_decoder=True), "is_encoder_decoder", "true differs from the transformers PretrainedConfig default false"),
    ({**CONFIG["text_config"], "routed_expert_hidden_size": 3584}, "routed_expert_hidden_size",
     "is present and shows Kimi K3's KDA/MLA hybrid outside the kimi_k3 wrapper"),
], ids=["low-rank-gate", "no-output-gate", "uncompressed-queries", "latent-width", "encoder-decoder", "text-without-wrapper"])
def test_bad_fields_are_refused_by_name(cfg, field, text):
    with pytest.raises(InputError) as info:
        import_config(copy.deepcopy(cfg), "x")
    assert info.value.field == field and text in info.value.message, str(info.value)


def test_kimi_linear_with_a_full_rank_gate_is_refused(record):
    linear = load_models(shipped_root())["model:kimi-linear-48b-a3b"]
    cfg = copy.deepcopy(linear["config"])
    cfg["linear_attn_config"]["use_full_rank_gate"] = True
    with pytest.raises(InputError, match="linear_attn_config.use_full_rank_gate: true is a variant the importer does not count"):
        import_config(cfg, "x")
