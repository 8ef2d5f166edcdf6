"""engine/domain/models.py: import from config.json, parameter counts from FX10-FX18, KV bytes from F8.

Every expected number is a published count (named in the shipped record or beside the
assertion) or hand arithmetic on published config fields written next to it.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from engine.core.errors import InputError, KnowledgeError
from engine.domain.models import import_config, kv_bytes_per_token, load_models, parameter_count

ROOT = Path(__file__).resolve().parents[2]
MODEL_FILES = sorted((ROOT / "knowledge" / "models").glob("*.yaml"))


@pytest.fixture(scope="module")
def models() -> dict:
    return load_models(ROOT)


def record(models, name: str) -> dict:
    return models[f"model:{name}"]


# ------------------------------------------------------------------------- shipped records
@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_architecture_reproduces_the_official_total(path, models):
    rec = record(models, path.stem)
    ref = rec["parameters"]
    total = parameter_count(rec, ROOT)["total"]
    why = f"{rec['id']} ({ref['matches']}): computed {total}, expected {ref['total']}; source: {ref['reference']}"
    if ref["matches"] == "paper_rounded":
        assert abs(total - ref["total"]) <= ref["rel_tol"] * ref["total"], why
    else:
        assert total == ref["total"], why


def test_only_models_without_an_exact_count_fall_back_to_the_paper(models):
    # GPT-3's weights were never released; no exact OPT-13B count was reachable (see its record)
    rounded = sorted(m for m, r in models.items() if r["parameters"]["matches"] == "paper_rounded")
    assert rounded == ["model:gpt-3-175b", "model:opt-13b"]
    # every other record reproduces an exact count; none is left computed without an official total
    # (Qwen3.6-35B-A3B's is its index total_size, tests/domain/test_model_revisions.py)
    computed = sorted(m for m, r in models.items() if r["parameters"]["matches"] == "computed")
    assert computed == []
    assert {r["parameters"]["matches"] for r in models.values()} <= {"checkpoint", "model_card", "paper_rounded", "computed"}


def test_at_least_twelve_models_cover_every_family_and_sliding_windows(models):
    assert len(models) >= 12
    kinds = {(r["derived"]["family"], r["derived"]["attention"]) for r in models.values()}
    assert {("dense", "gqa"), ("moe", "gqa"), ("mla_moe", "mla"), ("dense", "mha")} <= kinds
    assert any(r["derived"].get("sliding_window") for r in models.values())


def test_each_record_file_is_named_for_its_id(models):
    assert {f"model:{p.stem}" for p in MODEL_FILES} == set(models)


def test_a_record_off_the_schema_is_reported_with_its_place(tmp_path):
    folder = tmp_path / "knowledge" / "models"
    folder.mkdir(parents=True)
    text = (ROOT / "knowledge" / "models" / "qwen3-8b.yaml").read_text()
    (folder / "qwen3-8b.yaml").write_text(text.replace("family: dense", "family: ssm"))
    with pytest.raises(KnowledgeError) as info:
        load_models(tmp_path)
    assert info.value.problems[0].place.startswith("knowledge/models/qwen3-8b.yaml:")
    assert info.value.problems[0].path == "derived.family"


def test_parts_outside_the_language_model_close_the_checkpoint_totals(models):
    # Hub safetensors totals: DeepSeek-V3 684531386000 (BF16 + F8_E4M3 + F32); gemma-3-27b-it 27432406640 (BF16)
    for name, checkpoint in (("deepseek-v3", 684531386000), ("gemma-3-27b-it", 27432406640)):
        rec = record(models, name)
        outside = sum(p["parameters"] for p in rec["parameters"]["outside_lm"])
        assert rec["parameters"]["total"] + outside == checkpoint, name


def test_deepseek_v3_counts_its_router_bias_outside_the_formulas(models):
    counted = parameter_count(record(models, "deepseek-v3"), ROOT)
    # 61 layers - 3 dense = 58 MoE layers x 256 routed experts = 14848 e_score_correction_bias values
    assert counted["extras"] == {"router_bias": 14848}
    assert "FX15" in counted["missing_formulas"]["router_bias"]


def test_moe_active_count_follows_top_k(models):
    counted = parameter_count(record(models, "qwen3-30b-a3b"), ROOT)
    # FX18 example (Qwen3-30B-A3B config): 48 x (18874368 + 4352 + 38010880) + 622329856 + 2048 = 3353032704
    assert counted["active"] == 3353032704
    assert counted["formulas"][-2:] == ["FX17", "FX18"]


# ------------------------------------------------------------------------- peer mistakes
def test_head_dim_comes_from_the_config_not_hidden_over_heads(models):
    rec = record(models, "qwen3-32b")
    # Qwen/Qwen3-32B config.json: hidden 5120, 64 heads, head_dim 128 (hidden/heads would be 80)
    assert (rec["derived"]["head_dim"], rec["derived"]["head_dim_stated"]) == (128, True)
    # FX10 gqa: 2 x 5120 x 128 x (64 + 8) = 94371840 per layer, 64 layers
    assert parameter_count(rec, ROOT)["parts"]["attention"] == 64 * 94371840


def test_head_dim_falls_back_to_hidden_over_heads_only_when_unstated(models):
    cfg = dict(record(models, "qwen3-32b")["config"])
    del cfg["head_dim"]
    derived = import_config(cfg, "no-head-dim")["derived"]
    assert (derived["head_dim"], derived["head_dim_stated"]) == (80, False)  # 5120 / 64


def test_swiglu_is_three_matrices(models):
    # meta-llama/Llama-3.1-8B: hidden 4096, intermediate 14336: gate, up, down = 3 x 4096 x 14336 = 176160768 per layer
    assert parameter_count(record(models, "llama-3.1-8b"), ROOT)["parts"]["mlp"] == 32 * 176160768


def test_tied_and_untied_embeddings(models):
    qwen = record(models, "qwen3-8b")
    # untied: 2 x 151936 x 4096 = 1244659712 (FX14 example); tied Gemma 3: 262208 x 5376 = 1409630208
    assert parameter_count(qwen, ROOT)["parts"]["embeddings"] == 1244659712
    assert parameter_count(record(models, "gemma-3-27b-it"), ROOT)["parts"]["embeddings"] == 1409630208
    tied = copy.deepcopy(qwen)
    tied["config"]["tie_word_embeddings"] = True
    # tying drops one 151936 x 4096 matrix = 622329856
    assert parameter_count(qwen, ROOT)["total"] - parameter_count(tied, ROOT)["total"] == 622329856


def test_kv_bytes_per_token_gqa(models):
    # Qwen3-8B: 2 (K and V) x 36 layers x 8 KV heads x 128 x 2 B = 147456
    assert kv_bytes_per_token(record(models, "qwen3-8b"), ROOT, 2) == 147456


def test_kv_bytes_per_token_mla_stores_576_elements_per_layer(models):
    rec = record(models, "deepseek-v3")
    assert rec["derived"]["mla"]["kv_lora_rank"] + rec["derived"]["mla"]["qk_rope_head_dim"] == 576
    # 61 layers x (512 + 64) x 2 B = 70272, no factor 2 for K and V
    assert kv_bytes_per_token(rec, ROOT, 2) == 70272


# tiiuae/falcon-7b config.json (multi-query attention, parallel attention and MLP block)
FALCON_7B = {
    "alibi": False, "apply_residual_connection_post_layernorm": False, "architectures": ["FalconForCausalLM"],
    "attention_dropout": 0.0, "bias": False, "bos_token_id": 11, "eos_token_id": 11, "hidden_dropout": 0.0,
    "hidden_size": 4544, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "falcon",
    "multi_query": True, "new_decoder_architecture": False, "num_attention_heads": 71, "num_hidden_layers": 32,
    "parallel_attn": True, "torch_dtype": "bfloat16", "transformers_version": "4.27.4", "use_cache": True, "vocab_size": 65024,
}


def test_kv_bytes_per_token_mqa():
    rec = import_config(FALCON_7B, "falcon-7b", "tiiuae/falcon-7b")
    assert (rec["derived"]["attention"], rec["derived"]["head_dim"]) == ("mqa", 64)  # 4544 / 71
    # one K and one V head: 2 x 32 layers x 64 x 2 B = 8192
    assert kv_bytes_per_token(rec, ROOT, 2) == 8192
    # FX10 mqa example: fused query_key_value 4544 x 73 x 64 + dense 4544 x 4544 = 41877504 per layer
    assert parameter_count(rec, ROOT)["parts"]["attention"] == 32 * 41877504


def test_sliding_window_layers(models):
    window = record(models, "gemma-3-27b-it")["derived"]["sliding_window"]
    # 62 layers, every sixth global (sliding_window_pattern 6): 62 // 6 = 10 global, 52 local with window 1024
    assert (window["window"], window["windowed_layers"]) == (1024, 52)
    assert "sliding_window" not in record(models, "qwen2.5-72b-instruct")["derived"]  # use_sliding_window false


def test_layer_types_decide_the_windowed_layers(models):
    cfg = dict(record(models, "llama-3.1-8b")["config"], model_type="mistral", sliding_window=4096)
    for key in ("attention_bias", "mlp_bias"):
        del cfg[key]
    cfg["layer_types"] = ["sliding_attention", "full_attention"] * 16
    assert import_config(cfg, "x")["derived"]["sliding_window"]["windowed_layers"] == 16


def test_multimodal_wrapper_is_flattened_and_its_tower_named(models):
    shipped = record(models, "gemma-3-27b-it")
    wrapper = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "mm_tokens_per_image": 256,
               "text_config": {k: v for k, v in shipped["config"].items() if k != "model_type"},
               "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152}}
    rec = import_config(wrapper, "gemma-3-27b-it")
    assert rec["derived"] == shipped["derived"]
    assert "vision_config (siglip_vision_model)" in rec["notes"]


# ------------------------------------------------------------------------- refusals
def refusal(cfg: dict) -> str:
    with pytest.raises(InputError) as info:
        import_config(cfg, "x")
    return str(info.value)


def test_unknown_key_is_refused_by_name(models):
    cfg = dict(record(models, "qwen3-8b")["config"], attention_sink_size=4)
    assert refusal(cfg) == ("attention_sink_size: is not a known config.json key: add it to KNOWN in engine/domain/model_layouts.py "
                            "if it shapes the architecture, or to IGNORED if it does not")


def test_unknown_attention_variant_is_refused(models):
    # a sparse-attention indexer (index_topk) under model_type deepseek_v3 is refused by name: only the deepseek_v32
    # layout counts one (tests/domain/test_arch_refusals.py, test_deepseek_v32.py)
    cfg = dict(record(models, "deepseek-v3")["config"], index_topk=2048)
    assert refusal(cfg).startswith("index_topk: is present and shows DeepSeek Sparse Attention outside the deepseek_v32 layout")
    cfg = dict(record(models, "llama-3.1-8b")["config"], kv_lora_rank=512)
    assert refusal(cfg) == ("kv_lora_rank: is not used by model_type 'llama': the config describes an attention, "
                            "MoE or layer variant the importer does not understand")


def test_unknown_moe_variant_is_refused(models):
    cfg = dict(record(models, "qwen3-30b-a3b")["config"], decoder_sparse_step=2)
    assert refusal(cfg) == "decoder_sparse_step: 2 is a variant the importer does not understand (it counts qwen3_moe models with decoder_sparse_step = 1)"
    cfg = dict(record(models, "deepseek-v3")["config"], topk_method="greedy")
    assert refusal(cfg) == "topk_method: 'greedy' is a variant the importer does not understand (it counts deepseek_v3 models with topk_method = \"noaux_tc\")"


def test_unknown_model_type_with_moe_keys_is_not_taken_for_dense():
    cfg = {"model_type": "fancy_moe", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
           "vocab_size": 32000, "num_experts": 64, "num_experts_per_tok": 4}
    assert refusal(cfg).startswith("model_type: 'fancy_moe' is not a known architecture and its config has MoE/MLA keys "
                                   "(num_experts, num_experts_per_tok): an unknown attention or MoE variant is never counted as a dense model")


def test_unknown_model_type_is_refused():
    assert refusal({"model_type": "fancy", "hidden_size": 768}).startswith("model_type: 'fancy' is not a known architecture (known: deepseek_v3, deepseek_v32, deepseek_v4, falcon,")
    # a state-space model is refused as what it is (tests/domain/test_arch_refusals.py)
    assert refusal({"model_type": "mamba", "hidden_size": 768}).startswith("model_type: 'mamba' shows a Mamba (state-space) model")


def test_mla_without_query_compression_is_refused(models):
    cfg = dict(record(models, "deepseek-v3")["config"], q_lora_rank=None)
    assert refusal(cfg) == "q_lora_rank: null (MLA without query compression, e.g. DeepSeek-V2-Lite) is a variant FX10 does not cover"


def test_a_total_the_architecture_misses_is_refused(models):
    cfg = record(models, "qwen3-8b")["config"]
    with pytest.raises(InputError, match=r"^--params: the architecture gives 8190735360 parameters, not 8200000000"):
        import_config(cfg, "qwen3-8b", params=8_200_000_000)
    # the Hub total, given, is reproduced and recorded as given
    assert import_config(cfg, "qwen3-8b", params=8190735360)["parameters"]["matches"] == "given"


# ------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_reimporting_a_shipped_config_gives_the_same_record(path, models):
    rec = record(models, path.stem)
    if rec["config"]["model_type"] == "gpt3":
        pytest.skip("GPT-3 has no config.json; its record is written from the paper")
    again = import_config(rec["config"], path.stem, rec["source"]["repo"], rec["source"]["revision"])
    assert again["config"] == rec["config"]
    assert again["derived"] == rec["derived"]


# /work/shared/data/model-configs.json: architecture fields of the official config.json files
# (repository and revision given there); model_type annotations such as "qwen3 (dense)" are cut
# to the Hugging Face value, and the descriptive "qk_norm" note is left out.
SHARED = {
    "qwen3-8b": {"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
                 "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936, "tie_word_embeddings": False,
                 "max_position_embeddings": 40960, "rope_theta": 1000000},
    "qwen3-32b": {"model_type": "qwen3", "hidden_size": 5120, "num_hidden_layers": 64, "num_attention_heads": 64, "num_key_value_heads": 8,
                  "head_dim": 128, "intermediate_size": 25600, "vocab_size": 151936, "tie_word_embeddings": False,
                  "max_position_embeddings": 40960, "rope_theta": 1000000},
    "qwen3-30b-a3b": {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
                      "head_dim": 128, "intermediate_size": 6144, "vocab_size": 151936, "tie_word_embeddings": False, "num_experts": 128,
                      "num_experts_per_tok": 8, "moe_intermediate_size": 768, "norm_topk_prob": True, "max_position_embeddings": 40960,
                      "rope_theta": 1000000},
    "qwen3-235b-a22b": {"model_type": "qwen3_moe", "hidden_size": 4096, "num_hidden_layers": 94, "num_attention_heads": 64, "num_key_value_heads": 4,
                        "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936, "tie_word_embeddings": False, "num_experts": 128,
                        "num_experts_per_tok": 8, "moe_intermediate_size": 1536, "norm_topk_prob": True, "max_position_embeddings": 40960,
                        "rope_theta": 1000000},
    "deepseek-v3": {"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61, "first_k_dense_replace": 3, "num_attention_heads": 128,
                    "num_key_value_heads": 128, "intermediate_size": 18432, "vocab_size": 129280, "tie_word_embeddings": False, "q_lora_rank": 1536,
                    "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "n_routed_experts": 256,
                    "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "n_shared_experts": 1, "n_group": 8, "topk_group": 4,
                    "max_position_embeddings": 163840},
    "deepseek-r1-distill-llama-70b": {"model_type": "llama", "hidden_size": 8192, "num_hidden_layers": 80, "num_attention_heads": 64,
                                      "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 28672, "vocab_size": 128256,
                                      "tie_word_embeddings": False, "max_position_embeddings": 131072, "rope_theta": 500000},
}


@pytest.mark.parametrize("name", sorted(SHARED))
def test_shared_data_imports_to_the_shipped_record(name, models):
    shipped = record(models, name)
    rec = import_config(SHARED[name], name)
    assert rec["derived"] == shipped["derived"]
    for key, value in rec["config"].items():
        assert shipped["config"][key] == value, key


def test_import_does_not_change_its_input(models):
    cfg = copy.deepcopy(SHARED["qwen3-30b-a3b"])
    import_config(cfg, "x")
    assert cfg == SHARED["qwen3-30b-a3b"]


def test_a_value_of_the_wrong_type_is_refused_with_its_field(models):
    cfg = dict(record(models, "qwen3-8b")["config"], tie_word_embeddings="no")
    assert refusal(cfg) == "config.tie_word_embeddings: expected boolean, got str 'no' (the record would not fit engine/kb/schemas/model.json)"
    cfg = dict(record(models, "qwen3-8b")["config"], hidden_size=4096.0)
    assert refusal(cfg) == "hidden_size: expected a whole number >= 1, got 4096.0"
