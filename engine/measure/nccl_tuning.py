"""The latency side of NCCL's and RCCL's own cost models, as data with its source, and the algorithms each library
would run a collective with.

NCCL (and RCCL, which forks it) picks an algorithm and a protocol for every call by evaluating its tuning model,
time = latency + bytes / bandwidth, for each (algorithm, protocol) it may use and taking the smallest
(src/graph/tuning.cc: ncclTopoTuneModel fills the latencies, ncclTopoGetAlgoTime evaluates them). The latencies are
built from two published tables, a base latency per algorithm and protocol and a hardware latency per hop (NVLink,
PCI, network), in microseconds:

- ring: base + (steps - inter_steps) x intra_hop + inter_steps x inter_hop, steps 2 (n - 1) for all-reduce and
  n - 1 for all-gather and reduce-scatter, inter_steps 2 (nodes - 1) (all-reduce) or nodes - 1 across nodes; across
  nodes an intra hop costs at least the network post overhead (1 us, x 3 for Simple);
- tree (all-reduce across nodes, NCCL's double binary tree): base + 2 x ((n / nodes - 1) x intra_hop + floor(log2
  nodes) x inter_hop);
- NVLS (the NVSwitch reduces): the NVLS hop latency alone, plus the network's NVLS-tree hops across nodes;
- all-pairs (RCCL's MSCCL all-reduce on an 8-GPU fully connected xGMI mesh, on by default on MI300X; README.md):
  every rank sends 1/n of its buffer straight to each peer, reduces its share, and sends it straight back, so two
  hops; RCCL's MSCCL XML files state the sizes it runs at (LL to 512 KiB, Simple to 11 MiB in place).

Bandwidth enters as the protocol's share of a link (PROTOCOL_BANDWIDTH): LL carries 4 bytes of data in every 8
(NCCL: busBw x 0.5 for ring LL), LL128 120 of every 128 (x 0.92), Simple the whole line; the tree's bus bandwidth
is x 0.92 of the ring's (x 1/3.8 more for LL, x 120/128 for LL128 across nodes, x 7/9 within one), and it moves
the whole message up and down (algbw = busBw / 2 where the ring's is busBw x n / (2 (n - 1))). The bandwidth itself
stays the engine's calibrated link model (kernels.collective_times); these tables fix only the latency each
algorithm costs and which algorithm the library may choose.
"""

from __future__ import annotations

import math

SOURCES = {
    "nccl": {"repo": "NVIDIA/nccl", "path": "src/graph/tuning.cc", "commit": "5067397c2676d5aed50042fc39e5c8ee96eb0027",
             "what": "ncclTunerConstantsDefaults: baseLatencies, hwLatencies (NVLINK, PCI, NET); getNetOverhead (1 us Intel, "
                     "2 us AMD x86, x 3 for Simple); ncclTopoTuneModel: the latency of each algorithm, LL128 only over NVLink "
                     "(typeIntra <= PATH_NVB); busBw refinements (ring LL x 0.5, LL128 x 0.92; tree x 0.92, LL x 1/3.8, "
                     "LL128 x 7/9 in one node and 120/128 across); algbw ratio n / nsteps for ring, 0.5 for tree"},
    "rccl": {"repo": "ROCm/rccl", "path": "src/graph/tuning.cc", "commit": "0cbce2a7571c907554199fad7e905f16ec0a565c",
             "what": "baseLat (12, 12, 17 us for LL, LL128, Simple) and tuning_model_5.hwLat, the model src/graph/rome_models.cc "
                     "(rome_model_79: 8 GPUs, every pair linked, mscclEnabled=1, tuning=5) assigns to the 8-GPU fully "
                     "connected xGMI node; LL128 0 in that model (not run)"},
    "rccl-msccl": {"repo": "ROCm/rccl", "path": "tools/msccl-algorithms/allreduce-allpairs-8n-ll-32tb.xml, -ll-64tb.xml, -simple.xml",
                   "commit": "0cbce2a7571c907554199fad7e905f16ec0a565c",
                   "what": "allreduce_pairs, ngpus 8, in place: LL 0 to 524287 B, Simple 524288 to 11534336 B; README.md: "
                           "'On MI300X, MSCCL is enabled by default'"},
}

PROTOCOLS = ("LL", "LL128", "Simple")

