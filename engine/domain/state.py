"""Persistent bytes one request holds, by layer kind: K/V of attention layers, the MLA latent, recurrent state.

``request_state`` asks the record's family (``engine.domain.families``) for the bytes of one request: F8 (bytes per
token), FX70 (one request's K/V, windowed layers capped at their window) and FX801 (the total with any recurrent
layers, FX800) for a standard decoder, DeepSeek-V3.2's indexer keys (FX888) beside its latent; a hybrid's K/V in its
attention layers only and a fixed state in the others (Kimi Linear: the MLA latent beside its KDA states), kept at
``state_bytes`` per element (4 where the config names mamba_ssm_dtype float32, else 2, unless given); DeepSeek-V4's
windows, compressed entries and indexer keys (FX899) and its compressors' FP32 running state (FX900), FX901 their sum;
a layer-wise model's own K/V heads in every layer (FX910). ``hybrid_state`` reads the same from a hybrid
``config.json`` without a model record. ``fit_requests`` divides a device's memory, less the weights, by that total.
"""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.record import dataclass
from engine.domain.families.recurrent import default_state_bytes  # noqa: F401  (public through this module)
from engine.domain.families.state_rows import LayerKind, RequestState  # noqa: F401


def request_state(record: dict, context_tokens: int, kv_bytes: float = 2, root=None, state_bytes: float | None = None) -> RequestState:
    """The persistent bytes of one request of ``context_tokens`` tokens, by layer kind, from the record's family
    (``state_bytes``: bytes per recurrent-state element of a hybrid's recurrent layers; by default 4 where the config
    keeps the state in float32 (mamba_ssm_dtype), else 2, as engines keep it with a BF16 model; DeepSeek-V4's
    compressor state: by default FX900's 4)."""
    from engine.domain.families import family_of, shape_of
    from engine.domain.families.evaluate import Evaluator, formula_module

    if isinstance(context_tokens, bool) or not isinstance(context_tokens, int) or context_tokens < 1:
        raise InputError("--context", f"expected a whole number of tokens >= 1, got {context_tokens!r}")
    if not kv_bytes > 0:
        raise InputError("--kv-bytes", f"expected a positive number of bytes per cached element, got {kv_bytes!r}")
    shape = shape_of(record)
    return family_of(shape).request_state(shape, Evaluator(formula_module(root)), context_tokens, kv_bytes, state_bytes)


@dataclass(frozen=True)
class Fit:
    device: str
    memory_bytes: float
    weight_bytes: float
    free_bytes: float
    requests: int
    weight_source: str = ""   # where weight_bytes comes from: the record's storage block or --weight-bytes
    tp: int = 1               # GPUs of one tensor-parallel replica; memory, weights and free bytes are per GPU
    request_bytes_per_gpu: float = 0  # one request's bytes on each of them (all of it when tp = 1)
    memory_rule: str = ""     # how memory_bytes was taken from the device (the serving engine's FX72 rule)


DEFAULT_WEIGHT_BYTES = 2  # BF16


def weight_storage(record: dict, weight_bytes: float | None = None) -> tuple[float, str]:
    """Bytes of a record's weights and where they come from.

    ``weight_bytes`` given (--weight-bytes): parameters x weight_bytes. Otherwise the record's
    ``storage.weight_bytes`` where it has one (a checkpoint stored in a block-scaled format, such
    as gpt-oss-20b's MXFP4 experts), else parameters x 2 B (BF16).
    """
    parameters = record["parameters"]["total"]
    if weight_bytes is not None:
        if not weight_bytes > 0:
            raise InputError("--weight-bytes", f"expected a positive number of bytes per weight, got {weight_bytes!r}")
        return parameters * weight_bytes, f"{parameters} parameters x {weight_bytes:g} B (--weight-bytes)"
    storage = record.get("storage")
    if storage:
        return storage["weight_bytes"], checkpoint_text(record)
    return parameters * DEFAULT_WEIGHT_BYTES, f"{parameters} parameters x {DEFAULT_WEIGHT_BYTES} B (the checkpoint's BF16; the record has no storage block)"


def checkpoint_text(record: dict) -> str:
    """Where a record's stored weight bytes come from, for a note: its official checkpoint's format."""
    storage = record["storage"]
    kind = f"{storage['quantised_format']} for {storage['quantised_parameters']} parameters, {storage['unquantised_bytes']:g} B for the rest" \
        if storage.get("quantised_format") else f"{storage['weight_bytes']} B, {storage['weight_bytes'] / record['parameters']['total']:.4g} B per parameter"
    return f"the record's stored weights, {storage['format']} as the official checkpoint ships them ({kind}; --weights to change)"


