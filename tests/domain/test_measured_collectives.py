"""Measured collective bus bandwidths on device records (nccl-tests busBw, Azure/AI-benchmarking-guide tables),
and the collective calculator taking one as eff_bandwidth through --device (the book's F20: a measured busBw,
not a discount of the nominal rate)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("name", "busbw", "algorithm", "ranks", "where"), [
    ("h100-sxm", 478.87e9, "nvls", 8, "ND_H100_v5_results.md, AllReduce (NVLS) 8G row: 478.87 GB/s"),
    ("h200", 479.98e9, "nvls", 8, "ND_H200_v5_results.md, AllReduce (NVLS) 8G row: 479.98 GB/s"),
    ("a100-sxm-80gb", 231.58e9, "unstated", 8, "ND_A100_v4_results.md, AllReduce 8G row: 231.58 GB/s"),
    ("gb200", 679.61e9, "ring", 4, "ND_GB200_v6_results.md, AllReduce (ring) 8G row: 679.61 GB/s on one host's 4 GPUs"),
])
def test_published_all_reduce_bus_bandwidth(dev, name, busbw, algorithm, ranks, where):
    bw, m = dev[f"hw:{name}"].measured_bus_bandwidth()
    assert bw == busbw, where
    assert (m["algorithm"], m["ranks"], m["message"]) == (algorithm, ranks, "8GiB")


def test_a_device_without_measurements_has_none(dev):
    assert dev["hw:tpu-v6e"].measured_bus_bandwidth() is None


def test_collective_calculator_uses_the_measured_bus_bandwidth():
    from engine import api

    k = api.load()
    # with no step latency the ring model's bus bandwidth is eff_bandwidth itself: 478.87 GB/s, and the algorithm
    # bandwidth 478.87 x 8 / (2 x 7) = 273.6 GB/s, the "algbw ~275GB/s" NVIDIA's NCCL lead quotes for 8 H100s
    # (nccl-tests issue #212)
    r = k.calculator("collective").run(device="h100-sxm", collective="allreduce", ranks=8, msg_bytes="8GiB", step_latency=0)
    assert r.inputs["eff_bandwidth"].source.startswith("preset hw:h100-sxm: measured all-reduce busBw 478.87GB/s (nvls, 8 ranks")
    assert r.outputs["bus_bandwidth"].value == pytest.approx(478.87e9, rel=1e-12)
    assert r.outputs["alg_bandwidth"].value == pytest.approx(478.87e9 * 8 / 14, rel=1e-12)
    # 8 GiB over 8 ranks: each sends 2 x 7/8 x 2^33 B = 15,032,385,536 B; / 478.87e9 = 31.39 ms
    assert r.outputs["collective_time"].value == pytest.approx(2 * 7 / 8 * 2**33 / 478.87e9, rel=1e-12)
    given = k.calculator("collective").run(device="h100-sxm", collective="allreduce", ranks=8, msg_bytes="8GiB", eff_bandwidth="370GB/s")
    assert given.inputs["eff_bandwidth"].value == 370e9 and given.inputs["eff_bandwidth"].source == "user"  # a user value wins