# microseconds, (algorithm, protocol) -> base latency
NCCL_BASE = {("tree", "LL"): 6.8, ("tree", "LL128"): 14.0, ("tree", "Simple"): 8.4,
             ("ring", "LL"): 6.6, ("ring", "LL128"): 14.0, ("ring", "Simple"): 8.4,
             ("nvls", "Simple"): 0.0}
# microseconds, (hardware, algorithm, protocol) -> one hop
NCCL_HOP = {
    ("nvlink", "tree", "LL"): 0.6, ("nvlink", "tree", "LL128"): 1.25, ("nvlink", "tree", "Simple"): 4.0,
    ("nvlink", "ring", "LL"): 0.6, ("nvlink", "ring", "LL128"): 1.9, ("nvlink", "ring", "Simple"): 3.4,
    ("nvlink", "nvls", "Simple"): 25.0, ("nvlink", "nvlstree", "Simple"): 25.0,
    ("pci", "tree", "LL"): 1.0, ("pci", "tree", "LL128"): 1.9, ("pci", "tree", "Simple"): 4.0,
    ("pci", "ring", "LL"): 1.0, ("pci", "ring", "LL128"): 2.5, ("pci", "ring", "Simple"): 5.7,
    ("net", "tree", "LL"): 5.0, ("net", "tree", "LL128"): 8.5, ("net", "tree", "Simple"): 14.0,
    ("net", "ring", "LL"): 2.7, ("net", "ring", "LL128"): 4.0, ("net", "ring", "Simple"): 14.0,
    ("net", "nvls", "Simple"): 18.0, ("net", "nvlstree", "Simple"): 20.9,
}
NCCL_NET_OVERHEAD = 1.0  # us, x86 Intel host (the default); x 3 for Simple

RCCL_BASE = {("tree", "LL"): 12.0, ("tree", "LL128"): 12.0, ("tree", "Simple"): 17.0,
             ("ring", "LL"): 12.0, ("ring", "LL128"): 12.0, ("ring", "Simple"): 17.0}
RCCL_HOP = {  # tuning_model_5; its LL128 entries are 0 (the protocol is not run on this model)
    ("nvlink", "tree", "LL"): 0.9, ("nvlink", "tree", "Simple"): 2.3,
    ("nvlink", "ring", "LL"): 0.8, ("nvlink", "ring", "Simple"): 2.1,
    ("pci", "tree", "LL"): 2.2, ("pci", "tree", "Simple"): 5.7,
    ("pci", "ring", "LL"): 2.2, ("pci", "ring", "Simple"): 5.7,
    ("net", "tree", "LL"): 10.5, ("net", "tree", "Simple"): 25.0,
    ("net", "ring", "LL"): 9.5, ("net", "ring", "Simple"): 320.0,
}
RCCL_NET_OVERHEAD = 2.0  # us, x86 AMD host (getNetOverhead); x 3 for Simple
MSCCL_ALLPAIRS = (("LL", 0, 524287), ("Simple", 524288, 11534336))  # in place, 8 ranks

# share of the ring's link time each (algorithm, protocol) needs per byte of the ring's bus traffic (1 / efficiency)
PROTOCOL_BANDWIDTH = {("ring", "LL"): 0.5, ("ring", "LL128"): 0.92, ("ring", "Simple"): 1.0,
                      ("allpairs", "LL"): 0.5, ("allpairs", "Simple"): 1.0, ("nvls", "Simple"): 1.0}
TREE_BANDWIDTH = {"LL": 0.92 / 3.8, "Simple": 0.92}  # LL128: 0.92 x 7/9 in one node, 0.92 x 120/128 across nodes

# NCCL's tree correction (ncclTopoGetAlgoTime): the tree's bandwidth x this factor at log2i(bytes >> 6) = 0 .. 22
# ("Trees are not perfectly sticking to the model for medium sizes", powers of two from 64 B)
TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
}


def tree_correction(protocol: str, size: float) -> float:
    """NCCL's tree bandwidth correction for a message of ``size`` bytes (1 outside 64 B .. 512 MiB)."""
    chunks = int(size) >> 6
    if chunks < 1:
        return 1.0
    log_size = log2i(chunks)
    return TREE_CORRECTION[protocol][log_size] if log_size < 23 else 1.0


# the candidate slots every collective row carries (a slot the library would not run is infinite)
SLOTS = tuple((a, p) for a in ("ring", "tree") for p in PROTOCOLS) + (("nvls", "Simple"), ("allpairs", "LL"), ("allpairs", "Simple"))


