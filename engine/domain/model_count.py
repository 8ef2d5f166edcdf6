"""Parameter and KV counts of a model record from the formulas FX10-FX18, FX870-FX880 and F8.

``parameter_count`` evaluates the parameter-count formulas FX10-FX18 (formulas/model.yaml)
through the compiled formula module. The terms those formulas lack (biases, learned position
embeddings, extra norms, router and expert biases, attention sinks) are the records
FX870-FX878, and FX879/FX880 add them to the totals of FX17/FX18: no count is Python
arithmetic. ``MISSING_FORMULAS`` says why FX10-FX18 do not hold each term, ``EXTRA_FORMULAS``
which record counts it.
"""

from __future__ import annotations

import math

from engine.core.errors import InputError

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
_SYMBOL = {"attention_biases": "attn_bias_params", "mlp_biases": "mlp_bias_params", "norm_biases": "norm_bias_params",
           "extra_norms": "extra_norm_params", "position_embeddings": "position_embedding_params", "router_bias": "router_bias_params",
           "expert_biases": "expert_bias_params", "attention_sinks": "attention_sink_params", "indexer": "indexer_params"}


def parameter_count(record: dict, root=None) -> dict:
    """Total, active and per-part parameters of a model record, from formulas FX10-FX18 and FX870-FX880.

    Returns ``{"total", "active", "parts": {name: count}, "extras": {name: count},
    "formulas": [...], "extra_formulas": {name: formula id}, "missing_formulas": {name: why FX10-FX18 lack it}}``.
    """
    module = formula_module(root)
    cfg, d = record["config"], record["derived"]
    ev = _Evaluator(module)
    if d.get("layerwise"):  # OpenELM: every layer its own heads and width, FX909 (no single heads for _Shape)
        from engine.domain import model_layerwise

        total, parts = model_layerwise.count(record, ev)
        return _counted(record, ev, "FX909", total, total, parts)  # dense: every parameter runs for every token
    shape = _Shape(cfg, d)
    if d.get("linear_attention"):
        lin = d["linear_attention"]
        count = _hybrid_count if lin["kind"] != "kda" else _k3_count if lin.get("full_rank_gate") else _kda_count
        return count(record, shape, ev)
    if d.get("mamba"):
        return _mamba_count(record, shape, ev)
    if d.get("compressed_attention"):
        return _v4_count(record, shape, ev)
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
    extras, active_extras = _extras(ev, shape, d)
    if extras:  # FX879/FX880 add the terms FX17/FX18 lack
        total = ev("FX879", params=total, **{_SYMBOL[k]: v for k, v in extras.items()})
        active = ev("FX880", params_active=active, **active_extras)
    parts = {"attention": shape.layers * attn, "mlp": mlp_part, "norms": shape.layers * norm + shape.hidden, "embeddings": emb}
    parts.update(extras)
    result = {"total": total, "active": active, "parts": parts, "extras": extras, "formulas": ev.used,
              "extra_formulas": {k: EXTRA_FORMULAS[k] for k in extras}, "missing_formulas": {k: MISSING_FORMULAS[k] for k in extras}}
    if sum(parts.values()) != result["total"]:  # the parts are a second reading of the same terms
        raise AssertionError(f"{record['id']}: parts sum to {sum(parts.values())}, total is {result['total']}")
    return result


def _embeddings(ev: _Evaluator, cfg: dict, shape: _Shape) -> int:
    return ev("FX14", tie_embeddings="tied" if cfg.get("tie_word_embeddings", True) else "untied", vocab_size=cfg["vocab_size"], hidden=shape.hidden)


def _moe_blocks(ev: _Evaluator, moe: dict, shape: _Shape) -> tuple[int, int]:
    """One MoE layer's feed-forward weights, all experts (FX15) and one token's (FX16)."""
    experts = {"n_experts": moe["experts"], "n_shared_experts": moe.get("shared_experts", 0), "hidden": shape.hidden,
               "moe_ffn_hidden": moe["expert_intermediate_size"]}
    return ev("FX15", **experts), ev("FX16", top_k=moe["experts_per_token"], **experts)


def _counted(record: dict, ev: _Evaluator, fid: str, total: int, active: int, parts: dict) -> dict:
    """The result of a hybrid count, its parts checked as a second reading of ``fid``'s terms."""
    if sum(parts.values()) != total:
        raise AssertionError(f"{record['id']}: parts sum to {sum(parts.values())}, {fid} gives {total}")
    return {"total": total, "active": active, "parts": parts, "extras": {}, "formulas": ev.used, "extra_formulas": {}, "missing_formulas": {}}


