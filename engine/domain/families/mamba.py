"""Mamba-2 hybrids (Nemotron-H: ``hybrid``): Mamba-2 (FX885), attention (FX10) and MLP (FX11) blocks with one norm each,
FX886 (dense, so active = total); K/V in the attention blocks only, FX800's Mamba-2 state in the Mamba-2 blocks."""

from __future__ import annotations

from engine.core.errors import InputError
from engine.domain.families.counting import counted, embeddings
from engine.domain.families.recurrent import Recurrent


def layer_kinds(cfg: dict) -> dict:
    """Nemotron-H's blocks from hybrid_override_pattern ('M' Mamba-2, '*' attention, '-' MLP) and its Mamba-2 shape."""
    from engine.domain.model_config import _positive

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


class Mamba(Recurrent):
    name = "mamba"
    derived_families = ("hybrid",)
    recurrent_kind = "mamba2"

    def derive(self, cfg: dict, layout) -> dict:
        return layer_kinds(cfg)

    def recurrent(self, shape) -> dict:
        return shape.derived["mamba"]

    def state_per_layer(self, shape, ev, state_bytes: float) -> int:
        m = self.recurrent(shape)
        return ev("FX800", recurrent_kind="mamba2", mamba_heads=m["heads"], mamba_head_dim=m["head_dim"], ssm_state_size=m["state_size"],
                  mamba_groups=m["groups"], conv_kernel=m["conv_kernel"], state_bytes=state_bytes)

    def state_heads(self, shape) -> dict[str, int]:
        m = self.recurrent(shape)
        return {"Mamba-2 heads": m["heads"], "Mamba-2 groups": m["groups"]}

    def serving_terms(self, shape, preset: dict) -> dict:
        out = super().serving_terms(shape, preset)
        out["allreduce_layers"] = shape.layers / 2  # Mamba-2, attention and MLP blocks, one all-reduce each
        return out

    def count(self, shape, ev) -> dict:
        d = shape.derived
        m = d["mamba"]
        mamba = ev("FX885", hidden=shape.hidden, mamba_heads=m["heads"], mamba_head_dim=m["head_dim"], ssm_state_size=m["state_size"],
                   mamba_groups=m["groups"], conv_kernel=m["conv_kernel"])
        attn = ev("FX10", attention=d["attention"], hidden=shape.hidden, heads=shape.heads, kv_heads=shape.kv_heads, head_dim=d["head_dim"])
        mlp = ev("FX11", mlp_gating=d["mlp"], hidden=shape.hidden, ffn_hidden=d["ffn_hidden"])
        emb = embeddings(ev, shape)
        total = ev("FX886", mamba_layers=m["layers"], attention_layers=d["attention_layers"], mlp_layers=d["mlp_layers"],
                   mamba_params_per_layer=mamba, attn_params_per_layer=attn, mlp_params_per_layer=mlp, embedding_params=emb, hidden=shape.hidden)
        parts = {"mamba": m["layers"] * mamba, "attention": d["attention_layers"] * attn, "mlp": d["mlp_layers"] * mlp,
                 "norms": shape.layers * shape.hidden + shape.hidden, "embeddings": emb}
        return counted(shape, ev, "FX886", total, total, parts)


FAMILY = Mamba()
