"""``aiinfra roofline --link-bytes``: the interconnect roofline (scaling-book roofline chapter), FX705 against FX706."""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_scaling_book_network_ridge(capsys):
    """scaling-book roofline.md@9810bc63, network roofline: 1.97e14 FLOP/s per chip (TPU v5e BF16, Cloud TPU page 197
    TFLOPs) over 5e10 B/s each direction gives a critical intensity of 1.97e14 / 5e10 = 3940 FLOP/B."""
    code, out, _ = run(["roofline", "--device", "tpu-v5e", "--flops", "1e12", "--bytes", "1e9", "--link-bytes", "1e8",
                        "--link-bandwidth", "5e10B/s", "--format", "json"], capsys)
    assert code == 0
    link = json.loads(out)["link"]
    assert link["outputs"]["link_critical_intensity"]["value"] == pytest.approx(3940)
    # 1e12 FLOP over 1e8 B = 1e4 FLOP/B, above 3940: the transfer (2 ms) hides under the compute (5.08 ms)
    assert link["outputs"]["comm_intensity"]["value"] == pytest.approx(1e4) and link["bottleneck"] == "compute"
    assert link["outputs"]["link_time"]["value"] == pytest.approx(1e8 / 5e10)


def test_h100_nvlink_by_hand(capsys):
    """H100 SXM: 989.4 TFLOPS dense BF16 (Hopper whitepaper) over NVLink 4's 450 GB/s per direction (900 GB/s both,
    datasheet): 989.4e12 / 450e9 = 2198.7 FLOP/B. 2 TFLOP sending 2 GB: 1000 FLOP/B, network-bound, 2e9 / 450e9 = 4.44 ms."""
    code, out, _ = run(["roofline", "--device", "h100-sxm", "--flops", "2TFLOP", "--bytes", "10GB", "--link-bytes", "2GB",
                        "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["link"]["outputs"]["link_critical_intensity"]["value"] == pytest.approx(989.4e12 / 450e9)
    assert data["link"]["bottleneck"] == "network"
    assert data["link"]["outputs"]["link_time"]["value"] == pytest.approx(2e9 / 450e9)
    assert data["link"]["inputs"]["link_bandwidth"]["source"].startswith("hw:h100-sxm: NVLink 4 per direction 450GB/s")
    code, out, _ = run(["roofline", "--device", "h100-sxm", "--flops", "2TFLOP", "--bytes", "10GB", "--link-bytes", "2GB"], capsys)
    assert code == 0 and "network-bound" in out and "FX705, FX706" in out


@pytest.mark.parametrize("argv, message", [
    (["--link-bandwidth", "450GB/s"], "--link-bandwidth: applies with --link-bytes"),
    (["--link-bytes", "-1"], "--link-bytes: expected a value >= 0 B"),
    (["--link-bytes", "1GB", "--link-bandwidth", "0B/s"], "--link-bandwidth: expected a bandwidth above 0 B/s"),
])
def test_bad_link_input(capsys, argv, message):
    code, _, err = run(["roofline", "--device", "h100-sxm", "--flops", "1e12", "--bytes", "1e9", *argv], capsys)
    assert code == 2 and err.startswith(f"aiinfra: error: {message}") and err.count("\n") == 1


def test_a_device_without_a_per_direction_link_asks_for_one(capsys):
    # the RTX 4090 record states no interconnect (no NVLink): the link bandwidth must be given
    code, _, err = run(["roofline", "--device", "rtx-4090", "--flops", "1e12", "--bytes", "1e9", "--link-bytes", "1e8"], capsys)
    assert code == 2 and err.startswith("aiinfra: error: --link-bandwidth: hw:rtx-4090 states no per-direction interconnect")
