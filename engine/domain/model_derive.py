"""What a config decides (``derived`` in a model record): family, attention, MLP, norms, biases, MoE, MLA, window."""

from __future__ import annotations

from engine.core.errors import InputError
from engine.domain.model_config import _positive, _show
from engine.domain.model_layouts import ACTIVATIONS, LAYER_TYPES, Layout


def derive(cfg: dict, layout: Layout, root=None) -> dict:
    """What the config decides: family, attention, MLP, norms, biases, head_dim, MoE, MLA, window (``root``: whose
    formulas round a layer-wise model's widths, FX908)."""
    activation = cfg.get(layout.act_key, cfg.get("hidden_act"))
    if activation not in ACTIVATIONS:
        raise InputError(layout.act_key, f"{activation!r} is not an activation the importer knows ({', '.join(sorted(ACTIVATIONS))})")
    if layout.layerwise:  # OpenELM: heads, K/V heads and FFN width per layer, no single value of any of them
        return _layerwise(cfg, layout, activation, root)
    attention, head_dim, stated = _attention(cfg, layout)
    moe = _moe(cfg, layout)
    hybrid_moe = "hybrid_mla_moe" if layout.mla else "hybrid_moe"  # KDA beside MLA (Kimi Linear, K3); Gated DeltaNet beside GQA
    family = (hybrid_moe if layout.linear else "mla_moe" if layout.mla else "moe") if moe else ("hybrid" if layout.linear else "dense")
    if layout.compressed:  # DeepSeek-V4: CSA/HCA layers, which no ledger template or calculator holds
        family = "compressed_moe"
    derived = {"family": family, "attention": attention, "mlp": layout.mlp,
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
        if cfg.get("mla_use_output_gate"):
            derived["mla"]["output_gate"] = True  # Kimi K3: a sigmoid gate g_proj (h x heads·v_head_dim) on the attention output
    if cfg.get("attn_res_block_size") is not None:
        derived["attn_res_block_size"] = _positive(cfg, "attn_res_block_size")
    if layout.sparse == "dsa":
        derived["sparse_attention"] = {"kind": "dsa", "index_heads": _positive(cfg, "index_n_heads", required=True),
                                       "index_head_dim": _positive(cfg, "index_head_dim", required=True),
                                       "index_topk": _positive(cfg, "index_topk", required=True)}
    if layout.sinks:
        derived["attention_sinks"] = True
    if layout.linear:
        derived.update(_kda(cfg, layout) if layout.linear == "kda" else {"gated_deltanet": _linear, "mamba2": _mamba}[layout.linear](cfg))
        return derived
    if layout.compressed:
        derived.update(_compressed(cfg))
        return derived
    _no_window_with_mla(cfg, layout)
    window = _window(cfg, layout)
    if window:
        derived["sliding_window"] = window
    return derived


def _layerwise(cfg: dict, layout: Layout, activation: str, root) -> dict:
    """A dense decoder whose layers differ in heads, K/V heads and feed-forward width (engine.domain.model_layerwise)."""
    from engine.domain.model_count import _Evaluator, formula_module
    from engine.domain.model_layerwise import derive_layers

    layers = derive_layers(cfg, _Evaluator(formula_module(root)))
    derived = {"family": "layerwise_dense", "attention": layers.pop("attention"), "mlp": layout.mlp, "activation": activation,
               "norm": layout.norm, "qk_norm": layout.qk_norm}
    derived.update(_biases(cfg, layout))
    derived["norms_per_layer"] = layout.norms_per_layer
    derived.update(_position(cfg, layout))
    derived.update(layers)
    return derived


def _attention(cfg: dict, layout: Layout) -> tuple[str, int, bool]:
    heads, hidden = cfg["num_attention_heads"], cfg["hidden_size"]
    if layout.mla:
        for key in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            _positive(cfg, key, required=True)
        if cfg.get("q_lora_rank") is None and layout.moe == "kimi_linear":  # Kimi Linear's MLA: queries from h directly (FX890)
            return "mla", cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"], False
        if cfg.get("q_lora_rank") is None:
            raise InputError("q_lora_rank", "null (MLA without query compression, e.g. DeepSeek-V2-Lite) is a variant FX10 does not cover")
        _positive(cfg, "q_lora_rank", required=True)
        return "mla", cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"], False
    kv = _kv_heads(cfg, layout, heads)
    if heads % kv:
        raise InputError("num_key_value_heads", f"{kv} does not divide {heads} attention heads")
    stated = _positive(cfg, "head_dim") or _positive(cfg, "attention_head_dim")  # Nemotron-H names it attention_head_dim
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
    if layout.position == "none" or cfg.get("mla_use_nope"):  # Kimi Linear's MLA layers apply no rotary embedding
        return {"position": "none"}
    if layout.position == "learned":
        if cfg.get("word_embed_proj_dim", cfg["hidden_size"]) != cfg["hidden_size"]:
            raise InputError("word_embed_proj_dim", "differs from hidden_size: OPT's projected embeddings (project_in/out) are a variant the importer does not count")
        return {"position": "learned", "position_rows": _positive(cfg, "max_position_embeddings", required=True) + layout.position_offset}
    return {"position": "rope"}


def _moe(cfg: dict, layout: Layout) -> dict:
    if not layout.moe:
        return {}
    experts_key, size_key = {"qwen3_moe": ("num_experts", "moe_intermediate_size"), "mixtral": ("num_local_experts", "intermediate_size"),
                             "deepseek_v3": ("n_routed_experts", "moe_intermediate_size"), "qwen3_next": ("num_experts", "moe_intermediate_size"),
                             "kimi_linear": ("num_experts", "moe_intermediate_size"), "kimi_k3": ("num_experts", "moe_intermediate_size"),
                             "deepseek_v4": ("n_routed_experts", "moe_intermediate_size"),
                             "gpt_oss": ("num_local_experts", "intermediate_size")}[layout.moe]
    top_k_key = "num_experts_per_token" if layout.moe in ("kimi_linear", "kimi_k3") else "num_experts_per_tok"
    moe = {"experts": _positive(cfg, experts_key, required=True), "experts_per_token": _positive(cfg, top_k_key, required=True),
           "expert_intermediate_size": _positive(cfg, size_key, required=True)}
    if moe["experts_per_token"] > moe["experts"]:
        raise InputError("num_experts_per_tok", f"{moe['experts_per_token']} is more than the {moe['experts']} experts")
    if layout.moe == "deepseek_v3":
        moe["shared_experts"] = cfg.get("n_shared_experts") or 0
        moe["dense_first_layers"] = cfg.get("first_k_dense_replace") or 0
        grouped = (cfg.get("n_group") or 1) > 1
        moe["routing"] = "sigmoid_topk_grouped" if grouped else "sigmoid_topk"
        moe["router_bias"] = True  # noaux_tc routing (the only topk_method accepted) adds e_score_correction_bias
    elif layout.moe in ("kimi_linear", "kimi_k3"):
        moe["shared_experts"] = cfg.get("num_shared_experts") or 0
        moe["dense_first_layers"] = cfg.get("first_k_dense_replace") or 0
        moe["routing"] = "sigmoid_topk_grouped" if (cfg.get("num_expert_group") or 1) > 1 else "sigmoid_topk"
        moe["router_bias"] = True  # the checkpoint's gate.e_score_correction_bias, one per routed expert
        if layout.moe == "kimi_k3":  # routed experts between down/up projections to routed_expert_hidden_size, then a norm
            moe["latent_hidden"] = _positive(cfg, "routed_expert_hidden_size", required=True)
    elif layout.moe == "deepseek_v4":
        moe.update(_hash_routed(cfg))
    elif layout.moe == "qwen3_next":
        moe.update(_gated_shared_expert(cfg, moe["expert_intermediate_size"]))
        moe["dense_first_layers"] = 0
        moe["routing"] = "softmax_topk"
        moe["router_bias"] = False
    else:
        moe["shared_experts"] = 0
        moe["dense_first_layers"] = 0
        moe["routing"] = "softmax_topk"
        moe["router_bias"] = layout.moe == "gpt_oss"  # gpt-oss: the router is a Linear with a bias
    if layout.expert_bias:
        moe["expert_bias"] = True
    _same_top_k(cfg, moe)
    if moe["dense_first_layers"] >= cfg["num_hidden_layers"]:
        raise InputError("first_k_dense_replace", "leaves no MoE layer")
    return moe


def _gated_shared_expert(cfg: dict, expert_size: int) -> dict:
    """Qwen3-Next's shared expert: one gated MLP of shared_expert_intermediate_size behind a sigmoid gate of h weights.

    FX15/FX16 count shared experts as whole experts of the routed width, so the shared width must be a
    multiple of it (Qwen3-Next: 512 = 1 x 512); anything else is refused rather than rounded."""
    size = _positive(cfg, "shared_expert_intermediate_size", required=True)
    if size % expert_size:
        raise InputError("shared_expert_intermediate_size", f"{size} is not a multiple of moe_intermediate_size {expert_size}: "
                                                            "FX15/FX16 count the shared expert in routed-expert widths")
    return {"shared_experts": size // expert_size, "shared_intermediate_size": size, "shared_expert_gate": True}


def _linear(cfg: dict) -> dict:
    """Qwen3-Next's layer kinds (layer_types, or every full_attention_interval-th layer full) and its Gated DeltaNet shape."""
    layers = cfg["num_hidden_layers"]
    types = cfg.get("layer_types")
    if types is None:
        interval = _positive(cfg, "full_attention_interval", required=True)
        types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)]
    if not isinstance(types, list) or len(types) != layers or not set(types) <= {"full_attention", "linear_attention"}:
        raise InputError("layer_types", f"expected {layers} entries, each full_attention or linear_attention")
    full = types.count("full_attention")
    if not full or full == layers:
        raise InputError("layer_types", f"has {full} full_attention layers of {layers}: a hybrid needs both kinds")
    shape = {key: _positive(cfg, name, required=True) for key, name in (
        ("key_heads", "linear_num_key_heads"), ("value_heads", "linear_num_value_heads"), ("key_head_dim", "linear_key_head_dim"),
        ("value_head_dim", "linear_value_head_dim"), ("conv_kernel", "linear_conv_kernel_dim"))}
    return {"attention_layers": full, "attention_output_gate": True,
            "linear_attention": {"kind": "gated_deltanet", "layers": layers - full, **shape},
            "layer_pattern": f"{layers - full} linear_attention (Gated DeltaNet) : {full} full_attention"}