def log2i(n: int) -> int:
    """floor(log2 n), NCCL's log2i, for n >= 1."""
    return n.bit_length() - 1


def candidates(library: str, op: str, ranks: int, nodes: int, intra: str, algorithm: str | None, nvls: bool,
               mesh8: bool, size: float) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(algorithm, protocol) -> (latency inside the scale-up domains and the base, in seconds; latency of the hops
    across the network, in seconds; bandwidth multiplier on the ring's byte time) for every
    algorithm the library would consider for this call. ``intra`` is the hop class inside a node ('nvlink' for
    NVLink, NVSwitch and xGMI, 'pci' for PCIe); ``nodes`` the count of scale-up domains; ``algorithm`` a stated one
    (ring, tree, nvls) or None; ``nvls`` whether the record runs NVLink SHARP; ``mesh8`` an 8-GPU fully connected
    xGMI node under RCCL (MSCCL's all-pairs)."""
    amd = library == "rccl"
    base, hop, overhead = (RCCL_BASE, RCCL_HOP, RCCL_NET_OVERHEAD) if amd else (NCCL_BASE, NCCL_HOP, NCCL_NET_OVERHEAD)
    per_node = max(1, ranks // nodes)
    out: dict[tuple[str, str], tuple[float, float]] = {}
    stated = (algorithm or "").lower() or None
    if nvls or stated == "nvls":
        if op == "allreduce":
            local = hop[("nvlink", "nvls" if nodes == 1 else "nvlstree", "Simple")]
            net = 2 * log2i(nodes) * hop[("net", "nvlstree", "Simple")] if nodes > 1 else 0.0
            out[("nvls", "Simple")] = (local * 1e-6, net * 1e-6, 1.0)
            return out
    if mesh8 and op == "allreduce" and nodes == 1 and ranks == 8 and stated in (None, "msccl", "allpairs"):
        for proto, low, high in MSCCL_ALLPAIRS:
            if low <= size <= high:
                out[("allpairs", proto)] = ((base[("ring", proto)] + 2 * hop[("nvlink", "ring", proto)]) * 1e-6, 0.0, 1 / PROTOCOL_BANDWIDTH[("allpairs", proto)])
                return out
    protocols = [p for p in PROTOCOLS if (intra == "nvlink" and not amd) or p != "LL128"]
    ring_steps = {"allreduce": 2 * (ranks - 1), "allgather": ranks - 1, "reducescatter": ranks - 1, "alltoall": ranks - 1,
                  "broadcast": ranks - 1, "reduce": ranks - 1, "sendrecv": 1}[op]
    inter_steps = 0 if nodes == 1 else (2 * (nodes - 1) if op == "allreduce" else min(ring_steps, nodes - 1))
    if stated in (None, "ring"):
        for p in protocols:
            intra_lat = hop[(intra, "ring", p)]
            if nodes > 1:
                intra_lat = max(intra_lat, overhead * (3 if p == "Simple" else 1))
            inter_lat = hop[("net", "tree" if per_node == 1 and not amd else "ring", p)] if nodes > 1 else 0.0
            local = base[("ring", p)] + (ring_steps - inter_steps) * intra_lat
            out[("ring", p)] = (local * 1e-6, inter_steps * inter_lat * 1e-6, 1 / PROTOCOL_BANDWIDTH[("ring", p)])
    if op == "allreduce" and nodes > 1 and stated in (None, "tree"):
        for p in protocols:
            local = base[("tree", p)] + 2 * (per_node - 1) * hop[(intra, "tree", p)]
            eff = TREE_BANDWIDTH.get(p, 0.92 * 120 / 128)
            eff *= tree_correction(p, size) if not amd else 1.0
            out[("tree", p)] = (local * 1e-6, 2 * log2i(nodes) * hop[("net", "tree", p)] * 1e-6, ranks / (ranks - 1) / eff)
    return out


def slot_terms(cands: dict) -> dict[str, float]:
    """The flat terms of the candidate slots: lat_<alg>_<proto> (base and hops inside the scale-up domains, s),
    net_<alg>_<proto> (hops across the network, s) and bw_<alg>_<proto> (multiplier), the latency infinite where the
    library would not run that pair (so the minimum never takes it)."""
    out = {}
    for a, p in SLOTS:
        lat, net, bw = cands.get((a, p), (math.inf, 0.0, 1.0))
        out[f"lat_{a}_{p}"], out[f"net_{a}_{p}"], out[f"bw_{a}_{p}"] = lat, net, bw
    return out
