"""Roofline bounds on one device: time >= max(FLOPs / peak, bytes / bandwidth).

The numbers come from the formula records, evaluated from the compiled module:
FX36 (arithmetic intensity, counts variant), FX37 (ridge point) and FX38 (attainable
FLOP/s). Only the step from attainable rate to time is written here (see :func:`bound`).
The peak is chosen by :func:`engine.domain.hardware.select_peak`, so a sparse or other-precision
figure never enters by accident. Published achieved/peak ratios of the device
(``measured`` in its record) turn the bound into a band: time / high .. time / low.
"""

from __future__ import annotations

from engine.core.record import dataclass
from engine.domain.hardware import Device, Selection
from engine.numeric.evaluate import evaluate

# the formula records whose compiled functions give every number of a bound
INTENSITY, RIDGE, ATTAINABLE = "FX36", "FX37", "FX38"
FORMULAS = (INTENSITY, RIDGE, ATTAINABLE)


@dataclass(frozen=True, slots=True)
class Bound:
    flops: float  # FLOP
    bytes: float  # B
    peak_flops: float  # FLOP/s
    bandwidth: float  # B/s
    intensity: float  # FLOP/B (inf when no bytes move)
    ridge: float  # FLOP/B
    attainable: float  # FLOP/s
    time: float  # s
    bottleneck: str  # compute | memory | none

    @property
    def compute_time(self) -> float:
        return self.flops / self.peak_flops

    @property
    def memory_time(self) -> float:
        return self.bytes / self.bandwidth


@dataclass(frozen=True, slots=True)
class Band:
    """A published achieved/peak ratio applied to a bound: time / high .. time / low."""

    kind: str
    low: float
    high: float
    time_low: float
    time_high: float
    workload: str
    source: str


def formula_module(root: str):
    """The compiled formulas of ``root``, or of the shipped knowledge when ``root`` has none."""
    from engine.numeric import compiled

    return compiled.load_having(root, FORMULAS, "roofline formulas", "formulas/roofline.yaml")


def _value(module, fid: str, given: dict) -> float:
    meta = module.FORMULAS[fid]
    return evaluate(meta, module, given).outputs[meta["output"]["symbol"]].value


def ridge(module, peak_flops: float, bandwidth: float) -> float:
    return _value(module, RIDGE, {"peak_flops": peak_flops, "hbm_bandwidth": bandwidth})


def bound(module, flops: float, bytes_: float, peak_flops: float, bandwidth: float) -> Bound:
    """The roofline bound of ``flops`` FLOP moving ``bytes_`` B at ``peak_flops`` and ``bandwidth``."""
    knee = ridge(module, peak_flops, bandwidth)
    if flops <= 0 or bytes_ <= 0:
        return _degenerate(flops, bytes_, peak_flops, bandwidth, knee)
    intensity = _value(module, INTENSITY, {"intensity_method": "counts", "op_flops": flops, "op_bytes": bytes_})
    attainable = _value(module, ATTAINABLE, {"peak_flops": peak_flops, "arith_intensity": intensity, "hbm_bandwidth": bandwidth})
    # No formula record states "time = work / rate" for one operator: dividing the work by
    # FX38's attainable rate is the bound itself, equal to max(F / peak, B / bandwidth).
    time = flops / attainable
    return Bound(flops, bytes_, peak_flops, bandwidth, intensity, knee, attainable, time, "compute" if intensity >= knee else "memory")


def _degenerate(flops: float, bytes_: float, peak_flops: float, bandwidth: float, knee: float) -> Bound:
    """FX36 needs FLOPs and bytes above zero; an operator that only moves data (or only
    computes) is bound by its one resource, and its intensity is 0 (or unbounded)."""
    if flops <= 0 and bytes_ <= 0:
        return Bound(0.0, 0.0, peak_flops, bandwidth, 0.0, knee, 0.0, 0.0, "none")
    if flops <= 0:
        return Bound(0.0, bytes_, peak_flops, bandwidth, 0.0, knee, 0.0, bytes_ / bandwidth, "memory")
    return Bound(flops, 0.0, peak_flops, bandwidth, float("inf"), knee, peak_flops, flops / peak_flops, "compute")


def bands(device: Device, result: Bound, precision: str) -> list[Band]:
    """Published ratios for the bound's bottleneck: memory ratios always, compute ratios
    measured against the same roof (the same precision, or one whose dense matrix peak on
    this device is the same number, as FP16 and BF16 on A100)."""
    out = []
    for m in device.measured:
        if m.resource != result.bottleneck:
            continue
        if m.resource == "compute" and m.precision and not _same_roof(device, m.precision, precision):
            continue
        out.append(Band(m.kind, m.low, m.high, result.time / m.high, result.time / m.low, m.workload, m.source))
    return out


def _same_roof(device: Device, measured: str, wanted: str) -> bool:
    if measured == wanted:
        return True
    a, b = device.headline(measured), device.headline(wanted)
    return a is not None and b is not None and a.flops == b.flops


def describe_peak(selection: Selection) -> dict:
    p = selection.peak
    return {"precision": p.precision, "accumulator": p.accumulator, "unit": p.unit, "sparsity": p.sparsity,
            "value": p.flops, "stated": p.shown, "source": p.source, "derivation": p.derivation or None,
            "confidence": p.confidence, "notes": list(selection.notes)}


