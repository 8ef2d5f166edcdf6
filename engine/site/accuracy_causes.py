"""A short, stated cause for a badly predicted measurement row (the Accuracy page's worst cases).

Each rule reads only what the row and its record state (metric, statistic, layout, workload, the
record's own words in ``where``, ``note``, the file's title and the ``assumed`` entries) and names a
known limit of the model; a rule whose limit can only err one way (a missed latency makes the
prediction fast, a prefill charged to a decode pool makes it slow) applies only to errors that way.
The rules that apply are joined. A row no rule explains says
"not diagnosed": a cause is never guessed from the size of the error alone.
"""

from __future__ import annotations

import re

from engine.core.record import dataclass

MIB = 1 << 20
SMALL_GEMM_FLOP = 2 * 2048**3  # below a 2048-cube the launch and the tail of the last wave dominate
NODE_GPUS = 8  # expert parallelism wider than one 8-GPU node sends its all-to-all over the scale-out fabric
NOT_DIAGNOSED = "not diagnosed"
TIMES = {"ttft", "tpot", "itl", "e2e_latency", "step_time", "time"}  # metrics where a smaller value is faster


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a rule may read: the validate row, and the words of its measurement record and file."""

    row: dict
    words: str = ""  # where + note + the assumed entries + the file's title and notes, lower case
    workload: dict | None = None


def optimistic(row: dict) -> bool:
    """Whether the prediction is faster than measured (a time too small, a rate too large)."""
    return row["ratio"] < 1 if row["metric"] in TIMES else row["ratio"] > 1


_SPECULATIVE = re.compile(r"(?<!w/o )(?<!without )(?<!no )\b(speculative|mtp|eagle\d?|draft model|multi-token prediction)\b")


def _speculative(e: Evidence) -> str | None:
    if e.row["kind"] == "serve" and _SPECULATIVE.search(e.words):
        return "speculative decoding (MTP/EAGLE) noted in the record: the engine models one token per step"
    return None


def _decode_pool(e: Evidence) -> str | None:
    r = e.row
    if r["kind"] != "serve":
        return None
    pd = any(k in (r.get("layout") or {}) for k in ("prefill_workers", "decode_workers"))
    if r["metric"] != "ttft" and optimistic(r):  # charging the prefill to the decode GPUs can only make the prediction slow
        return None
    if pd or re.search(r"\bpd\b|disaggregat|decode[- ]only|decode (pool|node|instance|cluster)|decode throughput", e.words):
        if r["metric"] == "ttft":
            return "prefill pool of a PD-disaggregated deployment: one pool of several measured"
        return "decode-only pool of a PD-disaggregated deployment: its prefill runs on other GPUs"
    return None


def _metric_mismatch(e: Evidence) -> str | None:
    r = e.row
    if r["metric"] == "itl":
        return "metric mismatch: inter-token latency measured, compared with the predicted time per output token"
    if r["metric"] == "total_throughput_per_gpu":
        return "unit/metric mismatch: total (prompt + output) tokens measured per GPU"
    if r.get("statistic") not in (None, "mean", "single"):
        return f"statistic mismatch: {r['statistic']} measured, a mean predicted"
    return None


def _queueing(e: Evidence) -> str | None:
    r, w = e.row, e.workload or {}
    load = f"rate {w['rate']:g}/s" if w.get("rate") else f"concurrency {w['concurrency']}" if (w.get("concurrency") or 1) > 1 else ""
    if r["kind"] == "serve" and r["metric"] in ("ttft", "e2e_latency") and load and r["ratio"] < 0.5:
        return f"{'TTFT' if r['metric'] == 'ttft' else 'latency'} under load ({load}): queueing behind other prefills beyond the mean-value model"
    return None


def _capped(e: Evidence) -> str | None:
    if e.row.get("capped") and not optimistic(e.row):  # capping only slows the prediction
        return "batch capped by the K/V pages that fit: the engine admits fewer sequences than stated"
    return None


def _collective(e: Evidence) -> str | None:
    r, w = e.row, e.workload or {}
    if r["kind"] != "collective" or not optimistic(r):  # latency and scale-out costs the model misses make it fast
        return None
    out = []
    nodes = w.get("nodes") or 1
    if r.get("group") == "scaleout" or nodes > 1:
        out.append(f"multi-node collective ({r.get('gpus')} GPUs over the scale-out fabric)")
    size = w.get("message_bytes")
    if isinstance(size, int | float) and size < MIB:
        out.append(f"small message latency ({_bytes(size)}: latency-bound, per-step cost dominates)")
    return "; ".join(out) or None


def _small_gemm(e: Evidence) -> str | None:
    r, w = e.row, e.workload or {}
    if r["kind"] != "gemm" or not optimistic(r) or not all(isinstance(w.get(k), int | float) for k in "mnk"):
        return None
    if 2 * w["m"] * w["n"] * w["k"] < SMALL_GEMM_FLOP:
        return f"small GEMM ({w['m']}x{w['n']}x{w['k']}): launch and wave quantisation, far from peak"
    return None


def _expert_parallel(e: Evidence) -> str | None:
    ep = (e.row.get("layout") or {}).get("ep", 1)
    if isinstance(ep, int) and ep > NODE_GPUS and optimistic(e.row):
        return f"wide expert parallelism (EP {ep}): all-to-all across nodes and expert load imbalance"
    return None


RULES = (_metric_mismatch, _speculative, _decode_pool, _capped, _queueing, _collective, _small_gemm, _expert_parallel)


def cause(e: Evidence) -> str:
    """The causes the rules find for this row, joined by '; ', or "not diagnosed"."""
    found = [text for rule in RULES if (text := rule(e))]
    return "; ".join(found) if found else NOT_DIAGNOSED


def evidence(row: dict, record=None, title: str = "") -> Evidence:
    """The row with the words of its record (``engine.domain.measurements.Measurement``) and ``title``, its file's title and notes."""
    if record is None:
        return Evidence(row, f"{row.get('where', '')} {title}".lower(), {})
    assumed = " ".join(f"{a.get('field', '')} {a.get('why', '')}" for a in record.assumed if isinstance(a, dict))
    return Evidence(row, " ".join((record.where, record.note, title, assumed)).lower(), dict(record.workload))


def _bytes(n: float) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n:g} B"
