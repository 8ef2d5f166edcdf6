"""Training step time of hand-built work terms (engine/measure/train.py ``times``), by hand arithmetic.

An 8B-parameter dense model: 6 x 8e9 = 4.8e10 FLOPs per token (forward and backward); 64 sequences of 4096
tokens on 8 GPUs, 64 x 4096 / 8 = 32768 tokens per GPU and 32768 x 4.8e10 = 1.572864e15 FLOPs per GPU per step;
peak 1e15 FLOP/s, HBM 2e12 B/s, NVLink 450e9 B/s, the scale-out NIC 50e9 B/s. The pipeline bubble is 0.2 of
the step (F13 non-interleaved: (p - 1) / (m + p - 1) = 3 / 15 for p = 4 stages and m = 12 micro-batches).
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.measure import train

DENSE = dict(flops=1.572864e15, peak=1e15, bubble=3 / 15, tp_bytes=4.5e10, ep_bytes=5e9, link=450e9, ep_link=50e9, expert_share=0.0,
             per_expert=0.0, elementwise=1e10, hbm=2e12, tokens=32768, per_token=4.8e10)
P = dict(e_train=0.5, exposed=0.5, x_half=64.0, kappa=20.0)


def times(**over) -> dict:
    t = {k: np.array([float(v)]) for k, v in {**DENSE, **over}.items()}
    p = {k: np.array([v]) for k, v in P.items()}
    return {k: float(v[0]) for k, v in train.times(t, p).items()}


def test_dense_step_time_with_a_bubble_by_hand():
    out = times()
    # matmul 1.572864e15 / (1e15 x 0.5) = 3.145728 s; elementwise 20 x 1e10 / 2e12 = 0.1 s;
    # compute (3.145728 + 0.1) / (1 - 0.2) = 4.05716 s
    # exposed communication 0.5 x (4.5e10 / 450e9 + 5e9 / 50e9) = 0.5 x (0.1 + 0.1) = 0.1 s
    step = (3.145728 + 0.1) / 0.8 + 0.1
    assert step == pytest.approx(4.15716, rel=1e-12)
    assert out["step_time"] == pytest.approx(step, rel=1e-12)
    # 32768 tokens / 4.15716 s = 7882.3 tokens/s per GPU; x 4.8e10 = 378.35 TFLOP/s; / 1e15 = MFU 0.378
    assert out["tokens_per_gpu_per_s"] == pytest.approx(32768 / 4.15716, rel=1e-12)
    assert out["model_tflops_per_gpu"] == pytest.approx(32768 / 4.15716 * 4.8e10, rel=1e-12)
    assert out["mfu"] == pytest.approx(32768 / 4.15716 * 4.8e10 / 1e15, rel=1e-12)
    assert out["mfu"] == pytest.approx(0.37835, rel=1e-4)


def test_routed_experts_run_at_the_grouped_gemm_efficiency():
    # half the FLOPs in routed experts, each getting 64 tokens per micro-batch: efficiency 64 / (64 + 64) = 0.5,
    # so the matmul time is 3.145728 x (0.5 + 0.5 / 0.5) = 4.718592 s; no bubble, no elementwise, no communication
    out = times(expert_share=0.5, per_expert=64, bubble=0, elementwise=0, tp_bytes=0, ep_bytes=0)
    assert out["step_time"] == pytest.approx(3.145728 * 1.5, rel=1e-12)
    assert out["step_time"] == pytest.approx(4.718592, rel=1e-12)
