"""GEMM, HBM and collective measurements: their work terms and their times under a calibration.

GEMM (m x k by k x n): time = launch + max(2 m n k / (peak x e_gemm), bytes / (HBM x e_hbm)), bytes the two
inputs at the compute precision's element size and the output in BF16 (FP32 for FP32); predicted TFLOP/s =
2 m n k / time. The launch term is what keeps a small GEMM far below peak.

HBM: achieved bandwidth = datasheet bandwidth x e_hbm (a read-write copy as STREAM counts it).

Collectives as nccl-tests reports them: algbw = S / t, busbw = algbw x factor (all-reduce 2 (n-1)/n,
all-gather, reduce-scatter and all-to-all (n-1)/n; FX1's wire bytes per rank are S x factor), and
t = steps x latency + S x factor / (link x e_link): steps 2 (n-1) for a ring all-reduce, n-1 for the others, 2 for
NVLS (the switch reduces). The link is the device's NVLink per direction inside a node, its host link for PCIe,
the scale-out NIC per GPU (400 Gb/s = 50 GB/s) across nodes. Across nodes the collective is hierarchical: the G ranks
of one scale-up domain (a node; a whole NVL72 rack) exchange S x factor(G) over it, then each carries S x factor(N / G)
/ G across the NICs. Latency and e_link are fitted per fabric, e_inner once.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from engine.measure.generations import Unmapped

ELEMENT = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp4": 0.5, "nvfp4": 0.5625, "mxfp4": 0.53125}
FACTOR = {"allreduce": lambda n: 2 * (n - 1) / n, "allgather": lambda n: (n - 1) / n, "reducescatter": lambda n: (n - 1) / n,
          "alltoall": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "sendrecv": lambda n: 1.0}
SCALEOUT = 50e9  # B/s per GPU: one 400 Gb/s NIC per GPU, as engine.plan.space.SCALEOUT_BANDWIDTH


def _device(root, device: str, precision: str | None):
    from engine.domain import presets
    from engine.plan.space import _preset

    try:
        return _preset(presets, root, None, device, precision or "bf16", "--device")
    except Exception as exc:  # noqa: BLE001 - any refusal of the preset makes the row unmapped
        raise Unmapped(str(exc)) from None


def gemm_terms(root, m) -> dict:
    w, prec = m.workload, (m.precision.get("compute") or "bf16").lower()
    dv = _device(root, m.device, prec)
    if "peak_flops" not in dv or "hbm_bandwidth" not in dv:
        raise Unmapped(f"{m.device} records no {prec} peak or HBM bandwidth")
    el = ELEMENT.get(prec)
    if el is None:
        raise Unmapped(f"no element size for {prec}")
    mm, nn, kk = float(w["m"]), float(w["n"]), float(w["k"])
    out_el = 4 if prec in ("fp32", "tf32", "fp64") else 2
    return dict(flops=2 * mm * nn * kk, bytes=(mm * kk + kk * nn) * el + mm * nn * out_el, peak=float(dv["peak_flops"]), hbm=float(dv["hbm_bandwidth"]))


def gemm_times(t, p) -> dict:
    time = p["launch"] + np.maximum(t["flops"] / (t["peak"] * p["e_gemm"]), t["bytes"] / (t["hbm"] * p["e_hbm"]))
    return dict(tflops=t["flops"] / time)


def hbm_terms(root, m) -> dict:
    dv = _device(root, m.device, None)
    if "hbm_bandwidth" not in dv:
        raise Unmapped(f"{m.device} records no memory bandwidth")
    return dict(hbm=float(dv["hbm_bandwidth"]))


def hbm_times(t, p) -> dict:
    return dict(bandwidth=t["hbm"] * p["e_hbm"])


def fabric_of(w: dict) -> str:
    """The fabric the collective's bottleneck runs on: as stated (an NVL72 rack is NVLink across its hosts); unstated,
    NVLink inside one node and the scale-out NICs across nodes; InfiniBand, RoCE and Ethernet are all 'scaleout'."""
    fabric = w.get("fabric") or ("nvlink" if int(w.get("nodes", 1)) == 1 else "infiniband")
    return "scaleout" if fabric in ("infiniband", "roce", "ethernet") else fabric


@lru_cache(maxsize=8)
def _hardware(root: str) -> dict:
    from engine.kb.folders import folder_view

    return folder_view(root, "hardware").hardware


def collective_terms(root, m) -> dict:
    from engine.domain import hardware

    w = m.workload
    op, n = w["op"], int(w.get("ranks") or m.gpus)
    if op not in FACTOR:
        raise Unmapped(f"no busbw factor for {op}")
    if n < 2:
        raise Unmapped("a collective over one rank moves nothing")
    fabric = fabric_of(w)
    rec = _hardware(str(root)).get(f"hw:{m.device}")
    if rec is None:
        raise Unmapped(f"no device {m.device}")
    if fabric == "scaleout":
        link = SCALEOUT
    elif fabric == "pcie":
        host = rec.get("host_link")
        if not host:
            raise Unmapped(f"{m.device} records no host link")
        link = hardware.quantity(host["per_direction"], "B/s")
    else:
        ic = rec.get("interconnect")
        if not ic or not ic.get("per_direction"):
            raise Unmapped(f"{m.device} records no scale-up interconnect")
        link = hardware.quantity(ic["per_direction"], "B/s")
    factor = FACTOR[op](n)
    algorithm = (w.get("algorithm") or "").lower()
    steps = 2.0 if (fabric == "nvls" or algorithm == "nvls") else (2.0 * (n - 1) if op == "allreduce" else float(n - 1))
    out = dict(size=float(w["message_bytes"]), factor=factor, steps=steps, link=link, fabric=fabric, inner=0.0, inner_link=1.0)
    nodes = int(w.get("nodes", 1))
    if fabric == "scaleout" and nodes > 1:
        # hierarchical, as NCCL runs across nodes: the G ranks that share a scale-up domain (a node, or a whole NVL72 rack)
        # reduce among themselves over it, then each of them carries 1/G of the message across the NICs
        from engine.measure.generations import nvlink_domain

        g = min(n, nvlink_domain(m.device)) if nvlink_domain(m.device) > 8 else max(1, n // nodes)
        outer = max(1, n // g)
        ic = rec.get("interconnect") or {}
        if g > 1 and ic.get("per_direction"):
            out.update(inner=FACTOR[op](g), inner_link=hardware.quantity(ic["per_direction"], "B/s"), factor_outer=FACTOR[op](outer) / g)
        else:
            out["factor_outer"] = factor
        out["steps"] = 2.0 * (outer - 1) + 2.0 * (g - 1) if op == "allreduce" else float(outer - 1 + g - 1)
    else:
        out["factor_outer"] = factor
    return out


def collective_times(t, p) -> dict:
    """nccl-tests' time of the collective: the latency of its steps, the scale-up share of a hierarchical one, and the
    wire bytes over the fabric's link (busbw = S x factor / time, the factor of all n ranks as nccl-tests reports it)."""
    time = t["steps"] * p["latency"] + t["size"] * t.get("factor_outer", t["factor"]) / (t["link"] * p["e_link"])
    if "inner" in t:  # terms of one scale-up domain carry no inner share (0)
        time = time + t["size"] * t["inner"] / (t["inner_link"] * p["e_inner"])
    algbw = t["size"] / time
    return dict(time=time, algorithm_bandwidth=algbw, bus_bandwidth=algbw * t["factor"])
