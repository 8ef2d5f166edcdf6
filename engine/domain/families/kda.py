"""Kimi Delta Attention hybrids (Kimi Linear, Kimi K3: ``hybrid_mla_moe``): KDA layers beside MLA layers over dense and
MoE blocks. Kimi Linear: KDA (FX889) and uncompressed-query MLA (FX890), FX891/FX892; K3 (``full_rank_gate``):
full-rank-gate KDA (FX902), gated MLA (FX903) and a latent MoE (FX904/FX905), FX906/FX907. The MLA layers keep the
latent (F8 mla), the KDA layers FX800's Gated DeltaNet-shaped state."""

from __future__ import annotations

from engine.core.errors import InputError
from engine.domain.families.base import Use
from engine.domain.families.counting import MLA_SHAPE, counted, embeddings, moe_blocks
from engine.domain.families.gated_deltanet import linear_state
from engine.domain.families.recurrent import Recurrent
from engine.domain.families.state_rows import LayerKind, RequestState


def layer_kinds(cfg: dict, layout) -> dict:
    """Kimi Linear's (and K3's) layer kinds from linear_attn_config (1-based full_attn_layers and kda_layers) and its KDA shape."""
    from engine.domain.model_config import _show

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


class Kda(Recurrent):
    name = "kda"
    derived_families = ("hybrid_mla_moe",)
    recurrent_kind = "kda"

    def derive(self, cfg: dict, layout) -> dict:
        return layer_kinds(cfg, layout)

    def recurrent(self, shape) -> dict:
        return shape.derived["linear_attention"]

    def state_per_layer(self, shape, ev, state_bytes: float) -> int:
        return linear_state(ev, self.recurrent(shape), state_bytes)

    def state_heads(self, shape) -> dict[str, int]:
        lin = self.recurrent(shape)
        return {"key heads": lin["key_heads"], "value heads": lin["value_heads"]}

    def request_state(self, shape, ev, context_tokens: int, kv_bytes: float, state_bytes: float | None) -> RequestState:
        """The MLA latent in the attention layers (F8 mla), a KDA state (FX800's shape) in the others, FX801."""
        from engine.domain.families.recurrent import default_state_bytes

        state_bytes = default_state_bytes(shape.config) if state_bytes is None else state_bytes
        lin, attn = self.recurrent(shape), shape.attention_layers
        latent = ev("F8", **shape.f8(kv_bytes)) * context_tokens       # F8 (mla) over the attention layers only
        per_layer = self.state_per_layer(shape, ev, state_bytes)
        total = ev("FX801", kv_bytes_per_request=latent, recurrent_layers=lin["layers"], recurrent_state_bytes_per_layer=per_layer)
        rows = (LayerKind("mla_latent", attn, context_tokens, latent, "F8"), LayerKind("recurrent", lin["layers"], 0, lin["layers"] * per_layer, "FX800"))
        return RequestState(shape.id, context_tokens, kv_bytes, rows, total, ("F8", "FX800", "FX801"))

    def refusal(self, use: Use, shape) -> str:
        # hybrid_mla_moe.yaml holds KDA beside MLA without query compression; Kimi K3 (compressed queries, full-rank gates,
        # a latent MoE) has no template
        if use == Use.LEDGER and not (shape.attention == "mla" and not shape.mla.get("q_lora_rank") and not self.recurrent(shape).get("full_rank_gate")):
            return self.refused(use, shape)
        return super().refusal(use, shape)

    def count(self, shape, ev) -> dict:
        return _k3_count(shape, ev) if self.recurrent(shape).get("full_rank_gate") else _kda_count(shape, ev)


def _kda_count(shape, ev) -> dict:
    """Kimi Linear: KDA (FX889) and uncompressed-query MLA (FX890) layers over dense (FX11) and MoE (FX15/FX16) blocks, FX891/FX892."""
    d = shape.derived
    lin, moe, mla = d["linear_attention"], shape.moe, d["mla"]
    kda = ev("FX889", hidden=shape.hidden, kda_heads=lin["key_heads"], kda_head_dim=lin["key_head_dim"], conv_kernel=lin["conv_kernel"])
    attn = ev("FX890", hidden=shape.hidden, heads=shape.heads, qk_nope_head_dim=mla["qk_nope_head_dim"], qk_rope_head_dim=mla["qk_rope_head_dim"],
              kv_lora_rank=mla["kv_lora_rank"], v_head_dim=mla["v_head_dim"])
    dense = ev("FX11", mlp_gating=d["mlp"], hidden=shape.hidden, ffn_hidden=d["ffn_hidden"]) if moe.get("dense_first_layers") else 0
    emb = embeddings(ev, shape)
    moe_all, moe_active = moe_blocks(ev, moe, shape)
    common = {"layers": shape.layers, "attention_layers": d["attention_layers"], "kda_params_per_layer": kda,
              "mla_full_q_params_per_layer": attn, "n_dense_layers": moe.get("dense_first_layers", 0), "mlp_params_per_layer": dense or 1,  # times 0 dense layers when there are none
              "n_experts": moe["experts"], "embedding_params": emb, "hidden": shape.hidden}
    total = ev("FX891", moe_mlp_params_per_layer=moe_all, **common)
    active = ev("FX892", moe_mlp_active_params_per_layer=moe_active, **common)
    moe_layers = shape.layers - moe.get("dense_first_layers", 0)
    parts = {"attention": d["attention_layers"] * attn, "linear_attention": lin["layers"] * kda,
             "mlp": moe.get("dense_first_layers", 0) * dense + moe_layers * moe_all, "router_bias": moe_layers * moe["experts"],
             "norms": 2 * shape.layers * shape.hidden + shape.hidden, "embeddings": emb}
    return counted(shape, ev, "FX891", total, active, parts)


def _k3_count(shape, ev) -> dict:
    """Kimi K3: full-rank-gate KDA (FX902) and gated MLA (FX903) layers over a dense (FX11) and latent MoE (FX904/FX905) blocks, FX906/FX907."""
    d = shape.derived
    lin, moe, mla = d["linear_attention"], shape.moe, d["mla"]
    kda = ev("FX902", hidden=shape.hidden, kda_heads=lin["key_heads"], kda_head_dim=lin["key_head_dim"], conv_kernel=lin["conv_kernel"])
    base = ev("FX10", attention="mla", hidden=shape.hidden, heads=shape.heads, **{k: mla[k] for k in MLA_SHAPE})
    attn = ev("FX903", attn_params_per_layer=base, hidden=shape.hidden, heads=shape.heads, v_head_dim=mla["v_head_dim"])
    dense = ev("FX11", mlp_gating=d["mlp"], hidden=shape.hidden, ffn_hidden=d["ffn_hidden"]) if moe.get("dense_first_layers") else 0
    emb = embeddings(ev, shape)
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
    return counted(shape, ev, "FX906", total, active, parts)


FAMILY = Kda()
