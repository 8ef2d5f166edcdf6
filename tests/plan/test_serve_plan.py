"""``aiinfra plan serve``: one point by hand, the Pareto front, pruning, executors, the CLI and bad input.

Constants (each read from its source):
Llama-3.1-8B: 8,030,261,248 parameters (Hub safetensors metadata, knowledge/models/llama-3.1-8b.yaml),
32 layers, hidden 4096, 32 heads, 8 KV heads, head_dim 128 (config.json).
H100 SXM: 80 GB and 3.35 TB/s (NVIDIA H100 datasheet, SXM column), 989.4 TFLOPS dense BF16 (Hopper whitepaper),
NVLink 900 GB/s both directions = 450 GB/s per direction (datasheet; knowledge/hardware/h100-sxm.yaml),
measured MFU 0.38..0.43 -> 0.405 (Llama 3 paper Table 4, the device record's measured band).
Formula defaults: F20 bandwidth efficiency 0.7, FX50 step latency 20 us (book calculator comm.collective_time),
FX87 waterline 0.7 (book inference calculator), F7 usable = 80e9 x 0.9 x 0.88.
"""

from __future__ import annotations

import math

import pytest

from engine.cli.main import main
from engine.plan.serve import pareto, plan_serve

N = 8_030_261_248
L, H, A, KVH, D = 32, 4096, 32, 8, 128
PEAK, MFU, HBM_BW, NVLINK = 989.4e12, 0.405, 3.35e12, 450e9
ARGS = dict(prompt=1024, output=256, ttft=0.5, tpot=0.05, max_batch=48)


@pytest.fixture(scope="module")
def everything():
    return plan_serve(".", "llama-3.1-8b", "h100-sxm", prune="none", **ARGS)


def test_one_colocated_point_by_hand(everything):
    row = next(r for r in everything.rows if (r["mode"], r["tp"], r["ep"], r["batch"]) == ("colocate", 2, 1, 4))
    kv = 2 * L * KVH * D * 2  # F8 gqa: K and V x layers x KV heads x head_dim x 2 B = 131,072 B per token
    ctx = 1024 + 256 / 2  # mean context of a decode step
    compute = 4 * 2 * (N + 2 * L * ctx * A * D) / (2 * PEAK * MFU)  # FX131 with FX30 include at the context, TP 2
    reads = (2 * N / 2 + 4 * ctx * kv / 2) / HBM_BW  # FX132 at MBU 1: half the weights, 4 sequences' KV shard
    step = max(compute, reads)  # FX75 roofline
    assert row["step"] == pytest.approx(step, rel=1e-12)
    one = 2 * (2 - 1) * 20e-6 + (2 * (4 * H * 2) * (2 - 1) / 2) / (NVLINK * 0.7)  # FX50 ring: 2(t-1) alpha + FX1 wire bytes / bw
    assert row["tp_comm"] == pytest.approx(2 * L * one, rel=1e-12)  # FX704 = FX703 (2 L) x one all-reduce of FX702's 4 x 4096 x 2 B
    chunk = 2 * (N + 2 * L * 1024 * A * D) * (4 * 1024 / 256) / (2 * PEAK * MFU)  # FX74: 4 x 1024 / 256 prompt tokens per step
    tpot = step + 2 * L * one + chunk  # FX78 standard
    assert row["tpot"] == pytest.approx(tpot, rel=1e-12)
    one_prompt = 2 * (2 - 1) * 20e-6 + (2 * (1024 * H * 2) / 2) / (NVLINK * 0.7)
    ttft = 2 * (N + 2 * L * 1024 * A * D) * 1024 / (2 * PEAK * MFU) + 2 * L * one_prompt  # FX77 = FX74 + its all-reduces
    assert row["ttft"] == pytest.approx(ttft, rel=1e-12)
    goodput = 4 * 256 / (ttft + 255 * tpot)  # FX138 decode slots: batch x output / FX79 end-to-end
    assert row["tokens_per_s_per_gpu"] == pytest.approx(goodput / 2, rel=1e-12)
    assert row["user_tokens_per_s"] == pytest.approx(1 / tpot, rel=1e-12)
    assert row["memory"] == pytest.approx(2 * N / 2 + 4 * (1024 + 256) * kv / 2)
    # no demand: one replica (FX87 of its own goodput at the waterline), 2 GPUs
    assert (row["replicas"], row["fleet_gpus"]) == (1, 2)


