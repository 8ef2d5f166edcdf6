"""``aiinfra plan serve``: one point by hand, the Pareto front, the fewest GPUs, bad input."""

from __future__ import annotations

import pytest

from engine.cli.main import main
from engine.plan.serve import pareto, plan_serve

# Llama-3.1-8B: 8,030,261,248 parameters (Hub safetensors metadata, knowledge/models/llama-3.1-8b.yaml),
# 32 layers, 32 heads, 8 KV heads, head_dim 128 (config.json). H100 SXM: 80 GB, 3.35 TB/s (datasheet),
# 989.4 TFLOPS dense BF16 (Hopper whitepaper), measured MFU 0.38..0.43 -> 0.405 (Llama 3 paper Table 4).
N = 8_030_261_248


@pytest.fixture(scope="module")
def result():
    return plan_serve(".", "llama-3.1-8b", "h100-sxm", prompt=1024, output=256, ttft=10.0, tpot=1.0, demand=50_000, max_batch=64)


def test_one_point_by_hand(result):
    row = next(r for r in result.rows if r["tp"] == 1 and r["batch"] == 1)
    kv_token = 2 * 32 * 8 * 128 * 2  # F8 gqa: K and V x layers x kv_heads x head_dim x 2 B = 131,072 B
    step = (2 * N + 1 * (1024 + 256 / 2) * kv_token) / 3.35e12  # FX75 memory_bound at the mean context
    assert row["tpot"] == pytest.approx(step, rel=1e-12)
    prefill = 2 * (N + 2 * 32 * 1024 * 32 * 128) * 1024 / (989.4e12 * 0.405)  # FX30 include x prompt / (peak x MFU), FX74
    assert row["ttft"] == pytest.approx(prefill, rel=1e-12)
    assert row["memory"] == pytest.approx(2 * N + (1024 + 256) * kv_token)
    assert row["tokens_per_s_per_gpu"] == pytest.approx(1 / step)


def test_front_is_not_dominated(result):
    front = result.front
    assert front and all(a["user_tokens_per_s"] >= b["user_tokens_per_s"] and a["tokens_per_s_per_gpu"] < b["tokens_per_s_per_gpu"]
                         for a, b in zip(front, front[1:], strict=False))
    for r in result.rows:  # no feasible point beats a front point on both axes
        for f in front:
            assert not (r["user_tokens_per_s"] > f["user_tokens_per_s"] and r["tokens_per_s_per_gpu"] > f["tokens_per_s_per_gpu"])


def test_pareto_by_hand():
    rows = [dict(tp=1, batch=b, user_tokens_per_s=u, tokens_per_s_per_gpu=g) for b, u, g in ((1, 100, 10), (2, 90, 20), (3, 80, 15), (4, 70, 30))]
    assert [r["batch"] for r in pareto(rows)] == [1, 2, 4]  # (80, 15) is beaten by (90, 20)


def test_fewest_gpus_meet_the_demand(result):
    for r in result.rows:
        replicas = -(-50_000 // (r["tokens_per_s_per_gpu"] * r["tp"]))
        assert replicas * r["tp"] >= result.min_gpus
    assert result.min_gpus == result.replicas * int(result.best["min_gpus_layout"].split()[1])


def test_cli_serve_and_bad_input(capsys):
    base = ["plan", "serve", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--prompt", "1024", "--output", "256", "--max-batch", "8"]
    assert main(base + ["--ttft", "500ms", "--tpot", "50ms", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "tp,batch,ttft_ms,tpot_ms,user_tokens_per_s,tokens_per_s_per_gpu"
    assert main(base + ["--ttft", "500GB", "--tpot", "50ms"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--ttft" in err[0]
    assert main(base + ["--ttft", "500ms"]) == 2
    assert "--tpot" in capsys.readouterr().err
