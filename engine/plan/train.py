"""``aiinfra plan``: the training planner's front door (search, then explain the winners)."""

from __future__ import annotations

from engine.core.record import dataclass, field
from engine.plan.evaluate import TERMS, describe_many
from engine.plan.executor import TILE, Found, run
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
         fold: bool = True, **space_options) -> Plan:
    """The ``top`` fastest layouts. With ``fold`` (the default) layouts that differ only by ZeRO stage
    and tie exactly on step time are one row: the stage with the least memory per GPU (then the lower
    stage), and ``folded`` counts the tied variants left out."""
    space = build(root, model, device, gpus, **space_options)
    found = run(space, top * len(space.zero) if fold else top, executor, tile, workers)
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
        row["mfu"] = row["compute"] * space.efficiency / row["step_time"]
        row["binding"] = binding(row)
        rows.append(row)
    text = why(rows[0], rows[1] if len(rows) > 1 else None) if rows else "no configuration fits"
    notes = (f"matrix products at the device's dense {space.precision} peak {space.peak / 1e12:g} TFLOP/s (--precision); weights, gradients and "
             "Adam states in mixed precision whatever the compute precision (F4: 2 + 2 + 12 B per parameter)",
             f"scale-out bandwidth {space.scaleout_bw / 1e9:g} GB/s per GPU" + (f" ({SCALEOUT_SOURCE})" if space.scaleout_bw == 50e9 else " (given)"),
             f"compute efficiency {space.efficiency:g}" + (f" ({COMPUTE_EFFICIENCY_NOTE})" if space.efficiency == 0.6 else " (given)"),
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
    return Plan(space, found, tuple(rows), text, notes, folded)


def _sibling(space: Space, index: int, zero: int) -> int:
    """The point that differs from ``index`` only in its ZeRO stage (the ``zero`` axis position)."""
    from engine.plan.space import AXES

    stride = 1
    for axis in reversed(AXES[AXES.index("zero") + 1:]):
        stride *= len(getattr(space, axis))
    current = (index // stride) % len(space.zero)
    return index + (zero - current) * stride
