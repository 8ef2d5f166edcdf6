"""Count pieces every family shares: the embeddings (FX14), one MoE layer's experts (FX15/FX16), the terms FX10-FX18
lack (FX870-FX878, FX887: ``MISSING_FORMULAS`` says why, ``EXTRA_FORMULAS`` which record counts each) and the result
of a count whose parts are checked as a second reading of its total."""

from __future__ import annotations

# Why each term is not in FX10-FX18; reported with every count that uses it (next to EXTRA_FORMULAS).
MISSING_FORMULAS = {
    "attention_biases": "FX10 has no bias terms (Qwen2: (heads + 2 kv_heads) head_dim; OPT/GPT-3: plus hidden for the output projection)",
    "mlp_biases": "FX11 has no bias terms (plain MLP: ffn + hidden per layer)",
    "norm_biases": "FX12/FX17 count RMSNorm weights only; a LayerNorm adds a bias of hidden per norm",
    "extra_norms": "FX12 counts two norms per layer; Gemma 3 has four (post-attention and post-MLP norms too), Falcon-7B one",
    "position_embeddings": "FX14 has no learned position embeddings (rows x hidden: OPT, GPT-3)",
    "router_bias": "FX15/FX16 leave out a router bias (DeepSeek-V3 e_score_correction_bias: experts per MoE layer)",
    "expert_biases": "FX15/FX16 have no expert biases (gpt-oss: experts x (2 expert_ffn + hidden) per MoE layer, top_k of them active; its router bias is router_bias)",
    "attention_sinks": "FX10 has no attention sinks (gpt-oss: one learned logit per query head and layer)",
    "indexer": "FX10 has no sparse-attention indexer (DeepSeek-V3.2: wq_b, wk, k_norm and weights_proj per layer)",
}

MLA_SHAPE = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")  # FX10 mla's inputs

# The record that counts each term, and the symbol FX879/FX880 take it as.
EXTRA_FORMULAS = {"attention_biases": "FX870", "mlp_biases": "FX871", "norm_biases": "FX872", "extra_norms": "FX873",
                  "position_embeddings": "FX874", "router_bias": "FX875", "expert_biases": "FX876", "attention_sinks": "FX878",
                  "indexer": "FX887"}
SYMBOL = {"attention_biases": "attn_bias_params", "mlp_biases": "mlp_bias_params", "norm_biases": "norm_bias_params",
          "extra_norms": "extra_norm_params", "position_embeddings": "position_embedding_params", "router_bias": "router_bias_params",
          "expert_biases": "expert_bias_params", "attention_sinks": "attention_sink_params", "indexer": "indexer_params"}


def embeddings(ev, shape) -> int:
    cfg = shape.config
    return ev("FX14", tie_embeddings="tied" if cfg.get("tie_word_embeddings", True) else "untied", vocab_size=cfg["vocab_size"], hidden=shape.hidden)


def moe_blocks(ev, moe: dict, shape) -> tuple[int, int]:
    """One MoE layer's feed-forward weights, all experts (FX15) and one token's (FX16)."""
    experts = {"n_experts": moe["experts"], "n_shared_experts": moe.get("shared_experts", 0), "hidden": shape.hidden,
               "moe_ffn_hidden": moe["expert_intermediate_size"]}
    return ev("FX15", **experts), ev("FX16", top_k=moe["experts_per_token"], **experts)


def counted(shape, ev, fid: str, total: int, active: int, parts: dict) -> dict:
    """The result of a family's own count, its parts checked as a second reading of ``fid``'s terms."""
    if sum(parts.values()) != total:
        raise AssertionError(f"{shape.id}: parts sum to {sum(parts.values())}, {fid} gives {total}")
    return {"total": total, "active": active, "parts": parts, "extras": {}, "formulas": ev.used, "extra_formulas": {}, "missing_formulas": {}}


def extras(ev, shape) -> tuple[dict, dict]:
    """The terms FX10-FX18 lack, each from its record (EXTRA_FORMULAS): ``({name: count}, {FX880 symbol: count})``."""
    d = shape.derived
    common = {"layers": shape.layers, "hidden": shape.hidden}
    moe = shape.moe
    gating = "gated" if d["mlp"] == "gated" else "plain"
    routed = {"layers": shape.layers, "n_dense_layers": moe.get("dense_first_layers", 0)}
    out = {}
    if d.get("attention_bias"):
        out["attention_biases"] = ev("FX870", attention_bias_on="qkvo" if d.get("attention_bias_on") == "qkvo" else "qkv",
                                     heads=shape.heads, kv_heads=shape.kv_heads, head_dim=d["head_dim"], **common)
    if d.get("mlp_bias"):
        out["mlp_biases"] = ev("FX871", mlp_gating=gating, ffn_hidden=d["ffn_hidden"], **common)
    norms = d.get("norms_per_layer", 2)
    if norms != 2:
        out["extra_norms"] = ev("FX873", norms_per_layer=norms, **common)
    if d.get("norm") == "layernorm":
        out["norm_biases"] = ev("FX872", norms_per_layer=norms, **common)
    if d.get("position") == "learned":
        out["position_embeddings"] = ev("FX874", position_embeddings=d["position_rows"], hidden=shape.hidden)
    if moe.get("router_bias"):
        out["router_bias"] = ev("FX875", n_experts=moe["experts"], **routed)
    active = {SYMBOL[k]: v for k, v in out.items()}
    if moe.get("expert_bias"):
        expert = {"mlp_gating": gating, "moe_ffn_hidden": moe["expert_intermediate_size"], "hidden": shape.hidden, **routed}
        out["expert_biases"] = ev("FX876", n_experts=moe["experts"], **expert)
        active["expert_bias_active_params"] = ev("FX877", top_k=moe["experts_per_token"], **expert)
    if d.get("attention_sinks"):
        out["attention_sinks"] = active["attention_sink_params"] = ev("FX878", layers=shape.layers, heads=shape.heads)
    if shape.dsa:  # every token runs every layer's indexer: active too
        out["indexer"] = active["indexer_params"] = ev("FX887", layers=shape.layers, q_lora_rank=shape.mla["q_lora_rank"], hidden=shape.hidden,
                                                       index_heads=shape.dsa["index_heads"], index_head_dim=shape.dsa["index_head_dim"])
    return out, active