def test_split_prefill_pool_by_hand():
    r = plan_serve(".", "llama-3.1-8b", "h100-sxm", prune="none", demand=20_000, **ARGS)
    assert r.tp_prefill == 1  # FX151: 2(N + 2 L s a d) x 1024 / ((0.5 - transfer) x 989.4e12 x 0.405) < 1 card
    row = next(x for x in r.rows if (x["mode"], x["tp"], x["batch"]) == ("split", 1, 16))
    kv = 2 * L * KVH * D * 2
    transfer = 1024 * kv / 50e9  # KV of the prompt over the 400 Gb/s (50 GB/s) link, FX77's queue time
    prefill = 2 * (N + 2 * L * 1024 * A * D) * 1024 / (PEAK * MFU)  # FX74 at TP 1, no all-reduce (FX50 with 1 rank is 0)
    assert row["ttft"] == pytest.approx(transfer + prefill, rel=1e-12)
    goodput = 16 * 256 / (255 * row["tpot"])  # FX138: the decode slot is held for the 255 decode steps
    prefill_rate = 2 * (N + 2 * L * 1024 * A * D) * 1024 * goodput / 256  # FLOP/s of the prompts this instance's requests bring
    assert row["tokens_per_s_per_gpu"] == pytest.approx(goodput / (1 + prefill_rate / (PEAK * MFU)), rel=1e-12)  # FX155 share
    decode = math.ceil(20_000 / (goodput * 0.7))  # FX87
    per_prefill = PEAK * MFU / (2 * (N + 2 * L * 1024 * A * D))  # prompt tokens/s of one TP-1 prefill instance
    prefill_inst = math.ceil(20_000 / 256 * 1024 / (per_prefill * 0.7))  # FX86 prefill demand, FX87
    assert (row["replicas"], row["prefill_instances"], row["fleet_gpus"]) == (decode, prefill_inst, decode + prefill_inst)


def test_front_is_not_dominated(everything):
    front = everything.front
    assert len(front) > 3
    assert all(a["user_tokens_per_s"] >= b["user_tokens_per_s"] and a["tokens_per_s_per_gpu"] < b["tokens_per_s_per_gpu"]
               for a, b in zip(front, front[1:], strict=False))
    for r in everything.rows:  # no feasible point at least as good on both axes and better on one
        for f in front:
            better = (r["user_tokens_per_s"] > f["user_tokens_per_s"] and r["tokens_per_s_per_gpu"] >= f["tokens_per_s_per_gpu"]) or \
                     (r["user_tokens_per_s"] >= f["user_tokens_per_s"] and r["tokens_per_s_per_gpu"] > f["tokens_per_s_per_gpu"])
            assert not better, (r, f)
    for r in everything.rows:
        assert r["ttft"] <= 0.5 and r["tpot"] <= 0.05 and r["memory"] <= 63.36e9  # F7: 80e9 x 0.9 x 0.88


def test_pareto_by_hand():
    rows = [dict(index=b, user_tokens_per_s=u, tokens_per_s_per_gpu=g) for b, u, g in ((1, 100, 10), (2, 90, 20), (3, 80, 15), (4, 70, 30))]
    assert [r["index"] for r in pareto(rows)] == [1, 2, 4]  # (80, 15) is beaten by (90, 20)


def _same(a, b):
    assert a.front == b.front and a.best == b.best and a.cheapest == b.cheapest and a.feasible == b.feasible and a.min_gpus == b.min_gpus


