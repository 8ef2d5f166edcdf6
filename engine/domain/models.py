"""Model architectures from Hugging Face ``config.json``: import, parameter count, KV bytes.

``import_config`` turns a config.json into a model record (``engine/kb/schemas/model.json``):
``config`` keeps the keys that shape the architecture under their Hugging Face names,
``derived`` records what was decided from them (family, attention, MLP, norms, biases,
head_dim, MoE, MLA, sliding window). Every key of the file is either known (it shapes the
architecture), ignored by the explicit ``IGNORED`` list, or noted as lying outside the
language model; anything else is refused with its name, and so is an unknown
``model_type``, so nothing unfamiliar is ever counted as a plain dense model.

``parameter_count`` evaluates the parameter-count formulas FX10-FX18 (formulas/model.yaml)
through the compiled formula module. The few terms those formulas lack (biases, learned
position embeddings, extra norms, a router bias) are added here, each named in
``MISSING_FORMULAS`` so they can move into formula records later.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from engine.core.errors import InputError

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
    # multimodal wrappers: token bookkeeping of the image path
    "boi_token_index", "eoi_token_index", "image_token_index", "mm_tokens_per_image",
})

# Keys that describe parts outside the language model; the importer says so in the record's notes.
OUTSIDE_LM = {
    "vision_config": "a vision tower (image encoder and its projector), not part of the language-model count",
    "audio_config": "an audio tower, not part of the language-model count",
    "num_nextn_predict_layers": "multi-token-prediction layers, stored in the checkpoint but not part of the language model",
    "quantization_config": "the checkpoint stores quantized weights with scale tensors; scales are not parameters of the architecture",
}

# Architecture keys every layout may carry.
COMMON = frozenset({
    "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "vocab_size", "tie_word_embeddings", "max_position_embeddings", "layer_types",
})

MOE_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts", "first_k_dense_replace")
MLA_KEYS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
ACTIVATIONS = frozenset({"silu", "gelu", "gelu_new", "gelu_pytorch_tanh", "relu"})
LAYER_TYPES = {"full_attention": False, "sliding_attention": True}

# Where each term that FX10-FX18 lack would belong; reported with every count that uses it.
MISSING_FORMULAS = {
    "attention_biases": "FX10 has no bias terms (Qwen2: (heads + 2 kv_heads) head_dim; OPT/GPT-3: plus hidden for the output projection)",
    "mlp_biases": "FX11 has no bias terms (plain MLP: ffn + hidden per layer)",
    "norm_biases": "FX12/FX17 count RMSNorm weights only; a LayerNorm adds a bias of hidden per norm",
    "extra_norms": "FX12 counts two norms per layer; Gemma 3 has four (post-attention and post-MLP norms too), Falcon-7B one",
    "position_embeddings": "FX14 has no learned position embeddings (rows x hidden: OPT, GPT-3)",
    "router_bias": "FX15/FX16 leave out a router bias (DeepSeek-V3 e_score_correction_bias: experts per MoE layer)",
}


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
    moe: str = ""                               # "" | qwen3_moe | mixtral | deepseek_v3
    mla: bool = False
    window: str = "none"                        # none | mistral | qwen | gemma3
    keys: frozenset = frozenset()               # type-specific keys this layout reads
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

# Multimodal wrappers: the language model is text_config; what model_type it has when unstated.
WRAPPERS = {"gemma3": "gemma3_text"}

KNOWN = COMMON | frozenset().union(*(layout.keys for layout in LAYOUTS.values()))


def _refuse_key(key: str) -> InputError:
    return InputError(key, "is not a known config.json key: add it to KNOWN in engine/domain/models.py if it shapes the "
                           "architecture, or to IGNORED if it does not")


# -------------------------------------------------------------------------------------- import
def import_config(config: dict, model_id: str, repo: str = "", revision: str = "unpinned", *,
                  params: int | None = None, root=None, name: str = "") -> dict:
    """A model record from a config.json dict; ``params``: an official total the architecture must reproduce."""
    from engine.kb.config_json import check_values

    if not isinstance(config, dict):
        raise InputError("config.json", "expected a JSON object")
    check_values(config)
    text, notes = flatten(config)
    layout = layout_of(text)
    check_keys(text, layout)
    cfg, defaults = fill(text, layout)
    record = {
        "id": f"model:{model_id}",
        "name": name or (repo.rsplit("/", 1)[-1] if repo else model_id),
        "source": {"repo": repo or "unknown", "revision": revision or "unpinned", "file": "config.json"},
        "as_of": datetime.date.today().strftime("%Y-%m-%d"),
        "config": cfg,
        "derived": derive(cfg, layout),
    }
    if defaults:
        record["source"]["defaults"] = defaults
    counted = parameter_count(record, root)
    record["parameters"] = _parameters(counted["total"], params)
    if notes:
        record["notes"] = " ".join(notes)
    _fits_schema(record)
    return record


def _fits_schema(record: dict) -> None:
    from engine.kb.schema import validate

    problems = validate("model", record, "config.json", record["id"])
    if problems:
        first = problems[0]
        raise InputError(first.path or "config.json", f"{first.message} (the record would not fit engine/kb/schemas/model.json)")


def _parameters(computed: int, given: int | None) -> dict:
    if given is None:
        return {"total": computed, "matches": "computed",
                "reference": "none checked: the architecture's own count (import with --params N to check an official total)"}
    if given != computed:
        raise InputError("--params", f"the architecture gives {computed} parameters, not {given}: check the config, "
                                     "or whether the total includes parts outside the language model (MTP layers, a vision tower, scales)")
    return {"total": given, "matches": "given", "reference": f"{given} given at import and reproduced exactly; name its source here"}


def flatten(config: dict) -> tuple[dict, list[str]]:
    """The language-model keys (``text_config`` lifted out of a multimodal wrapper) and notes on the rest.

    A wrapper's own keys join the text keys (the text side wins) and are checked like them,
    so an unknown tower such as ``audio_tower_config`` is refused by name.
    """
    notes = [_outside_note(key, config[key]) for key in config if key in OUTSIDE_LM and config[key] not in (None, 0, {})]
    if "text_config" not in config:
        return {k: v for k, v in config.items() if k not in OUTSIDE_LM}, notes
    text = config["text_config"]
    if not isinstance(text, dict):
        raise InputError("text_config", "expected a JSON object (the language model's config)")
    wrapper = config.get("model_type")
    if wrapper not in WRAPPERS:
        raise InputError("model_type", f"{wrapper!r} is not a multimodal wrapper the importer knows (known: {', '.join(sorted(WRAPPERS))})")
    merged = {"model_type": WRAPPERS[wrapper], **text}
    for key, value in config.items():
        if key not in ("text_config", "model_type") and key not in OUTSIDE_LM:
            merged.setdefault(key, value)
    notes.insert(0, f"The language model is the text_config of the {wrapper} wrapper ({merged['model_type']}).")
    return merged, notes


def _outside_note(key: str, value) -> str:
    if isinstance(value, dict):
        kind = value.get("model_type") or value.get("quant_method") or "unstated type"
        return f"{key} ({kind}): {OUTSIDE_LM[key]}."
    return f"{key} = {value}: {OUTSIDE_LM[key]}."


def layout_of(cfg: dict) -> Layout:
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise InputError("model_type", "missing (every config.json names its architecture in model_type)")
    if model_type in LAYOUTS:
        return LAYOUTS[model_type]
    known = ", ".join(sorted(LAYOUTS))
    variant = [k for k in (*MOE_KEYS, *MLA_KEYS) if k in cfg]
    if variant:
        raise InputError("model_type", f"{model_type!r} is not a known architecture and its config has MoE/MLA keys "
                                       f"({', '.join(variant)}): an unknown attention or MoE variant is never counted as a dense model (known: {known})")
    raise InputError("model_type", f"{model_type!r} is not a known architecture (known: {known}); add a Layout for it to LAYOUTS in engine/domain/models.py")


def check_keys(cfg: dict, layout: Layout) -> None:
    unknown = sorted(k for k in cfg if k not in KNOWN and k not in IGNORED)
    if unknown:
        raise _refuse_key(", ".join(unknown))
    foreign = sorted(k for k in cfg if k in KNOWN and k not in COMMON and k not in layout.keys)
    if foreign:
        raise InputError(", ".join(foreign), f"is not used by model_type {cfg['model_type']!r}: the config describes an attention, "
                                             "MoE or layer variant the importer does not understand")


def fill(text: dict, layout: Layout) -> tuple[dict, list[str]]:
    """Known keys in file order, plus defaults for architecture keys the file leaves out."""
    cfg = {k: v for k, v in text.items() if k in KNOWN}
    defaults = []
    for key, (value, origin) in {"tie_word_embeddings": (True, "transformers PretrainedConfig default"), **layout.defaults}.items():
        if key not in cfg:
            cfg[key] = list(value) if isinstance(value, list) else value
            defaults.append(f"{key} = {_show(value)} ({origin})")
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"):
        _positive(cfg, key, required=True)
    if layout.ffn_ratio and layout.ffn_key not in cfg:
        cfg[layout.ffn_key] = layout.ffn_ratio * cfg["hidden_size"]
        defaults.append(f"{layout.ffn_key} = {cfg[layout.ffn_key]} ({cfg['model_type']} default: {layout.ffn_ratio} x hidden_size)")
    for key, expected in layout.fixed.items():
        if cfg.get(key, expected) != expected:
            raise InputError(key, f"{cfg[key]!r} is a variant the importer does not understand (it counts {cfg['model_type']} models with {key} = {_show(expected)})")
    return cfg, defaults


def _show(value) -> str:
    """A value as config.json writes it (true, null, [])."""
    import json

    return json.dumps(value)


def _positive(cfg: dict, key: str, required: bool = False) -> int | None:
    value = cfg.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(key, f"expected a whole number >= 1, got {value!r}")
    return value


# -------------------------------------------------------------------------------------- derive
def derive(cfg: dict, layout: Layout) -> dict:
    """What the config decides: family, attention, MLP, norms, biases, head_dim, MoE, MLA, window."""
    activation = cfg.get(layout.act_key, cfg.get("hidden_act"))
    if activation not in ACTIVATIONS:
        raise InputError(layout.act_key, f"{activation!r} is not an activation the importer knows ({', '.join(sorted(ACTIVATIONS))})")
    attention, head_dim, stated = _attention(cfg, layout)
    moe = _moe(cfg, layout)
    derived = {"family": ("mla_moe" if layout.mla else "moe") if moe else "dense", "attention": attention, "mlp": layout.mlp,
               "activation": activation, "norm": layout.norm, "qk_norm": layout.qk_norm}
    derived.update(_biases(cfg, layout))
    if not moe or moe.get("dense_first_layers"):
        derived["ffn_hidden"] = _positive(cfg, layout.ffn_key, required=True)
    derived["norms_per_layer"] = layout.norms_per_layer
    derived.update(_position(cfg, layout))
    derived["head_dim"] = head_dim
    derived["head_dim_stated"] = stated
    if moe:
        derived["moe"] = moe
    if layout.mla:
        derived["mla"] = {k: cfg.get(k) for k in ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")}
    window = _window(cfg, layout)
    if window:
        derived["sliding_window"] = window
    return derived


def _attention(cfg: dict, layout: Layout) -> tuple[str, int, bool]:
    heads, hidden = cfg["num_attention_heads"], cfg["hidden_size"]
    if layout.mla:
        for key in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            _positive(cfg, key, required=True)
        if cfg.get("q_lora_rank") is None:
            raise InputError("q_lora_rank", "null (MLA without query compression, e.g. DeepSeek-V2-Lite) is a variant FX10 does not cover")
        _positive(cfg, "q_lora_rank", required=True)
        return "mla", cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"], False
    kv = _kv_heads(cfg, layout, heads)
    if heads % kv:
        raise InputError("num_key_value_heads", f"{kv} does not divide {heads} attention heads")
    stated = _positive(cfg, "head_dim")
    if stated is None and hidden % heads:
        raise InputError("head_dim", f"not stated, and hidden_size {hidden} is not a multiple of {heads} heads")
    kind = "mha" if kv == heads else ("mqa" if kv == 1 else "gqa")
    return kind, stated or hidden // heads, stated is not None


def _kv_heads(cfg: dict, layout: Layout, heads: int) -> int:
    if layout.mqa_key:
        return 1 if cfg.get(layout.mqa_key) else heads
    if cfg.get("num_key_value_heads") is None:
        if layout.kv_default == "heads":
            return heads  # LlamaConfig: None means one K/V head per query head; OPT and GPT-style models are multi-head
        raise InputError("num_key_value_heads", f"missing, and {cfg['model_type']} has no default the importer trusts")
    return _positive(cfg, "num_key_value_heads")


def _biases(cfg: dict, layout: Layout) -> dict:
    attention = {"key": bool(cfg.get("attention_bias", cfg.get("bias", False))), "qkv": True, "all": True, "none": False}[layout.attention_bias]
    mlp = {"key": bool(cfg.get("mlp_bias", cfg.get("bias", False))), "all": True, "none": False}[layout.mlp_bias]
    out = {"attention_bias": attention, "mlp_bias": mlp}
    if attention:
        out["attention_bias_on"] = "qkv" if layout.attention_bias == "qkv" else "qkvo"
    return out


def _position(cfg: dict, layout: Layout) -> dict:
    if cfg.get("alibi"):
        return {"position": "alibi"}
    if layout.position == "learned":
        if cfg.get("word_embed_proj_dim", cfg["hidden_size"]) != cfg["hidden_size"]:
            raise InputError("word_embed_proj_dim", "differs from hidden_size: OPT's projected embeddings (project_in/out) are a variant the importer does not count")
        return {"position": "learned", "position_rows": _positive(cfg, "max_position_embeddings", required=True) + layout.position_offset}
    return {"position": "rope"}


def _moe(cfg: dict, layout: Layout) -> dict:
    if not layout.moe:
        return {}
    experts_key, size_key = {"qwen3_moe": ("num_experts", "moe_intermediate_size"), "mixtral": ("num_local_experts", "intermediate_size"),
                             "deepseek_v3": ("n_routed_experts", "moe_intermediate_size")}[layout.moe]
    moe = {"experts": _positive(cfg, experts_key, required=True), "experts_per_token": _positive(cfg, "num_experts_per_tok", required=True),
           "expert_intermediate_size": _positive(cfg, size_key, required=True)}
    if moe["experts_per_token"] > moe["experts"]:
        raise InputError("num_experts_per_tok", f"{moe['experts_per_token']} is more than the {moe['experts']} experts")
    if layout.moe == "deepseek_v3":
        moe["shared_experts"] = cfg.get("n_shared_experts") or 0
        moe["dense_first_layers"] = cfg.get("first_k_dense_replace") or 0
        grouped = (cfg.get("n_group") or 1) > 1
        moe["routing"] = "sigmoid_topk_grouped" if grouped else "sigmoid_topk"
        moe["router_bias"] = True  # noaux_tc routing (the only topk_method accepted) adds e_score_correction_bias
    else:
        moe["shared_experts"] = 0
        moe["dense_first_layers"] = 0
        moe["routing"] = "softmax_topk"
        moe["router_bias"] = False
    if moe["dense_first_layers"] >= cfg["num_hidden_layers"]:
        raise InputError("first_k_dense_replace", "leaves no MoE layer")
    return moe


def _window(cfg: dict, layout: Layout) -> dict:
    layers = cfg["num_hidden_layers"]
    if isinstance(cfg.get("layer_types"), list) and cfg["layer_types"]:
        return _from_layer_types(cfg, layers)
    window = cfg.get("sliding_window")
    if layout.window == "none" or window is None:
        return {}
    if layout.window == "qwen" and not cfg.get("use_sliding_window"):
        return {}
    window = _positive(cfg, "sliding_window")
    if layout.window == "qwen":
        full = cfg.get("max_window_layers", layers)
        return {"window": window, "windowed_layers": max(layers - full, 0), "pattern": f"layers {full} and above windowed"}
    if layout.window == "gemma3":
        period = _positive(cfg, "sliding_window_pattern", required=True)
        return {"window": window, "windowed_layers": layers - layers // period, "pattern": f"{period - 1} local : 1 global"}
    return {"window": window, "windowed_layers": layers, "pattern": "every layer windowed"}


def _from_layer_types(cfg: dict, layers: int) -> dict:
    types = cfg["layer_types"]
    if not all(isinstance(t, str) for t in types):
        raise InputError("layer_types", "expected a list of layer type names such as \"sliding_attention\"")
    unknown = sorted({t for t in types if t not in LAYER_TYPES})
    if unknown:
        raise InputError("layer_types", f"{', '.join(map(repr, unknown))} is not a layer type the importer knows ({', '.join(LAYER_TYPES)})")
    if len(types) != layers:
        raise InputError("layer_types", f"lists {len(types)} layers, but num_hidden_layers is {layers}")
    windowed = sum(LAYER_TYPES[t] for t in types)
    if not windowed:
        return {}
    return {"window": _positive(cfg, "sliding_window", required=True), "windowed_layers": windowed,
            "pattern": f"{windowed} sliding_attention : {layers - windowed} full_attention (layer_types)"}


# ------------------------------------------------------------------------------- counting
def parameter_count(record: dict, root=None) -> dict:
    """Total, active and per-part parameters of a model record, from formulas FX10-FX18.

    Returns ``{"total", "active", "parts": {name: count}, "extras": {name: count},
    "formulas": [...], "missing_formulas": {name: where it belongs}}``.
    """
    module = formula_module(root)
    cfg, d = record["config"], record["derived"]
    shape = _Shape(cfg, d)
    ev = _Evaluator(module)
    attn = ev("FX10", attention=d["attention"], hidden=shape.hidden, heads=shape.heads, kv_heads=shape.kv_heads, head_dim=d["head_dim"], **shape.mla)
    norm = ev("FX12", qk_norm="per_head" if d.get("qk_norm") else "none", hidden=shape.hidden, head_dim=d["head_dim"])
    emb = ev("FX14", tie_embeddings="tied" if cfg.get("tie_word_embeddings", True) else "untied", vocab_size=cfg["vocab_size"], hidden=shape.hidden)
    dense_mlp = ev("FX11", mlp_gating=d["mlp"], hidden=shape.hidden, ffn_hidden=d["ffn_hidden"]) if "ffn_hidden" in d else 0
    dense_layer = ev("FX13", attn_params_per_layer=attn, mlp_params_per_layer=dense_mlp, norm_params_per_layer=norm) if dense_mlp else 0
    common = {"layers": shape.layers, "dense_layer_params": dense_layer, "embedding_params": emb, "hidden": shape.hidden}
    moe = d.get("moe")
    if moe:
        experts = {"n_experts": moe["experts"], "n_shared_experts": moe.get("shared_experts", 0), "hidden": shape.hidden,
                   "moe_ffn_hidden": moe["expert_intermediate_size"]}
        moe_all = ev("FX15", **experts)
        moe_active = ev("FX16", top_k=moe["experts_per_token"], **experts)
        split = {"model_arch": "moe", "n_dense_layers": moe.get("dense_first_layers", 0), "attn_params_per_layer": attn, "norm_params_per_layer": norm}
        total = ev("FX17", moe_mlp_params_per_layer=moe_all, **split, **common)
        active = ev("FX18", moe_mlp_active_params_per_layer=moe_active, **split, **common)
        mlp_part = split["n_dense_layers"] * dense_mlp + (shape.layers - split["n_dense_layers"]) * moe_all
    else:
        total = ev("FX17", model_arch="dense", **common)
        active = ev("FX18", model_arch="dense", **common)
        mlp_part = shape.layers * dense_mlp
    extras = _extras(shape, d)
    parts = {"attention": shape.layers * attn, "mlp": mlp_part, "norms": shape.layers * norm + shape.hidden, "embeddings": emb}
    parts.update(extras)
    extra = sum(extras.values())
    result = {"total": total + extra, "active": active + extra, "parts": parts, "extras": extras, "formulas": ev.used,
              "missing_formulas": {k: MISSING_FORMULAS[k] for k in extras}}
    if sum(parts.values()) != result["total"]:  # the parts are a second reading of the same terms
        raise AssertionError(f"{record['id']}: parts sum to {sum(parts.values())}, total is {result['total']}")
    return result


def formula_module(root=None):
    """The compiled formulas of ``root``, or the shipped ones when ``root`` has no formulas/ folder."""
    import os

    from engine.core.paths import shipped_root
    from engine.numeric import compiled

    if root is None or not os.path.isdir(os.path.join(os.fspath(root), "formulas")):
        root = shipped_root()
    return compiled.load(root)


class _Shape:
    """The numbers the formulas take, read once from config and derived."""

    def __init__(self, cfg: dict, d: dict):
        self.hidden = cfg["hidden_size"]
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = {"mha": self.heads, "mqa": 1}.get(d["attention"], cfg.get("num_key_value_heads") or self.heads)
        self.mla = dict(d["mla"]) if d["attention"] == "mla" else {}
        self.moe_layers = self.layers - d["moe"].get("dense_first_layers", 0) if d.get("moe") else 0


class _Evaluator:
    """Evaluates formula records from the compiled module and remembers which were used."""

    def __init__(self, module):
        self.module = module
        self.used: list[str] = []

    def __call__(self, fid: str, **given) -> int:
        from engine.numeric.evaluate import evaluate

        if fid not in self.used:
            self.used.append(fid)
        result = evaluate(self.module.FORMULAS[fid], self.module, given)
        (value,) = (o.value for o in result.outputs.values())
        if not float(value).is_integer():
            raise InputError(fid, f"gave {value}, not a whole number of parameters")
        if abs(value) > 2**53:  # past it a float count is no longer exact
            raise InputError(fid, f"gives {float(value):.4g}, past 2^53 = {2**53} where counts are no longer exact: check the config's sizes")
        return int(value)


def _extras(shape: _Shape, d: dict) -> dict:
    """Terms FX10-FX18 do not have (see MISSING_FORMULAS); computed here until formulas hold them."""
    h, layers, hd = shape.hidden, shape.layers, d["head_dim"]
    out = {}
    if d.get("attention_bias"):
        qkv = (shape.heads + 2 * shape.kv_heads) * hd
        out["attention_biases"] = layers * (qkv + (h if d.get("attention_bias_on") == "qkvo" else 0))
    if d.get("mlp_bias"):
        ffn = d["ffn_hidden"]
        out["mlp_biases"] = layers * ((2 * ffn if d["mlp"] == "gated" else ffn) + h)
    norms = d.get("norms_per_layer", 2)
    if norms != 2:
        out["extra_norms"] = layers * (norms - 2) * h
    if d.get("norm") == "layernorm":
        out["norm_biases"] = (layers * norms + 1) * h
    if d.get("position") == "learned":
        out["position_embeddings"] = d["position_rows"] * h
    if d.get("moe", {}).get("router_bias"):
        out["router_bias"] = shape.moe_layers * d["moe"]["experts"]
    return out


def kv_bytes_per_token(record: dict, root=None, kv_bytes: float = 2) -> int:
    """Bytes of K/V cache one token adds across all layers (F8, the variant of derived.attention)."""
    module = formula_module(root)
    cfg, d = record["config"], record["derived"]
    shape = _Shape(cfg, d)
    given = {"attention": d["attention"], "layers": shape.layers, "kv_bytes": kv_bytes}
    if d["attention"] == "mla":
        given.update(kv_lora_rank=shape.mla["kv_lora_rank"], qk_rope_head_dim=shape.mla["qk_rope_head_dim"])
    else:
        given.update(heads=shape.heads, kv_heads=shape.kv_heads, head_dim=d["head_dim"])
    return _Evaluator(module)("F8", **given)


# -------------------------------------------------------------------------------- records
def load_models(root) -> dict:
    """The model records of ``root`` (id -> plain dict), schema-checked as ``Knowledge.load`` does.

    Reads only knowledge/models/, through the same single-record loader, so ``model list``
    and ``model show`` do not pay for loading the formulas and the books.
    """
    from engine.kb.knowledge import load_single_folder

    return load_single_folder(root, "models").models


def find(models: dict, text: str) -> dict:
    """The record for ``qwen3-8b`` or ``model:qwen3-8b``; an unknown id is an InputError listing the known ones."""
    ident = text.strip().lower()
    ident = ident if ident.startswith("model:") else f"model:{ident}"
    if ident not in models:
        from engine.core.suggest import known

        raise InputError("ID", f"no model {text!r} ({known(ident.split(':', 1)[1], sorted(m.split(':', 1)[1] for m in models))})")
    return models[ident]


def to_yaml(record: dict) -> str:
    import yaml

    return yaml.safe_dump(record, sort_keys=False, allow_unicode=True, width=100)
