"""DeepSeek-V4's compressed attention (``compressed_moe``): every layer a sliding window of raw entries; CSA layers
add compressed entries of 4 tokens with a lightning indexer, HCA layers entries of hca_ratio tokens. Parameters from
FX893-FX898 (attention, CSA and HCA compressors, hyper-connections over MoE blocks); a request's cache from FX899, its
compressors' FP32 running state from FX900, FX901 their sum. No calculator, planner or ledger template holds it."""

from __future__ import annotations

import math

from engine.core.errors import InputError
from engine.domain.families.base import Defaults, Use, calculators_refusal, ledger_refusal
from engine.domain.families.counting import counted, embeddings, moe_blocks
from engine.domain.families.state_rows import LayerKind, RequestState


def layer_kinds(cfg: dict) -> dict:
    """DeepSeek-V4's layer kinds from compress_ratios (one per layer, then the MTP layers'): 0 keeps the sliding window only,
    4 adds overlapping compressed entries and a lightning indexer (CSA), any other ratio compressed entries alone (HCA)."""
    from engine.domain.model_config import _positive

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


def cache_shape(shape) -> dict:
    """FX899/FX900's inputs (index_head_dim and hca_ratio stand in as 1 where no layer has them)."""
    ca = shape.derived["compressed_attention"]
    return {"head_dim": shape.head_dim, "csa_layers": ca["csa_layers"], "csa_ratio": ca["csa_ratio"], "index_head_dim": ca.get("index_head_dim", 1),
            "hca_layers": ca["hca_layers"], "hca_ratio": ca["hca_ratio"] or 1}


def cache_bytes(shape, ev, context_tokens: int, kv_bytes: float) -> int:
    """FX899: a request's window, compressed entries and indexer keys at ``context_tokens``."""
    ca = shape.derived["compressed_attention"]
    return ev("FX899", kv_bytes=kv_bytes, layers=shape.layers, context_tokens=context_tokens, sliding_window=ca["window"], **cache_shape(shape))


