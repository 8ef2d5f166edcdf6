"""Persistent bytes one request holds, by layer kind: K/V of attention layers, the MLA latent, recurrent state.

``request_state`` reads a model record and evaluates F8 (bytes per token across all layers),
FX70 (one request's K/V, windowed layers capped at their window) and FX801 (the total with
any recurrent layers, FX800). A hybrid record (Qwen3-Next, Qwen3.5, Nemotron-H) goes through
``hybrid_state``: K/V in its attention layers only, a fixed state in the others; Kimi Linear
keeps the MLA latent beside its KDA states; DeepSeek-V3.2 adds its indexer keys (FX888). The
state is kept at ``state_bytes`` per element: 4 where the config names mamba_ssm_dtype float32,
else 2, unless given. DeepSeek-V4 goes through ``compressed_state``: by layer kind (window only,
CSA, HCA) its window, compressed entries and indexer keys (FX899) and its compressors' FP32 running
state (FX900), FX901 their sum. A layer-wise model (OpenELM) holds each layer's own K/V heads for every token (FX910).
``fit_requests`` divides a device's memory, less the weights, by that total.
"""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.record import dataclass, replace


@dataclass(frozen=True)
class LayerKind:
    kind: str            # full_attention | sliding_attention | mla_latent | recurrent | indexer_keys | csa | hca
    layers: int
    tokens_held: int     # tokens of this request each layer keeps (0 for a recurrent state; csa, hca: window plus compressed entries)
    bytes_per_request: int
    formula: str


@dataclass(frozen=True)
class RequestState:
    model: str
    context_tokens: int
    kv_bytes: float
    rows: tuple[LayerKind, ...]
    total: int
    formulas: tuple[str, ...]

    def to_json(self) -> dict:
        return {"model": self.model, "context_tokens": self.context_tokens, "kv_bytes": self.kv_bytes,
                "layer_kinds": [r.__dict__ for r in self.rows], "bytes_per_request": self.total, "formulas": list(self.formulas)}


def request_state(record: dict, context_tokens: int, kv_bytes: float = 2, root=None, state_bytes: float | None = None) -> RequestState:
    """The persistent bytes of one request of ``context_tokens`` tokens, by layer kind (``state_bytes``: bytes per
    recurrent-state element of a hybrid's recurrent layers; by default 4 where the config keeps the state in float32
    (mamba_ssm_dtype), else 2, as engines keep it with a BF16 model)."""
    from engine.domain.model_count import _Evaluator, formula_module, kv_bytes_per_token

    if isinstance(context_tokens, bool) or not isinstance(context_tokens, int) or context_tokens < 1:
        raise InputError("--context", f"expected a whole number of tokens >= 1, got {context_tokens!r}")
    if not kv_bytes > 0:
        raise InputError("--kv-bytes", f"expected a positive number of bytes per cached element, got {kv_bytes!r}")
    cfg, d = record["config"], record["derived"]
    if d.get("compressed_attention"):  # DeepSeek-V4: windows, compressed entries, indexer keys, FP32 compressor state
        return compressed_state(record, context_tokens, kv_bytes, root, state_bytes)
    if state_bytes is None:
        state_bytes = default_state_bytes(cfg)
    lin = d.get("linear_attention") or {}
    if lin.get("kind") == "kda":  # Kimi Linear: the MLA latent in its attention layers, a KDA state (FX800's shape) in the others
        return _kda_state(record, context_tokens, kv_bytes, state_bytes, root)
    if lin or d.get("mamba"):  # a hybrid: K/V in its attention layers, a fixed state in the others (FX800)
        result = hybrid_state(cfg, context_tokens, kv_bytes, state_bytes, root)
        return RequestState(record["id"], result.context_tokens, result.kv_bytes, result.rows, result.total, result.formulas)
    layers = cfg["num_hidden_layers"]
    per_token = kv_bytes_per_token(record, root, kv_bytes)          # F8, all layers (FX910 for a layer-wise model)
    ev = _Evaluator(formula_module(root))
    if d.get("layerwise"):  # OpenELM: every layer full attention with its own K/V heads
        return _layerwise_state(record, context_tokens, kv_bytes, per_token, ev)
    window = d.get("sliding_window") or {}
    windowed, span = window.get("windowed_layers", 0), window.get("window", context_tokens)
    kv_request = ev("FX70", kv_bytes_per_token=per_token, layers=layers, window_layers=windowed,
                    context_tokens=context_tokens, sliding_window=span)
    dsa = d.get("sparse_attention")
    index_keys = ev("FX888", layers=layers, index_head_dim=dsa["index_head_dim"]) * context_tokens if dsa else 0  # FP8 keys + scales
    total = ev("FX801", kv_bytes_per_request=kv_request + index_keys, recurrent_layers=0, recurrent_state_bytes_per_layer=0)
    per_layer_token = per_token // layers
    held = min(context_tokens, span)
    full_kind = "mla_latent" if d["attention"] == "mla" else "full_attention"
    rows = [LayerKind(full_kind, layers - windowed, context_tokens, (layers - windowed) * per_layer_token * context_tokens, "F8")]
    if windowed:
        rows.append(LayerKind("sliding_attention", windowed, held, windowed * per_layer_token * held, "FX70"))
    if dsa:
        rows.append(LayerKind("indexer_keys", layers, context_tokens, index_keys, "FX888"))
    rows = tuple(r for r in rows if r.layers)
    if sum(r.bytes_per_request for r in rows) != total:  # the rows are a second reading of FX70
        raise AssertionError(f"{record['id']}: rows sum to {sum(r.bytes_per_request for r in rows)}, FX70/FX801 give {total}")
    return RequestState(record["id"], context_tokens, kv_bytes, rows, total, ("F8", "FX70") + (("FX888",) if dsa else ()) + ("FX801",))