def test_bound_pruning_never_changes_the_result():
    args = dict(ARGS, tpot=0.008, max_batch=128, demand=30_000)
    none = plan_serve(".", "llama-3.1-8b", "h100-sxm", prune="none", **args)
    bound = plan_serve(".", "llama-3.1-8b", "h100-sxm", prune="bound", **args)
    # TP 1, FX134 memory side: (3.35e12 x 0.008 - 2 N) / (1152 x 131,072 B) = (26.8e9 - 16.06e9) / 1.51e8 = 71 sequences < 128
    assert bound.pruned_bound > 0 and none.pruned_bound == 0 and bound.pruned_tree == 0
    _same(none, bound)
    assert bound.rows == none.rows


def test_tree_prunes_split_points_a_whole_prefill_fits():
    # one 1024-token prefill at TP 1: 2 (N + 2 x 32 x 1024 x 32 x 128) x 1024 / (989.4e12 x 0.405) = 42.4 ms, and the decode step at
    # batch 1 about 5 ms (2 N / 3.35e12 = 4.79 ms plus KV): together under the 50 ms TPOT, so the tree's stall test sends every TP-1
    # split point of a small batch to 'colocate'
    kept = plan_serve(".", "llama-3.1-8b", "h100-sxm", prune="bound", **ARGS)
    tree = plan_serve(".", "llama-3.1-8b", "h100-sxm", prune="all", **ARGS)
    assert tree.pruned_tree > 0 and tree.tree_leaves.get("colocate", 0) > 0
    assert sum(tree.tree_leaves.values()) == tree.pruned_tree - tree.pruned_early
    assert any(r["mode"] == "split" and r["tp"] == 1 and r["batch"] == 1 for r in kept.rows)
    assert not any(r["mode"] == "split" and r["tp"] == 1 and r["batch"] == 1 for r in tree.rows)
    missing = [r for r in kept.rows if r not in tree.rows]
    assert missing and all(r["mode"] == "split" for r in missing)
    assert all(r in kept.rows for r in tree.rows)


def test_transfer_boundary_prunes_before_evaluation(monkeypatch):
    # 8,192-token prompts over a 5 GB/s K/V link: moving one prompt's cache takes 8192 x 131,072 B / 5e9 B/s = 0.2147 s.
    # The co-located prefill (FX74, FX30 include: 2 (N + 2 x 32 x 8192 x 32 x 128) x 8192 / (989.4e12 x 0.405) = 0.416 s at TP 1)
    # plus its 2 L = 64 FX50 ring all-reduces of 8192 x 4096 x 2 B = 67,108,864 B over 450 GB/s x 0.7:
    #   TP 2: 0.416 / 2 + 64 x (1/2 x 2 x 67.1e6 / 315e9 + 2 x 20 us) = 0.208 + 0.0162 = 0.224 s > 0.2147: the tree may still split
    #   TP 4: 0.104 + 64 x (3/4 x 2 x 67.1e6 / 315e9 + 6 x 20 us) = 0.104 + 0.0281 = 0.132 s < 0.2147: transfer-bound at any batch
    #   TP 8: 0.052 + 64 x (7/8 x 2 x 67.1e6 / 315e9 + 14 x 20 us) = 0.052 + 0.0418 = 0.094 s: transfer-bound
    # so the 2 TPs x 16 batches of split points at TP 4 and 8 are dropped before their batch terms are computed
    args = dict(prompt=8192, output=512, ttft=2.0, tpot=0.05, max_batch=16, kv_link_bandwidth=5e9, qps=20)
    early = plan_serve(".", "llama-3.1-8b", "h100-sxm", prune="all", **args)
    assert early.pruned_bound == 0 and early.tp_prefill >= 1
    assert early.pruned_early == 2 * 16
    assert early.early_conditions == ("prompt_tokens * kv_bytes_per_token / kv_link_bandwidth <= prefill_time",)
    assert not any(r["mode"] == "split" and r["tp"] >= 4 for r in early.rows)
    assert any(r["mode"] == "split" and r["tp"] == 2 for r in early.rows)  # just inside the boundary
    # the same tree walked after evaluation (nothing decided early) gives the same points, front and best
    import engine.plan.serve_eval as serve_eval

    monkeypatch.setattr(serve_eval, "EARLY", ())
    late = plan_serve(".", "llama-3.1-8b", "h100-sxm", prune="all", **args)
    assert late.pruned_early == 0 and late.pruned_tree == early.pruned_tree
    assert (late.rows, late.front, late.best, late.min_gpus) == (early.rows, early.front, early.best, early.min_gpus)
    assert sum(late.tree_leaves.values()) == late.pruned_tree


