"""Parameter and KV counts of a model record, through its architecture family (``engine.domain.families``).

``parameter_count`` evaluates the parameter-count formulas of the record's family through the compiled formula
module: FX10-FX18 for a standard decoder, with the terms those formulas lack (biases, learned position
embeddings, extra norms, router and expert biases, attention sinks) as the records FX870-FX878 that FX879/FX880
add to the totals of FX17/FX18; a hybrid's, DeepSeek-V4's, Kimi K3's and a layer-wise model's own totals
(FX881-FX910). No count is Python arithmetic. ``MISSING_FORMULAS`` says why FX10-FX18 do not hold each term,
``EXTRA_FORMULAS`` which record counts it.
"""

from __future__ import annotations

from engine.domain.families.counting import EXTRA_FORMULAS, MISSING_FORMULAS, MLA_SHAPE  # noqa: F401  (public through this module)
from engine.domain.families.evaluate import Evaluator as _Evaluator  # noqa: F401
from engine.domain.families.evaluate import formula_module


def parameter_count(record: dict, root=None) -> dict:
    """Total, active and per-part parameters of a model record, from its family's formulas (FX10-FX18 and FX870-FX880
    for a standard decoder).

    Returns ``{"total", "active", "parts": {name: count}, "extras": {name: count},
    "formulas": [...], "extra_formulas": {name: formula id}, "missing_formulas": {name: why FX10-FX18 lack it}}``.
    """
    from engine.domain.families import family_of, shape_of

    shape = shape_of(record)
    return family_of(shape).count(shape, _Evaluator(formula_module(root)))


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
    from engine.domain.families import family_of, shape_of

    shape = shape_of(record)
    return family_of(shape).kv_per_token(shape, _Evaluator(formula_module(root)), kv_bytes)
