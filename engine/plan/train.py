"""``aiinfra plan``: the training planner's front door (search, then explain the winners)."""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.record import dataclass, field
from engine.plan.evaluate import TERMS, describe_many
from engine.plan.executor import TILE, Found, run
from engine.plan.pin import FLAGS, LAYOUT_AXES, pin
from engine.plan.space import COMPUTE_EFFICIENCY_NOTE, LONG_SEQ, SCALEOUT_SOURCE, Space, build

# what each overhead term means when it is the one that limits a configuration
LIMIT = {"recompute_extra": "memory (recomputation needed to fit)", "tp_comm": "comm (tensor-parallel all-reduces)", "cp_comm": "comm (context-parallel K/V all-gathers)", "bubble": "bubble (pipeline idle)",
         "pp_comm": "comm (pipeline P2P)", "dp_comm": "comm (data-parallel gradients)", "ep_comm": "comm (expert All2All)"}
MEMORY_TIGHT = 0.9  # a configuration using this share of usable memory is also reported as memory-bound


@dataclass(frozen=True, slots=True)
class Plan:
    space: Space
    found: Found
    rows: tuple[dict, ...]
    why: str
    assumptions: tuple[str, ...] = field(default=())
    folded: int = 0  # ZeRO-stage variants tied on step time with a listed layout, not listed
    pins: dict = field(default_factory=dict)  # axis -> the one value given (plan --tp 8 ...); rows are searched with these fixed
    pinned: dict | None = None  # the pinned layout evaluated (every axis given: that layout, fitting or not; else the best row)
    search_best: dict | None = None  # with pins: the best layout of the search without them, for comparison
    versus: str = ""  # with pins: the pinned layout against the search's best


def binding(row: dict) -> str:
    """The largest overhead over pure compute, and memory when it is nearly full."""
    worst = max((t for t in TERMS if t != "compute"), key=lambda t: (row[t], t))
    text = LIMIT[worst] if row[worst] > 0 else "compute"
    share = row["memory"] / row["usable"]
    return text + (f"; memory {share:.0%} of usable" if share >= MEMORY_TIGHT else "")


def why(best: dict, nxt: dict | None) -> str:
    if nxt is None:
        return "only one feasible configuration"
    diffs = {t: nxt[t] - best[t] for t in TERMS}
    term = max(diffs, key=lambda t: (abs(diffs[t]), t))
    gap = nxt["step_time"] - best["step_time"]
    if gap == 0:
        return f"#2 ties #1 on step time ({best['step_time']:.4g} s); #1 is first by the tie-break (smaller TP, CP, PP, V, EP, micro-batch, ZeRO, lighter recompute)"
    return (f"#1 beats #2 by {gap:.4g} s per step ({gap / nxt['step_time']:.2%}); the term that differs most is {term} "
            f"({best[term]:.4g} s vs {nxt[term]:.4g} s)")