class Compressed(Defaults):
    name = "compressed"
    derived_families = ("compressed_moe",)
    uses = frozenset({Use.COUNT, Use.KV_PER_TOKEN, Use.STATE, Use.STATE_TP})

    def derive(self, cfg: dict, layout) -> dict:
        return layer_kinds(cfg)

    def what(self, shape) -> str:
        return (f"DeepSeek-V4's compressed attention ({shape.derived['layer_pattern']}: a window of raw entries in every layer, compressed "
                "entries and indexer keys beside it)")

    def refused(self, use: Use, shape) -> str:
        if use == Use.SERVE:
            return (f"{shape.short_id}: DeepSeek-V4's compressed attention (windows, compressed entries, an indexer) is not sized by "
                    f"plan serve; `aiinfra state --model {shape.short_id}` gives its bytes per request")
        if use == Use.LEDGER:
            return ledger_refusal(shape, self.what(shape))
        return calculators_refusal(shape, self.what(shape), "")

    def kv_per_token(self, shape, ev, kv_bytes: float) -> int | float:
        """What a request's cache grows by per token once its windows are full: FX899 over one period of the compress
        ratios, divided by its length."""
        ca = shape.derived["compressed_attention"]
        period = math.lcm(ca["csa_ratio"], ca["hca_ratio"] or 1)
        start = period * -(-ca["window"] // period)  # a whole number of periods past the window
        grown = cache_bytes(shape, ev, start + period, kv_bytes) - cache_bytes(shape, ev, start, kv_bytes)
        return int(grown // period) if grown % period == 0 else grown / period

    def kv_label(self, shape) -> str:
        return "KV cache per token past the windows (BF16, FX899: compressed entries and indexer keys, averaged over the compress ratios)"

    def request_state(self, shape, ev, context_tokens: int, kv_bytes: float, state_bytes: float | None) -> RequestState:
        """By layer kind (window only, CSA, HCA), as the reference inference code keeps them: every layer a window of up to
        ``window`` entries of head_dim; CSA layers one compressed entry and one indexer key per 4 tokens, HCA layers one entry
        per hca_ratio tokens, all at ``kv_bytes``; each compressor two FP32 buffers of its pooling window (``state_bytes``,
        default 4). FX899 + FX900 = FX901."""
        from engine.core.record import replace

        if not (state_bytes is None or state_bytes > 0):
            raise InputError("--state-bytes", f"expected a positive number of bytes per state element, got {state_bytes!r}")
        shape_in = cache_shape(shape)
        ca, layers = shape.derived["compressed_attention"], shape.layers
        state = {} if state_bytes is None else {"compressor_state_bytes": state_bytes}  # FX900's default: 4 (float32)
        cache = cache_bytes(shape, ev, context_tokens, kv_bytes)
        pooling = ev("FX900", **state, **shape_in)
        total = ev("FX901", compressed_kv_bytes_per_request=cache, compressor_state_bytes_per_request=pooling)
        held, sb = min(context_tokens, ca["window"]), 4 if state_bytes is None else state_bytes
        hd, ihd = shape_in["head_dim"], shape_in["index_head_dim"]
        csa_n, hca_n = context_tokens // ca["csa_ratio"], context_tokens // shape_in["hca_ratio"]
        rows = (LayerKind("sliding_attention", ca["window_only_layers"], held, ca["window_only_layers"] * hd * held * kv_bytes, "FX899"),
                LayerKind("csa", ca["csa_layers"], held + csa_n, ca["csa_layers"] * ((hd * held + (hd + ihd) * csa_n) * kv_bytes
                                                                                     + 2 * 2 * ca["csa_ratio"] * 2 * (hd + ihd) * sb), "FX899 + FX900"),
                LayerKind("hca", ca["hca_layers"], held + hca_n, ca["hca_layers"] * ((hd * held + hd * hca_n) * kv_bytes
                                                                                     + 2 * shape_in["hca_ratio"] * hd * sb), "FX899 + FX900"))
        rows = tuple(replace(r, bytes_per_request=int(r.bytes_per_request)) if float(r.bytes_per_request).is_integer() else r for r in rows if r.layers)
        if sum(r.bytes_per_request for r in rows) != total or sum(r.layers for r in rows) != layers:  # the rows re-read FX899 and FX900
            raise AssertionError(f"{shape.id}: rows sum to {sum(r.bytes_per_request for r in rows)}, FX901 gives {total}")
        return RequestState(shape.id, context_tokens, kv_bytes, rows, total, ("FX899", "FX900", "FX901"))

    def count(self, shape, ev) -> dict:
        """Attention (FX893), CSA (FX894) and HCA (FX895) compressors, hyper-connections (FX896) over MoE blocks (FX15/FX16), FX897/FX898."""
        d = shape.derived
        ca, moe, hc = d["compressed_attention"], shape.moe, d["hyper_connections"]
        attn = ev("FX893", heads=shape.heads, hidden=shape.hidden, q_lora_rank=ca["q_lora_rank"], head_dim=d["head_dim"],
                  o_lora_rank=ca["o_lora_rank"], o_groups=ca["o_groups"])
        csa = ev("FX894", csa_ratio=ca["csa_ratio"], head_dim=d["head_dim"], hidden=shape.hidden, index_heads=ca["index_heads"],
                 index_head_dim=ca["index_head_dim"], q_lora_rank=ca["q_lora_rank"]) if ca["csa_layers"] else 0
        hca = ev("FX895", hca_ratio=ca["hca_ratio"], head_dim=d["head_dim"], hidden=shape.hidden) if ca["hca_layers"] else 0
        mixers = ev("FX896", hc_mult=hc, hidden=shape.hidden)
        emb = embeddings(ev, shape)
        moe_all, moe_active = moe_blocks(ev, moe, shape)
        common = {"layers": shape.layers, "v4_attn_params_per_layer": attn, "hc_params_per_layer": mixers, "hidden": shape.hidden,
                  "csa_layers": ca["csa_layers"], "csa_params_per_layer": csa, "hca_layers": ca["hca_layers"], "hca_params_per_layer": hca,
                  "hash_layers": moe["hash_layers"], "n_experts": moe["experts"], "embedding_params": emb, "hc_mult": hc}
        total = ev("FX897", moe_mlp_params_per_layer=moe_all, **common)
        active = ev("FX898", moe_mlp_active_params_per_layer=moe_active, **common)
        parts = {"attention": shape.layers * attn, "compressors": ca["csa_layers"] * csa + ca["hca_layers"] * hca, "mlp": shape.layers * moe_all,
                 "router_bias": (shape.layers - moe["hash_layers"]) * moe["experts"],
                 "hyper_connections": shape.layers * mixers + hc * hc * shape.hidden + hc + 1,
                 "norms": 2 * shape.layers * shape.hidden + shape.hidden, "embeddings": emb}
        return counted(shape, ev, "FX897", total, active, parts)


FAMILY = Compressed()
