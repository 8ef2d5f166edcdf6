"""Standard decoders: dense, MoE and MLA (``dense``, ``moe``, ``mla_moe``), with sliding-window layers and DeepSeek Sparse
Attention as flags of the shape. Parameters from FX10-FX18 plus the terms they lack (FX870-FX880, FX887), K/V bytes per
token from F8, a request from FX70 (windowed layers capped at their window) and, with DSA, FX888's indexer keys."""

from __future__ import annotations

from engine.core.errors import InputError
from engine.domain.families.base import Defaults, Use, calculators_refusal
from engine.domain.families.counting import EXTRA_FORMULAS, MISSING_FORMULAS, SYMBOL, extras
from engine.domain.families.state_rows import LayerKind, RequestState


class Standard(Defaults):
    name = "standard"
    derived_families = ("dense", "moe", "mla_moe")

    def derive(self, cfg: dict, layout) -> dict:
        """DeepSeek Sparse Attention's indexer, and the sliding-window layers (none beside MLA)."""
        from engine.domain.model_config import _positive

        out = {}
        if layout.sparse == "dsa":
            out["sparse_attention"] = {"kind": "dsa", "index_heads": _positive(cfg, "index_n_heads", required=True),
                                       "index_head_dim": _positive(cfg, "index_head_dim", required=True),
                                       "index_topk": _positive(cfg, "index_topk", required=True)}
        _no_window_with_mla(cfg, layout)
        window = _window(cfg, layout)
        if window:
            out["sliding_window"] = window
        return out

    def count(self, shape, ev) -> dict:
        cfg, d = shape.config, shape.derived
        attn = ev("FX10", attention=d["attention"], hidden=shape.hidden, heads=shape.heads, kv_heads=shape.kv_heads, head_dim=d["head_dim"], **shape.mla)
        norm = ev("FX12", qk_norm="per_head" if d.get("qk_norm") else "none", hidden=shape.hidden, head_dim=d["head_dim"])
        emb = ev("FX14", tie_embeddings="tied" if cfg.get("tie_word_embeddings", True) else "untied", vocab_size=cfg["vocab_size"], hidden=shape.hidden)
        dense_mlp = ev("FX11", mlp_gating=d["mlp"], hidden=shape.hidden, ffn_hidden=d["ffn_hidden"]) if "ffn_hidden" in d else 0
        dense_layer = ev("FX13", attn_params_per_layer=attn, mlp_params_per_layer=dense_mlp, norm_params_per_layer=norm) if dense_mlp else 0
        common = {"layers": shape.layers, "dense_layer_params": dense_layer, "embedding_params": emb, "hidden": shape.hidden}
        moe = shape.moe
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
        more, active_more = extras(ev, shape)
        if more:  # FX879/FX880 add the terms FX17/FX18 lack
            total = ev("FX879", params=total, **{SYMBOL[k]: v for k, v in more.items()})
            active = ev("FX880", params_active=active, **active_more)
        parts = {"attention": shape.layers * attn, "mlp": mlp_part, "norms": shape.layers * norm + shape.hidden, "embeddings": emb}
        parts.update(more)
        result = {"total": total, "active": active, "parts": parts, "extras": more, "formulas": ev.used,
                  "extra_formulas": {k: EXTRA_FORMULAS[k] for k in more}, "missing_formulas": {k: MISSING_FORMULAS[k] for k in more}}
        if sum(parts.values()) != result["total"]:  # the parts are a second reading of the same terms
            raise AssertionError(f"{shape.id}: parts sum to {sum(parts.values())}, total is {result['total']}")
        return result

    def request_state(self, shape, ev, context_tokens: int, kv_bytes: float, state_bytes: float | None) -> RequestState:
        """F8 over every layer; FX70 caps the windowed layers at their window; DSA adds FX888's indexer keys; FX801 sums."""
        layers = shape.layers
        per_token = ev("F8", **shape.f8(kv_bytes))
        windowed, span = shape.window.get("windowed_layers", 0), shape.window.get("window", context_tokens)
        kv_request = ev("FX70", kv_bytes_per_token=per_token, layers=layers, window_layers=windowed,
                        context_tokens=context_tokens, sliding_window=span)
        dsa = shape.dsa
        index_keys = ev("FX888", layers=layers, index_head_dim=dsa["index_head_dim"]) * context_tokens if dsa else 0  # FP8 keys + scales
        total = ev("FX801", kv_bytes_per_request=kv_request + index_keys, recurrent_layers=0, recurrent_state_bytes_per_layer=0)
        per_layer_token = per_token // layers
        held = min(context_tokens, span)
        full_kind = "mla_latent" if shape.attention == "mla" else "full_attention"
        rows = [LayerKind(full_kind, layers - windowed, context_tokens, (layers - windowed) * per_layer_token * context_tokens, "F8")]
        if windowed:
            rows.append(LayerKind("sliding_attention", windowed, held, windowed * per_layer_token * held, "FX70"))
        if dsa:
            rows.append(LayerKind("indexer_keys", layers, context_tokens, index_keys, "FX888"))
        rows = tuple(r for r in rows if r.layers)
        if sum(r.bytes_per_request for r in rows) != total:  # the rows are a second reading of FX70
            raise AssertionError(f"{shape.id}: rows sum to {sum(r.bytes_per_request for r in rows)}, FX70/FX801 give {total}")
        return RequestState(shape.id, context_tokens, kv_bytes, rows, total, ("F8", "FX70") + (("FX888",) if dsa else ()) + ("FX801",))

    def what(self, shape) -> str:
        if not shape.dsa:
            return ""
        return (f"DeepSeek Sparse Attention (an indexer key cache beside the MLA latent, attention over the top "
                f"{shape.dsa['index_topk']} cached tokens)")

    def refusal(self, use: Use, shape) -> str:
        if use == Use.CALCULATORS and shape.dsa:
            return calculators_refusal(shape, self.what(shape), " (calc kv-concurrency sizes it: the latent plus the indexer keys)")
        return ""

    def preset_values(self, shape, root, put) -> None:
        """The layers; with DSA, every layer's indexer caching one FP8 key per token (FX888) beside the latent."""
        put("layers", shape.layers, "config num_hidden_layers")
        if not shape.dsa:
            return
        from engine.domain.families.evaluate import Evaluator, formula_module

        layers, dim = shape.layers, shape.dsa["index_head_dim"]
        put("kv_layout", "sparse_indexed", "derived: DeepSeek Sparse Attention keeps an indexer key cache beside the MLA latent")
        put("indexer_key_bytes_per_token", Evaluator(formula_module(root))("FX888", layers=layers, index_head_dim=dim),
            f"FX888: {layers} layers x {dim} FP8 elements plus one FP32 scale per 128 (config index_head_dim)")

    def serving_terms(self, shape, preset: dict) -> dict:
        """DSA: FX888's indexer keys beside the latent, FX920's scoring, the top-k attended."""
        if not shape.dsa:
            return {}
        dsa = shape.dsa
        return dict(index_heads=int(dsa["index_heads"]), index_head_dim=int(dsa["index_head_dim"]), index_topk=int(dsa["index_topk"]),
                    index_bytes_per_token=float(preset["indexer_key_bytes_per_token"]))


FAMILY = Standard()


# ------------------------------------------------------------------ sliding windows (from the config)
def _no_window_with_mla(cfg: dict, layout) -> None:
    """The mla_moe template counts no sliding window: refuse windowed layers rather than count them as full attention."""
    types = cfg.get("layer_types")
    windowed = sum(t == "sliding_attention" for t in types) if layout.mla and isinstance(types, list) else 0
    if windowed:
        raise InputError("layer_types", f"lists {windowed} sliding_attention layers in an MLA model ({cfg['model_type']}): the mla_moe "
                                        "ledger template counts no sliding window, so the config is refused rather than counted as full attention")


def _window(cfg: dict, layout) -> dict:
    from engine.domain.model_config import _positive

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
    from engine.domain.model_config import _positive
    from engine.domain.model_layouts import LAYER_TYPES

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