def plan(root, model: str, device: str, gpus: int, *, top: int = 5, executor: str = "serial", tile: int = TILE, workers: int | None = None,
         fold: bool = True, pins: dict | None = None, **space_options) -> Plan:
    """The ``top`` fastest layouts. With ``fold`` (the default) layouts that differ only by ZeRO stage
    and tie exactly on step time are one row: the stage with the least memory per GPU (then the lower
    stage), and ``folded`` counts the tied variants left out.

    ``pins`` (axis -> value, engine.plan.pin; errors name the ``plan`` flags) fixes those axes: the rows
    are the search over the rest, ``pinned`` the pinned layout evaluated (with every axis pinned, that
    layout even when it does not fit or the search would beat it), ``search_best`` the unpinned best."""
    full = build(root, model, device, gpus, **space_options)
    pins = {a: v for a, v in (pins or {}).items() if v is not None}
    space = pin(full, pins, FLAGS, model) if pins else full
    found = run(space, top * len(space.zero) if fold else top, executor, tile, workers)
    if pins and found.layouts == 0:
        given = ", ".join(f"{FLAGS[a]} {v}" for a, v in pins.items())
        raise InputError(FLAGS[next(iter(pins))], f"no valid layout of {gpus} GPUs holds {given} (DP x micro-batch must divide the batch of "
                                                  f"{space.global_batch}, EP divide DP, interleaving need PP > 1 and micro-batches a multiple of PP)")
    wanted = [index for _, index in found.top]
    if fold:
        wanted += [_sibling(space, index, z) for _, index in found.top for z in range(len(space.zero))]
    described = dict(zip(wanted, describe_many(space, wanted), strict=True))  # one vectorised pass
    rows, seen, folded = [], set(), 0
    for _, index in found.top:
        if len(rows) == top:
            break
        row = dict(described[index])
        if fold:
            key = (row["tp"], row["cp"], row["pp"], row["vp"], row["ep"], row["mb"], row["recompute"], row["step_time"])
            if key in seen:
                continue
            seen.add(key)
            ties = [dict(described[_sibling(space, index, z)]) for z in range(len(space.zero))]
            ties = [t for t in ties if t["feasible"] and t["step_time"] == row["step_time"]]
            folded += len(ties) - 1
            row = min(ties, key=lambda t: (t["memory"], t["zero"]))
        row["rank"] = len(rows) + 1
        row["mfu"] = row["model_flops"] / (space.gpus * row["step_time"] * space.peak)  # F1's model FLOPs: no padding layers, no recomputation
        row["binding"] = binding(row)
        rows.append(row)
    text = why(rows[0], rows[1] if len(rows) > 1 else None) if rows else "no configuration fits"
    extra = {}
    if pins:
        unpinned = plan(root, model, device, gpus, top=1, executor=executor, tile=tile, workers=workers, fold=fold, **space_options)
        layout = explain(space, describe_many(space, [0])[0]) if space.size == 1 else (explain(space, rows[0]) if rows else None)
        best = explain(full, unpinned.rows[0]) if unpinned.rows else None
        extra = dict(pins=dict(pins), pinned=layout, search_best=best, versus=versus(layout, best))
    notes = (f"matrix products at the device's dense {space.precision} peak {space.peak / 1e12:g} TFLOP/s (--precision); weights, gradients and "
             "Adam states in mixed precision whatever the compute precision (F4: 2 + 2 + 12 B per parameter)",
             f"scale-out bandwidth {space.scaleout_bw / 1e9:g} GB/s per GPU" + (f" ({SCALEOUT_SOURCE})" if space.scaleout_bw == 50e9 else " (given)"),
             space.efficiency_note or (f"compute efficiency {space.efficiency:g}" + (f" ({COMPUTE_EFFICIENCY_NOTE})" if space.efficiency == 0.6 else " (given)")),
             "sequence parallelism on with TP (sp_degree = tp_size); FlashAttention " + ("on (FX103 variant 1)" if space.flash else "off (FX103 variant 0)"),
             f"1F1B pipeline, non-interleaved (V 1) or interleaved with V up to {max(space.vp)} chunks per stage (F13, FX104, F18 x V; micro-batches "
             "a multiple of PP); tensor-, context- and data-parallel communication not overlapped (FX113 default overlap 0)",
             f"context parallelism (all-gather of K/V, FX720) searched up to CP {max(space.cp)}"
             + (f" (the default below {LONG_SEQ:,} tokens: Llama 3 trained 8K sequences with CP 1 and 128K with CP 16, Table 4; --max-cp widens it)"
                if max(space.cp) == 1 and space.seq < LONG_SEQ else ""),
             "pipeline stages of ceil(L / PP) layers (chunks of ceil(L / (PP x V))): the heaviest stage sets the pace and its memory is counted (Llama 3 ran 126 layers on "
             "16 stages, one fewer on the first and last, section 3.3.2); embedding and output head not placed on a stage",
             "DP x TP x CP x PP = GPUs; EP is carved out of DP (EP divides DP and the experts); ranks ordered TP, CP, PP, DP from innermost, "
             "so TP stays in one NVLink domain; ZeRO shards and gradients reduce over DP x CP",
             "activations are those of a GPT layer (Korthikanti et al.); MoE expert activations and load imbalance are not counted")
    return Plan(space, found, tuple(rows), text, notes, folded, **extra)


def explain(space: Space, row: dict) -> dict:
    """A described row with what a measurement compares against: throughput, model FLOP rate, MFU
    (F1's model FLOPs over GPUs x step time x the dense peak: padding layers and recomputation are
    not model FLOPs), whether it fits memory, and the binding constraint."""
    row = dict(row)
    if "step_time" not in row:
        return row
    gpu_s = space.gpus * row["step_time"]
    row["fits"] = row["memory"] <= row["usable"]
    row["tokens_per_s_per_gpu"] = space.global_batch * space.seq / gpu_s
    row["model_tflops_per_gpu"] = row["model_flops"] / gpu_s / 1e12
    row["mfu"] = row["model_flops"] / (gpu_s * space.peak)
    row["binding"] = binding(row) if row["fits"] else (f"memory: {row['memory'] / 2**30:.2f} GiB per GPU > usable {row['usable'] / 2**30:.2f} GiB "
                                                       f"(does not fit); then {binding(dict(row, memory=0.0))}")
    return row


def versus(pinned: dict | None, best: dict | None) -> str:
    if pinned is None or "step_time" not in pinned:
        return "no layout with the pinned values is valid"
    if best is None:
        return "nothing fits without pins either"
    if pinned["step_time"] <= best["step_time"]:
        if not pinned["fits"]:
            return f"the search's best that fits ({_name(best)}) takes {best['step_time']:.4g} s per step; the pinned layout does not fit"
        return f"the pinned layout is as fast as the search's best ({pinned['step_time']:.4g} s per step)"
    gap = pinned["step_time"] - best["step_time"]
    diffs = {t: pinned[t] - best[t] for t in TERMS}
    term = max(diffs, key=lambda t: (abs(diffs[t]), t))
    return (f"the search's best ({_name(best)}) is {gap:.4g} s per step faster ({gap / pinned['step_time']:.2%} of the pinned step); "
            f"the term that differs most is {term} ({pinned[term]:.4g} s pinned vs {best[term]:.4g} s)")


