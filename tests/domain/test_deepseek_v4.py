"""DeepSeek-V4-Flash as a model record: compressed attention (CSA/HCA), counted exactly (issue #15).

The config is deepseek-ai/DeepSeek-V4-Flash's config.json as a third-party mission log copies it verbatim
(aeonmindai/arc memory/mission/wave13-AH-config.md at 611d236c2aa9aebe25c4e587aa9097e08c40231d, section 1.1; fetched
from the Hub's main branch), the checkpoint that bobrenjc93/TorchInferno pins to revision
60d8d70770c6776ff598c94bb586a859a38244f1. The same log reports the index: 69,187 tensors, total_size 159,609,485,896 B.
The layer shapes and dtypes are the reference inference/model.py's (copy in Nicooo-Wang/DeepSeek-V4-Pro-code at
0ec3a03c2fc34f29b2e72696ceaed9ae7a373aeb) and the log's shard header of layer 0. Every number below is hand arithmetic
on those shapes, never a value copied from running this code.
"""

from __future__ import annotations

import copy

import pytest

from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.domain import state
from engine.domain.models import import_config, kv_bytes_per_token, load_models, parameter_count
from engine.domain.presets import model_values

REPO, REVISION = "deepseek-ai/DeepSeek-V4-Flash", "60d8d70770c6776ff598c94bb586a859a38244f1"
TOTAL_SIZE = 159_609_485_896            # model.safetensors.index.json metadata.total_size at that revision
TENSORS = 69_187                        # tensors the index lists
# the config.json, verbatim (key order kept)
CONFIG = {
    "architectures": ["DeepseekV4ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 0,
    "eos_token_id": 1, "expert_dtype": "fp4", "hc_eps": 1e-06, "hc_mult": 4, "hc_sinkhorn_iters": 20, "head_dim": 512,
    "hidden_act": "silu", "hidden_size": 4096, "index_head_dim": 128, "index_n_heads": 64, "index_topk": 512,
    "initializer_range": 0.02, "max_position_embeddings": 1048576, "model_type": "deepseek_v4", "moe_intermediate_size": 2048,
    "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 64, "num_experts_per_tok": 6,
    "num_hidden_layers": 43, "num_hash_layers": 3, "num_key_value_heads": 1, "num_nextn_predict_layers": 1, "o_groups": 8,
    "o_lora_rank": 1024, "q_lora_rank": 1024, "qk_rope_head_dim": 64,
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "scale_fmt": "ue8m0",
                            "weight_block_size": [128, 128]},
    "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 16, "original_max_position_embeddings": 65536, "type": "yarn"},
    "rope_theta": 10000, "routed_scaling_factor": 1.5, "scoring_func": "sqrtsoftplus", "sliding_window": 128, "swiglu_limit": 10.0,
    "tie_word_embeddings": False, "topk_method": "noaux_tc", "torch_dtype": "bfloat16", "transformers_version": "4.57.1",
    "use_cache": True, "vocab_size": 129280, "compress_rope_theta": 160000,
    "compress_ratios": [0, 0] + [4, 128] * 20 + [4, 0],
}

# --- per layer, from the reference code's shapes (D 4096, 64 heads of 512, q rank 1024, 8 output groups of rank 1024)
ATTN_FP8 = 4096 * 1024 + 1024 * 64 * 512 + 4096 * 512 + 8192 * 4096 + 4096 * 8192   # wq_a, wq_b, wkv, wo_a, wo_b
ATTN = 64 + ATTN_FP8 + 1024 + 512                                                   # + attn_sink (F32), q_norm, kv_norm
CSA_BF16 = 2 * 1024 * 4096 + 512                 # compressor wkv, wgate (overlap: 2 x 512 wide), norm
IDX_BF16 = 64 * 4096 + 2 * 256 * 4096 + 128      # indexer weights_proj, its compressor's wkv, wgate, norm
CSA_F32 = 4 * 1024 + 4 * 256                     # the two compressors' ape
HCA_BF16, HCA_F32 = 2 * 512 * 4096 + 512, 128 * 512
IDX_FP8 = 64 * 128 * 1024                        # indexer wq_b
EXPERT = 3 * 2048 * 4096                         # w1, w3 [2048, 4096], w2 [4096, 2048]
HC = 2 * (24 * 4 * 4096 + 24 + 3)                # hc_attn and hc_ffn: fn [24, 16384], base [24], scale [3]
HC_HEAD = 4 * 4 * 4096 + 4 + 1


@pytest.fixture(scope="module")
def record():
    return load_models(shipped_root())["model:deepseek-v4-flash"]


