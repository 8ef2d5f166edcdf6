"""Pinning axes of the training search to one stated value each (``plan --tp 8 --pp 16 ...``).

A pinned axis keeps only its value; the others are still searched. Every pinned value is checked
against the same layout rules the search applies (engine.plan.evaluate.feasible_layout), and a
value that no valid layout can hold is refused with an InputError naming the field and the rule,
before anything is evaluated. A pinned value is not bound by the search's own ranges: any CP whose
2 x CP chunks divide the sequence, any V the layer count allows, any micro-batch that divides the
batch.
"""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.record import replace
from engine.plan.space import AXES, RECOMPUTE, ZERO, Space

# the layout's keys (engine.plan.train.evaluate_layout) -> the Space axis each one pins
LAYOUT_AXES = {"tp": "tp", "cp": "cp", "pp": "pp", "vp": "vp", "ep": "ep", "micro_batch": "mb", "zero": "zero", "recompute": "recompute"}
# the option each axis is pinned by on the command line
FLAGS = {"tp": "--tp", "cp": "--cp", "pp": "--pp", "vp": "--vp", "ep": "--ep", "mb": "--micro-batch", "zero": "--zero", "recompute": "--recompute"}


def pin(space: Space, pins: dict, names: dict[str, str] | None = None, model: str = "the model") -> Space:
    """``space`` with each axis in ``pins`` (Space axis name -> value) reduced to that value.

    ``names`` maps an axis to the field named in errors (default: the axis itself); an InputError
    names the first pinned field that no valid layout can hold, with the rule it breaks.
    """
    names = {a: (names or {}).get(a, a) for a in AXES}
    unknown = sorted(set(pins) - set(AXES))
    if unknown:
        raise InputError(unknown[0], f"is not a layout axis (expected one of {', '.join(AXES)})")
    given = {a: _value(a, pins[a], names[a]) for a in AXES if a in pins and pins[a] is not None}
    for axis, value in given.items():
        reason = _alone(space, axis, value, model)
        if reason:
            raise InputError(names[axis], f"{value!r} {reason}")
    _together(space, given, names)
    return replace(space, **{a: (v,) for a, v in given.items()})


def _value(axis: str, value, field: str):
    if axis == "recompute":
        if value not in RECOMPUTE:
            raise InputError(field, f"{value!r} is not one of {', '.join(RECOMPUTE)}")
        return value
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(field, f"{value!r} is not an integer")
    if axis == "zero":
        if value not in ZERO:
            raise InputError(field, f"{value!r} is not a ZeRO stage (expected 0, 1, 2 or 3)")
    elif value < 1:
        raise InputError(field, f"{value!r} is not a positive integer")
    return value


def _alone(s: Space, axis: str, v, model: str) -> str | None:
    """Why ``v`` is not a valid value of ``axis`` whatever the other axes are, or None."""
    if axis == "tp":
        if v > s.nvlink_domain:
            return f"exceeds the NVLink domain of {s.nvlink_domain} GPUs that tensor parallelism stays in (--nvlink-domain)"
        if s.heads % v:
            return f"does not divide the {s.heads} attention heads of {model}"
        if s.kv_heads and s.kv_heads % v:
            return f"does not divide the {s.kv_heads} KV heads of {model}"
    if axis == "cp":
        if v > 1 and not s.flash:
            return "needs FlashAttention: F5's unfused score term is for a whole sequence (drop --no-flash)"
        if s.seq % (2 * v):
            return f"does not split the {s.seq}-token sequence into 2 x CP equal load-balancing chunks"
    if axis == "pp" and v > s.layers:
        return f"exceeds the {s.layers} layers of {model} (every stage holds at least one)"
    if axis == "vp" and v > s.layers:
        return f"exceeds the {s.layers} layers of {model} (every chunk holds at least one)"
    if axis == "ep":
        if not s.experts and v != 1:
            return f"needs experts; {model} is dense (expert parallelism 1 only)"
        if s.experts and s.experts % v:
            return f"does not divide the {s.experts} experts of {model}"
    if axis == "mb" and s.global_batch % v:
        return f"does not divide the global batch of {s.global_batch} sequences"
    if axis in ("tp", "cp", "pp", "ep") and s.gpus % v:
        return f"does not divide the {s.gpus} GPUs"
    return None


def _together(s: Space, given: dict, names: dict) -> None:
    """The rules that tie the pinned axes to each other (and to DP = GPUs / (TP x CP x PP))."""
    size = {a: given.get(a) for a in ("tp", "cp", "pp")}
    product = 1
    for a in ("tp", "cp", "pp"):
        product *= size[a] or 1
    last = [a for a in ("tp", "cp", "pp") if size[a]]
    if last and s.gpus % product:
        parts = " x ".join(f"{a.upper()} {size[a]}" for a in last)
        raise InputError(names[last[-1]], f"{parts} = {product} does not divide the {s.gpus} GPUs")
    fixed = {a: given.get(a, getattr(s, a)[0] if len(getattr(s, a)) == 1 else None) for a in AXES}  # pinned, or an axis of one value
    vp, pp = fixed["vp"], fixed["pp"]
    if "vp" in given and vp > 1 and pp == 1:
        raise InputError(names["vp"], f"{vp} model chunks per stage need pipeline parallelism (PP > 1; interleaved 1F1B)")
    if "vp" in given and pp and pp * vp > s.layers:
        raise InputError(names["vp"], f"PP {pp} x V {vp} = {pp * vp} chunks exceed the {s.layers} layers")
    if all(fixed[a] for a in ("tp", "cp", "pp")):
        dp = s.gpus // (fixed["tp"] * fixed["cp"] * fixed["pp"])
        layout = f"DP {dp} (= {s.gpus} / (TP {fixed['tp']} x CP {fixed['cp']} x PP {pp}))"
        if "mb" in given and s.global_batch % (dp * given["mb"]):
            raise InputError(names["mb"], f"{given['mb']} x {layout} does not divide the global batch of {s.global_batch} sequences")
        if "ep" in given and dp % given["ep"]:
            raise InputError(names["ep"], f"{given['ep']} does not divide {layout} (EP is carved out of the data-parallel ranks)")
        if given.get("zero") and dp == 1:
            raise InputError(names["zero"], f"stage {given['zero']} shards over DP ranks; {layout} is 1 (use 0)")
        if "mb" in given and vp and vp > 1:
            n_micro = s.global_batch // (dp * given["mb"])
            if n_micro % pp:
                raise InputError(names["vp" if "vp" in given else "mb"], f"interleaved 1F1B (V {vp}) needs the micro-batches per step, "
                                 f"{s.global_batch} / ({layout} x {given['mb']}) = {n_micro}, to be a multiple of PP {pp}")