def _mamba(cfg: dict) -> dict:
    """Nemotron-H's blocks from hybrid_override_pattern ('M' Mamba-2, '*' attention, '-' MLP) and its Mamba-2 shape."""
    layers, pattern = cfg["num_hidden_layers"], cfg.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or len(pattern) != layers or set(pattern) - set("M*-"):
        raise InputError("hybrid_override_pattern", f"expected {layers} characters, each M (Mamba-2), * (attention) or - (MLP)")
    if "*" not in pattern or "M" not in pattern:
        raise InputError("hybrid_override_pattern", "a hybrid needs both Mamba-2 ('M') and attention ('*') blocks")
    shape = {key: _positive(cfg, name, required=True) for key, name in (
        ("heads", "mamba_num_heads"), ("head_dim", "mamba_head_dim"), ("state_size", "ssm_state_size"), ("groups", "n_groups"),
        ("conv_kernel", "conv_kernel"))}
    counts = {kind: pattern.count(ch) for kind, ch in (("mamba", "M"), ("attention", "*"), ("mlp", "-"))}
    return {"attention_layers": counts["attention"], "mlp_layers": counts["mlp"], "norms_per_layer": 1,
            "mamba": {"layers": counts["mamba"], **shape},
            "layer_pattern": f"{counts['mamba']} Mamba-2 : {counts['attention']} attention : {counts['mlp']} MLP blocks (hybrid_override_pattern)"}


