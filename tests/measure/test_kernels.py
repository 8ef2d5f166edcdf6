"""GEMM, HBM and collective times under a calibration (engine/measure/kernels.py), by hand arithmetic.

The times functions take arrays of terms and parameters; the tests build them by hand. The collective
terms of a record read the device's links from the shipped h100-sxm record: NVLink 450 GB/s per direction
(NVIDIA H100 datasheet: NVLink 900 GB/s, both directions), PCIe Gen5 64 GB/s per direction (128 GB/s both).
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.core.paths import shipped_root
from engine.domain.measurements import Measurement
from engine.measure import kernels
from engine.measure.generations import Unmapped

GIB = 2**30


def arr(**kw) -> dict:
    return {k: np.array([float(v)]) for k, v in kw.items()}


def record(workload: dict, device: str = "h100-sxm", gpus: int = 8, kind: str = "collective", metric: str = "bus_bandwidth",
           precision: dict | None = None) -> Measurement:
    return Measurement(id="meas:t/r", source="meas:t", family="t", place="t.yaml:1", kind=kind, model=None, device=device, gpus=gpus,
                       layout={}, precision=precision or {}, workload=workload, engine=None, engine_version=None, metric=metric,
                       statistic="single", value=1.0, unit="B/s", stated="1 GB/s", where="row r")


def test_a_large_gemm_is_compute_bound():
    # 8192^3 BF16: 2 x 8192^3 = 1099511627776 FLOPs; bytes (8192 x 8192 x 2) x 2 inputs + 8192 x 8192 x 2 output = 402653184 B
    flops, nbytes = 2 * 8192**3, 3 * 8192 * 8192 * 2
    assert (flops, nbytes) == (1099511627776, 402653184)
    t = arr(flops=flops, bytes=nbytes, peak=989e12, hbm=3.35e12)
    p = arr(launch=5e-6, e_gemm=0.7, e_hbm=0.8)
    # compute 1099511627776 / (989e12 x 0.7) = 1.58822e-3 s > memory 402653184 / (3.35e12 x 0.8) = 1.5024e-4 s
    time = 5e-6 + 1099511627776 / (989e12 * 0.7)
    got = kernels.gemm_times(t, p)["tflops"][0]
    assert got == pytest.approx(1099511627776 / time, rel=1e-12)
    assert got == pytest.approx(690.1e12, rel=1e-3)  # 1099511627776 / (5e-6 + 1.588201e-3 s)


def test_a_small_gemm_is_held_down_by_its_launch():
    # 128^3: 2 x 128^3 = 4194304 FLOPs, 3 x 128 x 128 x 2 = 98304 B; compute 4194304 / 692.3e12 = 6.06e-9 s,
    # memory 98304 / 2.68e12 = 3.668e-8 s: time 5e-6 + 3.668e-8 s, 4194304 / 5.03668e-6 = 0.833 TFLOP/s of 989 peak
    t = arr(flops=2 * 128**3, bytes=3 * 128 * 128 * 2, peak=989e12, hbm=3.35e12)
    p = arr(launch=5e-6, e_gemm=0.7, e_hbm=0.8)
    got = kernels.gemm_times(t, p)["tflops"][0]
    assert got == pytest.approx(4194304 / (5e-6 + 98304 / (3.35e12 * 0.8)), rel=1e-12)
    assert got == pytest.approx(0.8327e12, rel=1e-3)


def test_gemm_terms_count_flops_and_bytes_at_the_compute_precision():
    m = record({"m": 4096, "n": 2048, "k": 1024}, kind="gemm", metric="tflops", precision={"compute": "fp8"})
    t = kernels.gemm_terms(shipped_root(), m)
    # 2 x 4096 x 2048 x 1024 = 17179869184 FLOPs; FP8 inputs (4096 x 1024 + 1024 x 2048) x 1 B = 6291456 B,
    # BF16 output 4096 x 2048 x 2 B = 16777216 B: 23068672 B
    assert (t["flops"], t["bytes"]) == (17179869184, 23068672)


def test_hbm_bandwidth_is_the_datasheet_times_the_efficiency():
    # H100 SXM 3.35 TB/s x 0.9 = 3.015 TB/s
    assert kernels.hbm_times(arr(hbm=3.35e12), arr(e_hbm=0.9))["bandwidth"][0] == pytest.approx(3.015e12, rel=1e-12)


INF = float("inf")
US = 1e-6


def slots(**given) -> dict:
    """Every candidate slot of engine.measure.nccl_tuning, infinite (not run) unless given as name=(lat, net, bw)."""
    out = {}
    for a, p in (("ring", "LL"), ("ring", "LL128"), ("ring", "Simple"), ("tree", "LL"), ("tree", "LL128"), ("tree", "Simple"),
                 ("nvls", "Simple"), ("allpairs", "LL"), ("allpairs", "Simple")):
        lat, net, bw = given.get(f"{a}_{p}", (INF, 0.0, 1.0))
        out.update({f"lat_{a}_{p}": lat, f"net_{a}_{p}": net, f"bw_{a}_{p}": bw})
    return out


def test_an_8_rank_ring_allreduce_of_1_gib_by_hand():
    # NCCL's tuner (src/graph/tuning.cc @5067397c): ring over NVLink, 2 (n - 1) = 14 steps; LL base 6.6 us + 14 x 0.6 us
    # = 15.0 us at half the link (LL carries 4 data bytes in 8), Simple 8.4 + 14 x 3.4 = 56.0 us at the whole link
    t = arr(size=GIB, factor=1.75, factor_outer=1.75, link=450e9, inner=0.0, inner_link=1.0,
            **slots(ring_LL=(15.0 * US, 0.0, 2.0), ring_Simple=(56.0 * US, 0.0, 1.0)))
    p = arr(lat_scale=1.0, net_scale=1.0, e_link=0.8, e_inner=1.0)
    # byte time 2^30 x 1.75 / (450e9 x 0.8) = 1879048192 / 3.6e11 = 5.21958e-3 s; Simple 56e-6 + 5.21958e-3 = 5.27558e-3 s
    # beats LL 15e-6 + 2 x 5.21958e-3 = 1.04542e-2 s
    time = 56e-6 + 1879048192 / 3.6e11
    out = kernels.collective_times(t, p)
    assert out["time"][0] == pytest.approx(time, rel=1e-12)
    assert out["time"][0] == pytest.approx(5.27558e-3, rel=1e-5)
    # algbw = 2^30 / 5.27558e-3 s = 203.5 GB/s; busbw = x 1.75 = 356.2 GB/s
    assert out["bus_bandwidth"][0] == pytest.approx(1.75 * GIB / time, rel=1e-12)
    assert out["bus_bandwidth"][0] == pytest.approx(356.2e9, rel=1e-3)


def test_a_small_allreduce_takes_the_low_latency_protocol():
    # 8 B: LL 15e-6 x 1.5 (lat_scale) + 2 x 8 x 1.75 / 3.6e11 = 2.25e-5 + 7.8e-11 s; Simple 56e-6 x 1.5 = 8.4e-5 s
    t = arr(size=8, factor=1.75, factor_outer=1.75, link=450e9, inner=0.0, inner_link=1.0,
            **slots(ring_LL=(15.0 * US, 0.0, 2.0), ring_Simple=(56.0 * US, 0.0, 1.0)))
    p = arr(lat_scale=1.5, net_scale=1.0, e_link=0.8, e_inner=1.0)
    assert kernels.collective_times(t, p)["time"][0] == pytest.approx(2.25e-5 + 2 * 8 * 1.75 / 3.6e11, rel=1e-12)


def test_the_network_hops_take_their_own_scale():
    # a tree slot of 15.2 us inside the nodes and 20 us across them: 15.2e-6 x 1 + 20e-6 x 3 = 75.2e-6 s, plus the bytes
    t = arr(size=1024, factor=1.0, factor_outer=1.0, link=50e9, inner=0.0, inner_link=1.0, **slots(tree_LL=(15.2 * US, 20.0 * US, 1.0)))
    p = arr(lat_scale=1.0, net_scale=3.0, e_link=1.0, e_inner=1.0)
    assert kernels.collective_times(t, p)["time"][0] == pytest.approx(75.2e-6 + 1024 / 50e9, rel=1e-12)


def test_collective_terms_of_an_nvlink_ring_allreduce():
    t = kernels.collective_terms(shipped_root(), record({"op": "allreduce", "ranks": 8, "message_bytes": GIB}))
    # one scale-up domain: no inner share (0, over a unit link), the outer factor is the whole factor
    assert {k: t[k] for k in ("size", "factor", "link", "fabric", "inner", "inner_link", "factor_outer")} == {
        "size": GIB, "factor": 1.75, "link": 450e9, "fabric": "nvlink", "inner": 0.0, "inner_link": 1.0, "factor_outer": 1.75}
    # NCCL tuning.cc @5067397c, ring over NVLink, 14 steps: LL 6.6 + 14 x 0.6 = 15.0 us, LL128 14.0 + 14 x 1.9 = 40.6 us,
    # Simple 8.4 + 14 x 3.4 = 56.0 us; bandwidth x 1/0.5, x 1/0.92, x 1; no tree in one node, no NVLS unless stated
    assert (t["lat_ring_LL"], t["lat_ring_LL128"], t["lat_ring_Simple"]) == pytest.approx((15.0e-6, 40.6e-6, 56.0e-6), rel=1e-12)
    assert (t["bw_ring_LL"], t["bw_ring_LL128"], t["bw_ring_Simple"]) == pytest.approx((2.0, 1 / 0.92, 1.0), rel=1e-12)
    assert t["lat_tree_LL"] == t["lat_nvls_Simple"] == t["lat_allpairs_LL"] == INF


@pytest.mark.parametrize("workload", [{"fabric": "nvls"}, {"fabric": "nvlink", "algorithm": "NVLS"}])
def test_an_nvls_allreduce_pays_the_nvls_latency(workload):
    # the switch reduces: NCCL's NVLS latency over NVLink is 25 us (base 0) whatever the rank count; the bytes still
    # cross at 2 (n - 1) / n = 1.75; no other algorithm is considered when the record states NVLS
    t = kernels.collective_terms(shipped_root(), record({"op": "allreduce", "ranks": 8, "message_bytes": GIB, **workload}))
    assert (t["lat_nvls_Simple"], t["factor"], t["link"]) == (pytest.approx(25e-6, rel=1e-12), 1.75, 450e9)
    assert t["lat_ring_LL"] == t["lat_ring_Simple"] == INF


def test_roce_runs_on_the_scaleout_nic_per_gpu():
    # one 400 Gb/s NIC per GPU = 50 GB/s; an all-gather over 16 ranks on 2 nodes of 8 (H100 SXM, NVLink 450 GB/s per direction)
    # runs hierarchically: inside a node (8 - 1) / 8 = 7/8 of the message over NVLink, across the 2 nodes (2 - 1) / 2 = 1/2 of it
    # shared by the node's 8 NICs, 1/16 per GPU; nccl-tests' busbw factor stays the 16 ranks' 15/16
    t = kernels.collective_terms(shipped_root(), record({"op": "allgather", "ranks": 16, "nodes": 2, "message_bytes": 1024, "fabric": "roce"},
                                                        gpus=16))
    assert {k: t[k] for k in ("size", "factor", "link", "fabric", "inner", "inner_link", "factor_outer")} == {
        "size": 1024.0, "factor": 15 / 16, "link": 50e9, "fabric": "scaleout", "inner": 7 / 8, "inner_link": 450e9, "factor_outer": 1 / 16}
    # NCCL ring all-gather: 15 steps, 1 across the network; an intra hop costs at least the 1 us network post overhead
    # (x 3 for Simple): LL 6.6 + 14 x max(0.6, 1) = 20.6 us + 1 x 2.7 us (NET ring LL); LL128 14.0 + 14 x max(1.9, 1) = 40.6
    # + 4.0; Simple 8.4 + 14 x max(3.4, 3) = 56.0 + 14.0; no tree for all-gather
    assert (t["lat_ring_LL"], t["net_ring_LL"]) == pytest.approx((20.6e-6, 2.7e-6), rel=1e-12)
    assert (t["lat_ring_LL128"], t["net_ring_LL128"]) == pytest.approx((40.6e-6, 4.0e-6), rel=1e-12)
    assert (t["lat_ring_Simple"], t["net_ring_Simple"]) == pytest.approx((56.0e-6, 14.0e-6), rel=1e-12)
    assert t["lat_tree_LL"] == INF


def test_an_allreduce_across_four_nodes_may_take_the_tree():
    # 32 B200 ranks on 4 nodes of 8 (NCCL tuning.cc @5067397c): tree LL = 6.8 + 2 x (8 - 1) x 0.6 = 15.2 us inside,
    # 2 x log2(4) x 5.0 = 20 us across; ring LL = 6.6 + (62 - 6) x max(0.6, 1) = 62.6 us inside, 6 x 2.7 = 16.2 us across.
    # The tree's bytes: algbw = busBw / 2 against the ring's busBw x 32 / 62, busBw x 0.92 / 3.8 for LL, and NCCL's tree
    # correction at log2(32768 / 64) = 9, 0.7 for LL: multiplier 32 / 31 / (0.92 / 3.8 x 0.7) = 6.0909
    t = kernels.collective_terms(shipped_root(), record({"op": "allreduce", "ranks": 32, "nodes": 4, "message_bytes": 32768,
                                                         "fabric": "ethernet"}, device="b200", gpus=32))
    assert (t["lat_tree_LL"], t["net_tree_LL"]) == pytest.approx((15.2e-6, 20e-6), rel=1e-12)
    assert (t["lat_ring_LL"], t["net_ring_LL"]) == pytest.approx((62.6e-6, 16.2e-6), rel=1e-12)
    assert t["bw_tree_LL"] == pytest.approx(6.0909, rel=1e-4)


def test_nccls_tree_correction_by_size():
    from engine.measure.nccl_tuning import tree_correction

    # tuning.cc @5067397c treeCorrectionFactor, index log2i(bytes >> 6): 128 KiB -> 2048 -> 11: LL .5, LL128 .6, Simple .5;
    # under 64 B and from 2^29 B (index 23) no correction
    assert [tree_correction(p, 131072) for p in ("LL", "LL128", "Simple")] == [0.5, 0.6, 0.5]
    assert tree_correction("Simple", 32) == tree_correction("Simple", 2**30) == 1.0


def test_an_mi300x_node_runs_rccl_msccl_all_pairs_for_small_messages():
    # RCCL on 8 MI300X (rome_model_79 -> tuning_model_5, MSCCL on by default): up to 524287 B the all-pairs LL algorithm,
    # 2 hops: base 12 + 2 x 0.8 = 13.6 us (the measured 4 KiB all-reduce took 13.33 us, hisohara rccl-tests table)
    t = kernels.collective_terms(shipped_root(), record({"op": "allreduce", "ranks": 8, "message_bytes": 4096, "fabric": "xgmi"}, device="mi300x"))
    assert t["lat_allpairs_LL"] == pytest.approx(13.6e-6, rel=1e-12) and t["bw_allpairs_LL"] == 2.0
    assert t["lat_ring_LL"] == INF
    # 64 MiB is past MSCCL's 11534336 B: RCCL's ring, LL 12 + 14 x 0.8 = 23.2 us, Simple 17 + 14 x 2.1 = 46.4 us, no LL128
    t = kernels.collective_terms(shipped_root(), record({"op": "allreduce", "ranks": 8, "message_bytes": 2**26, "fabric": "xgmi"}, device="mi300x"))
    assert (t["lat_ring_LL"], t["lat_ring_Simple"]) == pytest.approx((23.2e-6, 46.4e-6), rel=1e-12)
    assert t["lat_ring_LL128"] == t["lat_allpairs_LL"] == INF


def test_rtx_4090s_reduce_over_their_pcie_host_links():
    # no NVLink and no peer-to-peer: the GPUs meet through host memory over PCIe Gen4 x16, 32 GB/s per direction; NCCL's
    # PCI hop latencies, no LL128 off NVLink: 4 ranks, 6 steps, LL 6.6 + 6 x 1.0 = 12.6 us, Simple 8.4 + 6 x 5.7 = 42.6 us
    t = kernels.collective_terms(shipped_root(), record({"op": "allreduce", "ranks": 4, "message_bytes": 8, "fabric": "pcie"},
                                                        device="rtx-4090", gpus=4))
    assert t["link"] == 32e9
    assert (t["lat_ring_LL"], t["lat_ring_Simple"]) == pytest.approx((12.6e-6, 42.6e-6), rel=1e-12)
    assert t["lat_ring_LL128"] == INF


def test_the_fabric_unstated_is_nvlink_in_a_node_and_scaleout_across_nodes():
    assert kernels.fabric_of({}) == "nvlink"
    assert kernels.fabric_of({"nodes": 2}) == "scaleout"
    assert kernels.fabric_of({"nodes": 2, "fabric": "nvlink"}) == "nvlink"  # an NVL72 rack: NVLink across hosts
    assert [kernels.fabric_of({"fabric": f}) for f in ("infiniband", "roce", "ethernet", "pcie", "xgmi")] == [
        "scaleout", "scaleout", "scaleout", "pcie", "xgmi"]
    # the network hops: verbs RDMA (InfiniBand, RoCE) apart from the Ethernet transports (EFA, TCPXO); none in one domain
    assert [kernels.transport_of({"nodes": 2, "fabric": f}) for f in ("infiniband", "roce", "ethernet", "nvlink")] == [
        "rdma", "rdma", "ethernet", "none"]
    assert kernels.transport_of({"nodes": 2}) == "rdma"


def test_pcie_runs_on_the_host_link():
    t = kernels.collective_terms(shipped_root(), record({"op": "broadcast", "ranks": 2, "message_bytes": 4096, "fabric": "pcie"}, gpus=2))
    assert (t["factor"], t["link"], t["fabric"], t["factor_outer"]) == (1.0, 64e9, "pcie", 1.0)


def test_a_one_rank_collective_is_not_evaluated():
    with pytest.raises(Unmapped, match="^a collective over one rank moves nothing$"):
        kernels.collective_terms(shipped_root(), record({"op": "allreduce", "ranks": 1, "message_bytes": GIB}, gpus=1))


@pytest.mark.parametrize(("library", "ranks", "nodes", "intra", "algorithm", "base", "intra_hop", "inter_hop"), [
    ("nccl", 8, 1, "nvlink", "ring", 6.6, 0.6, 0.0),   # NCCL tuning.cc @5067397c: ring LL over NVLink
    ("nccl", 4, 1, "pci", "ring", 6.6, 1.0, 0.0),      # ring LL over PCI
    ("nccl", 32, 4, "nvlink", "tree", 6.8, 0.6, 5.0),  # tree LL, NET tree LL 5.0
    ("rccl", 16, 2, "nvlink", "tree", 12.0, 0.9, 10.5),  # RCCL tuning_model_5: base 12, xGMI tree LL 0.9, NET tree LL 10.5
])
def test_the_tuner_latencies_are_fx711(library, ranks, nodes, intra, algorithm, base, intra_hop, inter_hop):
    # the engine's per-slot latency (inside + across the network) is FX711 with the same constants
    from engine import api
    from engine.measure import nccl_tuning

    cands = nccl_tuning.candidates(library, "allreduce", ranks, nodes, intra, algorithm, False, False, 1024.0)
    local, net, _ = cands[(algorithm, "LL")]
    given = dict(tuner_algorithm=algorithm, base_latency=base * 1e-6, intra_hop_latency=intra_hop * 1e-6, inter_hop_latency=inter_hop * 1e-6,
                 ranks=ranks, scaleup_domains=nodes)
    want = api.evaluate("FX711", **given).outputs["algorithm_latency"].value
    assert local + net == pytest.approx(want, rel=1e-12)
