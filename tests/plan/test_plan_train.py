"""The training planner: memory and step-time terms by hand arithmetic, constraints, the CLI."""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main
from engine.plan.evaluate import describe
from engine.plan.space import AXES, build

ROOT = "."


def index(space, **values) -> int:
    values.setdefault("cp", 1)
    values.setdefault("vp", 1)
    i = 0
    for axis in AXES:
        options = getattr(space, axis)
        i = i * len(options) + options.index(values[axis])
    return i


@pytest.fixture(scope="module")
def space70():
    return build(ROOT, "llama-3.1-70b", "h100-sxm", 1024, global_batch=1024, seq=8192)


def test_memory_and_compute_of_one_layout_by_hand(space70):
    row = describe(space70, index(space70, tp=8, pp=4, ep=1, mb=1, zero=1, recompute="full"))
    assert row["feasible"] and row["dp"] == 32  # 1024 / (8 x 4)
    # Llama-3.1-70B: 70,553,706,496 parameters (Hub safetensors metadata, meta-llama/Llama-3.1-70B@349b2ddb),
    # hidden 8192, 80 layers, 64 heads, head_dim 128 (config.json). ZeRO-1, F4: (2 + 2 + 12/32) x N / (8 x 4)
    n = 70_553_706_496
    assert row["states"] == pytest.approx((2 + 2 + 12 / 32) * n / 32, rel=1e-12)
    # full recompute, F5: 2 s b h / sp (sp = tp = 8); FX104 (pp > 1): L x that + 1 x s b h pp / sp
    per_layer = 2 * 8192 * 1 * 8192 / 8
    assert row["activations"] == pytest.approx(80 * per_layer + 8192 * 8192 * 4 / 8, rel=1e-12)
    # usable memory, F7: 80e9 x 0.9 x (1 - 0.12) = 63.36e9 B (H100 SXM 80 GB, NVIDIA datasheet)
    assert row["usable"] == pytest.approx(63.36e9)
    # F1 with the attention term: 6 (N + 2 L s a d) per token, 1024 x 8192 tokens, over 1024 x 989.4e12 x 0.6
    flops = 6 * (n + 2 * 80 * 8192 * 64 * 128) * 1024 * 8192
    assert row["compute"] == pytest.approx(flops / (1024 * 989.4e12 * 0.6), rel=1e-12)
    # F13: (p - 1)/(m + p - 1) with m = 1024 / (32 x 1) = 32 micro-batches
    assert row["bubble_fraction"] == pytest.approx(3 / 35)


def test_layout_constraints(space70):
    assert not describe(space70, index(space70, tp=16, pp=4, ep=1, mb=1, zero=1, recompute="full"))["feasible"]  # TP beyond NVLink 8
    assert not describe(space70, index(space70, tp=3, pp=4, ep=1, mb=1, zero=1, recompute="full"))["feasible"]  # 1024 % 12 != 0
    assert not describe(space70, index(space70, tp=8, pp=3, ep=1, mb=1, zero=1, recompute="full"))["feasible"]  # 1024 % 24 != 0
    assert not describe(space70, index(space70, tp=1, pp=1, ep=1, mb=1, zero=0, recompute="none"))["feasible"]  # 16 x 70.6e9 B > 63.36e9


def test_uneven_pipeline_stages_by_hand(space70):
    # PP 32 over 80 layers: the heaviest stage holds ceil(80 / 32) = 3 layers, so the pipeline paces
    # as 32 x 3 = 96 layers: compute is F1's over 1024 x 989.4e12 x 0.6, times 96 / 80
    row = describe(space70, index(space70, tp=8, pp=32, ep=1, mb=1, zero=1, recompute="full"))
    assert row["dp"] == 4 and row["stage_layers"] == 3
    n = 70_553_706_496
    flops = 6 * (n + 2 * 80 * 8192 * 64 * 128) * 1024 * 8192
    assert row["compute"] == pytest.approx(flops / (1024 * 989.4e12 * 0.6) * 96 / 80, rel=1e-12)
    # F4 (ZeRO-1) of the heaviest stage: (2 + 2 + 12/4) x N x 96/80 / (8 x 32)
    assert row["states"] == pytest.approx((2 + 2 + 12 / 4) * n * 96 / 80 / (8 * 32), rel=1e-12)