def _hybrid_count(record: dict, shape: _Shape, ev: _Evaluator) -> dict:
    """Qwen3-Next: gated full-attention (FX882) and Gated DeltaNet (FX881) layers over one MoE stack (FX15/FX16), FX883/FX884."""
    cfg, d = record["config"], record["derived"]
    lin, moe = d["linear_attention"], d["moe"]
    attn = ev("FX882", heads=shape.heads, kv_heads=shape.kv_heads, head_dim=d["head_dim"], hidden=shape.hidden)
    linear = ev("FX881", hidden=shape.hidden, linear_k_heads=lin["key_heads"], linear_v_heads=lin["value_heads"],
                linear_k_head_dim=lin["key_head_dim"], linear_v_head_dim=lin["value_head_dim"], conv_kernel=lin["conv_kernel"])
    emb = _embeddings(ev, cfg, shape)
    moe_all, moe_active = _moe_blocks(ev, moe, shape)
    common = {"layers": shape.layers, "attention_layers": d["attention_layers"], "gated_attn_params_per_layer": attn,
              "linear_attn_params_per_layer": linear, "embedding_params": emb, "hidden": shape.hidden}
    total = ev("FX883", moe_mlp_params_per_layer=moe_all, **common)
    active = ev("FX884", moe_mlp_active_params_per_layer=moe_active, **common)
    parts = {"attention": d["attention_layers"] * attn, "linear_attention": lin["layers"] * linear,
             "mlp": shape.layers * (moe_all + shape.hidden), "norms": 2 * shape.layers * shape.hidden + shape.hidden, "embeddings": emb}
    return _counted(record, ev, "FX883", total, active, parts)


def _kda_count(record: dict, shape: _Shape, ev: _Evaluator) -> dict:
    """Kimi Linear: KDA (FX889) and uncompressed-query MLA (FX890) layers over dense (FX11) and MoE (FX15/FX16) blocks, FX891/FX892."""
    cfg, d = record["config"], record["derived"]
    lin, moe, mla = d["linear_attention"], d["moe"], d["mla"]
    kda = ev("FX889", hidden=shape.hidden, kda_heads=lin["key_heads"], kda_head_dim=lin["key_head_dim"], conv_kernel=lin["conv_kernel"])
    attn = ev("FX890", hidden=shape.hidden, heads=shape.heads, qk_nope_head_dim=mla["qk_nope_head_dim"], qk_rope_head_dim=mla["qk_rope_head_dim"],
              kv_lora_rank=mla["kv_lora_rank"], v_head_dim=mla["v_head_dim"])
    dense = ev("FX11", mlp_gating=d["mlp"], hidden=shape.hidden, ffn_hidden=d["ffn_hidden"]) if moe.get("dense_first_layers") else 0
    emb = _embeddings(ev, cfg, shape)
    moe_all, moe_active = _moe_blocks(ev, moe, shape)
    common = {"layers": shape.layers, "attention_layers": d["attention_layers"], "kda_params_per_layer": kda,
              "mla_full_q_params_per_layer": attn, "n_dense_layers": moe.get("dense_first_layers", 0), "mlp_params_per_layer": dense or 1,  # times 0 dense layers when there are none
              "n_experts": moe["experts"], "embedding_params": emb, "hidden": shape.hidden}
    total = ev("FX891", moe_mlp_params_per_layer=moe_all, **common)
    active = ev("FX892", moe_mlp_active_params_per_layer=moe_active, **common)
    moe_layers = shape.layers - moe.get("dense_first_layers", 0)
    parts = {"attention": d["attention_layers"] * attn, "linear_attention": lin["layers"] * kda,
             "mlp": moe.get("dense_first_layers", 0) * dense + moe_layers * moe_all, "router_bias": moe_layers * moe["experts"],
             "norms": 2 * shape.layers * shape.hidden + shape.hidden, "embeddings": emb}
    return _counted(record, ev, "FX891", total, active, parts)


