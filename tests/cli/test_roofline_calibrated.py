"""roofline --model prints the totals at the serving calibration's efficiencies (issue 26: every command that predicts a
time names the calibration it used and its held-out band). The line is checked against the formula it states,
max(FLOP / (peak x matrix efficiency), bytes / (bandwidth x HBM efficiency)), with the constants read from
knowledge/calibration/fitted.json and the totals from the same command's JSON."""

from __future__ import annotations

import json
import re

from engine.cli.main import main
from engine.core.paths import shipped_root
from engine.measure.generations import generation


def run(argv, capsys) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def test_the_calibrated_line_applies_the_generation_constants(capsys):
    argv = ["roofline", "--device", "h100-sxm", "--model", "qwen3-8b", "--tokens", "2048"]
    text = run(argv, capsys)
    data = json.loads(run([*argv, "--format", "json"], capsys))
    cal = json.load(open(f"{shipped_root()}/knowledge/calibration/fitted.json", encoding="utf-8"))["serve"]
    gen = generation("h100-sxm")
    e_matrix, e_hbm = cal["parameters"]["e_prefill"][gen], cal["parameters"]["e_hbm"][gen]
    flops, nbytes = data["totals"]["matrix_flops"], data["totals"]["bytes"]
    peak, bandwidth = 989.4e12, 3.35e12  # H100 SXM: the Hopper whitepaper's dense BF16 peak, the datasheet's HBM3 bandwidth
    expected = max(flops / (peak * e_matrix), nbytes / (bandwidth * e_hbm))
    (line,) = [x for x in text.splitlines() if x.startswith("calibrated (prefill;")]
    assert f"serve, {gen})" in line and f"matrix efficiency {e_matrix:.2f}, HBM efficiency {e_hbm:.2f}" in line
    seconds = float(re.search(r"-> ([0-9.e+-]+) s", line).group(1))
    assert abs(seconds / expected - 1) < 1e-3  # printed to 4 significant digits
    assert f"held out, {cal['held_out_within_30']:.0f}% of serving rows within +-30%" in line
