"""One tile of the training search, vectorised: feasibility, memory and step time per point.

Every term is a compiled formula (engine.numeric.compiled, the NumPy twin of each variant),
called with the planner's values and the record's own defaults for the rest; no sympy.

Step time of one optimizer step on one GPU (the terms each point reports):
  compute   model FLOPs (F1, attention term included) over N GPUs at peak x efficiency
  recompute_extra the FLOPs recomputation adds (FX412 over F1), at the same rate
  tp_comm   TP activation all-reduces (F17) over the scale-up link (F20, nominal x efficiency), not overlapped (FX113 default)
  cp_comm   context-parallel K/V all-gather and gradient reduce-scatter (FX720), scale-up when TP x CP fits the domain
  bubble    (compute + recompute + tp_comm + cp_comm) x F13 / (1 - F13): the pipeline's idle share
  pp_comm   stage-boundary P2P (F18) per micro-batch over the scale-out link
  dp_comm   gradient all-reduce (F15; F16 with ZeRO-3) over the scale-out link unless the job fits one NVLink domain
  ep_comm   MoE dispatch/combine All2All (F19) per token, MoE layers of the stage, scale-up when TP x EP fits the domain
Memory per GPU: FX105 = F4 (ZeRO stage) + FX104 (F5 by recompute, FX300 logits, FX103 attention bytes),
sequence parallelism on (sp_degree = tp_size), compared with F7's usable memory.

Context parallelism splits every sequence over CP ranks (activations, TP and PP traffic at seq / CP
tokens); the CP ranks hold the same weights, so ZeRO shards and gradients reduce over DP x CP.
Pipeline stages need not divide the layers evenly: the heaviest stage holds ceil(L / PP) layers
(Llama 3 ran 126 layers on 16 stages, one layer fewer on the first and last) and sets the pace,
so compute, memory and per-stage traffic are those of PP x ceil(L / PP) layers. With V > 1 model
chunks per stage (interleaved 1F1B) the chunks are ceil(L / (PP x V)) layers, the bubble is F13's
interleaved share, activations FX104's interleaved form, and the stage P2P traffic V times F18;
Megatron-LM needs the micro-batch count to be a multiple of PP there.
"""

from __future__ import annotations

import numpy as np

from engine.plan.space import AXES, Space

TERMS = ("compute", "recompute_extra", "tp_comm", "cp_comm", "bubble", "pp_comm", "dp_comm", "ep_comm")


class _Formulas:
    """Calls of compiled variants by symbol name; inputs not given take the record's default."""

    def __init__(self, root: str):
        from engine.numeric import compiled

        self.m = compiled.memoised(root)

    def default(self, fid: str, name: str):
        d = self.m.FORMULAS[fid]["symbols"][name]["default"]
        return d[0] if isinstance(d, list) else d

    def __call__(self, fid: str, key: str = "", **values):
        meta = self.m.FORMULAS[fid]
        variant = meta["variants"][key]
        args = [values[n] if n in values else self.default(fid, n) for n in variant["inputs"]]
        return getattr(self.m, variant["np"])(*args)


def decode(space: Space, start: int, stop: int) -> dict[str, np.ndarray]:
    """Axis values of the points start..stop-1 (int64 indices into each axis) and ``index``."""
    return decode_points(space, np.arange(start, stop, dtype=np.int64))


def decode_points(space: Space, index: np.ndarray) -> dict[str, np.ndarray]:
    """Axis positions (int64 indices into each axis) of the points numbered ``index``, and ``index``."""
    rest = np.asarray(index, dtype=np.int64).copy()
    out: dict[str, np.ndarray] = {}
    for axis, n in zip(reversed(AXES), reversed(space.shape), strict=True):
        rest, i = np.divmod(rest, n)
        out[axis] = i
    out["index"] = np.asarray(index, dtype=np.int64)
    return out


