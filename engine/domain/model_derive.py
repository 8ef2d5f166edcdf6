"""What a config decides (``derived`` in a model record): family, attention, MLP, norms, biases, MoE, MLA; the family's
own layers (sliding windows, DSA's indexer, a hybrid's layer kinds, compressed attention) come from its module in
``engine.domain.families``."""

from __future__ import annotations

from engine.core.errors import InputError
from engine.domain.model_config import _positive
from engine.domain.model_layouts import ACTIVATIONS, Layout


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
    if layout.sinks:
        derived["attention_sinks"] = True
    from engine.domain.families import FAMILIES

    derived.update(FAMILIES[family].derive(cfg, layout))  # the family's own layers: windows, DSA, hybrid layer kinds, compressed attention
    return derived


def _layerwise(cfg: dict, layout: Layout, activation: str, root) -> dict:
    """A dense decoder whose layers differ in heads, K/V heads and feed-forward width (engine.domain.families.layerwise)."""
    from engine.domain.families.evaluate import Evaluator, formula_module
    from engine.domain.families.layerwise import derive_layers

    layers = derive_layers(cfg, Evaluator(formula_module(root)))
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


def _hash_routed(cfg: dict) -> dict:
    """DeepSeek-V4's MoE: one shared expert of the routed width in every layer; the first num_hash_layers pick experts from a
    token-id table (tid2eid, an integer buffer) and have no selection bias, the others a bias per routed expert."""
    layers = cfg["num_hidden_layers"]
    hashed = cfg.get("num_hash_layers") or 0
    if isinstance(hashed, bool) or not isinstance(hashed, int) or not 0 <= hashed <= layers:
        raise InputError("num_hash_layers", f"expected a whole number from 0 to the {layers} layers, got {hashed!r}")
    return {"shared_experts": 1, "dense_first_layers": 0, "routing": f"{cfg.get('scoring_func') or 'sqrtsoftplus'}_topk", "router_bias": True,
            "hash_layers": hashed}


def _same_top_k(cfg: dict, moe: dict) -> None:
    """gpt-oss states the experts per token twice (experts_per_token and num_experts_per_tok): they must agree."""
    other = cfg.get("experts_per_token")
    if other is not None and other != moe["experts_per_token"]:
        raise InputError("experts_per_token", f"is {other!r}, but num_experts_per_tok is {moe['experts_per_token']}: the config contradicts itself")
