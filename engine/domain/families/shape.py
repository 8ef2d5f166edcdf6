"""``ModelShape``: the numbers the formulas take from a model record, read once, in one place.

Parameter counts, F8's K/V bytes per token, the forward ledger's K/V and the calculators' ``--model`` presets all
read a model's layers, widths and attention variant from here, instead of each gathering F8's inputs its own way.
"""

from __future__ import annotations

from engine.core.record import dataclass


@dataclass(frozen=True, slots=True)
class ModelShape:
    id: str
    family: str               # derived.family: the FAMILIES key
    config: dict
    derived: dict
    hidden: int
    layers: int
    heads: int | None         # None for a layer-wise model (every layer its own)
    kv_heads: int | None
    head_dim: int | None
    attention: str            # mha | gqa | mqa | mla
    attention_layers: int     # the layers holding a K/V cache (a hybrid's attention layers; every layer otherwise)
    mla: dict                 # MLA widths (q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim); {} otherwise
    moe: dict                 # derived.moe; {} for a dense model
    moe_layers: int
    dsa: dict                 # DeepSeek Sparse Attention's indexer (index_heads, index_head_dim, index_topk); {} otherwise
    window: dict              # sliding-window layers (window, windowed_layers, pattern); {} otherwise

    def f8(self, kv_bytes: float) -> dict:
        """F8's inputs (the variant of ``attention``) over the layers that keep a K/V cache."""
        given = {"attention": self.attention, "layers": self.attention_layers, "kv_bytes": kv_bytes}
        if self.attention == "mla":
            given.update(kv_lora_rank=self.mla["kv_lora_rank"], qk_rope_head_dim=self.mla["qk_rope_head_dim"])
        else:
            given.update(heads=self.heads, kv_heads=self.kv_heads, head_dim=self.head_dim)
        return given

    def fx73(self, kv_bytes_per_token: float, tp: int) -> dict:
        """FX73's inputs: one rank's share of ``kv_bytes_per_token`` at ``tp`` ranks (heads for MHA, K/V heads for GQA)."""
        share = {"attention": self.attention, "kv_bytes_per_token": kv_bytes_per_token, "tp_size": tp}
        if self.attention == "mha":
            share["heads"] = self.heads
        elif self.attention == "gqa":
            share["kv_heads"] = self.kv_heads
        return share

    @property
    def short_id(self) -> str:
        return self.id.split(":", 1)[-1]


def shape_of(record: dict) -> ModelShape:
    """The shape of a model record (``{"id", "config", "derived", ...}``)."""
    cfg, d = record["config"], record["derived"]
    heads = cfg.get("num_attention_heads")
    attention = d["attention"]
    kv_heads = {"mha": heads, "mqa": 1}.get(attention, cfg.get("num_key_value_heads") or heads)
    layers = cfg["num_hidden_layers"]
    moe = d.get("moe") or {}
    return ModelShape(record.get("id", "this model"), d["family"], cfg, d, cfg["hidden_size"], layers, heads, kv_heads,
                      d.get("head_dim"), attention, d.get("attention_layers", layers), dict(d.get("mla") or {}) if attention == "mla" else {},
                      moe, layers - moe.get("dense_first_layers", 0) if moe else 0, d.get("sparse_attention") or {},
                      d.get("sliding_window") or {})
