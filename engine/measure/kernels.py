"""GEMM, HBM and collective measurements: their work terms and their times under a calibration.

GEMM (m x k by k x n): time = launch + max(2 m n k / (peak x e_gemm), bytes / (HBM x e_hbm)), bytes the two
inputs at the compute precision's element size and the output in BF16 (FP32 for FP32); predicted TFLOP/s =
2 m n k / time. The launch term is what keeps a small GEMM far below peak.

HBM: achieved bandwidth = datasheet bandwidth x e_hbm (a read-write copy as STREAM counts it).

Collectives as nccl-tests reports them: algbw = S / t, busbw = algbw x factor (all-reduce 2 (n-1)/n,
all-gather, reduce-scatter and all-to-all (n-1)/n; FX1's wire bytes per rank are S x factor). The time is the
library's own choice (engine.measure.nccl_tuning): the smallest, over the algorithms and protocols NCCL (RCCL on
AMD devices) would run at that size and topology, of its tuning model's latency (base + hops inside the scale-up
domains, x lat_scale per fabric; hops across the network x net_scale per transport) plus S x factor / (link x e_link)
divided by the protocol's share of the link. The link is the device's NVLink per direction inside a node, its host
link for PCIe (GeForce cards, whose peer traffic goes through host memory), the scale-out NIC per GPU (400 Gb/s =
50 GB/s) across nodes. Across nodes the collective is hierarchical: the G ranks of one scale-up domain (a node; a
whole NVL72 rack) exchange S x factor(G) over it, then each carries S x factor(N / G) / G across the NICs.
lat_scale and e_link are fitted per fabric, net_scale per transport (RDMA, Ethernet), e_inner once.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from engine.measure import nccl_tuning
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


def transport_of(w: dict) -> str:
    """The scale-out transport whose hop latency a call pays across nodes: 'rdma' for InfiniBand and RoCE (NCCL's and
    RCCL's verbs transport, what their NET latencies are for), 'ethernet' for the rest (AWS EFA's SRD through the
    libfabric plugin, Google's GPUDirect-TCPXO: transports of their own, with their own latency); 'none' for a call
    inside one scale-up domain (no network hop)."""
    if fabric_of(w) != "scaleout":
        return "none"
    return "rdma" if (w.get("fabric") or "infiniband") in ("infiniband", "roce") else "ethernet"


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
    out = dict(size=float(w["message_bytes"]), factor=factor, link=link, fabric=fabric, inner=0.0, inner_link=1.0, factor_outer=factor)
    nodes = int(w.get("nodes", 1))
    domains = 1  # scale-up domains the call spans (NCCL's nodes): an NVL72 rack over NVLink is one
    if fabric == "scaleout" and nodes > 1:
        # hierarchical, as NCCL runs across nodes: the G ranks that share a scale-up domain (a node, or a whole NVL72 rack)
        # reduce among themselves over it, then each of them carries 1/G of the message across the NICs
        from engine.measure.generations import nvlink_domain

        g = min(n, nvlink_domain(m.device)) if nvlink_domain(m.device) > 8 else max(1, n // nodes)
        domains = max(1, n // g)
        ic = rec.get("interconnect") or {}
        if g > 1 and ic.get("per_direction"):
            out.update(inner=FACTOR[op](g), inner_link=hardware.quantity(ic["per_direction"], "B/s"), factor_outer=FACTOR[op](domains) / g)
    out.update(nccl_tuning.slot_terms(_algorithms(rec, m.device, w, op, n, domains, fabric, out["size"])))
    return out


def library_of(device: str) -> str:
    """RCCL for AMD Instinct devices (their generations are CDNA), NCCL for the rest."""
    from engine.measure.generations import generation

    return "rccl" if generation(device).startswith("cdna") else "nccl"


def _algorithms(rec: dict, device: str, w: dict, op: str, n: int, domains: int, fabric: str, size: float) -> dict:
    """The (algorithm, protocol) pairs the library would choose among for this call, with their latencies
    (engine.measure.nccl_tuning): RCCL on AMD devices, NCCL otherwise; hops inside a node are NVLink class over
    NVLink, NVSwitch and xGMI, PCI class where the GPUs have no scale-up link (peer-to-peer or through host memory)."""
    from engine.measure.generations import nvlink_domain

    library = library_of(device)
    has_link = bool((rec.get("interconnect") or {}).get("per_direction"))
    intra = "pci" if fabric == "pcie" or not has_link else "nvlink"
    nvls = fabric == "nvls"
    mesh8 = library == "rccl" and fabric == "xgmi" and nvlink_domain(device) == 8
    return nccl_tuning.candidates(library, op, n, domains, intra, w.get("algorithm"), nvls, mesh8, size)


def collective_times(t, p) -> dict:
    """nccl-tests' time of the collective as the library's tuner picks it: the smallest, over the algorithms and
    protocols it would run (nccl_tuning), of their latency x lat_scale plus the byte time x their protocol's
    bandwidth multiplier; the byte time is the wire bytes over the fabric's link and the scale-up share of a
    hierarchical call (busbw = S x factor / time, the factor of all n ranks as nccl-tests reports it)."""
    bytes_time = t["size"] * t.get("factor_outer", t["factor"]) / (t["link"] * p["e_link"])
    if "inner" in t:  # terms of one scale-up domain carry no inner share (0)
        bytes_time = bytes_time + t["size"] * t["inner"] / (t["inner_link"] * p["e_inner"])
    slots = [k[4:] for k in t if k.startswith("lat_")]
    time = np.min([t[f"lat_{k}"] * p["lat_scale"] + t[f"net_{k}"] * p["net_scale"] + t[f"bw_{k}"] * bytes_time for k in slots], axis=0)
    algbw = t["size"] / time
    return dict(time=time, algorithm_bandwidth=algbw, bus_bandwidth=algbw * t["factor"])