def _kda(cfg: dict, layout: Layout) -> dict:
    """Kimi Linear's (and K3's) layer kinds from linear_attn_config (1-based full_attn_layers and kda_layers) and its KDA shape."""
    layers, lin = cfg["num_hidden_layers"], cfg.get("linear_attn_config")
    if not isinstance(lin, dict):
        raise InputError("linear_attn_config", "expected a JSON object (full_attn_layers, kda_layers, num_heads, head_dim, short_conv_kernel_size)")
    full_rank = layout.moe == "kimi_k3"  # K3's output gate g_proj is h x heads·head_dim (FX902); Kimi Linear's is low-rank (FX889)
    if bool(lin.get("use_full_rank_gate")) != full_rank:
        raise InputError("linear_attn_config.use_full_rank_gate", f"{_show(lin.get('use_full_rank_gate'))} is a variant the importer does not "
                                                                 f"count (it counts {cfg['model_type']} models with it {_show(full_rank)})")
    full, kda = lin.get("full_attn_layers"), lin.get("kda_layers")
    if not (isinstance(full, list) and isinstance(kda, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in full + kda)):
        raise InputError("linear_attn_config", "expected full_attn_layers and kda_layers as lists of layer numbers")
    if sorted(full + kda) != list(range(1, layers + 1)):
        raise InputError("linear_attn_config", f"full_attn_layers and kda_layers must number the layers 1..{layers} once each")
    if not full or not kda:
        raise InputError("linear_attn_config", "a hybrid needs both MLA and KDA layers")
    shape = {}
    for key, name in (("heads", "num_heads"), ("head_dim", "head_dim"), ("conv_kernel", "short_conv_kernel_size")):
        value = lin.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"linear_attn_config.{name}", f"expected a whole number >= 1, got {value!r}")
        shape[key] = value
    lin_out = {"kind": "kda", "layers": len(kda), "key_heads": shape["heads"], "value_heads": shape["heads"], "key_head_dim": shape["head_dim"],
               "value_head_dim": shape["head_dim"], "conv_kernel": shape["conv_kernel"]}
    if full_rank:
        lin_out["full_rank_gate"] = True
    return {"attention_layers": len(full), "linear_attention": lin_out,
            "layer_pattern": f"{len(kda)} KDA : {len(full)} MLA (linear_attn_config)"}