def _k3_count(record: dict, shape: _Shape, ev: _Evaluator) -> dict:
    """Kimi K3: full-rank-gate KDA (FX902) and gated MLA (FX903) layers over a dense (FX11) and latent MoE (FX904/FX905) blocks, FX906/FX907."""
    cfg, d = record["config"], record["derived"]
    lin, moe, mla = d["linear_attention"], d["moe"], d["mla"]
    kda = ev("FX902", hidden=shape.hidden, kda_heads=lin["key_heads"], kda_head_dim=lin["key_head_dim"], conv_kernel=lin["conv_kernel"])
    base = ev("FX10", attention="mla", hidden=shape.hidden, heads=shape.heads, **{k: mla[k] for k in MLA_SHAPE})
    attn = ev("FX903", attn_params_per_layer=base, hidden=shape.hidden, heads=shape.heads, v_head_dim=mla["v_head_dim"])
    dense = ev("FX11", mlp_gating=d["mlp"], hidden=shape.hidden, ffn_hidden=d["ffn_hidden"]) if moe.get("dense_first_layers") else 0
    emb = _embeddings(ev, cfg, shape)
    experts = {"n_experts": moe["experts"], "moe_ffn_hidden": moe["expert_intermediate_size"], "latent_hidden": moe["latent_hidden"],
               "n_shared_experts": moe.get("shared_experts", 0), "hidden": shape.hidden}
    moe_all = ev("FX904", **experts)
    moe_active = ev("FX905", top_k=moe["experts_per_token"], **experts)
    n_dense = moe.get("dense_first_layers", 0)
    common = {"layers": shape.layers, "attention_layers": d["attention_layers"], "kda_full_gate_params_per_layer": kda,
              "gated_mla_params_per_layer": attn, "n_dense_layers": n_dense, "mlp_params_per_layer": dense or 1,  # times 0 dense layers when there are none
              "embedding_params": emb, "hidden": shape.hidden}
    total = ev("FX906", latent_moe_params_per_layer=moe_all, **common)
    active = ev("FX907", latent_moe_active_params_per_layer=moe_active, **common)
    parts = {"attention": d["attention_layers"] * attn, "linear_attention": lin["layers"] * kda,
             "mlp": n_dense * dense + (shape.layers - n_dense) * moe_all, "norms": 2 * shape.layers * shape.hidden + shape.hidden,
             "attn_res": 4 * shape.layers * shape.hidden + 2 * shape.hidden, "embeddings": emb}
    return _counted(record, ev, "FX906", total, active, parts)


def _v4_count(record: dict, shape: _Shape, ev: _Evaluator) -> dict:
    """DeepSeek-V4: attention (FX893), CSA (FX894) and HCA (FX895) compressors, hyper-connections (FX896) over MoE blocks (FX15/FX16), FX897/FX898."""
    cfg, d = record["config"], record["derived"]
    ca, moe, hc = d["compressed_attention"], d["moe"], d["hyper_connections"]
    attn = ev("FX893", heads=shape.heads, hidden=shape.hidden, q_lora_rank=ca["q_lora_rank"], head_dim=d["head_dim"],
              o_lora_rank=ca["o_lora_rank"], o_groups=ca["o_groups"])
    csa = ev("FX894", csa_ratio=ca["csa_ratio"], head_dim=d["head_dim"], hidden=shape.hidden, index_heads=ca["index_heads"],
             index_head_dim=ca["index_head_dim"], q_lora_rank=ca["q_lora_rank"]) if ca["csa_layers"] else 0
    hca = ev("FX895", hca_ratio=ca["hca_ratio"], head_dim=d["head_dim"], hidden=shape.hidden) if ca["hca_layers"] else 0
    mixers = ev("FX896", hc_mult=hc, hidden=shape.hidden)
    emb = _embeddings(ev, cfg, shape)
    moe_all, moe_active = _moe_blocks(ev, moe, shape)
    common = {"layers": shape.layers, "v4_attn_params_per_layer": attn, "hc_params_per_layer": mixers, "hidden": shape.hidden,
              "csa_layers": ca["csa_layers"], "csa_params_per_layer": csa, "hca_layers": ca["hca_layers"], "hca_params_per_layer": hca,
              "hash_layers": moe["hash_layers"], "n_experts": moe["experts"], "embedding_params": emb, "hc_mult": hc}
    total = ev("FX897", moe_mlp_params_per_layer=moe_all, **common)
    active = ev("FX898", moe_mlp_active_params_per_layer=moe_active, **common)
    parts = {"attention": shape.layers * attn, "compressors": ca["csa_layers"] * csa + ca["hca_layers"] * hca, "mlp": shape.layers * moe_all,
             "router_bias": (shape.layers - moe["hash_layers"]) * moe["experts"], "hyper_connections": shape.layers * mixers + hc * hc * shape.hidden + hc + 1,
             "norms": 2 * shape.layers * shape.hidden + shape.hidden, "embeddings": emb}
    return _counted(record, ev, "FX897", total, active, parts)


