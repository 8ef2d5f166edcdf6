"""What the ledger reads before it counts: a record's template symbols, scenario options, routing histograms."""

from __future__ import annotations

import math

from engine.core.errors import InputError

OUTPUT_HEADS = ("last", "all", "none")
ROUTINGS = ("balanced", "concentrated")


# ---------------------------------------------------------------------------- binding


def bind(record: dict, tid: str, meta: dict) -> tuple[dict, list[str]]:
    """Values of the template's symbols for ``record``, and one note listing the defaults taken."""
    values, defaults = {}, []
    mid = record.get("id", "?")
    for name, spec in meta["symbols"].items():
        paths = spec["from"] if isinstance(spec["from"], list) else [spec["from"]]
        value = next((v for v in (_lookup(record, p) for p in paths) if v is not None), None)
        if value is None:
            if "default" not in spec:
                raise InputError("--model", f"{mid}: {paths[0]} is not stated; {tid} needs it for {name} ({spec['desc']})")
            values[name] = spec["default"]
            defaults.append(f"{name} = {spec['default']}")
        elif "equals" in spec:
            allowed = spec.get("allowed")
            if allowed and value not in allowed:
                raise InputError("--model", f"{mid}: {paths[0]} is {value!r}, which {tid} does not count (it knows {', '.join(allowed)})")
            wanted = spec["equals"] if isinstance(spec["equals"], list) else [spec["equals"]]
            values[name] = 1 if value in wanted else 0
        elif isinstance(value, bool):
            values[name] = int(value)
        elif isinstance(value, int | float):
            values[name] = value
        else:
            raise InputError("--model", f"{mid}: {paths[0]} is {value!r}, expected a number for {name} in {tid}")
    window = _lookup(record, "derived.sliding_window.windowed_layers")
    if window and "windowed_layers" not in meta["symbols"]:
        raise InputError("--model", f"{mid} has {window} sliding-window layers, which {tid} does not count")
    notes = [f"Not stated by {mid}, so the template's defaults: {', '.join(defaults)}."] if defaults else []
    return values, notes


def _lookup(record: dict, path: str):
    node = record
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _constants(meta: dict, formulas) -> dict:
    out = {}
    for name, spec in meta["constants"].items():
        if "value" in spec:
            out[name] = spec["value"]
        else:
            out[name] = formulas.FORMULAS[spec["formula"]]["symbols"][spec["symbol"]]["default"][0]
    return out


# ---------------------------------------------------------------------------- scenario and routing


# The most tokens, sequences, steps or ranks one count may be (#24): a quintillion keeps every product of the
# ledger (counts times counts times model sizes) a finite float; past it int -> float conversion overflows.
MAX_COUNT = 10**18