def _layerwise_state(record: dict, context_tokens: int, kv_bytes: float, per_token: int, ev) -> RequestState:
    """A layer-wise model's request: FX910's bytes per token (each layer's own K/V heads) for every token of the context, FX70."""
    layers = record["config"]["num_hidden_layers"]
    kv_request = ev("FX70", kv_bytes_per_token=per_token, layers=layers, window_layers=0, context_tokens=context_tokens,
                    sliding_window=context_tokens)
    total = ev("FX801", kv_bytes_per_request=kv_request, recurrent_layers=0, recurrent_state_bytes_per_layer=0)
    row = LayerKind("full_attention", layers, context_tokens, kv_request, "FX910")
    return RequestState(record["id"], context_tokens, kv_bytes, (row,), total, ("FX910", "FX70", "FX801"))


def default_state_bytes(config: dict) -> int:
    """Bytes per recurrent-state element an engine keeps: 4 where the config names mamba_ssm_dtype float32
    (Qwen3.5), else 2, the BF16 of the model's weights."""
    return 4 if config.get("mamba_ssm_dtype") == "float32" else 2


def _kda_state(record: dict, context_tokens: int, kv_bytes: float, state_bytes: float, root) -> RequestState:
    from engine.domain.model_count import _Evaluator, formula_module, kv_bytes_per_token

    ev, d = _Evaluator(formula_module(root)), record["derived"]
    lin, attn = d["linear_attention"], d["attention_layers"]
    latent = kv_bytes_per_token(record, root, kv_bytes) * context_tokens       # F8 (mla) over the attention layers only
    per_layer = ev("FX800", recurrent_kind="gated_deltanet", linear_v_heads=lin["value_heads"], linear_k_heads=lin["key_heads"],
                   linear_k_head_dim=lin["key_head_dim"], linear_v_head_dim=lin["value_head_dim"], conv_kernel=lin["conv_kernel"],
                   state_bytes=state_bytes)
    total = ev("FX801", kv_bytes_per_request=latent, recurrent_layers=lin["layers"], recurrent_state_bytes_per_layer=per_layer)
    rows = (LayerKind("mla_latent", attn, context_tokens, latent, "F8"), LayerKind("recurrent", lin["layers"], 0, lin["layers"] * per_layer, "FX800"))
    return RequestState(record["id"], context_tokens, kv_bytes, rows, total, ("F8", "FX800", "FX801"))