def candidates(space: Space) -> np.ndarray:
    """The numbers of every point whose layout meets :func:`feasible_layout`'s integer constraints,
    ascending, enumerated from the divisors instead of the whole product of the axes: TP values
    within the NVLink domain that divide the heads, KV heads and GPUs; CP and PP dividing the GPUs
    (PP at most the layers); micro-batches dividing the global batch; EP dividing the experts and the
    GPUs. Only (TP, CP, PP) triples whose product divides the GPUs are expanded; the remaining rules
    (DP x micro-batch dividing the batch, ZeRO, interleaving, EP dividing DP) are those of
    :func:`feasible_layout` itself. The same points in the same order as a scan of every number
    (tested), so the tie-break by number is unchanged."""
    n, kv = space.gpus, space.kv_heads

    def keep(axis: str, rule) -> list[int]:
        return [i for i, v in enumerate(getattr(space, axis)) if rule(v)]

    tp = keep("tp", lambda t: n % t == 0 and t <= space.nvlink_domain and space.heads % t == 0 and (not kv or kv % t == 0))
    cp = keep("cp", lambda c: n % c == 0)
    pp = keep("pp", lambda p: n % p == 0 and p <= space.layers)
    ep = keep("ep", lambda e: not space.experts or (space.experts % e == 0 and n % e == 0))
    mb = keep("mb", lambda m: space.global_batch % m == 0)
    stride = [1] * len(AXES)
    for i in range(len(AXES) - 2, -1, -1):
        stride[i] = stride[i + 1] * space.shape[i + 1]
    inner = np.zeros(1, dtype=np.int64)  # offsets of V x EP x micro-batch x ZeRO x recompute, ascending
    for axis, positions in zip(AXES[3:], (range(len(space.vp)), ep, mb, range(len(space.zero)), range(len(space.recompute))), strict=True):
        inner = np.add.outer(inner, np.asarray(positions, dtype=np.int64) * stride[AXES.index(axis)]).ravel()
    parts = [stride[0] * i + stride[1] * j + stride[2] * k + inner
             for i in tp for j in cp for k in pp
             if n % (space.tp[i] * space.cp[j] * space.pp[k]) == 0]
    if not parts:
        return np.zeros(0, dtype=np.int64)
    index = np.concatenate(parts)
    _, ok = feasible_layout(space, decode_points(space, index))
    return index[ok]