def test_context_parallel_terms_by_hand():
    # Llama-3.1-405B (config.json: 126 layers, hidden 16384, 128 heads, 8 KV heads of 128) at 131,072
    # tokens on 16,384 H100: TP 8, CP 16, PP 16 -> DP 8 (Table 4's long-context row)
    space = build(ROOT, "llama-3.1-405b", "h100-sxm", 16384, global_batch=128, seq=131072)
    assert space.cp == (1, 2, 4, 8, 16)  # powers of two to 16 whose 2 x CP chunks divide 131,072
    row = describe(space, index(space, tp=8, cp=16, pp=16, ep=1, mb=1, zero=1, recompute="full"))
    assert row["dp"] == 8 and row["n_micro"] == 16  # 128 sequences / (8 x 1)
    # FX720 over a stage of ceil(126 / 16) = 8 layers: 2 x 15/16 x 2 x 131072 x 8 x 128 x 2 B / 8 x 8
    # = 1,006,632,960 B per micro-batch, over the scale-out 50e9 B/s x F20's 0.7 (TP x CP = 128 > 8)
    assert row["cp_comm"] == pytest.approx(16 * 1_006_632_960 / (50e9 * 0.7), rel=1e-12)
    # full recompute, each rank keeps 131072 / 16 = 8192 tokens: F5 = 2 x 8192 x 16384 / 8 per layer
    assert row["activations"] == pytest.approx(128 * 2 * 8192 * 16384 / 8 + 8192 * 16384 * 16 / 8, rel=1e-12)
    # ZeRO-1 shards the optimizer over DP x CP = 128 ranks
    n = 405_853_388_800
    assert row["states"] == pytest.approx((2 + 2 + 12 / 128) * n * 128 / 126 / (8 * 16), rel=1e-9)


def test_cli_text_json_csv(capsys):
    args = ["plan", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--gpus", "64", "--global-batch", "256", "--seq", "4096", "--top", "3"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "binding constraint" in out and "#1 " in out
    assert main(args + ["--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["configurations"]) == 3
    for c in data["configurations"]:
        assert c["tp"] * c["cp"] * c["pp"] * c["dp"] == 64 and c["tp"] <= 8 and c["memory"] <= c["usable"]
    times = [c["step_time"] for c in data["configurations"]]
    assert times == sorted(times)
    assert main(args + ["--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("rank,tp,cp,pp,vp,dp")


@pytest.mark.parametrize(("extra", "field"), [
    (["--gpus", "0"], "--gpus"),
    (["--gpus", "8", "--seq", "-1"], "--seq"),
    (["--gpus", "8", "--compute-efficiency", "1.5"], "--compute-efficiency"),
    (["--gpus", "8", "--top", "0"], "--top"),
])
def test_bad_input_is_one_line_naming_the_field(capsys, extra, field):
    assert main(["plan", "--model", "llama-3.1-8b", "--device", "h100-sxm", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0]


def test_unknown_model_names_the_option(capsys):
    assert main(["plan", "--model", "nope", "--device", "h100-sxm", "--gpus", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("aiinfra: error: --model: no model 'nope'")


def test_zero_stage_ties_are_folded_unless_all(capsys):
    from engine.plan.train import plan

    kw = dict(top=4, global_batch=256, seq=4096, micro_batches=4)
    folded = plan(ROOT, "llama-3.1-8b", "h100-sxm", 64, **kw)
    every = plan(ROOT, "llama-3.1-8b", "h100-sxm", 64, fold=False, **kw)
    layout = ("tp", "pp", "ep", "mb", "recompute")
    # ZeRO 0, 1 and 2 move the same gradient bytes (F15) and so tie exactly; unfolded, the top rows repeat one layout
    assert len({tuple(r[k] for k in layout) + (r["step_time"],) for r in every.rows}) < len(every.rows)
    keys = [tuple(r[k] for k in layout) + (r["step_time"],) for r in folded.rows]
    assert len(keys) == len(set(keys)) == 4 and folded.folded > 0
    top = every.rows[0]
    ties = [r for r in every.rows if all(r[k] == top[k] for k in layout) and r["step_time"] == top["step_time"]]
    assert folded.rows[0]["memory"] == min(r["memory"] for r in ties)  # F4: a higher stage shards more state
    assert folded.rows[0]["zero"] > top["zero"]
    assert main(["plan", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--gpus", "64", "--global-batch", "256", "--top", "4",
                 "--max-micro-batch", "4"]) == 0
    assert "tie on step time were folded" in capsys.readouterr().out