def compressed_state(record: dict, context_tokens: int, kv_bytes: float = 2, root=None, state_bytes: float | None = None) -> RequestState:
    """DeepSeek-V4's persistent bytes of one request by layer kind, as its reference inference code keeps them: every layer a
    window of up to ``window`` entries of head_dim; CSA layers one compressed entry and one indexer key per 4 tokens, HCA layers
    one entry per hca_ratio tokens, all at ``kv_bytes`` (BF16 in the reference); each compressor two FP32 buffers of its pooling
    window (``state_bytes``, default 4). FX899 + FX900 = FX901."""
    from engine.domain.model_count import (
        _Evaluator,
        compressed_kv_bytes,
        formula_module,
        v4_cache_shape,
    )

    if not (state_bytes is None or state_bytes > 0):
        raise InputError("--state-bytes", f"expected a positive number of bytes per state element, got {state_bytes!r}")
    ev, shape = _Evaluator(formula_module(root)), v4_cache_shape(record)
    ca, layers = record["derived"]["compressed_attention"], record["config"]["num_hidden_layers"]
    state = {} if state_bytes is None else {"compressor_state_bytes": state_bytes}  # FX900's default: 4 (float32)
    cache = compressed_kv_bytes(record, context_tokens, kv_bytes, root)
    pooling = ev("FX900", **state, **shape)
    total = ev("FX901", compressed_kv_bytes_per_request=cache, compressor_state_bytes_per_request=pooling)
    held, sb = min(context_tokens, ca["window"]), 4 if state_bytes is None else state_bytes
    hd, ihd, csa_n, hca_n = shape["head_dim"], shape["index_head_dim"], context_tokens // ca["csa_ratio"], context_tokens // shape["hca_ratio"]
    rows = (LayerKind("sliding_attention", ca["window_only_layers"], held, ca["window_only_layers"] * hd * held * kv_bytes, "FX899"),
            LayerKind("csa", ca["csa_layers"], held + csa_n, ca["csa_layers"] * ((hd * held + (hd + ihd) * csa_n) * kv_bytes
                                                                                 + 2 * 2 * ca["csa_ratio"] * 2 * (hd + ihd) * sb), "FX899 + FX900"),
            LayerKind("hca", ca["hca_layers"], held + hca_n, ca["hca_layers"] * ((hd * held + hd * hca_n) * kv_bytes
                                                                                 + 2 * shape["hca_ratio"] * hd * sb), "FX899 + FX900"))
    rows = tuple(replace(r, bytes_per_request=int(r.bytes_per_request)) if float(r.bytes_per_request).is_integer() else r for r in rows if r.layers)
    if sum(r.bytes_per_request for r in rows) != total or sum(r.layers for r in rows) != layers:  # the rows re-read FX899 and FX900
        raise AssertionError(f"{record['id']}: rows sum to {sum(r.bytes_per_request for r in rows)}, FX901 gives {total}")
    return RequestState(record["id"], context_tokens, kv_bytes, rows, total, ("FX899", "FX900", "FX901"))


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
        kind = f"{storage['quantised_format']} for {storage['quantised_parameters']} parameters, " \
               f"{storage['unquantised_bytes']:g} B for the rest" if storage.get("quantised_format") else "as stored"
        return storage["weight_bytes"], f"the record's stored weights ({kind})"
    return parameters * DEFAULT_WEIGHT_BYTES, f"{parameters} parameters x {DEFAULT_WEIGHT_BYTES} B (the default, BF16; the record has no storage block)"