def _mamba_count(record: dict, shape: _Shape, ev: _Evaluator) -> dict:
    """Nemotron-H: Mamba-2 (FX885), attention (FX10) and MLP (FX11) blocks with one norm each, FX886; dense, so active = total."""
    cfg, d = record["config"], record["derived"]
    m = d["mamba"]
    mamba = ev("FX885", hidden=shape.hidden, mamba_heads=m["heads"], mamba_head_dim=m["head_dim"], ssm_state_size=m["state_size"],
               mamba_groups=m["groups"], conv_kernel=m["conv_kernel"])
    attn = ev("FX10", attention=d["attention"], hidden=shape.hidden, heads=shape.heads, kv_heads=shape.kv_heads, head_dim=d["head_dim"])
    mlp = ev("FX11", mlp_gating=d["mlp"], hidden=shape.hidden, ffn_hidden=d["ffn_hidden"])
    emb = _embeddings(ev, cfg, shape)
    total = ev("FX886", mamba_layers=m["layers"], attention_layers=d["attention_layers"], mlp_layers=d["mlp_layers"],
               mamba_params_per_layer=mamba, attn_params_per_layer=attn, mlp_params_per_layer=mlp, embedding_params=emb, hidden=shape.hidden)
    parts = {"mamba": m["layers"] * mamba, "attention": d["attention_layers"] * attn, "mlp": d["mlp_layers"] * mlp,
             "norms": shape.layers * shape.hidden + shape.hidden, "embeddings": emb}
    return _counted(record, ev, "FX886", total, total, parts)


def is_hybrid(derived: dict) -> bool:
    """A model whose layers are not all attention + MLP blocks (Qwen3-Next, Nemotron-H, Kimi Linear): FX17/FX18 and
    the calculators do not hold it; the forward ledger has a template per kind (hybrid_moe, hybrid_mla_moe, hybrid)."""
    return str(derived.get("family", "")).startswith("hybrid")


def outside_templates(derived: dict) -> str:
    """Why the calculators' formulas and the forward ledger's templates cannot size this model, or "" when they can:
    a hybrid (recurrent layers beside attention), DeepSeek Sparse Attention (indexer keys beside the latent,
    attention over the top-k cached tokens only) or layer-wise scaling (no one shape for every layer)."""
    if is_hybrid(derived):
        return f"a hybrid ({derived.get('layer_pattern', 'recurrent and attention layers')})"
    if derived.get("compressed_attention"):
        return (f"DeepSeek-V4's compressed attention ({derived['layer_pattern']}: a window of raw entries in every layer, compressed "
                "entries and indexer keys beside it)")
    if derived.get("sparse_attention"):
        return (f"DeepSeek Sparse Attention (an indexer key cache beside the MLA latent, attention over the top "
                f"{derived['sparse_attention']['index_topk']} cached tokens)")
    if derived.get("layerwise"):
        from engine.domain.model_layerwise import why_refused

        return why_refused(derived)
    return ""


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
        self.attention_layers = d.get("attention_layers", self.layers)  # hybrids: the layers holding a K/V cache


class _Evaluator:
    """Evaluates formula records from the compiled module and remembers which were used."""

    def __init__(self, module):
        self.module = module
        self.used: list[str] = []

    def __call__(self, fid: str, **given) -> int:
        from engine.numeric.evaluate import evaluate

        if fid not in self.used:
            self.used.append(fid)
        if fid not in self.module.FORMULAS:  # a root of its own whose formulas/ predates the record
            raise InputError("--root", f"its formulas lack {fid}, which parameter counts need (formulas/model.yaml of the shipped root has it)")
        result = evaluate(self.module.FORMULAS[fid], self.module, given)
        (value,) = (o.value for o in result.outputs.values())
        if not float(value).is_integer():
            raise InputError(fid, f"gave {value}, not a whole number of parameters")
        if abs(value) > 2**53:  # past it a float count is no longer exact
            raise InputError(fid, f"gives {float(value):.4g}, past 2^53 = {2**53} where counts are no longer exact: check the config's sizes")
        return int(value)