def _hash_routed(cfg: dict) -> dict:
    """DeepSeek-V4's MoE: one shared expert of the routed width in every layer; the first num_hash_layers pick experts from a
    token-id table (tid2eid, an integer buffer) and have no selection bias, the others a bias per routed expert."""
    layers = cfg["num_hidden_layers"]
    hashed = cfg.get("num_hash_layers") or 0
    if isinstance(hashed, bool) or not isinstance(hashed, int) or not 0 <= hashed <= layers:
        raise InputError("num_hash_layers", f"expected a whole number from 0 to the {layers} layers, got {hashed!r}")
    return {"shared_experts": 1, "dense_first_layers": 0, "routing": f"{cfg.get('scoring_func') or 'sqrtsoftplus'}_topk", "router_bias": True,
            "hash_layers": hashed}


def _compressed(cfg: dict) -> dict:
    """DeepSeek-V4's layer kinds from compress_ratios (one per layer, then the MTP layers'): 0 keeps the sliding window only,
    4 adds overlapping compressed entries and a lightning indexer (CSA), any other ratio compressed entries alone (HCA)."""
    layers, ratios = cfg["num_hidden_layers"], cfg.get("compress_ratios")
    if not (isinstance(ratios, list) and len(ratios) >= layers and all(isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in ratios)):
        raise InputError("compress_ratios", f"expected a list of at least {layers} whole numbers >= 0, one per layer (then the MTP layers')")
    main = ratios[:layers]
    heavy = sorted({r for r in main if r not in (0, 4)})
    if len(heavy) > 1:
        raise InputError("compress_ratios", f"lists the ratios {heavy} beside 4: the formulas take one heavily compressed (HCA) ratio")
    shape = {key: _positive(cfg, key, required=True) for key in ("q_lora_rank", "o_groups", "o_lora_rank", "hc_mult")}
    heads, head_dim = cfg["num_attention_heads"], _positive(cfg, "head_dim", required=True)
    if heads % shape["o_groups"]:
        raise InputError("o_groups", f"{shape['o_groups']} does not divide the {heads} attention heads (wo_a maps each group's heads)")
    rope = cfg.get("qk_rope_head_dim")
    if rope is not None and (_positive(cfg, "qk_rope_head_dim") >= head_dim):
        raise InputError("qk_rope_head_dim", f"{rope} is not less than head_dim {head_dim} (the rotary part lies inside each head)")
    out = {"kind": "deepseek_v4", "window": _positive(cfg, "sliding_window", required=True), "window_only_layers": main.count(0),
           "csa_layers": main.count(4), "csa_ratio": 4, "hca_layers": len(main) - main.count(0) - main.count(4),
           "hca_ratio": heavy[0] if heavy else 0, "q_lora_rank": shape["q_lora_rank"], "o_groups": shape["o_groups"],
           "o_lora_rank": shape["o_lora_rank"]}
    if out["csa_layers"]:
        out.update({"index_heads": _positive(cfg, "index_n_heads", required=True), "index_head_dim": _positive(cfg, "index_head_dim", required=True),
                    "index_topk": _positive(cfg, "index_topk", required=True)})
    pattern = f"{out['window_only_layers']} sliding-window : {out['csa_layers']} CSA (ratio 4, indexer) : {out['hca_layers']} HCA" + \
              (f" (ratio {out['hca_ratio']})" if heavy else "") + " (compress_ratios)"
    return {"compressed_attention": out, "hyper_connections": shape["hc_mult"], "layer_pattern": pattern}


def _no_window_with_mla(cfg: dict, layout: Layout) -> None:
    """The mla_moe template counts no sliding window: refuse windowed layers rather than count them as full attention."""
    types = cfg.get("layer_types")
    windowed = sum(t == "sliding_attention" for t in types) if layout.mla and isinstance(types, list) else 0
    if windowed:
        raise InputError("layer_types", f"lists {windowed} sliding_attention layers in an MLA model ({cfg['model_type']}): the mla_moe "
                                        "ledger template counts no sliding window, so the config is refused rather than counted as full attention")


def _same_top_k(cfg: dict, moe: dict) -> None:
    """gpt-oss states the experts per token twice (experts_per_token and num_experts_per_tok): they must agree."""
    other = cfg.get("experts_per_token")
    if other is not None and other != moe["experts_per_token"]:
        raise InputError("experts_per_token", f"is {other!r}, but num_experts_per_tok is {moe['experts_per_token']}: the config contradicts itself")


def _window(cfg: dict, layout: Layout) -> dict:
    layers = cfg["num_hidden_layers"]
    if isinstance(cfg.get("layer_types"), list) and cfg["layer_types"]:
        return _from_layer_types(cfg, layers)
    if layout.window == "layer_types":
        raise InputError("layer_types", f"missing: {cfg['model_type']} interleaves sliding-window and full-attention layers, "
                                        "and the importer counts them only from the config's own list")
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