def fit_requests(state: RequestState, parameters: int, memory_bytes: float, device: str, weight_bytes: float = 2, *,
                 stored_bytes: float | None = None, source: str = "", tp: int = 1, request_bytes_per_gpu: float | None = None,
                 memory_rule: str = "") -> Fit:
    """Whole requests whose state fits in ``memory_bytes`` less the weights.

    The weights are ``stored_bytes`` when given (``weight_storage``), else parameters x weight_bytes. With ``tp`` > 1
    each GPU of the replica holds 1/tp of the weights and ``request_bytes_per_gpu`` of every request
    (``per_gpu_bytes``); the count is the replica's, every request spanning its tp GPUs.
    """
    if stored_bytes is None:
        if not weight_bytes > 0:
            raise InputError("--weight-bytes", f"expected a positive number of bytes per weight, got {weight_bytes!r}")
        weights = parameters * weight_bytes
        source = source or f"{parameters} parameters x {weight_bytes:g} B"
    else:
        weights = stored_bytes
    per_request = state.total if request_bytes_per_gpu is None else request_bytes_per_gpu
    weights = weights / tp  # an even split (norms and routers, replicated on every rank, are left out)
    free = memory_bytes - weights
    if free <= 0:
        hint = "" if tp > 1 else "; give --tp N to split them over a tensor-parallel replica"
        raise InputError("--device", f"{device} holds {memory_bytes:.4g} B{f' ({memory_rule})' if memory_rule else ''}, less than the {weights:.4g} B of weights "
                                     f"({source}{f', / {tp} GPUs' if tp > 1 else ''}): no room for any request{hint}")
    return Fit(device, memory_bytes, weights, free, int(free // per_request), source, tp, per_request, memory_rule)


def per_gpu_bytes(record: dict, state: RequestState, tp: int, root=None) -> float:
    """Bytes one request holds on each GPU of a ``tp``-way tensor-parallel replica, kind by kind.

    K/V of attention layers: FX73 (heads shard over the ranks; past kv_heads ranks each KV head is
    replicated, so the share stops at 1/kv_heads); the MLA latent and DSA indexer keys: replicated
    on every rank (FX73, mla); a recurrent state: its heads shard evenly, as vLLM splits Gated DeltaNet,
    KDA and Mamba-2 heads (and Mamba-2's groups) over the ranks, so ``tp`` must divide them.
    """
    from engine.domain.families import Use, family_of, refuse, shape_of
    from engine.domain.families.evaluate import formula_module
    from engine.domain.roofline import kv_share

    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise InputError("--tp", f"expected a whole number of GPUs >= 1, got {tp!r}")
    if tp == 1:
        return state.total
    shape = shape_of(record)
    refuse(Use.STATE_TP, shape)
    cfg, d = record["config"], record["derived"]
    heads, kv_heads = cfg["num_attention_heads"], cfg.get("num_key_value_heads") or cfg["num_attention_heads"]
    if heads % tp or (d["attention"] == "gqa" and kv_heads % tp and tp % kv_heads):
        raise InputError("--tp", f"{tp} must divide the {heads} attention heads of {record['id']}"
                                 + (f" and divide or be a multiple of its {kv_heads} KV heads" if d["attention"] == "gqa" else ""))
    share = kv_share(formula_module(root), record, tp)  # FX73: 1 / min(tp, KV heads); 1 for MLA (replicated)
    total = 0.0
    for row in state.rows:
        if row.kind in ("full_attention", "sliding_attention", "mla_latent"):
            total += row.bytes_per_request * share
        elif row.kind in ("indexer_keys", "csa", "hca"):  # DeepSeek-V4's one K/V head, indexer keys and compressors: on every rank
            total += row.bytes_per_request
        else:  # recurrent
            for what, n in family_of(shape).state_heads(shape).items():
                if n % tp:
                    raise InputError("--tp", f"{tp} does not divide the {n} {what} of {record['id']}'s recurrent layers, "
                                             "which shard evenly over the ranks")
            total += row.bytes_per_request / tp
    return total


# ------------------------------------------------------------------ hybrid configs (not records)
def hybrid_state(config: dict, context_tokens: int, kv_bytes: float = 2, state_bytes: float = 2, root=None) -> RequestState:
    """Persistent bytes of one request of a Qwen3-Next or Nemotron-H ``config.json`` by layer kind (F8, FX800, FX801).

    A partial config (no MoE widths, no vocabulary) imports as no model record, but its per-request state needs only
    the layer kinds, read by the family's own parser (as an import reads them), the attention shape and the state shapes.
    """
    if isinstance(context_tokens, bool) or not isinstance(context_tokens, int) or context_tokens < 1:
        raise InputError("--context", f"expected a whole number of tokens >= 1, got {context_tokens!r}")
    if not state_bytes > 0:
        raise InputError("--state-bytes", f"expected a positive number of bytes per state element, got {state_bytes!r}")
    from engine.domain.families import FAMILIES
    from engine.domain.families.evaluate import Evaluator, formula_module
    from engine.domain.families.shape import ModelShape

    kind = config.get("model_type")
    if kind not in HYBRID_CONFIGS:
        raise InputError("model_type", f"{kind!r}: hybrid state is read from qwen3_next, qwen3_5_moe_text and nemotron_h configs only")
    family = FAMILIES[HYBRID_CONFIGS[kind]]
    layers = _need(config, "num_hidden_layers")
    derived = {"family": HYBRID_CONFIGS[kind], "attention": "gqa", **family.derive(config, None)}  # the layer kinds, read as an import reads them
    head_dim = _need(config, "attention_head_dim" if kind == "nemotron_h" and "attention_head_dim" in config else "head_dim")
    heads, kv_heads = _need(config, "num_attention_heads"), _need(config, "num_key_value_heads")
    shape = ModelShape(str(config.get("_name_or_path") or kind), derived["family"], config, derived, config.get("hidden_size") or 0, layers,
                       heads, kv_heads, head_dim, "gqa", derived["attention_layers"], {}, {}, 0, {}, {})
    return family.request_state(shape, Evaluator(formula_module(root)), context_tokens, kv_bytes, state_bytes)


# the hybrid configs whose state is read without a model record, and the derived.family that reads their layer kinds
HYBRID_CONFIGS = {"qwen3_next": "hybrid_moe", "qwen3_5_moe_text": "hybrid_moe", "nemotron_h": "hybrid"}


def _need(config: dict, key: str) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(key, f"expected a whole number >= 1, got {value!r}")
    return value
