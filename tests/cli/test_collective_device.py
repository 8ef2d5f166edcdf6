"""calc collective --device on a device whose record holds no measured busBw (issue 28: every preset-driven command runs
on every device; a missing efficiency is the calibrated one, stated, never 100 % of the link).

eff_bandwidth is the per-rank, one-direction bus bandwidth of the slowest link (knowledge/calculators/collective.yaml:
"the busbw nccl-tests measures"; FX50 divides FX1's wire bytes S x factor by it). aiinfra validate times a collective
as S x factor / (link x e_link) with the link's per-direction figure (engine.measure.kernels.collective_times), so its
busBw = S x factor / time = link x e_link: already a per-direction bus bandwidth, with no algorithm-bandwidth factor to
divide out (algbw = busBw / factor would be the other quantity). The e_link values are read from the data file
knowledge/calibration/fitted.json; the link figures from the device records' cited datasheets, quoted below.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
E_LINK = json.loads((ROOT / "knowledge/calibration/fitted.json").read_text(encoding="utf-8"))["collective"]["parameters"]["e_link"]
GIB = 2**30
ARGS = ["--set", "collective=allreduce", "--set", "ranks=8", "--set", "msg_bytes=1GiB", "--set", "step_latency=20us", "--format", "json"]


def run(device: str, capsys, *extra: str):
    code = main(["calc", "collective", "--device", device, *ARGS, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def ring_allreduce_time(bandwidth: float) -> float:
    # FX50, ring all-reduce over 8 ranks: 2 x 7 steps x 20 us + 2 x 7/8 x 1 GiB / B_eff
    return 2 * 7 * 20e-6 + 2 * 7 / 8 * GIB / bandwidth


@pytest.mark.parametrize(("device", "per_direction", "fabric", "says"), [
    # NVIDIA B200 datasheet (HGX B200): NVLink 5, 1.8 TB/s per GPU both ways -> 900 GB/s per direction
    ("b200", 900e9, "nvlink", "NVLink 5 900GB/s per direction"),
    # AMD MI300X: 7 Infinity Fabric links x 128 GB/s (both ways) = 896 GB/s -> 448 GB/s per direction; RCCL's xGMI fit
    ("mi300x", 448e9, "xgmi", "Infinity Fabric (xGMI) 448GB/s per direction"),
    # GeForce RTX 4090: no NVLink; PCIe 4.0 x16 host link, 16 lanes x 16 GT/s x 128/130 / 8 = 31.5, NVIDIA's rounding 32 GB/s
    ("rtx-4090", 32e9, "pcie", "PCIe Gen4 x16 32GB/s per direction"),
    # NVIDIA L4 datasheet: "Interconnect PCIe Gen4 x16 64GB/s" (both ways) -> 32 GB/s: its interconnect is PCIe
    ("l4", 32e9, "pcie", "PCIe Gen4 x16 32GB/s per direction"),
    # TPU v5p: ICI 600 GB/s per direction per the record; no ICI rows in the calibration: the fit over every fabric
    ("tpu-v5p", 600e9, "shared", "is a fabric without a fit of its own"),
])
def test_the_link_times_the_calibrated_e_link_of_its_fabric(device, per_direction, fabric, says, capsys):
    code, out, err = run(device, capsys)
    assert code == 0, err
    data = json.loads(out)
    bw = data["inputs"]["eff_bandwidth"]
    expected = per_direction * E_LINK[fabric]  # before: exit 2, "needs a value for eff_bandwidth"
    assert bw["value"] == pytest.approx(expected, rel=1e-12), bw["source"]
    assert says in bw["source"] and "not a measurement" in bw["source"] and f"e_link {E_LINK[fabric]:.3f} for {fabric}" in bw["source"]
    assert E_LINK[fabric] < 1  # never the whole link
    assert data["outputs"]["collective_time"]["value"] == pytest.approx(ring_allreduce_time(expected), rel=1e-9)


def test_b200_by_hand(capsys):
    # 900e9 x e_link(nvlink) = 720.55 GB/s with the fit of 2026-12-07 (0.80061); 1 GiB ring all-reduce over 8 ranks:
    # 0.00028 + 1.75 x 1073741824 / 7.2055e11 = 0.00028 + 0.0026078 = 0.0028878 s
    assert E_LINK["nvlink"] == pytest.approx(0.80061, abs=5e-6), "the nvlink fit moved: recompute the hand numbers below"
    code, out, _ = run("b200", capsys)
    assert code == 0
    assert json.loads(out)["outputs"]["collective_time"]["value"] == pytest.approx(0.0028878, rel=1e-4)


def test_a_measured_bus_bandwidth_on_the_record_stays(capsys):
    # h200's record: Azure ND H200 v5, NCCL AllReduce (NVLS) in-place busbw at 8 GiB, 479.98 GB/s
    code, out, err = run("h200", capsys)
    assert code == 0, err
    bw = json.loads(out)["inputs"]["eff_bandwidth"]
    assert bw["value"] == 479.98e9 and "measured all-reduce busBw" in bw["source"]


def test_a_given_bandwidth_wins(capsys):
    code, out, err = run("b200", capsys, "--set", "eff_bandwidth=100GB/s")
    assert code == 0, err
    bw = json.loads(out)["inputs"]["eff_bandwidth"]
    assert bw["value"] == 100e9 and bw["source"] == "user"


@pytest.mark.parametrize(("device", "line"), [
    # AMD MI250X: "8 Infinity Fabric links, ... aggregate 800 GB/s", no direction stated
    ("mi250x", "aiinfra: error: --device: mi250x has no per-direction link bandwidth: its record states Infinity Fabric (xGMI) at 800GB/s, "
               "a figure its vendor does not give a direction for, so calc:collective has no eff_bandwidth for it: give --set "
               "eff_bandwidth=B/s (a measured busBw of the group)\n"),
    ("gh200-hbm3e", "aiinfra: error: --device: gh200-hbm3e has no link to another device on record (no interconnect or host link "
                    "bandwidth), so calc:collective has no eff_bandwidth for it: give --set eff_bandwidth=B/s (a measured busBw of the group)\n"),
])
def test_a_record_without_a_per_direction_link_is_refused_by_name(device, line, capsys):
    code, out, err = run(device, capsys)
    assert (code, out, err) == (2, "", line)


def test_a_record_without_a_link_runs_when_the_bandwidth_is_given(capsys):
    code, out, err = run("gh200-hbm3e", capsys, "--set", "eff_bandwidth=450GB/s")
    assert code == 0, err
    assert json.loads(out)["outputs"]["collective_time"]["value"] == pytest.approx(ring_allreduce_time(450e9), rel=1e-9)