def test_the_verbatim_config_imports_to_the_shipped_record(record):
    again = import_config(copy.deepcopy(CONFIG), "deepseek-v4-flash", REPO, REVISION, params=284_332_240_471)
    assert again["config"] == record["config"] and again["derived"] == record["derived"]
    assert (record["source"]["repo"], record["source"]["revision"]) == (REPO, REVISION)
    ca = record["derived"]["compressed_attention"]
    assert (ca["window_only_layers"], ca["csa_layers"], ca["hca_layers"], ca["hca_ratio"]) == (2, 21, 20, 128)
    assert (record["derived"]["family"], record["derived"]["attention"], record["derived"]["moe"]["hash_layers"]) == ("compressed_moe", "mqa", 3)


def test_the_total_is_the_sum_of_the_listed_tensors(record):
    layer = ATTN + 256 * EXPERT + EXPERT + 256 * 4096 + 2 * 4096 + HC      # attention, experts, shared expert, gate, norms, HC
    expected = (43 * layer + 21 * (CSA_BF16 + IDX_BF16 + CSA_F32 + IDX_FP8) + 20 * (HCA_BF16 + HCA_F32)
                + 40 * 256                                                 # gate.bias on the 40 layers past the 3 hash layers
                + 2 * 129280 * 4096 + 4096 + HC_HEAD)                      # embed, head, final norm, hc_head
    assert ATTN == 106_956_352 and expected == 284_332_240_471
    counted = parameter_count(record)
    assert counted["total"] == expected == record["parameters"]["total"] and record["parameters"]["matches"] == "checkpoint"
    assert counted["formulas"][-2:] == ["FX897", "FX898"]
    # active: 6 of 256 routed experts in each of the 43 layers; embedding and head counted, as FX18 does
    assert counted["active"] == expected - 43 * 250 * EXPERT == 13_799_632_471
    assert counted["active"] - 2 * 129280 * 4096 == 12_740_570_711   # the published 13B


def test_the_index_total_size_is_reproduced_to_the_byte(record):
    """deepseek-ai/DeepSeek-V4-Flash@60d8d707 model.safetensors.index.json: total_size 159,609,485,896 B.

    Bytes per element: FP4 experts 0.5 (two e2m1 values per I8 byte) plus one F8_E8M0 scale per 32 values; FP8 (F8_E4M3)
    matrices 1 plus one F8_E8M0 scale per 128 x 128 block; BF16 2; F32 4; the hash layers' tid2eid I64 8. The
    checkpoint also holds the MTP block (mtp.0: a full block without compressor, not hash-routed, with e_proj, h_proj,
    enorm, hnorm, norm and its own hc_head), which the language-model count leaves out."""
    fp4 = 43 * 256 * EXPERT
    fp8 = 43 * (ATTN_FP8 + EXPERT) + 21 * IDX_FP8
    bf16 = (2 * 129280 * 4096 + 21 * (CSA_BF16 + IDX_BF16) + 20 * HCA_BF16
            + 43 * (256 * 4096 + 1024 + 512 + 2 * 4096) + 4096)           # gate weights, q/kv norms, attn/ffn norms, final norm
    f32 = 43 * HC + HC_HEAD + 21 * CSA_F32 + 20 * HCA_F32 + 43 * 64 + 40 * 256   # HC, ape, attn_sink, gate.bias
    assert fp4 + fp8 + bf16 + f32 == parameter_count(record)["total"]       # every parameter stored once
    assert (fp4, fp8, bf16, f32) == (277_025_390_592, 5_857_345_536, 1_414_188_672, 35_315_671)
    # FP8 block scales per layer: wq_a 8 x 32, wq_b 256 x 8, wkv 4 x 32, wo_a 64 x 32, wo_b 32 x 64, shared w1/w3 16 x 32, w2 32 x 16
    block_scales = 43 * (256 + 2048 + 128 + 2048 + 2048 + 3 * 512) + 21 * (64 * 8)
    tid2eid = 3 * 129280 * 6 * 8
    main = fp4 // 2 + fp4 // 32 + fp8 + block_scales + 2 * bf16 + 4 * f32 + tid2eid
    assert main == record["storage"]["weight_bytes"] == 156_015_698_140
    mtp_fp4, mtp_fp8 = 256 * EXPERT, ATTN_FP8 + EXPERT + 2 * 4096 * 4096
    mtp_bf16 = 256 * 4096 + 1024 + 512 + 5 * 4096                           # gate, q/kv norms, attn/ffn/e/h norms, final norm
    mtp_f32 = HC + HC_HEAD + 64 + 256                                        # HC, hc_head, attn_sink, gate.bias
    assert mtp_fp4 + mtp_fp8 + mtp_bf16 + mtp_f32 == 6_610_048_891 == record["parameters"]["outside_lm"][0]["parameters"]
    mtp = mtp_fp4 // 2 + mtp_fp4 // 32 + mtp_fp8 + (8064 + 2 * 32 * 32) + 2 * mtp_bf16 + 4 * mtp_f32
    assert mtp == 3_593_787_756
    assert main + mtp == TOTAL_SIZE


