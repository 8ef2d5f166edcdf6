"""Layer-wise scaling (OpenELM: ``layerwise_dense``): every layer has its own query heads, K/V heads and feed-forward width.

``derive_layers`` reads them from a config as OpenELMConfig builds them: the heads from qkv_multipliers (FX908 over
head_dim x num_gqa_groups), checked against the lists the file stores; the widths from ffn_multipliers (FX908 over
ffn_dim_divisor). ``count`` gives the parameters (FX909, with FX10-FX12 of every layer as a second reading) and
``kv_bytes_per_token`` the K/V one token adds over all layers (FX910). No single heads, kv_heads or ffn_hidden stands
in for such a model, so the calculators, planners, the forward ledger and a tensor-parallel split of its state refuse it by name
(``LayerWise.refused``).
"""

from __future__ import annotations

import math

from engine.core.errors import InputError
from engine.domain.families.base import Defaults, Use, ledger_refusal
from engine.domain.families.state_rows import LayerKind, RequestState

TIE_NOISE = 1e-9  # the compiled floor forgives this much (engine/core/codegen.py); a product this close to a tie is refused


def derive_layers(cfg: dict, ev) -> dict:
    """The per-layer widths of an OpenELM config and what they decide (``derived`` fields); ``ev`` evaluates FX908."""
    from engine.domain.model_config import _positive

    layers, hidden = cfg["num_hidden_layers"], cfg["hidden_size"]
    head_dim, groups = _positive(cfg, "head_dim", required=True), _positive(cfg, "num_gqa_groups", required=True)
    divisor = _positive(cfg, "ffn_dim_divisor", required=True)
    qkv = _multipliers(cfg, "qkv_multipliers", layers, per_layer=False)
    heads = [_width(ev, m, hidden, head_dim * groups, "qkv_multipliers", i) // head_dim for i, m in enumerate(qkv)]
    kv_heads = [q // groups for q in heads]
    _same_as_stored(cfg, "num_query_heads", heads, qkv)
    _same_as_stored(cfg, "num_kv_heads", kv_heads, qkv)
    ffn = [_width(ev, m, hidden, divisor, "ffn_multipliers", i) for i, m in enumerate(_multipliers(cfg, "ffn_multipliers", layers, per_layer=True))]
    kind = "mha" if groups == 1 else "mqa" if set(kv_heads) == {1} else "gqa"
    return {"attention": kind, "head_dim": head_dim, "head_dim_stated": True,
            "layerwise": {"kind": "openelm", "heads": heads, "kv_heads": kv_heads, "ffn_hidden": ffn},
            "layer_pattern": f"{layers} layers, each with its own widths: query heads {_span(heads)}, K/V heads {_span(kv_heads)}, "
                             f"feed-forward {_span(ffn)} (qkv_multipliers, ffn_multipliers)"}


def _span(values: list[int]) -> str:
    return f"{min(values)}-{max(values)}" if min(values) != max(values) else str(values[0])


def _multipliers(cfg: dict, key: str, layers: int, per_layer: bool) -> list[float]:
    """One multiplier per layer, as OpenELMConfig reads ``key``: a number for every layer; two numbers, the first and last
    layers', spaced evenly and rounded to two decimals (numpy.linspace, as the reference does); with ``per_layer``, also a
    list of one per layer, taken as it is."""
    import numpy as np

    value = cfg.get(key)
    if _number(value):
        return [value] * layers
    if isinstance(value, list) and all(_number(v) for v in value):
        if len(value) == 2:  # a pair even when there are two layers: OpenELMConfig spaces and rounds it all the same
            return [round(v, 2) for v in np.linspace(value[0], value[1], num=layers, dtype=float)]
        if per_layer and len(value) == layers:
            return list(value)
    each = f", or {layers} numbers, one per layer" if per_layer else ""
    raise InputError(key, f"expected a number, two numbers (the first and last layers', spaced evenly between){each}; got {_short(value)}")


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _width(ev, multiplier: float, hidden: int, divisor: int, key: str, layer: int) -> int:
    """FX908 for one layer; a product that lies within floating-point noise of a rounding tie, without being one, is
    refused: the reference rounds its own float product, and the importer does not guess which way that goes."""
    steps = float(multiplier) * hidden / divisor + 0.5
    if steps != math.floor(steps) and abs(steps - round(steps)) <= TIE_NOISE * steps:
        raise InputError(f"{key}[{layer}]", f"{multiplier} x {hidden} lies within floating-point noise of a rounding tie between two "
                                            f"multiples of {divisor}: the importer does not guess which way the reference rounds it")
    return ev("FX908", width_multiplier=multiplier, hidden=hidden, width_divisor=divisor)


def _same_as_stored(cfg: dict, key: str, computed: list[int], qkv: list[float]) -> None:
    """OpenELMConfig rebuilds the head lists from qkv_multipliers whatever the file stores: a stored list must agree."""
    stored = cfg.get(key)
    if stored is None:
        return
    if stored != computed:
        raise InputError(key, f"{_short(stored)} differs from the heads OpenELMConfig computes from qkv_multipliers "
                              f"({_short(computed)}; multipliers {_short(qkv)}): the Hugging Face model is built from the computed ones, "
                              "so the config contradicts itself")


# ------------------------------------------------------------------------------------------- the family
class LayerWise(Defaults):
    name = "layerwise"
    derived_families = ("layerwise_dense",)
    uses = frozenset({Use.COUNT, Use.KV_PER_TOKEN, Use.STATE})

    def count(self, shape, ev) -> dict:
        """FX909 on the sums of the per-layer widths, and its parts (FX10 gqa and FX11 gated of every layer, FX12, FX14),
        a second reading of the same terms; dense: every parameter runs for every token."""
        from engine.domain.families.counting import counted

        cfg, d = shape.config, shape.derived
        lw, hidden, head_dim, layers = d["layerwise"], shape.hidden, d["head_dim"], shape.layers
        attention = sum(ev("FX10", attention="gqa", hidden=hidden, heads=q, kv_heads=kv, head_dim=head_dim)
                        for q, kv in zip(lw["heads"], lw["kv_heads"], strict=True))
        mlp = sum(ev("FX11", mlp_gating=d["mlp"], hidden=hidden, ffn_hidden=f) for f in lw["ffn_hidden"])
        norm = ev("FX12", qk_norm="per_head" if d.get("qk_norm") else "none", hidden=hidden, head_dim=head_dim)
        emb = ev("FX14", tie_embeddings="tied" if cfg.get("tie_word_embeddings", True) else "untied", vocab_size=cfg["vocab_size"], hidden=hidden)
        total = ev("FX909", hidden=hidden, head_dim=head_dim, heads_sum=sum(lw["heads"]), kv_heads_sum=sum(lw["kv_heads"]),
                   ffn_hidden_sum=sum(lw["ffn_hidden"]), layers=layers, norm_params_per_layer=norm, embedding_params=emb)
        parts = {"attention": attention, "mlp": mlp, "norms": layers * norm + hidden, "embeddings": emb}
        return counted(shape, ev, "FX909", total, total, parts)

    def kv_per_token(self, shape, ev, kv_bytes: float) -> int:
        """FX910: K and V of each layer's own K/V heads, over all layers."""
        d = shape.derived
        return ev("FX910", kv_heads_sum=sum(d["layerwise"]["kv_heads"]), head_dim=d["head_dim"], kv_bytes=kv_bytes)

    def request_state(self, shape, ev, context_tokens: int, kv_bytes: float, state_bytes: float | None) -> RequestState:
        """FX910's bytes per token (each layer's own K/V heads) for every token of the context, FX70."""
        layers = shape.layers
        per_token = self.kv_per_token(shape, ev, kv_bytes)
        kv_request = ev("FX70", kv_bytes_per_token=per_token, layers=layers, window_layers=0, context_tokens=context_tokens,
                        sliding_window=context_tokens)
        total = ev("FX801", kv_bytes_per_request=kv_request, recurrent_layers=0, recurrent_state_bytes_per_layer=0)
        row = LayerKind("full_attention", layers, context_tokens, kv_request, "FX910")
        return RequestState(shape.id, context_tokens, kv_bytes, (row,), total, ("FX910", "FX70", "FX801"))

    def what(self, shape) -> str:
        """What a layer-wise model is, for the refusals of the calculators, planners and ledger templates (one shape for every layer)."""
        return f"layer-wise scaled ({shape.derived['layer_pattern']})"

    def refused(self, use: Use, shape) -> str:
        if use == Use.LEDGER:
            return ledger_refusal(shape, self.what(shape))
        if use == Use.STATE_TP:
            return (f"{shape.id} is layer-wise scaled ({shape.derived['layer_pattern']}): its K/V splits over tensor-parallel ranks "
                    "differently in every layer (FX73 on each layer's own K/V heads, which the rank count must divide or be a "
                    "multiple of), which is not sized yet, so --tp above 1 is refused rather than split as if every layer were alike")
        return (f"{shape.id} is {self.what(shape)}: the calculators and planners take one heads, kv_heads and ffn_hidden for every "
                "layer, so it is refused here rather than sized as if every layer were alike; "
                f"`aiinfra state --model {shape.short_id}` gives its bytes per request and capacity (FX910), "
                "`aiinfra model show` its parameters (FX909)")

    def kv_label(self, shape) -> str:
        return "KV cache per token (BF16, FX910: each layer's own K/V heads)"

    def heads_text(self, shape) -> tuple[object, object]:
        """Heads per layer, shown as their range."""
        lw = shape.derived["layerwise"]
        return tuple(f"{min(lw[k])}-{max(lw[k])}" for k in ("heads", "kv_heads"))


FAMILY = LayerWise()
