"""Parameter and KV counts of a model record from the formulas FX10-FX18 and F8.

``parameter_count`` evaluates the parameter-count formulas FX10-FX18 (formulas/model.yaml)
through the compiled formula module. The few terms those formulas lack (biases, learned
position embeddings, extra norms, a router bias) are added here, each named in
``MISSING_FORMULAS`` so they can move into formula records later.
"""

from __future__ import annotations

from engine.core.errors import InputError

# Where each term that FX10-FX18 lack would belong; reported with every count that uses it.
MISSING_FORMULAS = {
    "attention_biases": "FX10 has no bias terms (Qwen2: (heads + 2 kv_heads) head_dim; OPT/GPT-3: plus hidden for the output projection)",
    "mlp_biases": "FX11 has no bias terms (plain MLP: ffn + hidden per layer)",
    "norm_biases": "FX12/FX17 count RMSNorm weights only; a LayerNorm adds a bias of hidden per norm",
    "extra_norms": "FX12 counts two norms per layer; Gemma 3 has four (post-attention and post-MLP norms too), Falcon-7B one",
    "position_embeddings": "FX14 has no learned position embeddings (rows x hidden: OPT, GPT-3)",
    "router_bias": "FX15/FX16 leave out a router bias (DeepSeek-V3 e_score_correction_bias: experts per MoE layer)",
    "expert_biases": "FX15/FX16 have no expert biases (gpt-oss: experts x (2 expert_ffn + hidden) per MoE layer, top_k of them active; its router bias is router_bias)",
    "attention_sinks": "FX10 has no attention sinks (gpt-oss: one learned logit per query head and layer)",
}


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
    result = {"total": total + extra, "active": active + extra - _inactive_extras(shape, d), "parts": parts, "extras": extras, "formulas": ev.used,
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
    if d.get("moe", {}).get("expert_bias"):
        out["expert_biases"] = shape.moe_layers * d["moe"]["experts"] * _expert_bias_width(shape, d)
    if d.get("attention_sinks"):
        out["attention_sinks"] = layers * shape.heads
    return out


def _expert_bias_width(shape: _Shape, d: dict) -> int:
    """Bias elements of one expert: gate and up (expert_ffn each; up only for a plain MLP) and down (hidden)."""
    ffn = d["moe"]["expert_intermediate_size"]
    return (2 * ffn if d["mlp"] == "gated" else ffn) + shape.hidden


def _inactive_extras(shape: _Shape, d: dict) -> int:
    """The extras a token does not use: the biases of the experts it is not routed to."""
    moe = d.get("moe") or {}
    if not moe.get("expert_bias"):
        return 0
    return shape.moe_layers * (moe["experts"] - moe["experts_per_token"]) * _expert_bias_width(shape, d)


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
