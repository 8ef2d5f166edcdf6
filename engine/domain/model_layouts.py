"""The config.json keys the importer knows and what each ``model_type`` means (a Layout).

Every key of a config.json is either known (it shapes the architecture: COMMON or a layout's
``keys``), ignored (IGNORED), or noted as lying outside the language model (OUTSIDE_LM);
anything else is refused with its name.
"""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.record import dataclass, field, replace

# ---------------------------------------------------------------------------------------- keys
# Keys that do not change the architecture: numerics, training-only settings, token ids,
# library bookkeeping. They are dropped (max_position_embeddings is kept as information:
# it only shapes the model where positions are learned, as in OPT).
IGNORED = frozenset({
    "architectures", "auto_map", "torch_dtype", "dtype", "transformers_version", "_name_or_path", "_commit_hash",
    "bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id", "prefix",
    "use_cache", "initializer_range", "init_std", "pretraining_tp",
    "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon",
    "rope_theta", "rope_scaling", "rope_local_base_freq",
    "attention_dropout", "dropout", "hidden_dropout", "activation_dropout", "layerdrop",
    "output_router_logits", "router_aux_loss_coef", "aux_loss_alpha", "seq_aux", "ep_size",
    "routed_scaling_factor", "norm_topk_prob",            # scale or renormalise routing weights: no weights, no shapes
    "query_pre_attn_scalar", "final_logit_softcapping", "attn_logit_softcapping", "cache_implementation",
    "output_projection",                                  # OPT: the LM head exists either way (tied)
    # Mamba-2 kernels and numerics (Nemotron-H): chunked scan size, dt limits, residual dtype, logits kept
    "chunk_size", "use_mamba_kernels", "rescale_prenorm_residual", "residual_in_fp32", "num_logits_to_keep",
    "time_step_limit", "time_step_min", "time_step_max", "time_step_floor",
    # multimodal wrappers: token bookkeeping of the image path
    "boi_token_index", "eoi_token_index", "image_token_index", "mm_tokens_per_image",
    "image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id",
    "rope_parameters", "mtp_use_dedicated_embeddings",           # Qwen3.5: RoPE sections; how the MTP layer embeds
    "ignore_index", "image_placeholder", "media_placeholder_token_id",  # Kimi K3's wrapper: loss and media-token bookkeeping
    "activation_situ_beta", "activation_situ_linear_beta",        # Kimi K3: the SiTU activation's bounds (no weights)
    "compress_rope_theta", "hc_eps", "hc_sinkhorn_iters",         # DeepSeek-V4: RoPE base of compressed entries; hyper-connection numerics
    "rope_freq_constant", "rope_max_length",                      # OpenELM: RoPE base and the length of its sin/cos cache (no weights)
    # generation settings transformers' PretrainedConfig writes into every serialised config (Kimi K3's text_config)
    "bad_words_ids", "begin_suppress_tokens", "diversity_penalty", "do_sample", "early_stopping", "encoder_no_repeat_ngram_size",
    "exponential_decay_length_penalty", "finetuning_task", "forced_bos_token_id", "forced_eos_token_id", "id2label", "label2id",
    "length_penalty", "max_length", "min_length", "no_repeat_ngram_size", "num_beam_groups", "num_beams", "num_return_sequences",
    "output_attentions", "output_hidden_states", "output_scores", "problem_type", "remove_invalid_values", "repetition_penalty",
    "return_dict", "return_dict_in_generate", "sep_token_id", "suppress_tokens", "task_specific_params", "temperature",
    "tf_legacy_loss", "tokenizer_class", "top_k", "top_p", "torchscript", "typical_p", "use_bfloat16",
})

# PretrainedConfig fields that would change the architecture away from their defaults (an encoder-decoder,
# cross-attention, pruned heads): a serialised config may carry them at these values, and only at these.
PRETRAINED_DEFAULTS = {
    "is_encoder_decoder": False, "is_decoder": False, "add_cross_attention": False, "cross_attention_hidden_size": None,
    "tie_encoder_decoder": False, "pruned_heads": {}, "chunk_size_feed_forward": 0,
}