def test_process_pool_equals_serial():
    args = dict(ARGS, demand=30_000)
    serial = plan_serve(".", "llama-3.1-8b", "h100-sxm", tile_size=37, **args)
    whole = plan_serve(".", "llama-3.1-8b", "h100-sxm", **args)
    pool = plan_serve(".", "llama-3.1-8b", "h100-sxm", executor="process", workers=2, tile_size=37, **args)
    assert serial.tiles > 5 and pool.tiles == serial.tiles
    for other in (whole, pool):
        _same(serial, other)
        assert (other.pruned_bound, other.pruned_tree, other.tree_leaves, other.points) == \
               (serial.pruned_bound, serial.pruned_tree, serial.tree_leaves, serial.points)
    assert pool.executor == "process"


def test_dask_two_local_workers_equal_serial():
    """plan serve on a local Dask cluster of 2 worker processes over loopback (started and stopped by the
    executor): the tiles reduced on the workers merge to exactly the serial answer."""
    pytest.importorskip("distributed")
    args = dict(ARGS, demand=30_000)
    serial = plan_serve(".", "llama-3.1-8b", "h100-sxm", tile_size=37, **args)
    found = plan_serve(".", "llama-3.1-8b", "h100-sxm", executor="dask", workers=2, tile_size=37, **args)
    assert found.tiles == serial.tiles > 5 and found.executor == "dask"
    _same(serial, found)
    assert (found.pruned_bound, found.pruned_tree, found.tree_leaves, found.points, found.rows) == \
           (serial.pruned_bound, serial.pruned_tree, serial.tree_leaves, serial.points, serial.rows)


def test_moe_searches_expert_parallel_groups():
    r = plan_serve(".", "mixtral-8x7b", "h100-sxm", prompt=1024, output=256, ttft=1.0, tpot=0.05, qps=10, max_batch=32, prune="none")
    assert {x["ep"] for x in r.rows} > {1}  # EP 2, 4, 8 divide Mixtral's 8 experts (config.json num_local_experts 8)
    assert any(x["ep_comm"] > 0 for x in r.rows if x["ep"] > 1) and all(x["ep_comm"] == 0 for x in r.rows if x["ep"] == 1)


