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


def test_an_8_rank_ring_allreduce_of_1_gib_by_hand():
    # factor 2 (n - 1) / n = 2 x 7 / 8 = 1.75; ring steps 2 (n - 1) = 14
    t = arr(size=GIB, factor=2 * 7 / 8, steps=14, link=450e9)
    p = arr(latency=5e-6, e_link=0.8)
    # 14 x 5e-6 + 2^30 x 1.75 / (450e9 x 0.8) = 7e-5 + 1879048192 / 3.6e11 = 7e-5 + 5.21958e-3 = 5.28958e-3 s
    time = 14 * 5e-6 + 1879048192 / 3.6e11
    out = kernels.collective_times(t, p)
    assert out["time"][0] == pytest.approx(time, rel=1e-12)
    assert out["time"][0] == pytest.approx(5.28958e-3, rel=1e-5)
    # algbw = 2^30 / 5.28958e-3 s = 203.0 GB/s; busbw = x 1.75 = 355.2 GB/s
    assert out["algorithm_bandwidth"][0] == pytest.approx(GIB / time, rel=1e-12)
    assert out["bus_bandwidth"][0] == pytest.approx(1.75 * GIB / time, rel=1e-12)
    assert out["bus_bandwidth"][0] == pytest.approx(355.2e9, rel=1e-3)


def test_collective_terms_of_an_nvlink_ring_allreduce():
    t = kernels.collective_terms(shipped_root(), record({"op": "allreduce", "ranks": 8, "message_bytes": GIB}))
    # one scale-up domain: no inner share (0, over a unit link), the outer factor is the whole factor
    assert t == {"size": GIB, "factor": 1.75, "steps": 14.0, "link": 450e9, "fabric": "nvlink", "inner": 0.0, "inner_link": 1.0, "factor_outer": 1.75}


@pytest.mark.parametrize("workload", [{"fabric": "nvls"}, {"fabric": "nvlink", "algorithm": "NVLS"}])
def test_an_nvls_allreduce_takes_two_steps(workload):
    # the switch reduces: 2 steps whatever the rank count; the bytes still cross at 2 (n - 1) / n = 1.75
    t = kernels.collective_terms(shipped_root(), record({"op": "allreduce", "ranks": 8, "message_bytes": GIB, **workload}))
    assert (t["steps"], t["factor"], t["link"]) == (2.0, 1.75, 450e9)


def test_roce_runs_on_the_scaleout_nic_per_gpu():
    # one 400 Gb/s NIC per GPU = 50 GB/s; an all-gather over 16 ranks on 2 nodes of 8 (H100 SXM, NVLink 450 GB/s per direction)
    # runs hierarchically: inside a node (8 - 1) / 8 = 7/8 of the message over NVLink, across the 2 nodes (2 - 1) / 2 = 1/2 of it
    # shared by the node's 8 NICs, 1/16 per GPU; steps 7 + 1 = 8; nccl-tests' busbw factor stays the 16 ranks' 15/16
    t = kernels.collective_terms(shipped_root(), record({"op": "allgather", "ranks": 16, "nodes": 2, "message_bytes": 1024, "fabric": "roce"},
                                                        gpus=16))
    assert t == {"size": 1024.0, "factor": 15 / 16, "steps": 8.0, "link": 50e9, "fabric": "scaleout", "inner": 7 / 8, "inner_link": 450e9,
                 "factor_outer": 1 / 16}


def test_the_fabric_unstated_is_nvlink_in_a_node_and_scaleout_across_nodes():
    assert kernels.fabric_of({}) == "nvlink"
    assert kernels.fabric_of({"nodes": 2}) == "scaleout"
    assert kernels.fabric_of({"nodes": 2, "fabric": "nvlink"}) == "nvlink"  # an NVL72 rack: NVLink across hosts
    assert [kernels.fabric_of({"fabric": f}) for f in ("infiniband", "roce", "ethernet", "pcie", "xgmi")] == [
        "scaleout", "scaleout", "scaleout", "pcie", "xgmi"]


def test_pcie_runs_on_the_host_link():
    t = kernels.collective_terms(shipped_root(), record({"op": "broadcast", "ranks": 2, "message_bytes": 4096, "fabric": "pcie"}, gpus=2))
    assert t == {"size": 4096.0, "factor": 1.0, "steps": 1.0, "link": 64e9, "fabric": "pcie", "inner": 0.0, "inner_link": 1.0, "factor_outer": 1.0}


def test_a_one_rank_collective_is_not_evaluated():
    with pytest.raises(Unmapped, match="^a collective over one rank moves nothing$"):
        kernels.collective_terms(shipped_root(), record({"op": "allreduce", "ranks": 1, "message_bytes": GIB}, gpus=1))