def _extras(ev: _Evaluator, shape: _Shape, d: dict) -> tuple[dict, dict]:
    """The terms FX10-FX18 lack, each from its record (EXTRA_FORMULAS): ``({name: count}, {FX880 symbol: count})``."""
    common = {"layers": shape.layers, "hidden": shape.hidden}
    moe = d.get("moe") or {}
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
    active = {_SYMBOL[k]: v for k, v in out.items()}
    if moe.get("expert_bias"):
        expert = {"mlp_gating": gating, "moe_ffn_hidden": moe["expert_intermediate_size"], "hidden": shape.hidden, **routed}
        out["expert_biases"] = ev("FX876", n_experts=moe["experts"], **expert)
        active["expert_bias_active_params"] = ev("FX877", top_k=moe["experts_per_token"], **expert)
    if d.get("attention_sinks"):
        out["attention_sinks"] = active["attention_sink_params"] = ev("FX878", layers=shape.layers, heads=shape.heads)
    dsa = d.get("sparse_attention")
    if dsa:  # every token runs every layer's indexer: active too
        out["indexer"] = active["indexer_params"] = ev("FX887", layers=shape.layers, q_lora_rank=d["mla"]["q_lora_rank"], hidden=shape.hidden,
                                                       index_heads=dsa["index_heads"], index_head_dim=dsa["index_head_dim"])
    return out, active


def v4_cache_shape(record: dict) -> dict:
    """FX899/FX900's inputs from a DeepSeek-V4 record (index_head_dim and hca_ratio stand in as 1 where no layer has them)."""
    d = record["derived"]
    ca = d["compressed_attention"]
    return {"head_dim": d["head_dim"], "csa_layers": ca["csa_layers"], "csa_ratio": ca["csa_ratio"], "index_head_dim": ca.get("index_head_dim", 1),
            "hca_layers": ca["hca_layers"], "hca_ratio": ca["hca_ratio"] or 1}


def compressed_kv_bytes(record: dict, context_tokens: int, kv_bytes: float = 2, root=None) -> int:
    """FX899: a DeepSeek-V4 request's window, compressed entries and indexer keys at ``context_tokens``."""
    ca = record["derived"]["compressed_attention"]
    return _Evaluator(formula_module(root))("FX899", kv_bytes=kv_bytes, layers=record["config"]["num_hidden_layers"], context_tokens=context_tokens,
                                            sliding_window=ca["window"], **v4_cache_shape(record))


def weights_only_count(record: dict, root=None) -> int:
    """The weight matrices alone, 12·L·h² (FX400 weights_only; Kaplan et al. 2020's non-embedding N): a shape check, not the count."""
    cfg = record["config"]
    return _Evaluator(formula_module(root))("FX400", param_count_terms="weights_only", layers=cfg["num_hidden_layers"], hidden=cfg["hidden_size"])


def kv_bytes_per_token(record: dict, root=None, kv_bytes: float = 2) -> int | float:
    """Bytes of K/V cache one token adds across the layers that keep one (F8, the variant of derived.attention):
    every layer, or a hybrid's attention_layers (its linear-attention layers keep a fixed state instead, FX800).
    A layer-wise model (OpenELM): each layer's own K/V heads, FX910.
    DeepSeek-V4 (compressed attention): what a request's cache grows by per token once its windows are full, FX899
    over one period of the compress ratios divided by its length."""
    module = formula_module(root)
    cfg, d = record["config"], record["derived"]
    if d.get("layerwise"):  # OpenELM: each layer's own K/V heads, FX910
        from engine.domain import model_layerwise

        return model_layerwise.kv_bytes_per_token(record, _Evaluator(module), kv_bytes)
    if d.get("compressed_attention"):
        ca = d["compressed_attention"]
        period = math.lcm(ca["csa_ratio"], ca["hca_ratio"] or 1)
        start = period * -(-ca["window"] // period)  # a whole number of periods past the window
        grown = compressed_kv_bytes(record, start + period, kv_bytes, root) - compressed_kv_bytes(record, start, kv_bytes, root)
        return int(grown // period) if grown % period == 0 else grown / period
    shape = _Shape(cfg, d)
    given = {"attention": d["attention"], "layers": shape.attention_layers, "kv_bytes": kv_bytes}  # a hybrid's K/V layers only
    if d["attention"] == "mla":
        given.update(kv_lora_rank=shape.mla["kv_lora_rank"], qk_rope_head_dim=shape.mla["qk_rope_head_dim"])
    else:
        given.update(heads=shape.heads, kv_heads=shape.kv_heads, head_dim=d["head_dim"])
    return _Evaluator(module)("F8", **given)
