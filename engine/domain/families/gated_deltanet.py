"""Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5: ``hybrid_moe``): gated full-attention layers (FX882) and Gated DeltaNet
layers (FX881) over one MoE stack, FX883/FX884; K/V in the full-attention layers only, FX800's state in the others."""

from __future__ import annotations

from engine.core.errors import InputError
from engine.domain.families.counting import counted, embeddings, moe_blocks
from engine.domain.families.recurrent import Recurrent


def layer_kinds(cfg: dict) -> dict:
    """Qwen3-Next's layer kinds (layer_types, or every full_attention_interval-th layer full) and its Gated DeltaNet shape."""
    from engine.domain.model_config import _positive

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


class GatedDeltaNet(Recurrent):
    name = "gated_deltanet"
    derived_families = ("hybrid_moe",)
    recurrent_kind = "gated_deltanet"

    def derive(self, cfg: dict, layout) -> dict:
        return layer_kinds(cfg)

    def recurrent(self, shape) -> dict:
        return shape.derived["linear_attention"]

    def state_per_layer(self, shape, ev, state_bytes: float) -> int:
        return linear_state(ev, self.recurrent(shape), state_bytes)

    def state_heads(self, shape) -> dict[str, int]:
        lin = self.recurrent(shape)
        return {"key heads": lin["key_heads"], "value heads": lin["value_heads"]}

    def count(self, shape, ev) -> dict:
        d = shape.derived
        lin, moe = d["linear_attention"], shape.moe
        attn = ev("FX882", heads=shape.heads, kv_heads=shape.kv_heads, head_dim=d["head_dim"], hidden=shape.hidden)
        linear = ev("FX881", hidden=shape.hidden, linear_k_heads=lin["key_heads"], linear_v_heads=lin["value_heads"],
                    linear_k_head_dim=lin["key_head_dim"], linear_v_head_dim=lin["value_head_dim"], conv_kernel=lin["conv_kernel"])
        emb = embeddings(ev, shape)
        moe_all, moe_active = moe_blocks(ev, moe, shape)
        common = {"layers": shape.layers, "attention_layers": d["attention_layers"], "gated_attn_params_per_layer": attn,
                  "linear_attn_params_per_layer": linear, "embedding_params": emb, "hidden": shape.hidden}
        total = ev("FX883", moe_mlp_params_per_layer=moe_all, **common)
        active = ev("FX884", moe_mlp_active_params_per_layer=moe_active, **common)
        parts = {"attention": d["attention_layers"] * attn, "linear_attention": lin["layers"] * linear,
                 "mlp": shape.layers * (moe_all + shape.hidden), "norms": 2 * shape.layers * shape.hidden + shape.hidden, "embeddings": emb}
        return counted(shape, ev, "FX883", total, active, parts)


def linear_state(ev, lin: dict, state_bytes: float) -> int:
    """FX800's Gated DeltaNet state of one layer (KDA keeps the same shape)."""
    return ev("FX800", recurrent_kind="gated_deltanet", linear_v_heads=lin["value_heads"], linear_k_heads=lin["key_heads"],
              linear_k_head_dim=lin["key_head_dim"], linear_v_head_dim=lin["value_head_dim"], conv_kernel=lin["conv_kernel"],
              state_bytes=state_bytes)


FAMILY = GatedDeltaNet()
