"""engine.trees.walk and engine.trees.regions: walks, regions, boundaries, proofs, fixtures.

Every expected number is hand arithmetic written beside it from the cited public source:
Qwen/Qwen3-8B config.json (36 layers, 8 KV heads, head_dim 128) and its safetensors total of
8190735360 parameters; meta-llama/Llama-3.1-8B and -70B config.json and safetensors totals
(8030261248 and 70553706496); NVIDIA H100 SXM datasheet (80 GB, 3.35 TB/s, 989 TFLOPS dense
BF16). Thresholds come from the trees' cited parameters and the formulas' cited defaults
(F7: 0.9 usable, 0.12 reserve; FX57: 1% stall budget; F4: 2 + 2 + 12 bytes per parameter).
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest

from engine.core.errors import EvaluationError, InputError
from engine.core.paths import shipped_root
from engine.numeric import compiled
from engine.trees import proofs as trees_proofs
from engine.trees import regions as trees_symbolic
from engine.trees import walk as trees
from engine.trees.regions import fourier_motzkin

FIXTURES = Path(__file__).parent.parent / "fixtures" / "trees"

# Qwen3-8B on one H100 SXM, BF16 (sources in the module docstring)
QWEN_PARAMS = 8190735360
KV_PER_TOKEN = 2 * 36 * 8 * 128 * 2  # F8 gqa: 147456 B
WEIGHTS = 2 * QWEN_PARAMS  # F6: 16381470720 B
PREFILL_PER_TOKEN = 2 * QWEN_PARAMS / (989e12 * 0.5)  # FX74 per prompt token at MFU 0.5: 3.31273e-5 s
DECODE_STEP = (WEIGHTS + 32 * 2048 * KV_PER_TOKEN) / 3.35e12  # FX75, batch 32 x 2048 tokens: 7.77467e-3 s

PD = dict(latency_slo="interactive", tpot_slo="50ms", serving_gpus=64, kv_link_bandwidth="50GB/s", peak_flops="989TFLOPS", mfu=0.5,
          params_active=QWEN_PARAMS, params=QWEN_PARAMS, decode_batch=32, context_tokens=2048, hbm_bandwidth="3.35TB/s",
          layers=36, kv_heads=8, head_dim=128, kv_bytes=2)


@pytest.fixture(scope="module")
def shipped():
    return trees.load_trees(shipped_root())


def runner(shipped, module, name):
    calc = None
    if name == "batching-policy":
        from engine.numeric.calculators import load_records

        calc = load_records(shipped_root())
    return trees.Runner(shipped[f"tree:{name}"], module, calc)


def leaf(run, **given):
    return run.walk(given).leaf.id


# ---------------------------------------------------------------------- the shipped trees are clean


def test_shipped_trees_have_no_problems():
    assert trees_proofs.problems(shipped_root()) == []


def test_every_shipped_test_node_is_proven_exactly():
    report = trees_proofs.analyse(shipped_root())
    assert report.proofs and all(p["method"] == "exact" and not p["found"] for proofs in report.proofs.values() for p in proofs)
    assert report.notes == []


def test_analysis_is_cached(monkeypatch):
    first = trees_proofs.analyse(shipped_root())
    assert list(Path(compiled.cache_dir()).glob("trees_*.json"))

    def no_recompute(*args):
        raise AssertionError("the analysis should come from the cache")

    monkeypatch.setattr(trees_proofs, "_analyse", no_recompute)
    assert trees_proofs.analyse(shipped_root()).to_json() == first.to_json()


# ---------------------------------------------------------------------- pd-disaggregation


def test_pd_prompt_threshold_both_sides(shipped, module):
    run = runner(shipped, module, "pd-disaggregation")
    # 1024 tokens: prefill 1024 x 3.31273e-5 = 0.033922 s; + 0.0077747 = 0.041697 s <= 0.05 s: a whole prefill fits a TPOT budget
    assert leaf(run, **PD, prompt_tokens=1024) == "colocate"
    # 2048 tokens: 0.067844 + 0.0077747 = 0.075619 s > 0.05 s, 64 GPUs >= 32, transfer 2048 x 147456 / 50e9 = 6.04e-3 s <= prefill
    assert leaf(run, **PD, prompt_tokens=2048) == "disaggregate"
    assert 1024 * PREFILL_PER_TOKEN + DECODE_STEP <= 0.05 < 2048 * PREFILL_PER_TOKEN + DECODE_STEP


def test_pd_scale_threshold_both_sides(shipped, module):
    run = runner(shipped, module, "pd-disaggregation")
    # the book's 32-card entry condition (section 24.4.1): 31 GPUs stay co-located with chunked prefill, 32 split
    assert leaf(run, **{**PD, "serving_gpus": 31}, prompt_tokens=8192) == "chunked-prefill"
    assert leaf(run, **{**PD, "serving_gpus": 32}, prompt_tokens=8192) == "disaggregate"


def test_pd_transfer_threshold_both_sides(shipped, module):
    run = runner(shipped, module, "pd-disaggregation")
    # transfer/prefill = (P x 147456 / bw) / (P x 3.31273e-5): P cancels; even at bw* = 147456 / 3.31273e-5 = 4.4512e9 B/s
    bw_star = KV_PER_TOKEN / PREFILL_PER_TOKEN
    assert bw_star == pytest.approx(4.4512e9, rel=1e-4)
    assert leaf(run, **{**PD, "kv_link_bandwidth": "4GB/s"}, prompt_tokens=8192) == "transfer-bound"
    assert leaf(run, **{**PD, "kv_link_bandwidth": "5GB/s"}, prompt_tokens=8192) == "disaggregate"


def test_pd_offline_needs_no_numbers(shipped, module):
    run = runner(shipped, module, "pd-disaggregation")
    walk = run.walk({"latency_slo": "offline"})
    assert walk.leaf.id == "colocate-throughput" and len(walk.steps) == 1


def test_pd_walk_records_the_deciding_values(shipped, module):
    walk = runner(shipped, module, "pd-disaggregation").walk({**PD, "prompt_tokens": 8192})
    stall = walk.steps[1]
    assert stall.node == "stall" and stall.branch == 0
    assert stall.values["prefill_time"][0] == pytest.approx(8192 * PREFILL_PER_TOKEN)  # 0.271379 s
    assert stall.values["decode_step_time"][0] == pytest.approx(DECODE_STEP)
    assert walk.boundary["met"] is False  # decode step 7.77 ms <= 50 ms
    assert "prefix_hit_rate" in walk.defaults_used and "prompt_tokens" not in walk.defaults_used


def test_pd_failure_boundary_met(shipped, module):
    # batch 256: (16381470720 + 256 x 2048 x 147456) / 3.35e12 = 0.027967 s > 0.020 s TPOT SLO
    walk = runner(shipped, module, "pd-disaggregation").walk({**PD, "tpot_slo": "20ms", "decode_batch": 256, "prompt_tokens": 8192})
    assert walk.leaf.id == "disaggregate"
    assert walk.boundary["met"] is True
    assert walk.boundary["values"]["decode_step_time"]["value"] == pytest.approx((WEIGHTS + 256 * 2048 * KV_PER_TOKEN) / 3.35e12)


def test_pd_range_that_straddles_the_threshold_warns(shipped, module):
    walk = runner(shipped, module, "pd-disaggregation").walk({**PD, "prompt_tokens": "1000..2000"})
    assert walk.leaf.id == "disaggregate"  # at the midpoint 1500 > 1274.6
    assert walk.warnings == ["within the given ranges the recommendation changes: at prompt_tokens=1000 it is colocate "
                             "(Co-locate prefill and decode (continuous batching, chunked prefill on); PD disaggregation is not needed at these prompt lengths.)"]


def test_pd_region_and_boundary_in_prompt_tokens(shipped, module):
    run = runner(shipped, module, "pd-disaggregation")
    given = {k: v for k, v in PD.items()}
    # P* = (0.05 - 7.77467e-3) x 989e12 x 0.5 / (2 x 8190735360) = 0.0422253 x 4.945e14 / 1.63815e10 = 1274.637 tokens
    p_star = (0.05 - DECODE_STEP) / PREFILL_PER_TOKEN
    assert p_star == pytest.approx(1274.637, rel=1e-6)
    iv, flips = trees_symbolic.boundaries(run, "prompt_tokens", given)
    assert [(f.below, f.above, f.at_point) for f in flips] == [("colocate", "disaggregate", "colocate")]
    assert flips[0].at == pytest.approx(p_star, rel=1e-12)
    assert flips[0].closed_form.startswith("prompt_tokens = mfu*peak_flops*tp_size*(tpot_slo - decode_step_time)/(infer_flops_per_token*(1 - prefix_hit_rate))")
    assert trees_symbolic.set_text(iv.sets["colocate"], iv.scale, iv.unit) == "(0, 1274.64] tokens"
    assert trees_symbolic.set_text(iv.sets["disaggregate"], iv.scale, iv.unit) == "(1274.64, +inf) tokens"
    assert trees_symbolic.set_text(iv.sets["chunked-prefill"], iv.scale, iv.unit) == "never"


def test_pd_boundary_in_link_bandwidth(shipped, module):
    run = runner(shipped, module, "pd-disaggregation")
    given = {k: v for k, v in PD.items() if k != "kv_link_bandwidth"}
    _, flips = trees_symbolic.boundaries(run, "kv_link_bandwidth", {**given, "prompt_tokens": 8192})
    assert [(f.below, f.above) for f in flips] == [("transfer-bound", "disaggregate")]
    assert flips[0].at == pytest.approx(KV_PER_TOKEN / PREFILL_PER_TOKEN, rel=1e-9)


# ---------------------------------------------------------------------- checkpoint-strategy


def test_checkpoint_sync_both_sides_of_the_budget(shipped, module):
    run = runner(shipped, module, "checkpoint-strategy")
    # C = 60 s, b = 0.01: Young's tau = sqrt(2 C M); stall share C / tau <= b  <=>  M >= C / (2 b^2) = 300000 s
    # M = 400000 s: tau = sqrt(4.8e7) = 6928.2 s, b x tau = 69.28 s >= 60 s
    assert leaf(run, checkpoint_mode="sync", checkpoint_durable_time="60s", mtbf="400000s") == "sync-young"
    # M = 200000 s: tau = sqrt(2.4e7) = 4899.0 s, b x tau = 48.99 s < 60 s
    assert leaf(run, checkpoint_mode="sync", checkpoint_durable_time="60s", mtbf="200000s") == "sync-over-budget"


def test_checkpoint_boundary_in_mtbf_by_hand(shipped, module):
    run = runner(shipped, module, "checkpoint-strategy")
    iv, flips = trees_symbolic.boundaries(run, "mtbf", {"checkpoint_mode": "sync", "checkpoint_durable_time": "60s"})
    assert len(flips) == 1
    assert flips[0].at == pytest.approx(60 / (2 * 0.01**2), rel=1e-12)  # 300000 s = 83.3 h
    assert (flips[0].below, flips[0].above, flips[0].at_point) == ("sync-over-budget", "sync-young", "sync-young")
    assert flips[0].closed_form == "mtbf = checkpoint_stall/(2*stall_budget**2) (with checkpoint_stall = 60 s)"
    assert trees_symbolic.set_text(iv.sets["sync-young"], iv.scale, iv.unit) == "[300000, +inf) s"
    assert "stall_budget = 0.01" in iv.defaults[0]


def test_checkpoint_boundary_in_durable_time_inverts_the_square_root(shipped, module):
    run = runner(shipped, module, "checkpoint-strategy")
    _, flips = trees_symbolic.boundaries(run, "checkpoint_durable_time", {"checkpoint_mode": "sync", "mtbf": 300000})
    assert flips[0].at == pytest.approx(2 * 300000 * 0.01**2)  # C* = 2 M b^2 = 60 s
    assert flips[0].closed_form == "checkpoint_durable_time = 2*mtbf*stall_budget**2"


ASYNC = dict(checkpoint_mode="async", checkpoint_pause_time="5s", mtbf="24h", params=70e9, n_nodes=16, host_memory_per_node="128GB")


def test_checkpoint_async_staging_both_sides(shipped, module):
    run = runner(shipped, module, "checkpoint-strategy")
    # FX53: 16 B x 70e9 = 1.12e12 B; 16 nodes x 128 GB = 2.048e12 B holds it, 8 nodes x 128 GB = 1.024e12 B does not
    assert leaf(run, **ASYNC, checkpoint_durable_time="600s") == "async-young"
    assert leaf(run, **{**ASYNC, "n_nodes": 8}, checkpoint_durable_time="600s") == "async-no-staging"


def test_checkpoint_async_window_both_sides(shipped, module):
    run = runner(shipped, module, "checkpoint-strategy")
    # tau = sqrt(2 x 5 s x 86400 s) = sqrt(864000) = 929.52 s: a 900 s upload fits, a 1000 s one backs up
    tau = math.sqrt(2 * 5 * 86400)
    assert leaf(run, **ASYNC, checkpoint_durable_time="900s") == "async-young"
    assert leaf(run, **ASYNC, checkpoint_durable_time="1000s") == "async-backlog"
    _, flips = trees_symbolic.boundaries(run, "checkpoint_durable_time", ASYNC)
    assert [(f.below, f.above) for f in flips] == [("async-young", "async-backlog")]
    assert flips[0].at == pytest.approx(tau, rel=1e-12)


# ---------------------------------------------------------------------- training-parallelism

L8 = dict(params=8030261248, hbm_capacity="80GB", layers=32, seq_len=4096, micro_batch=1, hidden=4096, heads=32, dp_size=64, eff_bandwidth="50GB/s")
USABLE = 80e9 * 0.9 * (1 - 0.12)  # F7: 63.36e9 B


def test_parallelism_fsdp_vs_tensor_on_the_zero3_traffic(shipped, module):
    run = runner(shipped, module, "training-parallelism")
    # F4 unsharded: 16 x 8030261248 = 128.48e9 B; F5 selective: 4096 x 4096 x 34 = 570425344 B x 32 layers = 18.25e9 B
    # 146.7e9 > 63.36e9 (no DDP); ZeRO-3 over 64: 2.008e9 + 18.25e9 = 20.26e9 <= 63.36e9
    # F16: (2 x 2 + 2) x 63/64 x 8030261248 = 47.43e9 B; / 50e9 B/s = 0.94857 s
    traffic = 6 * 63 / 64 * 8030261248 / 50e9
    assert traffic == pytest.approx(0.948575, rel=1e-6)
    assert leaf(run, **L8, step_compute_time="2s") == "fsdp"
    assert leaf(run, **L8, step_compute_time="0.5s") == "tp-dp"  # (128.48 + 18.25) / 8 = 18.34e9 <= 63.36e9
    _, flips = trees_symbolic.boundaries(run, "step_compute_time", L8)
    assert [(f.below, f.above) for f in flips] == [("tp-dp", "fsdp")]
    assert flips[0].at == pytest.approx(traffic, rel=1e-9)


def test_parallelism_ddp_when_everything_fits(shipped, module):
    run = runner(shipped, module, "training-parallelism")
    # 1e9 params: 16e9 B + 24 layers x 2048 x 2048 x 34 B = 16e9 + 3.42e9 = 19.42e9 <= 63.36e9
    walk = run.walk(dict(L8, params=1e9, layers=24, seq_len=2048, hidden=2048, heads=16, step_compute_time="0.5s"))
    assert walk.leaf.id == "ddp"
    assert walk.boundary["met"] is False  # F15: 2 x 63/64 x 1e9 x 2 B = 3.94e9 B / 50e9 = 0.079 s <= 0.5 s
    assert walk.inputs["zero_stage"].source.startswith("fixed by the tree")


def test_parallelism_pipeline_when_a_domain_is_not_enough(shipped, module):
    run = runner(shipped, module, "training-parallelism")
    # Llama 3.1 70B: 16 x 70553706496 = 1128.86e9 B; activations 80 x 4096 x 8192 x 34 = 91.27e9 B
    # ZeRO-3 over 1024: 1.10e9 + 91.27e9 > 63.36e9; TP over 8: (1128.86 + 91.27) / 8 = 152.5e9 > 63.36e9
    assert leaf(run, **dict(L8, params=70553706496, layers=80, hidden=8192, heads=64, dp_size=1024), step_compute_time="10s") == "tp-pp-dp"
    # with a 72-GPU NVLink domain (NVL72): 1220.1e9 / 72 = 16.9e9 <= 63.36e9
    assert leaf(run, **dict(L8, params=70553706496, layers=80, hidden=8192, heads=64, dp_size=1024), step_compute_time="10s", tp_domain_size=72) == "tp-dp"


def test_parallelism_refuses_a_fixed_symbol(shipped, module):
    with pytest.raises(InputError) as err:
        runner(shipped, module, "training-parallelism").walk(dict(L8, zero_stage="3"))
    assert str(err.value) == "--set zero_stage: is fixed by tree:training-parallelism (the tree reads F4 unsharded (16N bytes) and divides by the candidate degree in its conditions)"


def test_usable_memory_is_f7(shipped, module):
    walk = runner(shipped, module, "training-parallelism").walk(dict(L8, step_compute_time="2s"))
    assert walk.steps[0].values["usable_memory_per_gpu"][0] == pytest.approx(USABLE)


# ---------------------------------------------------------------------- batching-policy

BATCH = dict(traffic="online", tpot_slo="50ms", context_tokens=4096, weight_bytes="16GiB", gpu_memory_total="80GiB", engine_overhead_bytes="4GiB",
             layers=36, kv_heads=8, head_dim=128, kv_bytes=2, hbm_bandwidth="3.35TB/s", params_active=QWEN_PARAMS, peak_flops="989TFLOPS", mfu=0.5)
GiB = 2**30


def test_batching_kv_threshold_both_sides(shipped, module):
    run = runner(shipped, module, "batching-policy")
    # kv-concurrency chain: (80 GiB x 0.9 - 16 GiB - 4 GiB) / 147456 B = 378652.4 tokens; / 4096 per request = 92.4 -> 92
    assert leaf(run, **BATCH, prompt_tokens=512, decode_batch=92) == "continuous"
    assert leaf(run, **BATCH, prompt_tokens=512, decode_batch=93) == "kv-bound"


def test_batching_tpot_threshold_both_sides(shipped, module):
    run = runner(shipped, module, "batching-policy")
    # FX75: (16 GiB + b x 4096 x 147456) / 3.35e12 <= 0.020 s  <=>  b <= (6.7e10 - 17179869184) / 603979776 = 82.49
    b_star = (0.020 * 3.35e12 - 16 * GiB) / (4096 * KV_PER_TOKEN)
    assert b_star == pytest.approx(82.486, rel=1e-4)
    assert leaf(run, **{**BATCH, "tpot_slo": "20ms"}, prompt_tokens=64, decode_batch=82) != "tpot-bound"
    assert leaf(run, **{**BATCH, "tpot_slo": "20ms"}, prompt_tokens=64, decode_batch=83) == "tpot-bound"
    _, flips = trees_symbolic.boundaries(run, "decode_batch", {**BATCH, "tpot_slo": "20ms", "prompt_tokens": 64})
    # a 64-token prefill takes 64 x 3.31273e-5 = 2.12015e-3 s; prefill + step <= 0.020 s up to
    # b = ((0.020 - 2.12015e-3) x 3.35e12 - 17179869184) / 603979776 = 70.727
    b_stall = ((0.020 - 64 * PREFILL_PER_TOKEN) * 3.35e12 - 16 * GiB) / (4096 * KV_PER_TOKEN)
    assert b_stall == pytest.approx(70.727, rel=1e-4)
    assert [f.at for f in flips] == pytest.approx([b_stall, b_star, 92], rel=1e-9)
    assert [(f.below, f.above) for f in flips] == [("continuous", "chunked"), ("chunked", "tpot-bound"), ("tpot-bound", "kv-bound")]


def test_batching_prefill_stall_both_sides(shipped, module):
    run = runner(shipped, module, "batching-policy")
    # batch 64: tpot = (17179869184 + 64 x 603979776) / 3.35e12 = 0.016667 s
    # 512 tokens: 512 x 3.31273e-5 = 0.016961 s; 0.033628 <= 0.05 -> continuous; 2048: 0.067844 + 0.016667 > 0.05 -> chunked
    tpot = (16 * GiB + 64 * 4096 * KV_PER_TOKEN) / 3.35e12
    assert 512 * PREFILL_PER_TOKEN + tpot <= 0.05 < 2048 * PREFILL_PER_TOKEN + tpot
    assert leaf(run, **BATCH, prompt_tokens=512, decode_batch=64) == "continuous"
    assert leaf(run, **BATCH, prompt_tokens=2048, decode_batch=64) == "chunked"


def test_batching_uses_the_calculator_defaults(shipped, module):
    walk = runner(shipped, module, "batching-policy").walk({**BATCH, "prompt_tokens": 512, "decode_batch": 64})
    assert walk.inputs["kv_scope"].value == "per_gpu"  # calc:kv-concurrency's default, not F9's
    assert walk.steps[1].values["max_concurrent_requests"][0] == 92


# ---------------------------------------------------------------------- training-divergence


def test_runbook_stops_the_loss_first(shipped, module):
    run = runner(shipped, module, "training-divergence")
    walk = run.walk({"job_state": "running", "loss_symptom": "nan_inf"})
    assert walk.leaf.id == "stop-the-loss" and len(walk.steps) == 1


@pytest.mark.parametrize("answers, expected", [
    (dict(loss_symptom="nan_inf", replay_result="does_not_recur"), "suspect-hardware"),  # not deterministic: the machine
    (dict(loss_symptom="nan_inf", replay_result="recurs", low_precision_control="passes"), "low-precision-path"),
    (dict(loss_symptom="nan_inf", replay_result="recurs", low_precision_control="also_fails"), "data-or-optimizer"),
    (dict(loss_symptom="spike", spike_step=2000, warmup_steps=2000), "warmup-instability"),  # step 2000 is still warmup (<=)
    (dict(loss_symptom="spike", spike_step=2001, warmup_steps=2000, spike_recovery="recovers"), "watch-and-log"),
    (dict(loss_symptom="spike", spike_step=2001, warmup_steps=2000, spike_recovery="persists"), "rollback-skip"),  # PaLM section 5.1
])
def test_runbook_diagnosis(shipped, module, answers, expected):
    assert leaf(runner(shipped, module, "training-divergence"), job_state="stopped", **answers) == expected


# ---------------------------------------------------------------------- bad input


def test_unknown_input_is_refused(shipped, module):
    with pytest.raises(InputError) as err:
        runner(shipped, module, "training-divergence").walk({"nonsense": 1})
    assert err.value.field == "--set nonsense" and "is not an input of tree:training-divergence" in err.value.message


def test_missing_values_are_named_together(shipped, module):
    """Issue 11: the warmup node compares spike_step with warmup_steps; both are missing, so both are named in one error."""
    with pytest.raises(InputError) as err:
        runner(shipped, module, "training-divergence").walk({"job_state": "stopped", "loss_symptom": "spike"})
    assert err.value.field == "--set spike_step, --set warmup_steps"
    assert str(err.value) == ("tree:training-divergence needs 2 inputs to decide node warmup (give each with --set NAME=VALUE or --answers FILE):\n"
                              "  --set spike_step (optimizer step at which the spike began)\n"
                              "  --set warmup_steps (learning-rate warmup steps of the run's schedule)")
    assert [m.field for m in err.value.missing] == ["--set spike_step", "--set warmup_steps"]


def test_one_missing_value_keeps_the_one_line_form(shipped, module):
    with pytest.raises(InputError) as err:
        runner(shipped, module, "training-divergence").walk({"job_state": "stopped", "loss_symptom": "spike", "warmup_steps": 2000})
    assert str(err.value) == "--set spike_step: tree:training-divergence needs a value for spike_step (optimizer step at which the spike began)"


def test_bad_categorical_value(shipped, module):
    with pytest.raises(InputError) as err:
        runner(shipped, module, "training-divergence").walk({"job_state": "paused"})
    assert str(err.value) == "--set job_state: 'paused' is not one of running, stopped"


def test_wrong_unit_is_refused(shipped, module):
    with pytest.raises(InputError) as err:
        runner(shipped, module, "checkpoint-strategy").walk({"checkpoint_mode": "sync", "checkpoint_durable_time": "60GB", "mtbf": "1d"})
    assert err.value.field == "--set checkpoint_durable_time"


def test_unknown_tree():
    with pytest.raises(InputError) as err:
        trees.find({"tree:a": None}, "b")
    assert str(err.value) == "ID: 'b' is not a decision tree (known: a)"


# ---------------------------------------------------------------------- fixtures with exact messages


def fixture_problems(case):
    return [str(p) for p in trees_proofs.problems(FIXTURES / case)]


def test_fixture_gap():
    assert fixture_problems("gap") == ["decision_trees/gap.yaml:14 tree:gap nodes.size: gap: no branch holds at load=100 requests (exact witness)"]


def test_fixture_overlap():
    assert fixture_problems("overlap") == [
        "decision_trees/overlap.yaml:14 tree:overlap nodes.size: overlap: branches[0] and branches[1] both hold at load=100 requests (exact witness)"]


def test_fixture_unreachable():
    assert fixture_problems("unreachable") == [
        "decision_trees/unreachable.yaml:30 tree:unreachable leaves.never: unreachable: the conditions on every path to it contradict each other (exact)",
        "decision_trees/unreachable.yaml:31 tree:unreachable leaves.orphan: unreachable: no node leads to this leaf",
    ]


def test_fixture_structural_mistakes():
    assert fixture_problems("bad") == [
        "decision_trees/wrong-name.yaml:10 tree:bad inputs.spare: unused: no condition, ask or failure boundary uses spare, nor any formula they reach",
        "decision_trees/wrong-name.yaml:13 tree:bad parameters.idle: unused: no condition uses the parameter idle",
        "decision_trees/wrong-name.yaml:2 tree:bad id: the file should be named bad.yaml",
        "decision_trees/wrong-name.yaml:21 tree:bad nodes.tier.options: the value 'bronze' of tier has no branch",
        "decision_trees/wrong-name.yaml:21 tree:bad nodes.tier.options.platinum: 'platinum' is not a value of tier (its values: gold, silver, bronze)",
        "decision_trees/wrong-name.yaml:23 tree:bad nodes.size: leads to nowhere, which is neither a node nor a leaf",
        "decision_trees/wrong-name.yaml:26 tree:bad nodes.size.branches[0].when: the bare number 0.5 in a condition: name it in parameters with a source",
        "decision_trees/wrong-name.yaml:27 tree:bad nodes.size.branches[1].when: the bare number 0.5 in a condition: name it in parameters with a source",
        "decision_trees/wrong-name.yaml:32 tree:bad nodes.units.branches[0].when: in the comparison 'load > latency': the term 'latency' is in s but 'load' is in requests",
        "decision_trees/wrong-name.yaml:33 tree:bad nodes.units.branches[1].when: the name 'mystery' is not a declared symbol",
    ]


def test_fixture_sampled_gap_is_a_real_counterexample():
    report = trees_proofs.analyse(FIXTURES / "sampled")
    [problem] = report.problems
    assert problem.path == "nodes.pair" and problem.message.startswith("gap: no branch holds at a=")
    assert problem.message.endswith("(sampled counterexample, seed 0)")
    point = dict(part.split("=") for part in problem.message.split(" at ", 1)[1].split(" (")[0].replace(" s", "").split(", "))
    a, b = float(point["a"]), float(point["b"])
    assert not (min(a, b) > 2) and not (max(a, b) < 2)  # neither branch holds there (limit = 2 s)
    run = trees.Runner(trees.load_trees(FIXTURES / "sampled")["tree:sampled"], compiled.load(FIXTURES / "sampled"))
    with pytest.raises(EvaluationError, match="no branch holds"):
        run.walk({"a": a, "b": b})
    # Min > limit and Max < limit cannot both hold, but not linearly provable: a note, not a problem
    assert [str(n) for n in report.notes] == [
        "decision_trees/sampled.yaml:20 tree:sampled nodes.pair: overlap not proven: none in 2000 sampled points (seed 0); the conditions are not linear in their terms",
        "decision_trees/sampled.yaml:26 tree:sampled nodes.ratio: gap not proven: none in 2000 sampled points (seed 0); the conditions are not linear in their terms",
        "decision_trees/sampled.yaml:26 tree:sampled nodes.ratio: overlap not proven: none in 2000 sampled points (seed 0); the conditions are not linear in their terms",
    ]


def test_fixture_good_regions_are_simplified():
    report = trees_proofs.analyse(FIXTURES / "good")
    assert report.problems == [] and report.notes == []
    assert report.regions["tree:good"] == {
        "offline": ["mode = batch"],
        "small": ["mode = online and load <= limit"],  # 'otherwise' = not (load > limit)
        "large": ["mode = online and load > limit and load * latency <= budget * limit"],
        "slow": ["mode = online and load > limit and load * latency > budget * limit"],
    }


def test_fixture_good_interval_and_default(tmp_path):
    root = FIXTURES / "good"
    run = trees.Runner(trees.load_trees(root)["tree:good"], compiled.load(root))
    # load defaults to 50 (< limit 100): small whatever the latency
    assert run.walk({"mode": "online", "latency": 1, "budget": 1}).leaf.id == "small"
    # load 200: large while 200 x latency <= budget x 100, i.e. latency <= budget / 2 = 1.5 s for budget 3 s
    iv, flips = trees_symbolic.boundaries(run, "latency", {"mode": "online", "load": 200, "budget": 3})
    assert [(f.at, f.below, f.above) for f in flips] == [(1.5, "large", "slow")]
    assert flips[0].closed_form == "latency = limit*budget/load"
    assert trees_symbolic.set_text(iv.sets["large"], iv.scale, iv.unit) == "(0, 1.5] s"


# ---------------------------------------------------------------------- Fourier-Motzkin


def con(coeffs, const, strict=False):
    return trees_symbolic._con({k: Fraction(v) for k, v in coeffs.items()}, Fraction(const), strict)


def test_fm_infeasible_strict_pair():
    # x > 5 and x < 5
    assert fourier_motzkin([con({"x": 1}, -5, True), con({"x": -1}, 5, True)], set())[0] == "infeasible"


def test_fm_witness_on_the_boundary():
    # x >= 5 and x <= 5 -> x = 5
    assert fourier_motzkin([con({"x": 1}, -5), con({"x": -1}, 5)], set()) == ("feasible", {"x": Fraction(5)})


def test_fm_two_variables_witness_satisfies_all():
    cons = [con({"x": 1, "y": -1}, 0, True), con({"y": 1}, -3), con({"x": -1}, 10)]  # x > y, y >= 3, x <= 10
    status, point = fourier_motzkin(cons, set())
    assert status == "feasible"
    assert point["x"] > point["y"] >= 3 and point["x"] <= 10


def test_fm_integers_between_two_reals_are_infeasible():
    # 3 < n < 4 has real points but no whole number
    cons = [con({"n": 1}, -3, True), con({"n": -1}, 4, True)]
    assert fourier_motzkin(cons, set())[0] == "feasible"
    assert fourier_motzkin(cons, {"n"})[0] == "infeasible"


# ---------------------------------------------------------------------- vectorised walks


def test_walk_many_agrees_with_walk(shipped, module):
    import numpy as np

    run = runner(shipped, module, "pd-disaggregation")
    prompts = np.array([512, 1274, 1275, 4096, 8192, 8192])
    gpus = np.array([64, 64, 64, 16, 64, 31])
    given = {k: v for k, v in PD.items() if k != "serving_gpus"}
    many = run.walk_many(given, {"prompt_tokens": prompts, "serving_gpus": gpus})
    assert many == [leaf(run, **given, prompt_tokens=float(p), serving_gpus=int(g)) for p, g in zip(prompts, gpus, strict=True)]
    assert many[:3] == ["colocate", "colocate", "disaggregate"]  # 1274 < 1274.64 < 1275


def test_walk_many_follows_the_ask_answer_only(shipped, module):
    run = runner(shipped, module, "checkpoint-strategy")
    # sync only: the async branch's checkpoint_bytes (which needs params) is never planned
    many = run.walk_many({"checkpoint_mode": "sync", "checkpoint_durable_time": 60}, {"mtbf": [299999, 300000, 300001]})
    assert many == ["sync-over-budget", "sync-young", "sync-young"]  # M* = 60 / (2 x 0.01^2) = 300000 s