BASE = ["plan", "serve", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--prompt", "1024", "--output", "256", "--max-batch", "16"]


def test_cli_table_csv_svg(capsys, tmp_path):
    assert main(BASE + ["--ttft", "500ms", "--tpot", "50ms", "--demand", "20000"]) == 0
    out = capsys.readouterr().out
    assert "pruned " in out and "by the pd-disaggregation tree" in out and "fewest GPUs meeting the targets for 20000 tok/s" in out
    assert main(BASE + ["--ttft", "500ms", "--tpot", "50ms", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "mode,tp,ep,batch,tp_prefill,ttft_ms,tpot_ms,tp_comm_ms,user_tokens_per_s,tokens_per_s_per_gpu,fleet_gpus"
    pytest.importorskip("matplotlib")
    svg = tmp_path / "front.svg"
    assert main(BASE + ["--ttft", "500ms", "--tpot", "50ms", "--svg", str(svg)]) == 0
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()


@pytest.mark.parametrize(("extra", "field"), [
    (["--ttft", "500GB", "--tpot", "50ms"], "--ttft"),
    (["--ttft", "500ms"], "--tpot"),
    (["--ttft", "500ms", "--tpot", "0ms"], "--tpot"),
    (["--ttft", "500ms", "--tpot", "50ms", "--demand", "10", "--qps", "1"], "--qps"),
    (["--ttft", "500ms", "--tpot", "50ms", "--mbu", "1.5"], "--mbu"),
    (["--ttft", "500ms", "--tpot", "50ms", "--waterline", "0"], "--waterline"),
    (["--ttft", "500ms", "--tpot", "50ms", "--svg", "front.png"], "--svg"),
    (["--ttft", "500ms", "--tpot", "50ms", "--allreduce-latency", "-1us"], "--allreduce-latency"),
])
def test_bad_input_is_one_line_naming_the_field(capsys, extra, field):
    assert main(BASE + extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0]


def test_unknown_model_names_the_option(capsys):
    assert main(["plan", "serve", "--model", "llama-9", "--device", "h100-sxm", "--prompt", "1024", "--output", "256", "--ttft", "1s", "--tpot", "50ms"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("aiinfra: error: --model: no model 'llama-9'")


def test_bad_output_length(capsys):
    assert main(["plan", "serve", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--prompt", "1024", "--output", "0", "--ttft", "1s", "--tpot", "50ms"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--output" in err[0]


def test_serve_path_does_not_import_sympy():
    import subprocess
    import sys

    code = ("import sys; from engine.plan.serve import plan_serve; "
            "plan_serve('.', 'llama-3.1-8b', 'h100-sxm', prompt=1024, output=256, ttft=0.5, tpot=0.05, max_batch=8); "
            "print('sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip() == "False"


WIDE = ["plan", "serve", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--prompt", "1024", "--output", "256", "--ttft", "500ms", "--tpot", "50ms"]


def _table_rows(out: str) -> list[str]:
    """The rows of the first text table in ``out``: the lines after its dashes up to the blank line."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("--------"))
    return lines[start + 1:lines.index("", start)]


def test_text_prints_the_knee_and_about_ten_points_all_prints_every_one(capsys):
    import json

    assert main(WIDE + ["--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    front, knee = data["front"], data["knee"]
    assert len(front) > 20 and knee in front  # JSON keeps every point of the front, the knee among them
    assert main(WIDE) == 0
    out = capsys.readouterr().out
    rows = _table_rows(out)
    assert 10 <= len(rows) <= 11  # both ends, the knee and points spread along the front
    marked = [r.split() for r in rows if r.endswith("knee")]
    assert len(marked) == 1 and (marked[0][0], int(marked[0][1]), int(marked[0][3])) == (knee["mode"], knee["tp"], knee["batch"])
    assert f"{len(rows)} of the front's {len(front):,} points shown" in out and f"{len(front) - len(rows):,} left out" in out
    assert "--all prints every point" in out and f"knee of the front: {knee['mode']} TP {knee['tp']}, batch {knee['batch']}" in out
    assert main(WIDE + ["--all"]) == 0
    out = capsys.readouterr().out
    assert len(_table_rows(out)) == len(front) and "left out" not in out
    assert main(WIDE + ["--format", "csv"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + len(front)  # CSV is for scripts: every point, as JSON


def _tp_comm(t: int, tokens: int) -> float:
    """FX704: 2 L all-reduces of tokens x H x 2 B, each an FX50 ring over t GPUs (20 us a step, NVLink x 0.7)."""
    return 2 * L * (2 * (t - 1) * 20e-6 + 2 * (tokens * H * 2) * (t - 1) / t / (NVLINK * 0.7))


def test_nothing_meets_the_targets_gives_the_lowest_ttft_and_tpot_by_hand(capsys):
    r = plan_serve(".", "llama-3.1-8b", "h100-sxm", **{**ARGS, "tpot": 1e-3})
    assert r.best is None and not r.front
    kv, ctx = 2 * L * KVH * D * 2, 1024 + 256 / 2
    # TTFT: one prompt's FX74 prefill on t GPUs and its all-reduces (FX77, no queue), per TP 1, 2, 4, 8:
    # 42.4, 25.5, 20.8, 26.2 ms -> TP 4; the split's TTFT (prefill on TP 1 plus the K/V transfer) is above TP 1's
    ttft = {t: 2 * (N + 2 * L * 1024 * A * D) * 1024 / (t * PEAK * MFU) + _tp_comm(t, 1024) for t in (1, 2, 4, 8)}
    assert min(ttft, key=ttft.get) == 4
    best = r.reach["ttft"]
    assert (best["mode"], best["tp"], best["batch"]) == ("colocate", 4, 1) and best["ttft"] == pytest.approx(ttft[4], rel=1e-12)
    # TPOT: the split's decode step at batch 1, no chunked-prefill share (FX78): FX75 roofline of FX131 and FX132 (MBU 1)
    # plus the all-reduces of one token; 4.84, 4.98, ... ms -> TP 1
    tpot = {t: max(2 * (N + 2 * L * ctx * A * D) / (t * PEAK * MFU), (2 * N / t + ctx * kv / t) / HBM_BW) + (_tp_comm(t, 1) if t > 1 else 0)
            for t in (1, 2, 4, 8)}
    assert min(tpot, key=tpot.get) == 1
    best = r.reach["tpot"]
    assert (best["mode"], best["tp"], best["batch"]) == ("split", 1, 1) and best["tpot"] == pytest.approx(tpot[1], rel=1e-12)
    # the CLI at the same MFU and MBU: two lines, no empty table
    assert main(BASE + ["--ttft", "500ms", "--tpot", "1ms", "--mfu", str(MFU), "--mbu", "1"]) == 0
    out = capsys.readouterr().out
    assert f"lowest TTFT {1e3 * ttft[4]:.1f} ms with colocate TP 4, batch 1 (target 500 ms: met)" in out
    assert f"lowest TPOT {1e3 * tpot[1]:.2f} ms with split TP 1, batch 1 (target 1 ms: missed)" in out
    assert "Pareto front" not in out and "mode      TP" not in out


def test_nothing_fits_in_memory_gives_the_least_memory_by_hand(capsys):
    # Llama-3.1-70B (knowledge/models/llama-3.1-70b.yaml: 70,553,706,496 parameters, 80 layers, 8 KV heads, head_dim 128)
    # on L4 (24 GB): at TP 8, one request of 1,024 + 256 tokens: 2 N / 8 + 1,280 x (2 x 80 x 8 x 128 x 2 B) / 8
    n70, kv70 = 70_553_706_496, 2 * 80 * 8 * 128 * 2
    r = plan_serve(".", "llama-3.1-70b", "l4", mfu=0.4, **ARGS)
    least = r.reach["memory"]
    assert r.best is None and r.reach["ttft"] is None and r.reach["tpot"] is None
    assert (least["tp"], least["batch"]) == (8, 1) and least["memory"] == pytest.approx(2 * n70 / 8 + 1280 * kv70 / 8, rel=1e-12)
    assert least["memory"] > r.reach["usable"]
    assert main(["plan", "serve", "--model", "llama-3.1-70b", "--device", "l4", "--prompt", "1024", "--output", "256", "--ttft", "500ms",
                 "--tpot", "50ms", "--mfu", "0.4", "--max-batch", "48"]) == 0
    out = capsys.readouterr().out
    assert f"no layout fits in memory; the least is {(2 * n70 / 8 + 1280 * kv70 / 8) / 2**30:,.2f} GiB per GPU (colocate TP 8, batch 1)" in out