def feasible_layout(space: Space, idx: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Integer constraints (no formulas): DP x TP x CP x PP = N, TP within the NVLink domain and dividing
    heads and KV heads, CP's 2 x CP chunks dividing the sequence (built into the axis), PP at most the
    layers, EP dividing experts and DP, micro-batches dividing the batch."""
    tp = np.asarray(space.tp, dtype=np.int64)[idx["tp"]]
    cp = np.asarray(space.cp, dtype=np.int64)[idx["cp"]]
    pp = np.asarray(space.pp, dtype=np.int64)[idx["pp"]]
    vp = np.asarray(space.vp, dtype=np.int64)[idx["vp"]]
    ep = np.asarray(space.ep, dtype=np.int64)[idx["ep"]]
    mb = np.asarray(space.mb, dtype=np.int64)[idx["mb"]]
    zero = np.asarray(space.zero, dtype=np.int64)[idx["zero"]]
    ok = (space.gpus % (tp * cp * pp) == 0) & (tp <= space.nvlink_domain) & (space.heads % tp == 0) & (pp <= space.layers)
    if space.kv_heads:
        ok &= space.kv_heads % tp == 0
    dp = space.gpus // (tp * cp * pp)
    ok &= space.global_batch % np.maximum(dp * mb, 1) == 0
    ok &= (zero == 0) | (dp > 1)  # ZeRO over one rank shards nothing
    n_micro = space.global_batch // np.maximum(dp * mb, 1)
    ok &= (vp == 1) | ((pp > 1) & (pp * vp <= space.layers) & (n_micro % pp == 0))  # interleaving: chunks of >= 1 layer, m a multiple of PP
    if space.experts:
        ok &= (space.experts % ep == 0) & (dp % ep == 0)
    vals = dict(tp=tp, cp=cp, pp=pp, vp=vp, ep=ep, mb=mb, zero=zero, recompute=idx["recompute"], dp=dp, index=idx["index"])
    return {k: v[ok] for k, v in vals.items()}, ok


def _by_choice(choice: np.ndarray, options: list) -> np.ndarray:
    return np.choose(choice, [np.broadcast_to(np.asarray(o, dtype=float), choice.shape) for o in options])


def terms(space: Space, v: dict[str, np.ndarray], f: _Formulas | None = None) -> dict[str, np.ndarray]:
    """Memory and step-time terms of the (already layout-feasible) points ``v``."""
    f = f or _Formulas(space.root)
    tp, cp, pp, vp, ep, mb, dp = (v[k].astype(float) for k in ("tp", "cp", "pp", "vp", "ep", "mb", "dp"))
    s, h, L = float(space.seq), float(space.hidden), float(space.layers)
    s_cp = s / cp  # tokens of each sequence on one CP rank
    L_pad = np.ceil(L / (pp * vp)) * pp * vp  # PP x V chunks of the heaviest chunk's ceil(L / (PP x V)) layers
    imbalance = L_pad / L
    n_micro = space.global_batch / (dp * mb)
    # memory (FX105 = F4 + FX104), usable F7
    params_gpu = (space.params - space.expert_params + space.expert_params / ep) * imbalance  # F4 is linear in params
    zero_at = np.searchsorted(np.asarray(space.zero), v["zero"])  # the stage's position on the axis (a pinned axis holds one)
    states = _by_choice(zero_at, [f("F4", str(z), params=params_gpu, tp_size=tp, pp_size=pp, dp_size=dp * cp) for z in space.zero])
    attn = f("FX103", "1" if space.flash else "0", seq_len=s_cp)
    per_layer = _by_choice(v["recompute"], [
        f("F5", r, seq_len=s_cp, micro_batch=mb, hidden=h, heads=space.heads, tp_size=tp, sp_degree=tp, act_bytes_attn=attn) for r in space.recompute])
    logits = f("FX300", seq_len=s_cp, micro_batch=mb, vocab_size=space.vocab, tp_size=tp)
    acts = np.where(vp > 1,
                    f("FX104", "interleaved", layers=L_pad, activation_bytes_per_layer=per_layer, logits_activation_bytes=logits, seq_len=s_cp,
                      micro_batch=mb, hidden=h, sp_degree=tp, pp_size=pp, virtual_stages=vp),
                    f("FX104", "non_interleaved", layers=L_pad, activation_bytes_per_layer=per_layer, logits_activation_bytes=logits,
                      seq_len=s_cp, micro_batch=mb, hidden=h, sp_degree=tp, pp_size=pp))
    memory = f("FX105", model_state_bytes_per_gpu=states, activation_bytes_per_gpu=acts)
    usable = f("F7", hbm_capacity=space.hbm)
    # compute: F1 (model FLOPs of one step) and FX412 (recompute overhead)
    tokens = float(space.global_batch * space.seq)
    flops = f("F1", "include", params_active=space.params_active, train_tokens=tokens, layers=L, seq_len=s, heads=space.heads, head_dim=space.head_dim)
    rate = space.gpus * space.peak * space.efficiency
    compute = flops / rate * imbalance
    over = _by_choice(v["recompute"], [f("FX412", r, seq_len=s, hidden=h, vocab_size=space.vocab, layers=L) for r in space.recompute])
    recompute = compute * over
    # tensor parallel: F17 per micro-batch (layers of one stage), n_micro of them
    eff = f.default("F20", "bandwidth_efficiency")
    hidden_frac = f.default("FX113", "comm_overlap_fraction")
    tp_bytes = f("F17", tp_size=tp, micro_batch=mb, seq_len=s_cp, hidden=h, layers=L_pad, pp_size=pp)
    tp_comm = n_micro * f("FX113", collective_time=f("F20", "nominal_discount", comm_bytes=tp_bytes, nominal_bandwidth=space.nvlink_bw,
                                                     bandwidth_efficiency=eff, comm_latency=0.0), comm_overlap_fraction=hidden_frac)
    # context parallel: FX720 per micro-batch over the stage's layers, scale-up while TP x CP fits the domain
    if max(space.cp) > 1:
        cp_bytes = f("FX720", cp_size=cp, micro_batch=mb, seq_len=s, kv_heads=float(space.kv_heads or space.heads), head_dim=float(space.head_dim),
                     layers=L_pad, tp_size=tp, pp_size=pp)
        cp_bw = np.where(tp * cp <= space.nvlink_domain, space.nvlink_bw, space.scaleout_bw)
        cp_comm = n_micro * f("FX113", collective_time=f("F20", "nominal_discount", comm_bytes=cp_bytes, nominal_bandwidth=cp_bw,
                                                         bandwidth_efficiency=eff, comm_latency=0.0), comm_overlap_fraction=hidden_frac)
    else:
        cp_comm = np.zeros(tp.shape)
    bubble_frac = f("F13", "interleaved", pp_size=pp, n_micro_batches=n_micro, virtual_stages=vp)  # V = 1: the non-interleaved share
    bubble = (compute + recompute + tp_comm + cp_comm) * bubble_frac / (1 - bubble_frac)
    pp_bytes = f("F18", pp_size=pp, micro_batch=mb, seq_len=s_cp, hidden=h, tp_size=tp)
    pp_comm = n_micro * f("F20", "nominal_discount", comm_bytes=pp_bytes * vp, nominal_bandwidth=space.scaleout_bw, bandwidth_efficiency=eff, comm_latency=0.0)
    # data parallel: F15 (ZeRO 0-2: reduce-scatter + all-gather move what an all-reduce moves) or F16 (ZeRO-3)
    dp_bytes = np.where(v["zero"] == 3, f("F16", params=params_gpu, dp_size=dp * cp, tp_size=tp, pp_size=pp),
                        f("F15", params=params_gpu, dp_size=dp * cp, tp_size=tp, pp_size=pp))
    dp_bw = np.where(tp * cp * pp * dp <= space.nvlink_domain, space.nvlink_bw, space.scaleout_bw)
    dp_comm = f("FX113", collective_time=f("F20", "nominal_discount", comm_bytes=dp_bytes, nominal_bandwidth=dp_bw, bandwidth_efficiency=eff, comm_latency=0.0),
                comm_overlap_fraction=hidden_frac)
    if space.experts:
        per_token = f("F19", top_k=space.top_k, hidden=h, ep_size=ep)
        ep_bw = np.where(tp * ep <= space.nvlink_domain, space.nvlink_bw, space.scaleout_bw)
        ep_bytes = per_token * mb * s_cp * (L_pad / pp) * n_micro
        ep_comm = f("F20", "nominal_discount", comm_bytes=ep_bytes, nominal_bandwidth=ep_bw, bandwidth_efficiency=eff, comm_latency=0.0)
    else:
        ep_comm = np.zeros(tp.shape)
    out = dict(compute=compute, recompute_extra=recompute, tp_comm=tp_comm, cp_comm=cp_comm, bubble=bubble, pp_comm=pp_comm, dp_comm=dp_comm,
               ep_comm=ep_comm)
    out["step_time"] = compute + recompute + tp_comm + cp_comm + bubble + pp_comm + dp_comm + ep_comm
    out.update(model_flops=np.broadcast_to(flops, tp.shape), memory=memory, usable=np.broadcast_to(usable, tp.shape), stage_layers=L_pad / pp, states=states, activations=acts, n_micro=n_micro, bubble_fraction=bubble_frac)
    return out


def top_of_points(space: Space, index: np.ndarray, k: int) -> tuple[list[tuple[float, int]], int, int]:
    """The k fastest points among ``index`` that fit memory, as (step_time, index), best first, with
    the number of points and of those that fit; ties go to the lower index. Nothing else is kept."""
    layout, _ = feasible_layout(space, decode_points(space, index))
    if layout["index"].size == 0:
        return [], len(index), 0
    t = terms(space, layout)
    fits = t["memory"] <= t["usable"]
    time, index = t["step_time"][fits], layout["index"][fits]
    order = np.lexsort((index, time))[:k]
    return [(float(time[i]), int(index[i])) for i in order], len(layout["index"]), int(fits.sum())


def top_of_tile(space: Space, start: int, stop: int, k: int) -> tuple[list[tuple[float, int]], int, int]:
    """:func:`top_of_points` over the points start..stop-1 (every number, valid layout or not)."""
    top, _, fit = top_of_points(space, np.arange(start, stop, dtype=np.int64), k)
    return top, stop - start, fit


def describe(space: Space, index: int) -> dict:
    """Every term of one point, as plain numbers (the same code path as the tiles)."""
    return describe_many(space, [index])[0]


def describe_many(space: Space, indices) -> list[dict]:
    """:func:`describe` of several points at once (one vectorised pass over them), in their order."""
    numbers = np.asarray(list(indices), dtype=np.int64)
    layout, ok = feasible_layout(space, decode_points(space, numbers))
    t = terms(space, layout) if layout["index"].size else {}
    rows, j = [], 0
    for i, index in enumerate(numbers.tolist()):
        point = space.point(index)
        if not ok[i]:
            rows.append(dict(point, index=index, feasible=False))
            continue
        out = dict(point, index=index, feasible=bool(t["memory"][j] <= t["usable"][j]), dp=int(layout["dp"][j]))
        out.update({k: float(np.broadcast_to(val, layout["index"].shape)[j]) for k, val in t.items()})
        rows.append(out)
        j += 1
    return rows