def _count(value, option: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InputError(option, f"expected a whole number >= {least}, got {value!r}")
    if value > MAX_COUNT:
        shown = f"{value:,}" if value < 10**24 else f"a {len(str(value))}-digit number"
        raise InputError(option, f"expected a whole number from {least} to 10^18, got {shown}")
    return value


def _size(value, option: str) -> float:
    """Bytes per element: a number, or text read like --set (``2``, ``1B``, ``4bit``)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            value = _quantity(value, option)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise InputError(option, f"expected bytes per element > 0 (e.g. 2, 1, 0.5 or 4bit), got {value!r}")
    return _number(float(value))


def _quantity(text: str, option: str) -> float:
    from engine.core.errors import UnitError
    from engine.core.units import parse_quantity

    try:
        q = parse_quantity(text, "B")
    except UnitError as exc:
        raise InputError(option, f"{exc.text!r} {exc.message}") from None
    if q.is_range:
        raise InputError(option, f"expected one size in bytes, got the range {text!r}")
    return q.value


def _experts_used(routing, values: dict, routed_tokens: int) -> tuple[float, str]:
    """Routed experts with at least one token, per MoE layer (a per-layer histogram: the mean)."""
    experts, top_k = values.get("experts"), values.get("top_k")
    if experts is None:
        if isinstance(routing, list):
            raise InputError("--routing", "a routing histogram needs an MoE model; this model has no routed experts")
        return 0, "none (no routed experts)"
    experts, top_k = int(experts), int(top_k)
    if routing == "balanced":  # token i takes experts (i*k + j) mod E: the assignments cover min(E, T*k)
        return min(experts, routed_tokens * top_k), "balanced"
    if routing == "concentrated":  # every token takes the same k experts
        return top_k, "concentrated"
    if not isinstance(routing, list):
        raise InputError("--routing", f"expected balanced, concentrated or a histogram (a JSON list), got {routing!r}")
    moe_layers = int(values["layers"]) - int(values.get("dense_layers", 0))
    layers = routing if routing and all(isinstance(h, list) for h in routing) else [routing]
    if len(layers) not in (1, moe_layers):
        raise InputError("--routing", f"expected one histogram (used by every MoE layer) or {moe_layers} (one per MoE layer), got {len(layers)}")
    used = [_check_histogram(h, experts, top_k, routed_tokens, i if len(layers) > 1 else None) for i, h in enumerate(layers)]
    return sum(used) / len(used), "histogram" if len(layers) == 1 else "per-layer histogram"


def routing_counts(routing, values: dict, routed_tokens: int) -> dict:
    """Token-to-expert assignment counts per MoE layer: what ``--routing-counts`` reports.

    balanced: token i takes experts (i*k + j) mod E, so the T*k assignments run round the
    experts in order and expert e gets floor(T*k / E), plus one when e < (T*k) mod E;
    concentrated: experts 0..k-1 get every token; a histogram: its own counts (one list for
    every MoE layer, or one per layer). Call after ``_experts_used`` has checked the routing.
    """
    experts, top_k = values.get("experts"), values.get("top_k")
    if experts is None:
        raise InputError("--routing-counts", "needs an MoE model; this model has no routed experts")
    experts, top_k = int(experts), int(top_k)
    dense = int(values.get("dense_layers", 0))
    moe_layers = int(values["layers"]) - dense
    assignments = routed_tokens * top_k
    if routing == "balanced":
        q, r = divmod(assignments, experts)
        layers = [[q + (1 if e < r else 0) for e in range(experts)]]
    elif routing == "concentrated":
        layers = [[routed_tokens if e < top_k else 0 for e in range(experts)]]
    else:
        layers = routing if routing and all(isinstance(h, list) for h in routing) else [routing]
    per_layer = len(layers) > 1
    out = []
    for i, counts in enumerate(layers):
        mean = assignments / experts
        top = max(counts)
        out.append({"layers": [dense + i] if per_layer else list(range(dense, dense + moe_layers)),
                    "counts": list(counts), "experts_used": sum(1 for c in counts if c > 0),
                    "max_tokens_per_expert": top, "min_tokens_per_expert": min(counts),
                    "mean_tokens_per_expert": _number(mean), "max_over_mean": _number(top / mean)})
    return {"routed_tokens": routed_tokens, "top_k": top_k, "experts": experts, "assignments_per_layer": assignments,
            "moe_layers": moe_layers, "first_moe_layer": dense, "per_layer": per_layer, "histograms": out}


def _check_histogram(counts, experts: int, top_k: int, tokens: int, layer: int | None) -> int:
    where = "" if layer is None else f"layer {layer}: "
    if not isinstance(counts, list) or len(counts) != experts:
        raise InputError("--routing", f"{where}expected a list of {experts} token counts (one per routed expert), got {_short(counts)}")
    for e, c in enumerate(counts):
        if isinstance(c, bool) or not isinstance(c, int) or c < 0:
            raise InputError("--routing", f"{where}expert {e}: expected a whole number of tokens >= 0, got {c!r}")
        if c > tokens:
            raise InputError("--routing", f"{where}expert {e}: {c} tokens, but only {tokens} are routed and top-k picks distinct experts")
    if sum(counts) != tokens * top_k:
        raise InputError("--routing", f"{where}the counts sum to {sum(counts)}, expected tokens x top-k = {tokens} x {top_k} = {tokens * top_k}")
    return sum(1 for c in counts if c > 0)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _number(x):
    """Integral floats as ints (exact below 2**53; above, the float's own value)."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**63:
        return int(x)
    return x


def _show(x) -> str:
    x = _number(x)
    return str(x) if isinstance(x, int) else f"{x:g}"