def fit_requests(state: RequestState, parameters: int, memory_bytes: float, device: str, weight_bytes: float = 2, *,
                 stored_bytes: float | None = None, source: str = "", tp: int = 1, request_bytes_per_gpu: float | None = None) -> Fit:
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
        raise InputError("--device", f"{device} holds {memory_bytes:.4g} B, less than the {weights:.4g} B of weights "
                                     f"({source}{f', / {tp} GPUs' if tp > 1 else ''}): no room for any request{hint}")
    return Fit(device, memory_bytes, weights, free, int(free // per_request), source, tp, per_request)


def per_gpu_bytes(record: dict, state: RequestState, tp: int, root=None) -> float:
    """Bytes one request holds on each GPU of a ``tp``-way tensor-parallel replica, kind by kind.

    K/V of attention layers: FX73 (heads shard over the ranks; past kv_heads ranks each KV head is
    replicated, so the share stops at 1/kv_heads); the MLA latent and DSA indexer keys: replicated
    on every rank (FX73, mla); a recurrent state: its heads shard evenly, as vLLM splits Gated DeltaNet,
    KDA and Mamba-2 heads (and Mamba-2's groups) over the ranks, so ``tp`` must divide them.
    """
    from engine.domain.model_count import formula_module
    from engine.domain.roofline import kv_share

    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise InputError("--tp", f"expected a whole number of GPUs >= 1, got {tp!r}")
    if tp == 1:
        return state.total
    cfg, d = record["config"], record["derived"]
    if d.get("layerwise"):
        raise InputError("--tp", f"{record['id']} is layer-wise scaled ({d['layer_pattern']}): its K/V splits over tensor-parallel ranks "
                                 "differently in every layer (FX73 on each layer's own K/V heads, which the rank count must divide or be a "
                                 "multiple of), which is not sized yet, so --tp above 1 is refused rather than split as if every layer were alike")
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
            lin, mamba = d.get("linear_attention") or {}, d.get("mamba") or {}
            counts = ({"key heads": lin["key_heads"], "value heads": lin["value_heads"]} if lin else
                      {"Mamba-2 heads": mamba["heads"], "Mamba-2 groups": mamba["groups"]})
            for what, n in counts.items():
                if n % tp:
                    raise InputError("--tp", f"{tp} does not divide the {n} {what} of {record['id']}'s recurrent layers, "
                                             "which shard evenly over the ranks")
            total += row.bytes_per_request / tp
    return total


# ------------------------------------------------------------------ hybrid configs (not records)
def hybrid_state(config: dict, context_tokens: int, kv_bytes: float = 2, state_bytes: float = 2, root=None) -> RequestState:
    """Persistent bytes of one request of a Qwen3-Next or Nemotron-H ``config.json`` by layer kind (F8, FX800, FX801).

    These configs are refused as model records (their parameters are not counted exactly yet),
    but their per-request state needs only the layer pattern and the state shapes.
    """
    from engine.domain.model_count import _Evaluator, formula_module

    if isinstance(context_tokens, bool) or not isinstance(context_tokens, int) or context_tokens < 1:
        raise InputError("--context", f"expected a whole number of tokens >= 1, got {context_tokens!r}")
    if not state_bytes > 0:
        raise InputError("--state-bytes", f"expected a positive number of bytes per state element, got {state_bytes!r}")
    ev = _Evaluator(formula_module(root))
    kind = config.get("model_type")
    if kind in ("qwen3_next", "qwen3_5_moe_text"):
        attn, recurrent, per_layer = _qwen3_next(config, ev, state_bytes)
    elif kind == "nemotron_h":
        attn, recurrent, per_layer = _nemotron_h(config, ev, state_bytes)
    else:
        raise InputError("model_type", f"{kind!r}: hybrid state is read from qwen3_next, qwen3_5_moe_text and nemotron_h configs only")
    kv = _hybrid_kv(config, kind, attn, context_tokens, kv_bytes, ev) if attn else 0
    total = ev("FX801", kv_bytes_per_request=kv, recurrent_layers=recurrent, recurrent_state_bytes_per_layer=per_layer)
    rows = (LayerKind("full_attention", attn, context_tokens, kv, "F8"), LayerKind("recurrent", recurrent, 0, recurrent * per_layer, "FX800"))
    name = config.get("_name_or_path") or kind
    return RequestState(str(name), context_tokens, kv_bytes, tuple(r for r in rows if r.layers), total, ("F8", "FX70", "FX800", "FX801"))


def _hybrid_kv(config: dict, kind: str, attn: int, context_tokens: int, kv_bytes: float, ev) -> int:
    head_dim = _need(config, "attention_head_dim" if kind == "nemotron_h" and "attention_head_dim" in config else "head_dim")
    per_token = ev("F8", attention="gqa", layers=attn, kv_heads=_need(config, "num_key_value_heads"), heads=_need(config, "num_attention_heads"),
                   head_dim=head_dim, kv_bytes=kv_bytes)
    return ev("FX70", kv_bytes_per_token=per_token, layers=attn, window_layers=0, context_tokens=context_tokens, sliding_window=context_tokens)


def _need(config: dict, key: str) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(key, f"expected a whole number >= 1, got {value!r}")
    return value


def _qwen3_next(config: dict, ev, state_bytes: float) -> tuple[int, int, int]:
    layers = _need(config, "num_hidden_layers")
    types = config.get("layer_types")
    if types is None:
        interval = _need(config, "full_attention_interval")
        types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)]
    if not isinstance(types, list) or len(types) != layers or set(types) - {"full_attention", "linear_attention"}:
        raise InputError("layer_types", f"expected {layers} entries of full_attention or linear_attention")
    per_layer = ev("FX800", recurrent_kind="gated_deltanet", linear_v_heads=_need(config, "linear_num_value_heads"),
                   linear_k_heads=_need(config, "linear_num_key_heads"), linear_k_head_dim=_need(config, "linear_key_head_dim"),
                   linear_v_head_dim=_need(config, "linear_value_head_dim"), conv_kernel=_need(config, "linear_conv_kernel_dim"), state_bytes=state_bytes)
    full = types.count("full_attention")
    return full, layers - full, per_layer


def _nemotron_h(config: dict, ev, state_bytes: float) -> tuple[int, int, int]:
    pattern = config.get("hybrid_override_pattern")
    layers = _need(config, "num_hidden_layers")
    if not isinstance(pattern, str) or len(pattern) != layers or set(pattern) - set("M*-"):
        raise InputError("hybrid_override_pattern", f"expected {layers} characters of M (Mamba-2), * (attention) or - (MLP)")
    per_layer = ev("FX800", recurrent_kind="mamba2", mamba_heads=_need(config, "mamba_num_heads"), mamba_head_dim=_need(config, "mamba_head_dim"),
                   ssm_state_size=_need(config, "ssm_state_size"), mamba_groups=_need(config, "n_groups"), conv_kernel=_need(config, "conv_kernel"),
                   state_bytes=state_bytes)
    return pattern.count("*"), pattern.count("M"), per_layer
