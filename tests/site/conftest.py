"""A hand-built ``aiinfra validate`` result for the Accuracy page, so no site test waits for a real run.

Its rows are the rows of tests/fixtures/roots/accuracy/ (three files copied from knowledge/measurements/:
Azure's H100 cuBLASLt FP8 GEMM and NCCL all-reduce tables, and ml-engineering's MAMF BF16 row for H100
SXM); the measured values are the files' own, the predictions are made up for the test, and the summary is
scored from them by ``engine.measure.validate.score``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ACCURACY_ROOT = Path(__file__).parent.parent / "fixtures" / "roots" / "accuracy"
GEMM = "meas:azure-nd-h100-gemm-cublaslt-fp8"
NCCL = "meas:azure-nd-h100-v5-nccl-allreduce"
MAMF = "meas:mle-mamf-bf16"
# (source, row, kind, metric, measured in its canonical unit, held-out prediction)
ROWS = (
    (GEMM, "gemm-1024x1024x1024", "gemm", "tflops", 274.1e12, 822.3e12),  # x3.00: the worst
    (GEMM, "gemm-4096x4096x4096", "gemm", "tflops", 1216.9e12, 1100e12),
    (GEMM, "gemm-8192x8192x8192", "gemm", "tflops", 1290.1e12, 1250e12),
    (GEMM, "gemm-1024x2145x1024", "gemm", "tflops", 410.7e12, 700e12),
    (MAMF, "h100-sxm", "gemm", "tflops", 794.5e12, 620e12),
    (NCCL, "allreduce-8g", "collective", "bus_bandwidth", 478.87e9, 360e9),
    (NCCL, "allreduce-1g", "collective", "bus_bandwidth", 466.35e9, 358e9),
    (NCCL, "allreduce-268m", "collective", "bus_bandwidth", 423.38e9, 355e9),
)
UNMAPPED = (
    dict(id=f"{MAMF}/h100-sxm-tp", kind="serve", model="qwen3-8b", device="h100-sxm", metric="ttft", why="8 GPUs are not a multiple of TP x EP = 16"),
    dict(id=f"{MAMF}/h100-sxm-ep", kind="serve", model="qwen3-8b", device="h100-sxm", metric="ttft", why="4 GPUs are not a multiple of TP x EP = 32"),
)


def hand_result():
    from engine.measure.validate import Result, score

    rows, summary = [], {}
    for source, name, kind, metric, measured, predicted in ROWS:
        group = "hopper" if kind == "gemm" else "nvls"
        rows.append(dict(id=f"{source}/{name}", source=source, kind=kind, metric=metric, statistic="single", model=None, device="h100-sxm",
                         gpus=8 if kind == "collective" else 1, layout={}, measured=measured, unit="FLOP/s" if kind == "gemm" else "B/s",
                         in_sample=(measured + predicted) / 2, held_out=predicted, ratio=predicted / measured, where="", engine="",
                         group=group, capped=False))
    for kind in ("gemm", "collective"):
        mine = [r for r in rows if r["kind"] == kind]
        meas = np.array([r["measured"] for r in mine])
        summary[kind] = {"in_sample": score(np.array([r["in_sample"] for r in mine]), meas),
                         "held_out": score(np.array([r["held_out"] for r in mine]), meas)}
    calibration = {"gemm": {"e_gemm": {"shared": 0.71, "hopper": 0.70}, "launch": {"shared": 6.0e-6}},
                   "collective": {"latency": {"shared": 3.9e-6, "nvls": 1.5e-5}, "e_link": {"shared": 0.85, "nvls": 0.94}}}
    sources = {"gemm": ["azure-ai-benchmarking-guide", "ml-engineering"], "collective": ["azure-ai-benchmarking-guide"]}
    return Result(tuple(rows), UNMAPPED, summary, calibration, sources)


@pytest.fixture(scope="session")
def validate_result():
    return hand_result()


@pytest.fixture
def fake_run(validate_result):
    """A stand-in for ``engine.measure.validate.run`` that counts its calls."""

    def run(root, **kwargs):
        run.calls += 1
        return validate_result

    run.calls = 0
    return run
