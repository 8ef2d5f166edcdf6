"""Issue #33's planner bounds: ``plan serve --max-qps --gpus N`` and ``plan --max-tokens --days D``, by hand
arithmetic and by consistency with the fleet sizing they invert."""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main
from engine.plan.serve import max_qps, plan_serve

ROOT = "."
SERVE = ["plan", "serve", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--prompt", "1024", "--output", "256", "--ttft", "1s", "--tpot", "30ms"]
# a pinned layout of one B200 (TP = CP = PP = DP = 1): its step is F1's FLOPs at the peak x the given efficiency, nothing else
TRAIN = ["plan", "--model", "llama-3.1-8b", "--device", "b200", "--gpus", "1", "--global-batch", "8", "--seq", "2048", "--compute-efficiency", "0.5",
         "--tp", "1", "--cp", "1", "--pp", "1", "--vp", "1", "--ep", "1", "--micro-batch", "1", "--zero", "0", "--recompute", "none"]


def run_json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_max_tokens_by_hand(capsys):
    data = run_json(capsys, [*TRAIN, "--max-tokens", "--days", "2"])
    # Llama-3.1-8B: 8,030,261,248 parameters (Hub safetensors metadata, meta-llama/Llama-3.1-8B@d04e592b), 32 layers,
    # 32 heads of 128. F1 with the attention term: 6 (N + 2 L s a d) FLOPs per token = 6 x (8,030,261,248 + 2 x 32 x 2048 x 32 x 128)
    # = 6 x 8,567,132,160 = 51,402,792,960; a step is 8 x 2048 = 16,384 tokens = 8.4218e14 FLOPs; B200 dense BF16 2.25 PFLOP/s
    # (HGX B200: 36 PFLOPS sparse / 8 / 2) x 0.5 = 1.125e15 FLOP/s -> 0.748607 s per step
    step = 6 * (8_030_261_248 + 2 * 32 * 2048 * 32 * 128) * 16_384 / (2.25e15 * 0.5)
    assert step == pytest.approx(0.748607, rel=1e-6)
    # tokens = 2 d x 86,400 s x 16,384 tokens / 0.748607 s = 3.7819e9 tokens
    assert data["max_tokens"] == pytest.approx(2 * 86_400 * 8 * 2048 / step, rel=1e-12)
    assert data["max_tokens"] == pytest.approx(3.7819e9, rel=1e-4)
    assert data["bound"]["layout"] == {"tp": 1, "cp": 1, "pp": 1, "vp": 1, "dp": 1, "ep": 1, "mb": 1, "zero": 0, "recompute": "none"}
    assert "availability 100%" in data["bound"]["assumptions"][1]


def test_max_tokens_scales_with_days_and_names_the_layout(capsys):
    argv = ["plan", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--gpus", "64", "--global-batch", "512", "--seq", "8192", "--max-tokens"]
    one, two = (run_json(capsys, [*argv, "--days", d]) for d in ("10", "20"))
    assert two["max_tokens"] == pytest.approx(2 * one["max_tokens"], rel=1e-12)
    best = one["configurations"][0]  # the plan's fastest layout is the one counted
    assert one["max_tokens"] == pytest.approx(10 * 86_400 * 512 * 8192 / best["step_time"], rel=1e-12)
    assert main([*argv, "--days", "10"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("max tokens in 10 days on 64 GPUs: ") and "\nlayout: TP " in out


def test_max_qps_is_replicas_times_goodput_at_the_waterline(capsys):
    data = run_json(capsys, [*SERVE, "--max-qps", "--gpus", "8"])
    x = data["layout"]
    assert x["mode"] == "colocate" and x["replicas"] == 8 // x["gpus_per_instance"] and x["gpus_used"] <= 8
    # FX138 with Little's law (FX81, FX79): goodput = batch x output / (TTFT + (output - 1) x TPOT)
    assert x["goodput"] == pytest.approx(x["batch"] * 256 / (x["ttft"] + 255 * x["tpot"]), rel=1e-9)
    # FX87 inverted at its waterline 0.7: ceil(D / (goodput x 0.7)) <= replicas <=> D <= replicas x goodput x 0.7; qps = D / 256 (FX86)
    assert data["waterline"] == 0.7
    assert data["max_qps"] == pytest.approx(x["replicas"] * x["goodput"] * 0.7 / 256, rel=1e-12)
    assert x["ttft"] <= 1 and x["tpot"] <= 0.030 and data["binding"].startswith(("TPOT", "TTFT", "memory"))
    # twice the GPUs, twice the whole replicas of the same best layout: twice the rate
    assert run_json(capsys, [*SERVE, "--max-qps", "--gpus", "16"])["max_qps"] == pytest.approx(2 * data["max_qps"], rel=1e-12)


@pytest.mark.parametrize(("model", "prompt", "output", "ttft", "tpot", "gpus"), [
    ("llama-3.1-8b", 1024, 256, 1.0, 0.030, 8),  # co-located wins
    ("llama-3.1-8b", 8192, 256, 1.0, 0.015, 16),  # a prefill/decode split wins, capped by its prefill pool
])
def test_max_qps_inverts_the_fleet_sizing(model, prompt, output, ttft, tpot, gpus):
    """The fleet plan serve sizes for the rate found fits in N GPUs; 0.1% more needs more than N (--prune bound, so the
    candidate layouts do not depend on the demand)."""
    common = dict(prompt=prompt, output=output, ttft=ttft, tpot=tpot, mfu=0.5, mbu=0.8, prune="bound")
    m = max_qps(ROOT, model, "h100-sxm", gpus, **common)
    assert m.max_qps > 0
    x = m.layout
    used = x["replicas"] * x["gpus_per_instance"] + x["prefill_instances"] * x["tp_prefill"]
    assert used == x["gpus_used"] <= gpus
    decode = x["replicas"] * x["goodput"] * m.waterline / output
    if x["mode"] == "split":  # the prompt rate the prefill pool carries at the waterline bounds it too
        prefill = x["prefill_instances"] * x["per_prefill"] * m.waterline / prompt
        assert m.max_qps == pytest.approx(min(decode, prefill), rel=1e-12)
    else:
        assert m.max_qps == pytest.approx(decode, rel=1e-12)
    assert plan_serve(ROOT, model, "h100-sxm", qps=m.max_qps * (1 - 1e-9), keep_rows=False, **common).min_gpus <= gpus
    assert plan_serve(ROOT, model, "h100-sxm", qps=m.max_qps * 1.001, keep_rows=False, **common).min_gpus > gpus


def test_max_qps_text(capsys):
    assert main([*SERVE, "--max-qps", "--gpus", "8"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("max request rate on 8 GPUs: ") and "\nlayout: colocate TP " in out and "\nbinding target: " in out
    assert "waterline 0.7 (FX87)" in out


@pytest.mark.parametrize(("argv", "flag"), [
    ([*SERVE, "--max-qps"], "--gpus"),
    ([*SERVE, "--max-qps", "--gpus", "0"], "--gpus"),
    ([*SERVE, "--max-qps", "--gpus", "8", "--qps", "3"], "--qps"),
    ([*SERVE, "--max-tokens", "--days", "3"], "--max-tokens"),
    ([*TRAIN, "--max-tokens"], "--days"),
    ([*TRAIN, "--days", "3"], "--days"),
    ([*TRAIN, "--max-tokens", "--days", "0"], "--days"),
    ([*TRAIN, "--max-qps"], "--max-qps"),
])
def test_bad_input_is_one_line_naming_the_flag(capsys, argv, flag):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"aiinfra: error: {flag}")