def _name(row: dict) -> str:
    return (f"TP {row['tp']} CP {row['cp']} PP {row['pp']} V {row['vp']} DP {row['dp']} EP {row['ep']} micro-batch {row['mb']} "
            f"ZeRO {row['zero']} recompute {row['recompute']}")


LAYOUT_DEFAULTS = {"tp": 1, "cp": 1, "pp": 1, "vp": 1, "ep": 1, "micro_batch": 1, "zero": 0, "recompute": "none"}


def evaluate_layout(root, model: str, device: str, gpus: int, global_batch: int, seq: int, layout: dict, **options) -> dict:
    """The terms of one stated training layout, without a search (for ``aiinfra validate``).

    ``layout``: any of tp, cp, pp, vp, ep, micro_batch, zero, recompute (missing keys take
    LAYOUT_DEFAULTS: 1, none recomputation, ZeRO 0); ``options`` as engine.plan.space.build takes them
    (nvlink_domain, scaleout_bandwidth, compute_efficiency, flash, precision). A layout that breaks a
    layout rule raises InputError naming ``layout.<key>``; one that does not fit memory is still
    evaluated (``fits`` False). Returns plain numbers: every term of engine.plan.evaluate.terms in
    seconds or bytes (compute, recompute_extra, tp_comm, cp_comm, bubble, pp_comm, dp_comm, ep_comm,
    step_time, memory, usable, states, activations, bubble_fraction, n_micro, model_flops), the layout
    (tp, cp, pp, vp, dp, ep, mb, zero, recompute), fits, tokens_per_s_per_gpu, model_tflops_per_gpu,
    mfu and binding."""
    unknown = sorted(set(layout) - set(LAYOUT_DEFAULTS))
    if unknown:
        raise InputError(f"layout.{unknown[0]}", f"is not a layout key (expected {', '.join(LAYOUT_DEFAULTS)})")
    given = {**LAYOUT_DEFAULTS, **{k: v for k, v in layout.items() if v is not None}}
    space = build(root, model, device, gpus, global_batch=global_batch, seq=seq, **options)
    names = {axis: f"layout.{key}" for key, axis in LAYOUT_AXES.items()}
    one = pin(space, {LAYOUT_AXES[k]: v for k, v in given.items()}, names, model)
    row = describe_many(one, [0])[0]
    if "step_time" not in row:  # a rule no single axis shows (feasible_layout is the authority)
        raise InputError("layout", f"{_name(dict(row, dp=gpus // (given['tp'] * given['cp'] * given['pp'])))} is not a valid layout of {gpus} GPUs")
    return explain(one, row)


def _sibling(space: Space, index: int, zero: int) -> int:
    """The point that differs from ``index`` only in its ZeRO stage (the ``zero`` axis position)."""
    from engine.plan.space import AXES

    stride = 1
    for axis in reversed(AXES[AXES.index("zero") + 1:]):
        stride *= len(getattr(space, axis))
    current = (index // stride) % len(space.zero)
    return index + (zero - current) * stride


def max_tokens(result: Plan, days: float) -> dict | None:
    """``plan --max-tokens --days D``: the most tokens the cluster trains in D days at the plan's fastest layout (its
    first row: global batch and sequence are fixed, so the shortest step trains the most tokens):
    D x 86,400 s x global batch x seq / step time. The step time is the plan's (compute, recompute, communication and
    bubble terms); no availability loss, restarts, checkpoint saves or evaluation pauses are charged, so this is the
    upper bound at 100% availability. None where no layout fits."""
    if isinstance(days, bool) or not isinstance(days, (int, float)) or not 0 < days < float("inf"):
        raise InputError("--days", f"{days!r} is not a positive number of days")
    if not result.rows:
        return None
    s, row = result.space, result.rows[0]
    per_step = s.global_batch * s.seq
    rate = per_step / row["step_time"]
    return {"days": float(days), "max_tokens": float(days) * 86_400 * rate, "tokens_per_s": rate, "tokens_per_step": per_step,
            "step_time": float(row["step_time"]), "layout": {k: row[k] for k in ("tp", "cp", "pp", "vp", "dp", "ep", "mb", "zero", "recompute")},
            "assumptions": ["tokens = days x 86,400 s x global batch x seq / step time of the fastest layout that fits (the plan's first row)",
                            "availability 100%: no failures, restarts, checkpoint saves or evaluation pauses are charged (the plan's step "
                            "time is compute + recompute + TP/CP/PP/DP/EP communication + pipeline bubble only); scale by your availability "
                            "(e.g. 0.9, calc training-duration) for a schedule"]}
