"""The search space of ``aiinfra plan``: the axes, the model and device constants, the options.

A :class:`Space` is a frozen, picklable value (plain numbers and tuples, the knowledge root as
a string) so that a worker process or a Dask worker can evaluate any tile of it on its own.
Points are numbered in mixed radix over the axes, outermost first; the number is the
deterministic tie-break of the ranking (a lower number, i.e. smaller TP, PP, EP, micro-batch,
ZeRO stage and lighter recomputation, wins a tie).
"""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.record import dataclass

RECOMPUTE = ("none", "selective", "full")
ZERO = (0, 1, 2, 3)
AXES = ("tp", "cp", "pp", "vp", "ep", "mb", "zero", "recompute")

# Options of the planner that are not formula symbols: (default, what it is). Each formula
# constant (bytes per parameter, activation bytes, bandwidth efficiency, F7 fractions, ...) is
# read from the formula records' own defaults instead, with their sources.
SCALEOUT_BANDWIDTH = 50e9  # B/s per GPU
SCALEOUT_SOURCE = ("400 Gb/s = 50 GB/s per GPU: 'Both RoCE and Infiniband clusters leverage 400 Gbps interconnects between GPUs' "
                   "(Llama Team, 'The Llama 3 Herd of Models', arXiv 2407.21783, section 3.3.1, Network)")
COMPUTE_EFFICIENCY = 0.6
COMPUTE_EFFICIENCY_NOTE = "assumed, not sourced: the share of the dense peak the matrix kernels reach inside one step (set --compute-efficiency)"


@dataclass(frozen=True, slots=True)
class Space:
    root: str
    gpus: int
    global_batch: int  # sequences per optimizer step
    seq: int
    nvlink_domain: int
    # model
    layers: int
    hidden: int
    heads: int
    kv_heads: int  # 0 where the attention has no KV heads to split (MLA)
    head_dim: int
    vocab: int
    params: float
    params_active: float
    experts: int  # 0 for a dense model
    top_k: int
    expert_params: float  # routed-expert parameters, all layers (0 for dense)
    # device
    hbm: float
    peak: float
    nvlink_bw: float
    scaleout_bw: float
    efficiency: float
    flash: bool
    # axes
    tp: tuple[int, ...]
    cp: tuple[int, ...]
    pp: tuple[int, ...]
    vp: tuple[int, ...]  # model chunks per pipeline stage (1 = non-interleaved 1F1B)
    ep: tuple[int, ...]
    mb: tuple[int, ...]
    zero: tuple[int, ...] = ZERO
    recompute: tuple[str, ...] = RECOMPUTE
    precision: str = "bf16"  # the matrix path of peak (--precision)
    efficiency_note: str = ""  # where efficiency came from when the caller took it from the calibration (engine.cli.efficiency)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(getattr(self, a)) for a in AXES)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def point(self, index: int) -> dict:
        """The axis values of point ``index``."""
        out = {}
        for axis, n in zip(reversed(AXES), reversed(self.shape), strict=True):
            index, i = divmod(index, n)
            out[axis] = getattr(self, axis)[i]
        return {a: out[a] for a in AXES}


# Bounds on what one search may be asked for (#24): past them the enumeration exhausts memory or overflows.
MAX_GPUS = 1 << 20  # 1,048,576 GPUs, five times the largest cluster on record (xAI Colossus, 200,000)
MAX_MICRO_BATCH = 4096  # micro-batch sizes tried; a micro-batch is at most the global batch / DP
# the global batch and the sequence: 2^32 each (16M-token steps are the largest on record) keeps the batch's divisibility
# tests within NumPy's int64 and tokens per step a finite float; past them --global-batch 1e30 overflowed
MAX_GLOBAL_BATCH = 1 << 32
MAX_SEQ = 1 << 32


def _at_most(value: int, field: str, bound: int, what: str) -> int:
    if value > bound:
        shown = f"{value:,}" if value < 10**24 else f"a {len(str(value))}-digit number"
        raise InputError(field, f"{shown} is more {what} than one search takes; expected at most {bound:,}")
    return value