def test_the_index_tensor_count_is_reproduced():
    # per layer: attn_sink, q_norm, kv_norm; 5 FP8 matrices and 3 shared-expert ones with their scales; 256 x 3 experts with
    # scales; gate weight and bias (or tid2eid); attn/ffn norms; 6 HC tensors. CSA adds 4 compressor, 3 indexer (wq_b with
    # scale, weights_proj) and 4 indexer-compressor tensors, HCA 4; the model embed, head, norm, 3 hc_head; MTP one more
    # block plus e_proj, h_proj (with scales), enorm, hnorm, norm and 3 hc_head
    layer = 3 + 2 * 5 + 2 * 3 + 2 * 3 * 256 + 2 + 2 + 6
    assert 43 * layer + 21 * 11 + 20 * 4 + 6 + (layer + 4 + 3 + 3) == TENSORS


def test_state_by_layer_kind_by_hand(record):
    # 1,048,576 tokens, BF16 entries: windows of 128 x 512 in all 43 layers; CSA 262,144 entries of 512 and indexer keys of 128;
    # HCA 8,192 entries of 512; FP32 compressor buffers (kv_state, score_state): CSA 2 x 8 x (1024 + 256), HCA 2 x 128 x 512
    result = state.request_state(record, 1_048_576)
    window = 128 * 512 * 2
    rows = {r.kind: (r.layers, r.tokens_held, r.bytes_per_request) for r in result.rows}
    assert rows["sliding_attention"] == (2, 128, 2 * window)
    assert rows["csa"] == (21, 128 + 262_144, 21 * (window + 262_144 * 640 * 2 + 2 * 8 * 1280 * 4))
    assert rows["hca"] == (20, 128 + 8_192, 20 * (window + 8_192 * 512 * 2 + 2 * 128 * 512 * 4))
    assert result.total == 7_219_838_976 + 12_206_080 == 7_232_045_056 and result.formulas == ("FX899", "FX900", "FX901")
    # 100 tokens: inside the window, 25 CSA entries, no HCA entry yet; the compressor state is there from the first token
    assert state.request_state(record, 100).total == 43 * 100 * 512 * 2 + 21 * 25 * 640 * 2 + 12_206_080 == 17_281_280
    # FP8 entries halve the cache; the compressor state stays FP32
    assert state.request_state(record, 1_048_576, kv_bytes=1).total == 7_219_838_976 // 2 + 12_206_080


def test_kv_per_token_is_the_growth_past_the_windows(record):
    # every 128 tokens past the window: 32 CSA entries and keys (21 x 640 x 2 B each) and one HCA entry (20 x 512 x 2 B)
    assert kv_bytes_per_token(record) == (32 * 21 * 640 * 2 + 20 * 512 * 2) // 128 == 6880


def test_state_on_a_device_uses_the_stored_weights(record):
    result = state.request_state(record, 1_048_576)
    weights, source = state.weight_storage(record)
    assert weights == 156_015_698_140 and "stored" in source
    per_gpu = state.per_gpu_bytes(record, result, 8)
    assert per_gpu == result.total                      # one K/V head, indexer keys, compressors: replicated on every rank


def test_calculators_and_ledger_refuse_it_by_name(record, run):
    for calculator in (None, "calc:kv-concurrency"):
        with pytest.raises(InputError) as info:
            model_values(record, None, calculator)
        assert "is DeepSeek-V4's compressed attention (2 sliding-window : 21 CSA (ratio 4, indexer) : 20 HCA" in info.value.message
    with pytest.raises(InputError, match="DeepSeek-V4's compressed attention .* the forward ledger has no operator template"):
        run(record, 1)


@pytest.mark.parametrize(("change", "field", "text"), [
    ({"compress_ratios": [0, 4, 128]}, "compress_ratios", "expected a list of at least 43 whole numbers >= 0"),
    ({"compress_ratios": [0, 0] + [4, 128, 4, 64] * 10 + [4, 0, 0]}, "compress_ratios", "lists the ratios [64, 128] beside 4"),
    ({"o_groups": 6}, "o_groups", "6 does not divide the 64 attention heads"),
    ({"num_key_value_heads": 2}, "num_key_value_heads", "2 is a variant the importer does not understand"),
    ({"num_hash_layers": 44}, "num_hash_layers", "expected a whole number from 0 to the 43 layers"),
    ({"hc_mult": 0}, "hc_mult", "expected a whole number >= 1"),
    ({"sliding_window": None}, "sliding_window", "expected a whole number >= 1"),
], ids=["short-ratios", "two-heavy-ratios", "groups", "kv-heads", "hash-layers", "hc-mult", "window"])
def test_bad_fields_are_refused_by_name(change, field, text):
    with pytest.raises(InputError) as info:
        import_config({**copy.deepcopy(CONFIG), **change}, "x")
    assert info.value.field == field and text in info.value.message
