"""Every CLI command's JSON stays identical across refactors (issues 12 and 14).

These snapshots are a regression guard, not a source of truth: the numbers in them are checked
against papers, datasheets and the books elsewhere (the worked examples run by ``aiinfra check``
and the calculator tests). What this test asserts is only that a change of layout or a speed-up
(lazy imports, caches, fast paths) does not change any answer a user or script gets.

The snapshots in tests/golden/ were written from main before the stage-package layout (issue 14)
landed. When a change is *meant* to alter an output, rewrite them with
``AIINFRA_GOLDEN=write python -m pytest tests/cli/test_golden_json.py`` and say why in the commit.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from engine.cli.main import main

GOLDEN = Path(__file__).resolve().parents[1] / "golden"

F8 = ["--set", "attention=gqa", "--set", "layers=36", "--set", "kv_heads=8", "--set", "head_dim=128", "--set", "kv_bytes=2B"]
COMMANDS = {
    "formula-list": ["formula", "list"],
    "formula-show-f8": ["formula", "show", "F8"],
    "formula-eval-f8": ["formula", "eval", "F8", *F8],
    "formula-eval-f2": ["formula", "eval", "F2", "--set", "train_flops=6.3e24", "--set", "n_gpus=1024",
                        "--set", "peak_flops=989TFLOP/s", "--set", "mfu=0.35..0.45"],
    "formula-solve-f2": ["formula", "solve", "F2", "--for", "mfu", "--set", "train_flops=6.3e24", "--set", "n_gpus=1024",
                         "--set", "peak_flops=989TFLOP/s", "--le", "90d"],
    "graph-stats": ["graph", "stats"],
    "model-list": ["model", "list"],
    "model-show-qwen3-8b": ["model", "show", "qwen3-8b"],
    "model-show-deepseek-v3": ["model", "show", "deepseek-v3"],
    "hardware-list": ["hardware", "list"],
    "hardware-show-h100": ["hardware", "show", "h100-sxm"],
    "roofline-flops": ["roofline", "--device", "h100-sxm", "--precision", "bf16", "--flops", "2.5e12", "--bytes", "16GB"],
    "roofline-model": ["roofline", "--device", "h100-sxm", "--model", "qwen3-8b", "--tokens", "2048"],
    "forward-prefill": ["forward", "--model", "qwen3-8b", "--tokens", "2048"],
    "forward-decode": ["forward", "--model", "qwen3-8b", "--tokens", "1", "--history", "8192"],
    "forward-moe": ["forward", "--model", "qwen3-30b-a3b", "--tokens", "16"],
    "generate-deepseek": ["generate", "--model", "deepseek-v3", "--history", "4096", "--steps", "256"],
    "collective-ring": ["collective", "ring", "--op", "allreduce", "--ranks", "8", "--bytes", "1GiB", "--bandwidth", "50GB/s"],
    "tree-list": ["tree", "list"],
    "tree-walk-pd": ["tree", "walk", "pd-disaggregation", "--model", "qwen3-8b", "--set", "latency_slo=offline"],
    "tree-boundary-checkpoint": ["tree", "boundary", "checkpoint-strategy", "--for", "mtbf", "--set", "checkpoint_mode=sync",
                                 "--set", "checkpoint_durable_time=60s"],
    "tree-regions-prefix": ["tree", "regions", "prefix-cache-tier"],
    "path-list": ["path", "list"],
    "path-for": ["path", "for", "上线一个推理服务"],
    "path-prereq": ["path", "prereq", "24"],
    "arch-list": ["arch", "list"],
    "arch-show-ra-02": ["arch", "show", "ra-02"],
    "calc-list": ["calc", "list"],
    "calc-kv-concurrency": ["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes=2",
                            "--set", "context_tokens=8192"],
    "calc-training-memory": ["calc", "training-memory", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--set", "tp_size=8",
                             "--set", "pp_size=4", "--set", "dp_size=32", "--set", "zero_stage=1", "--set", "seq_len=8192",
                             "--set", "micro_batch=1", "--set", "recompute=selective"],
    "calc-training-duration": ["calc", "training-duration", "--model", "llama-3.1-405b", "--device", "h100-sxm",
                               "--set", "train_tokens=15.6T", "--set", "n_gpus=16384"],
    "calc-inference-capacity": ["calc", "inference-capacity", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes=2",
                                "--set", "batch_size=64", "--set", "prompt_tokens=2048", "--set", "avg_output_tokens=256"],
    "calc-serving-fleet": ["calc", "serving-fleet", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--set", "qps=50",
                           "--set", "prompt_tokens=2048", "--set", "avg_output_tokens=256", "--set", "ttft_target=1s",
                           "--set", "tpot_target=50ms"],
    "calc-power-tco": ["calc", "power-tco", "--set", "n_gpus=1000", "--set", "gpu_tdp=1000W", "--set", "it_power_model=host_factor",
                       "--set", "host_overhead=1.4", "--set", "pue=1.2..1.4", "--set", "electricity_price=0.6CNY/kWh",
                       "--set", "capex_per_gpu=200000CNY", "--set", "depreciation_period=4"],
    "calc-checkpoint-window": ["calc", "checkpoint-window", "--set", "mtbf=10h", "--set", "checkpoint_stall=30s",
                               "--set", "restart_time=600s"],
    "calc-collective": ["calc", "collective", "--set", "collective=allreduce", "--set", "ranks=8", "--set", "msg_bytes=1GiB",
                        "--set", "eff_bandwidth=450GB/s", "--set", "step_latency=5us"],
}
# wall-clock figures, never part of an answer
VOLATILE = re.compile(r'"(seconds|elapsed|elapsed_s|built_at|time_s)": [0-9.e+-]+')


def _run(argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main([*argv, "--format", "json"])
    out, _ = capsys.readouterr()
    return code, VOLATILE.sub(r'"\1": 0', out)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_is_unchanged(name, capsys):
    code, out = _run(COMMANDS[name], capsys)
    path = GOLDEN / f"{name}.json"
    if os.environ.get("AIINFRA_GOLDEN") == "write":
        path.write_text(json.dumps({"argv": COMMANDS[name], "exit": code, "stdout": out}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["argv"] == COMMANDS[name], "the command changed: rewrite its snapshot on purpose"
    assert (code, out) == (saved["exit"], saved["stdout"])


def test_every_snapshot_has_a_command():
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(COMMANDS)