def _positive(value, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(field, f"{value!r} is not a positive integer")
    return value


# Context parallelism is searched for long sequences only: Llama 3 trained its 8K stage with CP 1
# and its 128K stage with CP 16 (arXiv 2407.21783, Table 4). Below LONG_SEQ tokens the planner
# would otherwise trade the bubble for CP with no penalty for the smaller per-rank matrices.
LONG_SEQ = 32768
# Interleaved 1F1B: model chunks per stage tried (Megatron-LM's virtual pipeline size; Narayanan et
# al. 2021 section 2.2.2: the bubble shrinks v-fold for v times the P2P traffic)
MAX_VP = 4
MAX_CP_LONG = 16


def default_max_cp(seq: int) -> int:
    return MAX_CP_LONG if seq >= LONG_SEQ else 1


def _cp_sizes(seq: int, cap: int) -> tuple[int, ...]:
    """Powers of two up to ``cap`` whose 2 x CP load-balancing chunks divide the sequence (1 always)."""
    out, c = [1], 2
    while c <= cap:
        if seq % (2 * c) == 0:
            out.append(c)
        c *= 2
    return tuple(out)


def _preset(presets, root, model, device, precision: str, field: str, calculator: str | None = None) -> dict:
    try:
        return {k: v for k, (v, _) in presets.load(root, model, device, precision, calculator).items()}
    except InputError as exc:
        raise InputError("--precision" if exc.field == "--precision" else field, exc.message) from None


def build(root, model: str, device: str, gpus: int, *, global_batch: int | None = None, seq: int = 4096,
          nvlink_domain: int = 8, micro_batches: int = 16, scaleout_bandwidth: float = SCALEOUT_BANDWIDTH,
          compute_efficiency: float = COMPUTE_EFFICIENCY, flash: bool = True, precision: str = "bf16",
          max_cp: int | None = None, max_vp: int = MAX_VP, efficiency_note: str = "") -> Space:
    """The space for a model and device from knowledge/ (InputError naming the field when refused)."""
    from engine.domain import presets

    gpus = _at_most(_positive(gpus, "--gpus"), "--gpus", MAX_GPUS, "GPUs")
    seq = _at_most(_positive(seq, "--seq"), "--seq", MAX_SEQ, "tokens per sequence")
    nvlink_domain = _at_most(_positive(nvlink_domain, "--nvlink-domain"), "--nvlink-domain", MAX_GPUS, "GPUs in one NVLink domain")
    micro_batches = _positive(micro_batches, "--max-micro-batch")
    global_batch = gpus if global_batch is None else _at_most(_positive(global_batch, "--global-batch"), "--global-batch", MAX_GLOBAL_BATCH,
                                                              "sequences per step")
    if min(micro_batches, global_batch) > MAX_MICRO_BATCH:  # the sizes tried: 1 .. min(--max-micro-batch, global batch / DP at DP 1)
        _at_most(micro_batches, "--max-micro-batch", MAX_MICRO_BATCH, "micro-batch sizes")
    max_cp = default_max_cp(seq) if max_cp is None else _positive(max_cp, "--max-cp")
    max_vp = _positive(max_vp, "--max-vp")
    if not flash:
        max_cp = 1  # F5's unfused score term is for a whole sequence against itself, not a local chunk against all keys
    if not 0 < compute_efficiency <= 1:
        raise InputError("--compute-efficiency", f"{compute_efficiency!r} is not in (0, 1]")
    if not scaleout_bandwidth > 0:
        raise InputError("--scaleout-bandwidth", f"{scaleout_bandwidth!r} is not a positive bandwidth")
    if not model:
        raise InputError("--model", "is required (a model id from knowledge/models, e.g. llama-3.1-70b)")
    if not device:
        raise InputError("--device", "is required (a device id from knowledge/hardware, e.g. h100-sxm)")
    values = _preset(presets, root, model, None, precision, "--model")
    dev = _preset(presets, root, None, device, precision, "--device")
    for need in ("peak_flops", "hbm_capacity"):
        if need not in dev:
            raise InputError("--device", f"{device} has no {'dense ' + precision + ' peak' if need == 'peak_flops' else 'memory capacity'} to plan with")
    if "nominal_bandwidth" not in dev:
        raise InputError("--device", f"{device} records no scale-up interconnect bandwidth (interconnect.per_direction) for tensor parallelism")
    if values.get("attention") == "mla" or "head_dim" not in values:
        raise InputError("--model", f"{model}: the planner's activation and FLOP terms are those of MHA/GQA; MLA models are not planned yet")
    experts, top_k, expert_params = 0, 0, 0.0
    params, active = float(values["params"]), float(values["params_active"])
    if values.get("model_arch") == "moe":
        experts, top_k = int(values["n_experts"]), int(values["top_k"])
        # every routed expert has the same size: total - active = (E - k) x one expert over all layers
        expert_params = (params - active) * experts / (experts - top_k)
    layers, heads = int(values["layers"]), int(values["heads"])
    kv = int(values.get("kv_heads") or 0)
    return Space(
        root=str(root), gpus=gpus, global_batch=global_batch, seq=seq, nvlink_domain=nvlink_domain,
        layers=layers, hidden=int(values["hidden"]), heads=heads, kv_heads=kv, head_dim=int(values["head_dim"]),
        vocab=int(values.get("vocab_size") or 0), params=params, params_active=active,
        experts=experts, top_k=top_k, expert_params=expert_params,
        hbm=float(dev["hbm_capacity"]), peak=float(dev["peak_flops"]), nvlink_bw=float(dev["nominal_bandwidth"]),
        scaleout_bw=float(scaleout_bandwidth), efficiency=float(compute_efficiency), flash=bool(flash),
        tp=tuple(range(1, min(heads, gpus) + 1)), cp=_cp_sizes(seq, min(max_cp, gpus)), pp=tuple(range(1, min(layers, gpus) + 1)),
        vp=tuple(v for v in (1, 2, 4, 8) if v <= max_vp),
        ep=tuple(range(1, min(experts, gpus) + 1)) if experts else (1,),
        mb=tuple(range(1, min(micro_batches, global_batch) + 1)), precision=precision, efficiency_note=efficiency_note,
    )