# ---------------------------------------------------------------------------- forward ledger


LEDGER_BYTES = ("weight_bytes", "activation_read_bytes", "activation_write_bytes", "kv_read_bytes", "kv_write_bytes")


@dataclass(frozen=True, slots=True)
class OperatorBound:
    name: str
    repeats: int
    scalar_flops: float
    bound: Bound


def ledger_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("engine.domain.ledger") is not None


def operator_bounds(module, rows, peak_flops: float, bandwidth: float) -> list[OperatorBound]:
    """One bound per ledger row: its matrix FLOPs against the (matrix-unit) peak, all its
    HBM bytes against the bandwidth. Scalar operations run on other units and are listed,
    not bounded."""
    out = []
    for row in rows:
        moved = sum(float(getattr(row, key, 0) or 0) for key in LEDGER_BYTES)
        b = bound(module, float(row.matrix_flops or 0), moved, peak_flops, bandwidth)
        out.append(OperatorBound(row.name, int(getattr(row, "repeats", 1) or 1), float(getattr(row, "scalar_flops", 0) or 0), b))
    return out


# ---------------------------------------------------------------------------- tensor parallelism

# Ledger row kinds whose work a tensor-parallel group splits over its ranks (Megatron-style
# column- and row-parallel linears, attention by heads, the activation of the split MLP
# width, the vocabulary-parallel output head). Every other kind (embedding gather, positions,
# norms, residual adds, routing) runs whole on every rank, and so does any kind not named here.
TP_SPLIT = ("matmul", "attention", "softmax", "activation", "kv", "output", "linear_attention")
KV_SHARE = "FX73"


def kv_share(module, record: dict, tp: int) -> float:
    """The fraction of a token's KV bytes one rank holds, from FX73: 1 / min(tp, KV heads)
    for MHA and GQA, 1 (replicated) for MQA and MLA."""
    cfg, der = record["config"], record["derived"]
    attention = der["attention"]
    given = {"attention": attention, "kv_bytes_per_token": 1.0, "tp_size": tp}
    if attention == "mha":
        given["heads"] = cfg["num_attention_heads"]
    elif attention == "gqa":
        given["kv_heads"] = cfg.get("num_key_value_heads", 1)
    return _value(module, KV_SHARE, given)


def shard(rows, tp: int, kv_fraction: float) -> list:
    """One rank's rows: FLOPs, weight and activation bytes of TP_SPLIT rows divided by ``tp``,
    their KV bytes multiplied by ``kv_fraction``; the other rows unchanged."""
    if tp == 1:
        return list(rows)
    out = []
    for row in rows:
        if row.kind not in TP_SPLIT:
            out.append(row)
            continue
        split = {key: float(getattr(row, key) or 0) / tp for key in ("matrix_flops", "scalar_flops", *LEDGER_BYTES[:3])}
        split.update({key: float(getattr(row, key) or 0) * kv_fraction for key in LEDGER_BYTES[3:]})
        out.append(row._replace(**split))
    return out


def tp_allreduce(record: dict, rows_per_pass: int, tp: int, act_bytes: float = 2.0) -> dict:
    """The TP all-reduces of one pass (not in the bound): two per layer, after the attention
    output and after the MLP down projection, each of rows x hidden activations."""
    layers, hidden = record["config"]["num_hidden_layers"], record["config"]["hidden_size"]
    return {"included": False, "ranks": tp, "allreduces": 2 * layers, "message_bytes": rows_per_pass * hidden * act_bytes,
            "note": "two all-reduces per layer (attention output, MLP output) of rows x hidden_size x 2 B (BF16 activations); "
                    "not in the time bound: price them with `aiinfra collective ring --op allreduce`"}


# ---------------------------------------------------------------------------- interconnect roofline
LINK_INTENSITY, LINK_RIDGE = "FX705", "FX706"


@dataclass(frozen=True, slots=True)
class LinkBound:
    """The interconnect roofline of one piece of work: FLOPs against the bytes one chip sends."""

    link_bytes: float
    link_bandwidth: float
    intensity: float   # FX705: FLOPs per byte sent
    ridge: float       # FX706: peak / link bandwidth
    compute_time: float
    link_time: float
    bottleneck: str    # "compute" when intensity >= ridge (the transfer can hide under the compute), else "network"


def link_bound(module, flops: float, link_bytes: float, peak_flops: float, link_bandwidth: float) -> LinkBound:
    """FX705 (communication intensity) against FX706 (the link's critical intensity): with perfect overlap the
    work is network-bound when the chip sends more than one byte per ``ridge`` FLOPs."""
    ridge = _value(module, LINK_RIDGE, {"peak_flops": peak_flops, "link_bandwidth": link_bandwidth})
    compute = flops / peak_flops
    link = link_bytes / link_bandwidth
    if link_bytes <= 0:
        return LinkBound(0.0, link_bandwidth, float("inf"), ridge, compute, 0.0, "compute")
    if flops <= 0:
        return LinkBound(link_bytes, link_bandwidth, 0.0, ridge, 0.0, link, "network")
    intensity = _value(module, LINK_INTENSITY, {"chip_flops": flops, "link_bytes": link_bytes})
    return LinkBound(link_bytes, link_bandwidth, intensity, ridge, compute, link, "compute" if intensity >= ridge else "network")
