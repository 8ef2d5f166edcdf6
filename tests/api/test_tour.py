"""``make run``'s tour (engine/tour.py): it exits 0, stays short (issue 28: about 100 lines) and shows results.

The tour is the Quick start's main job after ``aiinfra check``; a step that fails makes ``make run`` fail, so each
step's exit code counts (the pd-disaggregation boundary step once exited 2 on a device preset's MFU range)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_tour_runs_every_step_and_stays_short():
    out = subprocess.run([sys.executable, "-m", "engine.tour"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    lines = out.stdout.splitlines()
    assert len(lines) <= 100, len(lines)
    text = re.sub(r"[\u00a0\u2009\u202f]", " ", out.stdout)  # digit groups print with a thin space
    # Qwen3-8B (config.json: 36 layers, 8 KV heads, head_dim 128) in BF16: 2 (K and V) x 36 x 8 x 128 x 2 B = 147,456 B
    assert "kv_bytes_per_token = 147 456 B/tokens" in text
    # F2: 6.3e24 / (1024 x 989e12 x 0.40) = 1.5554e7 s, 180.0 days
    assert "train_time = 1.555e7 s  (180 d)" in text
    # F2 solved: MFU >= 6.3e24 / (1024 x 989e12 x 120 x 86,400 s) = 0.599997
    assert "mfu in [0.599997, 1]" in text
    # every step prints its command and either its whole output or how much it left out
    assert text.count("\n$ aiinfra ") >= 8
    assert "prompt_tokens = " in text  # the pd-disaggregation boundary with the device's presets