# Keys that describe parts outside the language model; the importer says so in the record's notes.
OUTSIDE_LM = {
    "vision_config": "a vision tower (image encoder and its projector), not part of the language-model count",
    "audio_config": "an audio tower, not part of the language-model count",
    "num_nextn_predict_layers": "multi-token-prediction layers, stored in the checkpoint but not part of the language model",
    "mtp_num_hidden_layers": "multi-token-prediction layers, stored in the checkpoint but not part of the language model",
    "quantization_config": "the checkpoint stores quantized weights with scale tensors; scales are not parameters of the architecture",
}

# Architecture keys every layout may carry.
COMMON = frozenset({
    "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "vocab_size", "tie_word_embeddings", "max_position_embeddings", "layer_types",
})

MOE_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts", "first_k_dense_replace")
MLA_KEYS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
ACTIVATIONS = frozenset({"silu", "swish", "gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "relu2", "situ"})  # relu2: squared ReLU (Nemotron-H); situ: Kimi K3's bounded SiLU; swish: SiLU under OpenELM's name
LAYER_TYPES = {"full_attention": False, "sliding_attention": True}  # name -> windowed (linear_attention: a qwen3_next layer kind)


@dataclass(frozen=True)
class Layout:
    """What a model_type means: the parts of a layer that config.json does not spell out."""

    mlp: str                                    # gated | plain
    norm: str = "rmsnorm"                       # rmsnorm | layernorm (LayerNorm carries a bias)
    act_key: str = "hidden_act"
    ffn_key: str = "intermediate_size"
    ffn_ratio: int = 0                          # when ffn_key is absent: ffn = ffn_ratio x hidden (0: required)
    kv_default: str = ""                        # "heads": a missing num_key_value_heads means one K/V head per query head
    mqa_key: str = ""                           # a boolean key that selects one shared K/V head (Falcon's multi_query)
    norms_per_layer: int = 2
    qk_norm: bool = False
    attention_bias: str = "key"                 # key: config.attention_bias on q,k,v,o; qkv: always on q,k,v; all: always on q,k,v,o; none
    mlp_bias: str = "key"                       # key: config.mlp_bias; all; none
    position: str = "rope"
    position_offset: int = 0                    # learned positions: rows = max_position_embeddings + offset
    moe: str = ""                               # "" | qwen3_moe | mixtral | deepseek_v3 | gpt_oss | qwen3_next | kimi_linear | kimi_k3 | deepseek_v4
    mla: bool = False
    window: str = "none"                        # none | mistral | qwen | gemma3 | layer_types (the list is required)
    sinks: bool = False                         # one learned attention-sink logit per head and layer (gpt-oss)
    expert_bias: bool = False                   # biases on every expert projection (gpt-oss)
    linear: str = ""                            # "" | gated_deltanet | mamba2 | kda: recurrent layers between full-attention ones
    sparse: str = ""                            # "" | dsa: DeepSeek Sparse Attention (a lightning indexer picks top-k cached tokens)
    compressed: str = ""                        # "" | deepseek_v4: CSA/HCA layers (compress_ratios) with a window in every layer
    layerwise: str = ""                         # "" | openelm: every layer has its own query heads, K/V heads and FFN width
    keys: frozenset = frozenset()               # type-specific keys this layout reads
    renames: dict = field(default_factory=dict)  # the layout's own name of a COMMON key -> the COMMON name it is kept under
    defaults: dict = field(default_factory=dict)  # key -> (value, where the default comes from)
    fixed: dict = field(default_factory=dict)   # key -> the only value the importer understands


def _defaults(cls: str, **values) -> dict:
    return {k: (v, f"transformers {cls} default") for k, v in values.items()}


_LLAMA_KEYS = frozenset({"hidden_act", "attention_bias", "mlp_bias"})
_QWEN_WINDOW = frozenset({"sliding_window", "use_sliding_window", "max_window_layers"})

LAYOUTS: dict[str, Layout] = {
    "llama": Layout("gated", keys=_LLAMA_KEYS, kv_default="heads", defaults=_defaults("LlamaConfig", hidden_act="silu", attention_bias=False, mlp_bias=False)),
    "mistral": Layout("gated", keys=frozenset({"hidden_act", "sliding_window"}), window="mistral", attention_bias="none", mlp_bias="none",
                      defaults=_defaults("MistralConfig", hidden_act="silu")),
    "mixtral": Layout("gated", keys=frozenset({"hidden_act", "sliding_window", "num_local_experts", "num_experts_per_tok"}), window="mistral",
                      attention_bias="none", mlp_bias="none", moe="mixtral", defaults=_defaults("MixtralConfig", hidden_act="silu")),
    "qwen2": Layout("gated", keys=frozenset({"hidden_act"}) | _QWEN_WINDOW, window="qwen", attention_bias="qkv", mlp_bias="none",
                    defaults=_defaults("Qwen2Config", hidden_act="silu", use_sliding_window=False)),
    "qwen3": Layout("gated", keys=frozenset({"hidden_act", "attention_bias"}) | _QWEN_WINDOW, window="qwen", qk_norm=True, mlp_bias="none",
                    defaults=_defaults("Qwen3Config", hidden_act="silu", attention_bias=False, use_sliding_window=False)),
    "qwen3_moe": Layout("gated", keys=frozenset({"hidden_act", "attention_bias", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                                                 "decoder_sparse_step", "mlp_only_layers"}) | _QWEN_WINDOW,
                        window="qwen", qk_norm=True, mlp_bias="none", moe="qwen3_moe",
                        defaults=_defaults("Qwen3MoeConfig", hidden_act="silu", attention_bias=False, use_sliding_window=False, decoder_sparse_step=1, mlp_only_layers=[]),
                        fixed={"decoder_sparse_step": 1, "mlp_only_layers": []}),
    "deepseek_v3": Layout("gated", keys=frozenset({"hidden_act", "attention_bias", *MLA_KEYS, "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
                                                   "n_shared_experts", "first_k_dense_replace", "moe_layer_freq", "n_group", "topk_group",
                                                   "scoring_func", "topk_method"}),
                          mla=True, mlp_bias="none", moe="deepseek_v3",
                          defaults=_defaults("DeepseekV3Config", hidden_act="silu", attention_bias=False, moe_layer_freq=1,
                                             scoring_func="sigmoid", topk_method="noaux_tc"),
                          fixed={"moe_layer_freq": 1, "scoring_func": "sigmoid", "topk_method": "noaux_tc"}),
    "gemma3_text": Layout("gated", act_key="hidden_activation", norms_per_layer=4, qk_norm=True, mlp_bias="none", window="gemma3",
                          keys=frozenset({"hidden_activation", "hidden_act", "attention_bias", "sliding_window", "sliding_window_pattern"}),
                          defaults=_defaults("Gemma3TextConfig", hidden_activation="gelu_pytorch_tanh", attention_bias=False,
                                             vocab_size=262208, sliding_window_pattern=6)),
    # gpt-oss: GQA with q, k, v and o biases and a learned sink per head; alternating sliding/full layers
    # (layer_types); every layer MoE with a router bias and biased experts (transformers GptOssConfig/modeling)
    "gpt_oss": Layout("gated", attention_bias="all", mlp_bias="none", moe="gpt_oss", window="layer_types", sinks=True, expert_bias=True,
                      keys=frozenset({"hidden_act", "attention_bias", "num_local_experts", "num_experts_per_tok", "experts_per_token",
                                      "sliding_window", "swiglu_limit", "initial_context_length"}),
                      fixed={"attention_bias": True}),
    "opt": Layout("plain", norm="layernorm", act_key="activation_function", ffn_key="ffn_dim", attention_bias="all", mlp_bias="all",
                  position="learned", position_offset=2, kv_default="heads",
                  keys=frozenset({"activation_function", "ffn_dim", "do_layer_norm_before", "word_embed_proj_dim", "enable_bias",
                                  "_remove_final_layer_norm", "layer_norm_elementwise_affine"}),
                  defaults=_defaults("OPTConfig", activation_function="relu", do_layer_norm_before=True, enable_bias=True,
                                     _remove_final_layer_norm=False, layer_norm_elementwise_affine=True),
                  fixed={"do_layer_norm_before": True, "enable_bias": True, "_remove_final_layer_norm": False, "layer_norm_elementwise_affine": True}),
    "falcon": Layout("plain", norm="layernorm", act_key="activation", ffn_key="ffn_hidden_size", ffn_ratio=4, attention_bias="key",
                     mlp_bias="key", norms_per_layer=1, kv_default="heads", mqa_key="multi_query",
                     keys=frozenset({"activation", "ffn_hidden_size", "multi_query", "parallel_attn", "new_decoder_architecture", "bias",
                                     "alibi", "num_kv_heads", "apply_residual_connection_post_layernorm"}),
                     defaults=_defaults("FalconConfig", activation="gelu", multi_query=True, parallel_attn=True, new_decoder_architecture=False,
                                        bias=False, alibi=False, apply_residual_connection_post_layernorm=False),
                     fixed={"parallel_attn": True, "new_decoder_architecture": False, "apply_residual_connection_post_layernorm": False}),
}

# Qwen3-Next: Gated DeltaNet layers with every full_attention_interval-th layer gated softmax attention
# (q_proj doubled for a sigmoid output gate, per-head q/k norms); every layer MoE with a gated shared expert
# (transformers Qwen3NextConfig/modeling; the Megatron-Bridge bridge sets attention_output_gate and moe_shared_expert_gate)
LAYOUTS["qwen3_next"] = Layout(
    "gated", keys=frozenset({"hidden_act", "attention_bias", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                             "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers", "full_attention_interval",
                             "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                             "linear_conv_kernel_dim", "partial_rotary_factor", "use_sliding_window"}),
    qk_norm=True, mlp_bias="none", moe="qwen3_next", linear="gated_deltanet",
    defaults=_defaults("Qwen3NextConfig", hidden_act="silu", attention_bias=False, decoder_sparse_step=1, mlp_only_layers=[],
                       use_sliding_window=False),
    fixed={"attention_bias": False, "decoder_sparse_step": 1, "mlp_only_layers": [], "use_sliding_window": False})

# Nemotron-H: blocks of one RMSNorm and one mixer each, Mamba-2 ('M'), self-attention ('*') or a squared-ReLU MLP ('-'),
# in the order of hybrid_override_pattern (transformers NemotronHConfig/modeling; NVIDIA-NeMo/Megatron-Bridge nemotronh)
LAYOUTS["nemotron_h"] = Layout(
    "plain", act_key="mlp_hidden_act", attention_bias="none", mlp_bias="none", linear="mamba2", position="none",
    keys=frozenset({"hidden_act", "mlp_hidden_act", "attention_bias", "mlp_bias", "attention_head_dim", "hybrid_override_pattern",
                    "mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel", "expand", "mamba_hidden_act",
                    "mamba_proj_bias", "use_bias", "use_conv_bias", "sliding_window"}),
    defaults=_defaults("NemotronHConfig", mlp_hidden_act="relu2", attention_bias=False, mlp_bias=False, use_bias=False,
                       mamba_proj_bias=False, use_conv_bias=True),
    fixed={"attention_bias": False, "mlp_bias": False, "use_bias": False, "mamba_proj_bias": False, "use_conv_bias": True,
           "sliding_window": None})

# Qwen3.5 MoE (text_config of qwen3_5_moe): Qwen3-Next's layer kinds and counts, with the Gated DeltaNet input
# projections stored apart (in_proj_qkv, in_proj_z, in_proj_a, in_proj_b: the same weights) and the routed experts
# fused per layer (gate_up_proj, down_proj: the same weights); attn_output_gate states the gated attention;
# mamba_ssm_dtype is the dtype the recurrent state is kept in (float32)
LAYOUTS["qwen3_5_moe_text"] = replace(
    LAYOUTS["qwen3_next"], keys=LAYOUTS["qwen3_next"].keys | {"attn_output_gate", "mamba_ssm_dtype"},
    fixed={**LAYOUTS["qwen3_next"].fixed, "attn_output_gate": True},
    defaults={k: (v, "the qwen3_next layout's value (transformers Qwen3NextConfig default), which qwen3_5_moe_text shares")
              for k, (v, _) in LAYOUTS["qwen3_next"].defaults.items()})

# Kimi Linear: Kimi Delta Attention layers with MLA (queries not compressed) at linear_attn_config.full_attn_layers
# (1-based), a dense first layer and MoE layers with one shared expert and a selection bias (its configuration_kimi.py
# and the checkpoint's tensors)
LAYOUTS["kimi_linear"] = Layout(
    "gated", mla=True, mlp_bias="none", moe="kimi_linear", linear="kda",
    keys=frozenset({"hidden_act", "linear_attn_config", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                    "v_head_dim", "mla_use_nope", "num_experts", "num_experts_per_token", "moe_intermediate_size", "num_shared_experts",
                    "first_k_dense_replace", "moe_layer_freq", "moe_renormalize", "moe_router_activation_func", "num_expert_group",
                    "topk_group", "use_grouped_topk", "model_max_length", "head_dim"}),
    defaults=_defaults("KimiLinearConfig", hidden_act="silu", moe_layer_freq=1),
    fixed={"moe_layer_freq": 1, "q_lora_rank": None, "moe_router_activation_func": "sigmoid"})

# Kimi K2 (moonshotai/Kimi-K2-*): the DeepSeek-V3 architecture (architectures DeepseekV3ForCausalLM, its
# configuration_deepseek.py) under its own model_type so engines can tell the two apart; its deploy guide says
# renaming model_type to deepseek_v3 runs it unchanged. Same layout, same checks.
LAYOUTS["kimi_k2"] = LAYOUTS["deepseek_v3"]
# DeepSeek-V3.2: the DeepSeek-V3 layout plus one lightning indexer per layer (DeepSeek Sparse Attention)
LAYOUTS["deepseek_v32"] = replace(LAYOUTS["deepseek_v3"], sparse="dsa",
                                  keys=LAYOUTS["deepseek_v3"].keys | {"index_topk", "index_n_heads", "index_head_dim"})

# DeepSeek-V4 (its reference inference/model.py): one shared K/V head of head_dim (keys and values alike), low-rank
# queries, a grouped low-rank output (o_groups x o_lora_rank) and a learned sink per head; every layer keeps a
# sliding_window of raw entries, and compress_ratios (one per layer, then the MTP layers) adds compressed entries: 4 with
# overlapping windows and a lightning indexer (CSA), any other ratio without (HCA), 0 none. Hyper-connections (hc_mult
# copies of the residual stream), every layer MoE with one shared expert, the first num_hash_layers routed by token id.
LAYOUTS["deepseek_v4"] = Layout(
    "gated", moe="deepseek_v4", compressed="deepseek_v4", attention_bias="key", mlp_bias="none",
    keys=frozenset({"hidden_act", "attention_bias", "q_lora_rank", "qk_rope_head_dim", "o_groups", "o_lora_rank", "n_routed_experts",
                    "n_shared_experts", "num_experts_per_tok", "moe_intermediate_size", "num_hash_layers", "hc_mult", "index_n_heads",
                    "index_head_dim", "index_topk", "sliding_window", "compress_ratios", "scoring_func", "topk_method", "swiglu_limit",
                    "expert_dtype"}),
    defaults={"tie_word_embeddings": (False, "DeepSeek-V4 reference inference code: the output head (ParallelHead) has its own weight")},
    fixed={"num_key_value_heads": 1, "attention_bias": False, "n_shared_experts": 1, "topk_method": "noaux_tc", "tie_word_embeddings": False})

# Kimi K3 (text_config of kimi_k3, which names it kimi_linear): Kimi Linear's layer kinds with compressed MLA queries and
# a sigmoid output gate (g_proj), full-rank KDA output gates, AttnRes projections in every layer, and a latent MoE whose
# routed experts work in routed_expert_hidden_size between a down and an up projection (its modeling_kimi_linear.py
# as re-implementations cite it, and the checkpoint's tensors)
LAYOUTS["kimi_k3_text"] = replace(
    LAYOUTS["kimi_linear"], moe="kimi_k3",
    keys=LAYOUTS["kimi_linear"].keys | {"routed_expert_hidden_size", "latent_moe_use_norm", "mla_use_output_gate", "attn_res_block_size",
                                        "topk_method"},
    defaults={},
    fixed={"moe_layer_freq": 1, "moe_router_activation_func": "sigmoid", "mla_use_output_gate": True, "latent_moe_use_norm": True,
           "topk_method": "noaux_tc"})

# OpenELM (apple/OpenELM-*; its configuration_openelm.py and modeling_openelm.py): layer-wise scaling. Layer i has
# num_query_heads[i] query and num_kv_heads[i] K/V heads of head_dim in one fused qkv_proj, an out_proj, q/k RMSNorms of
# head_dim (normalize_qk_projections) and a GLU feed-forward (proj_1 holds gate and up) of a width rounded from
# ffn_multipliers[i] x model_dim (FX908); RMSNorm, no biases, the output reusing the embedding (share_input_output_layers).
# OpenELMConfig recomputes the head lists from qkv_multipliers, so the stored lists are checked against them. Its own names
# of common keys are kept under the common names (renames).
LAYOUTS["openelm"] = Layout(
    "gated", act_key="activation_fn_name", qk_norm=True, attention_bias="none", mlp_bias="none", layerwise="openelm",
    keys=frozenset({"activation_fn_name", "num_query_heads", "num_kv_heads", "num_gqa_groups", "qkv_multipliers", "ffn_multipliers",
                    "ffn_dim_divisor", "ffn_with_glu", "normalization_layer_name", "normalize_qk_projections"}),
    renames={"model_dim": "hidden_size", "num_transformer_layers": "num_hidden_layers", "share_input_output_layers": "tie_word_embeddings",
             "max_context_length": "max_position_embeddings"},
    defaults={k: (v, "transformers OpenELMConfig default (Apple's configuration_openelm.py)") for k, v in {
        "activation_fn_name": "swish", "head_dim": 128, "num_gqa_groups": 1, "qkv_multipliers": 1.0, "ffn_multipliers": 4.0,
        "ffn_dim_divisor": 256, "ffn_with_glu": True, "normalization_layer_name": "rms_norm", "normalize_qk_projections": False,
        "tie_word_embeddings": False}.items()},
    # an untied OpenELM builds two output matrices (the model's classifier and the causal LM's lm_head); without GLU or q/k
    # norms it would need other per-layer formulas: each is refused by name rather than counted
    fixed={"ffn_with_glu": True, "normalization_layer_name": "rms_norm", "normalize_qk_projections": True, "tie_word_embeddings": True})

# Multimodal wrappers: the language model is text_config; what model_type it has when unstated.
WRAPPERS = {"gemma3": "gemma3_text", "qwen3_5_moe": "qwen3_5_moe_text", "kimi_k3": "kimi_k3_text"}
# A text_config that names another model_type than its wrapper implies, and what it is read as: Kimi K3's remote
# code reuses KimiLinearConfig for its text model, which is not Kimi Linear's layout
WRAPPED_AS = {("kimi_k3", "kimi_linear"): "kimi_k3_text"}

KNOWN = COMMON | frozenset().union(*(layout.keys for layout in LAYOUTS.values()))


def _refuse_key(key: str) -> InputError:
    return InputError(key, "is not a known config.json key: add it to KNOWN in engine/domain/model_layouts.py if it shapes the "
                           "architecture, or to IGNORED if it does not")


# ------------------------------------------------------------------- architectures not counted
# Architectures whose layers are not the attention + MLP blocks FX10-FX18 and the ledger's
# templates count: a config that shows one is refused by name (the field that shows it and
# the architecture), never counted as a dense model. Checked before everything else.
GATED_DELTANET = ("Gated DeltaNet hybrid linear attention outside the qwen3_next and qwen3_5_moe_text layouts: recurrent layers with a persistent "
                  "state instead of a K/V cache, interleaved with full-attention layers")
MAMBA = ("a Mamba (state-space) model outside the nemotron_h layout (Jamba, Mamba, Mamba-2): SSM layers with a persistent convolution and "
         "state cache instead of attention")
KDA = ("Kimi Delta Attention (KDA) hybrid linear attention outside the kimi_linear layout: recurrent layers with a persistent state, "
       "interleaved with MLA layers")
DSA = ("DeepSeek Sparse Attention outside the deepseek_v32 layout: a lightning indexer with its own weights that picks the top-k "
       "cached tokens each query attends to")
DEEPSEEK_V4 = ("DeepSeek-V4's compressed attention outside the deepseek_v4 layout (a sliding window in every layer, compressed "
               "KV blocks of 4 tokens with a lightning indexer or of 128 tokens without one (compress_ratios), grouped low-rank "
               "output projections, hyper-connections and hash-routed MoE layers)")
KIMI_K3 = ("Kimi K3's KDA/MLA hybrid outside the kimi_k3 wrapper (compressed MLA queries with an output gate, full-rank KDA "
           "gates and a latent MoE whose routed experts work in a narrower hidden size)")
UNCOUNTED_KEYS = {
    # DeepSeek-V4 first: its index_topk would otherwise be named as DeepSeek-V3.2's sparse attention
    "compress_ratios": DEEPSEEK_V4, "hc_mult": DEEPSEEK_V4, "num_hash_layers": DEEPSEEK_V4, "o_groups": DEEPSEEK_V4,
    "routed_expert_hidden_size": KIMI_K3, "latent_moe_use_norm": KIMI_K3, "mla_use_output_gate": KIMI_K3,
    "linear_num_key_heads": GATED_DELTANET, "linear_num_value_heads": GATED_DELTANET, "linear_key_head_dim": GATED_DELTANET,
    "linear_value_head_dim": GATED_DELTANET, "linear_conv_kernel_dim": GATED_DELTANET, "full_attention_interval": GATED_DELTANET,
    "linear_attn_config": KDA,
    "hybrid_override_pattern": MAMBA, "ssm_state_size": MAMBA, "mamba_num_heads": MAMBA, "mamba_head_dim": MAMBA,
    "mamba_d_state": MAMBA, "mamba_d_conv": MAMBA,
    "index_topk": DSA, "index_n_heads": DSA, "index_head_dim": DSA,
}
UNCOUNTED_LAYER_TYPES = {"linear_attention": GATED_DELTANET}
UNCOUNTED_MODEL_TYPES = {"mamba": MAMBA, "mamba2": MAMBA, "jamba": MAMBA}
UNCOUNTED_CLASSES = {"MambaForCausalLM": MAMBA, "Mamba2ForCausalLM": MAMBA, "JambaForCausalLM": MAMBA}
