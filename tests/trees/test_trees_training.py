"""The training, hardware, cost and runbook trees: walks on both sides of every threshold,
regions and flip boundaries derived by hand.

Sources of the numbers (every expected value is hand arithmetic written beside it):
- meta-llama/Llama-3.1-8B config.json: hidden 4096, 32 layers, 32 heads, 8 KV heads, head_dim
  128, vocab 128256; safetensors total 8030261248 parameters. Llama-3.1-70B: hidden 8192,
  80 layers, 64 heads, safetensors total 70553706496 (as in tests/trees/test_trees.py).
- deepseek-ai/DeepSeek-V3 config.json: hidden_size 7168, num_experts_per_tok 8,
  num_hidden_layers 61, first_k_dense_replace 3 (58 MoE layers).
- NVIDIA H100 SXM datasheet: 80 GB, 3.35 TB/s, 700 W; H100 whitepaper: 989.4 TFLOPS dense BF16
  (989 TFLOPS used as in tests/trees/test_trees.py). L40S 48 GB, RTX 4090 24 GB (datasheets, as in
  knowledge/hardware). F7's cited defaults: usable = nominal × 0.9 × (1 − 0.12) = 0.792 ×
  nominal. F4: 2 + 2 + 12 bytes per parameter. Korthikanti et al. 2022 (F5/FX103/FX104
  defaults): 10 + 24 bytes per token per hidden unit, 5 bytes per head per token pair unfused,
  2 bytes of layer input under full recomputation, embedding dropout 1, head input 4, fp32
  logits 4.
- The book: ch21 §21.4.4 (32B, 12P = 384 GB swapped, 50 GB/s, 16-min and 1-min iterations);
  ch7 §7.4.6 (200 GB/s in-domain, 40 GB/s cross-domain effective); ch14 §14.3/§14.4.3 (70B,
  16N = 1.12 TB, a save every 30 minutes); ch13 §13.4.1 (4M-token batch per 12 s step, 4 bytes
  per token); ch31 §31.2.4 (1000 cards of 1 kW, α 1.4, PUE 1.5, 0.7 per kWh, load 70%: about 9
  million a year); ra-04 (50 person-months × 80000 against a 6-million hardware saving); the
  runbooks rb-01/02/04 and Appendix E for the thresholds, which the trees cite.
"""

from __future__ import annotations

import json

import pytest

from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.trees import proofs as trees_proofs
from engine.trees import regions as trees_symbolic
from engine.trees import walk as trees

MINE = ["activation-recompute", "finetune-method", "rl-layout", "accelerator-choice", "interconnect-domain", "storage-tier",
        "domestic-migration", "buy-vs-rent", "power-budget", "training-hang-slowdown"]
USABLE_80 = 80e9 * 0.9 * (1 - 0.12)  # F7 on an 80 GB card: 63.36e9 B
L8_PARAMS = 8030261248
L70_PARAMS = 70553706496


@pytest.fixture(scope="module")
def runners(module):
    shipped = trees.load_trees(shipped_root())
    return {name: trees.Runner(shipped[f"tree:{name}"], module) for name in MINE}


def leaf(run, **given):
    return run.walk(given).leaf.id


def text(iv, name):
    return trees_symbolic.set_text(iv.sets[name], iv.scale, iv.unit)


# ---------------------------------------------------------------------- the trees are clean


def test_my_trees_are_proven_exactly_with_no_problems():
    report = trees_proofs.analyse(shipped_root())
    for name in MINE:
        tid = f"tree:{name}"
        assert [p for p in report.problems if p[1] == tid] == []
        assert [p for p in report.notes if p[1] == tid] == []
        proofs = report.proofs[tid]
        assert proofs and all(p["method"] == "exact" and not p["found"] for p in proofs), name


def test_every_leaf_cites_chapters_that_exist_and_every_threshold_is_a_named_parameter(runners):
    for name, run in runners.items():
        tree = run.tree
        for leaf_ in tree.leaves.values():
            assert leaf_.read and leaf_.rationale, (name, leaf_.id)
        for p in tree.parameters.values():
            assert p.source and p.description, (name, p.name)


# ---------------------------------------------------------------------- activation-recompute
# Llama-3.1-8B on H100 80 GB, ZeRO-3 over 8 GPUs: F4 = 16 × 8030261248 / 8 = 16060522496 B.
# FX104 (no recompute, pp 1, t = SP = 1): L·sbh·(34 + 5as/h) + sbh (embedding dropout) + sb(4h + 4V).

REC = dict(memory_evidence="planning", params=L8_PARAMS, hbm_capacity="80GB", zero_stage="3", dp_size=8, layers=32, micro_batch=1,
           hidden=4096, heads=32, vocab_size=128256)
STATES_Z3 = 16 * L8_PARAMS / 8  # 16060522496


def acts_none(s, b=1):
    sbh = s * b * 4096
    return 32 * sbh * (34 + 5 * 32 * s / 4096) + sbh + s * b * (4 * 4096 + 4 * 128256)


def test_recompute_none_when_it_fits_and_its_headroom_boundary(runners):
    # s = 2048: per layer 8388608 × (34 + 80) = 956301312; × 32 = 30601641984; + 8388608 + 2048 × 529408 = 31694258176 B
    assert acts_none(2048) == 31694258176
    walk = runners["activation-recompute"].walk(dict(REC, seq_len=2048))
    assert walk.leaf.id == "no-recompute"  # 16060522496 + 31694258176 = 47754780672 <= 63.36e9
    # one more sequence: 47754780672 + 31694258176 = 79448938848 > 63.36e9, so the boundary is met
    assert walk.boundary["met"] is True


def test_recompute_selective_when_dropping_the_scores_is_enough(runners):
    # s = 8192: per layer 33554432 × 354 = 11878268928; activations 384475070464; total 400535592960 > 63.36e9
    assert acts_none(8192) == 384475070464
    # the scores: 32 layers × 5 B × 32 heads × 8192² = 343597383680; 400535592960 − that = 56938209280 <= 63.36e9
    assert leaf(runners["activation-recompute"], **REC, seq_len=8192) == "selective"


def test_recompute_full_then_beyond(runners):
    run = runners["activation-recompute"]
    # s = 16384: total 16060522496 + 1456144908288 = 1472205430784; selective leaves 1472205430784 − 1374389534720 =
    # 97815896064 > 63.36e9; full: each layer keeps 2·sbh = 134217728 instead of 45231374336:
    # 1472205430784 − 32 × 45097156608 = 29096419328 <= 63.36e9
    assert acts_none(16384) == 1456144908288
    walk = run.walk(dict(REC, seq_len=16384))
    assert walk.leaf.id == "full" and walk.boundary["met"] is False  # micro_batch is 1
    # s = 65536: full keeps 16060522496 + 32 × 2 × 268435456 + 268435456 + 65536 × 529408 = 68204109824 > 63.36e9
    assert leaf(run, **REC, seq_len=65536) == "beyond-recompute"


def test_recompute_full_boundary_points_at_the_micro_batch(runners):
    # micro_batch 2 at s = 8192 with ZeRO-3 states (16060522496 B): every activation term doubles.
    # Selective: 16060522496 + 2 × (56938209280 − 16060522496) = 97815896064 > 63.36e9.
    # Full: 16060522496 + 2 × (22578470912 − 16060522496) = 29096419328 <= 63.36e9, and halving the micro-batch
    # (the failure boundary, micro_batch > 1) is the cheaper fix
    walk = runners["activation-recompute"].walk(dict(REC, seq_len=8192, micro_batch=2))
    assert walk.leaf.id == "full" and walk.boundary["met"] is True


def test_recompute_ledger_sends_state_heavy_jobs_to_sharding(runners):
    run = runners["activation-recompute"]
    # ZeRO off: 16 × 8030261248 = 128484179968 B of states against 31694258176 B of activations (s = 2048): states dominate
    assert leaf(run, **dict(REC, zero_stage="0"), seq_len=2048) == "shard-states"
    # ZeRO-3: 16060522496 < 384475070464 (s = 8192): activations dominate -> the recompute route (selective above)
    assert leaf(run, **REC, seq_len=8192) == "selective"


def test_recompute_refuses_the_fixed_policy(runners):
    with pytest.raises(InputError) as err:
        runners["activation-recompute"].walk(dict(REC, seq_len=2048, recompute="full"))
    assert str(err.value) == ("--set recompute: is fixed by tree:activation-recompute (the tree reads F5 and FX104 without recomputation "
                              "and subtracts what selective and full recomputation drop)")


def test_recompute_allocator_evidence_needs_no_numbers(runners):
    walk = runners["activation-recompute"].walk({"memory_evidence": "allocator_or_external"})
    assert walk.leaf.id == "fix-allocator" and len(walk.steps) == 1


def test_recompute_boundaries_in_hbm_capacity_by_hand(runners):
    run = runners["activation-recompute"]
    given = {k: v for k, v in REC.items() if k != "hbm_capacity"}
    given["seq_len"] = 8192
    total = STATES_Z3 + 384475070464  # 400535592960
    selective = total - 343597383680  # 56938209280
    full = total + 32 * (2 * 8192 * 4096 - 11878268928)  # 22578470912
    assert (total, selective, full) == (400535592960, 56938209280, 22578470912)
    iv, flips = trees_symbolic.boundaries(run, "hbm_capacity", given)
    # usable = 0.792 × hbm, so each flip sits at the memory it needs / 0.792
    assert [(f.below, f.above, f.at_point) for f in flips] == [("beyond-recompute", "full", "full"), ("full", "selective", "selective"),
                                                              ("selective", "no-recompute", "no-recompute")]
    for flip, need in zip(flips, (full, selective, total), strict=True):
        assert flip.at == pytest.approx(need / 0.792, rel=1e-9)
    # 22578470912 / 0.792 = 28508170343.4, 56938209280 / 0.792 = 71891678383.8, 400535592960 / 0.792 = 505726758787.9
    assert text(iv, "selective") == "[7.18917e+10, 5.05727e+11) B"
    assert text(iv, "full") == "[2.85082e+10, 7.18917e+10) B"
    assert text(iv, "shard-states") == "never"


# ---------------------------------------------------------------------- finetune-method


def test_finetune_full_both_sides(runners):
    run = runners["finetune-method"]
    # Llama-3.1-8B, 8 GPUs: 16 × 8030261248 / 8 = 16060522496 <= 63.36e9 (ra-01: full SFT up to 13B on 8 cards)
    walk = run.walk(dict(adaptation="heavy", params=L8_PARAMS, hbm_capacity="80GB", dp_size=8, eff_bandwidth="50GB/s", step_compute_time="0.5s"))
    assert walk.leaf.id == "full"
    # F16: (2 × 2 + 2) × 7/8 × 8030261248 = 42158871552 B; / 50e9 B/s = 0.84318 s > 0.5 s: the traffic boundary is met
    assert walk.boundary["met"] is True
    assert walk.boundary["values"]["zero3_dp_traffic_bytes"]["value"] == pytest.approx(6 * 7 / 8 * L8_PARAMS)
    assert run.walk(dict(adaptation="heavy", params=L8_PARAMS, hbm_capacity="80GB", dp_size=8, eff_bandwidth="50GB/s",
                         step_compute_time="2s")).boundary["met"] is False
    # Llama-3.1-70B, 8 GPUs: 16 × 70553706496 / 8 = 141107412992 > 63.36e9 (ra-01 sends 70B full-parameter work to ra-02)
    assert leaf(run, adaptation="heavy", params=L70_PARAMS, hbm_capacity="80GB", dp_size=8) == "full-needs-gpus"


def test_finetune_full_boundary_in_gpus(runners):
    # dp* = 16N / usable = 1128859303936 / 63.36e9 = 17.8166: 18 GPUs make 70B full fine-tuning fit
    _, flips = trees_symbolic.boundaries(runners["finetune-method"], "dp_size", dict(adaptation="heavy", params=L70_PARAMS, hbm_capacity="80GB"))
    assert [(f.below, f.above) for f in flips] == [("full-needs-gpus", "full")]
    assert flips[0].at == pytest.approx(16 * L70_PARAMS / USABLE_80, rel=1e-12)
    assert leaf(runners["finetune-method"], adaptation="heavy", params=L70_PARAMS, hbm_capacity="80GB", dp_size=18) == "full"
    assert leaf(runners["finetune-method"], adaptation="heavy", params=L70_PARAMS, hbm_capacity="80GB", dp_size=17) == "full-needs-gpus"


def test_finetune_lora_qlora_too_large(runners):
    run = runners["finetune-method"]
    # 70B on 8 × H100: BF16 weights 2 × 70553706496 / 8 = 17638426624 <= 63.36e9 -> LoRA
    assert leaf(run, adaptation="light", params=L70_PARAMS, hbm_capacity="80GB", dp_size=8) == "lora"
    # one L40S (48 GB, usable 38.016e9): 141107412992 > 38.016e9; NF4: 70553706496 × 0.515875 = 36396893338.6 <= 38.016e9
    # (QLoRA fine-tunes a 65B model on one 48 GB GPU)
    assert leaf(run, adaptation="light", params=L70_PARAMS, hbm_capacity="48GB", dp_size=1) == "qlora"
    # one RTX 4090 (24 GB, usable 19.008e9): 36396893338.6 > 19.008e9
    assert leaf(run, adaptation="light", params=L70_PARAMS, hbm_capacity="24GB", dp_size=1) == "too-large"


def test_finetune_light_regions_in_hbm(runners):
    iv, _ = trees_symbolic.intervals(runners["finetune-method"], "hbm_capacity", dict(adaptation="light", params=L70_PARAMS, dp_size=8))
    # LoRA from 17638426624 / 0.792 = 22270740686.9 B; QLoRA from 70553706496 × 0.515875 / 8 / 0.792 = 5744459175.9 B
    assert 2 * L70_PARAMS / 8 / 0.792 == pytest.approx(22270740686.9, rel=1e-11)
    assert L70_PARAMS * 0.515875 / 8 / 0.792 == pytest.approx(5744459175.9, rel=1e-10)
    assert text(iv, "lora") == "[2.22707e+10, +inf) B"
    assert text(iv, "qlora") == "[5.74446e+09, 2.22707e+10) B"
    assert text(iv, "too-large") == "(0, 5.74446e+09) B"
    assert text(iv, "full") == "never"  # adaptation=light never reaches full fine-tuning


# ---------------------------------------------------------------------- rl-layout
# Book §21.4.4: a 32B actor swaps 12P = 384e9 B of optimizer state each way over about 50 GB/s
# (7.68 s one way); η = 2 × 7.68 / T_iter: 16-minute iterations about 2%, 1-minute ones over 25%.

RL = dict(post_training_load="online_rl", dp_size=128, async_rollout="sync_required", offload_bytes_per_step=768e9, pcie_bandwidth="50GB/s",
          params=32e9, hbm_capacity="80GB")


def test_rl_load_and_scale(runners):
    run = runners["rl-layout"]
    assert leaf(run, post_training_load="sft_lora_dpo") == "ordinary-training"
    assert leaf(run, post_training_load="online_rl", dp_size=8) == "single-node"  # 8 <= 8 GPUs per node (DGX H100)
    assert leaf(run, post_training_load="online_rl", dp_size=9, async_rollout="accepted") == "separated-async"


def test_rl_swap_overhead_both_sides(runners):
    run = runners["rl-layout"]
    # 16 min: (768e9 / 50e9) / 960 = 15.36 / 960 = 0.016 < 0.10
    walk = run.walk(dict(RL, step_compute_time="16min", coupling_team="none"))
    assert walk.leaf.id == "time-share" and walk.steps[3].values["offload_ratio"][0] == pytest.approx(0.016)
    # time-sharing holds: (2 + 2) × 32e9 / 128 = 1e9 B of weights and gradients per GPU <= 63.36e9
    assert walk.boundary["met"] is False
    assert leaf(run, **RL, step_compute_time="16min", coupling_team="dedicated") == "in-place"
    # 1 min: 15.36 / 60 = 0.256 >= 0.10
    assert leaf(run, **RL, step_compute_time="1min", coupling_team="none") == "separated-fill"


def test_rl_time_share_failure_boundary(runners):
    # 300e9 parameters on 16 GPUs: (2 + 2) × 300e9 / 16 = 75e9 B > 63.36e9 even with the optimizer swapped out
    walk = runners["rl-layout"].walk(dict(RL, dp_size=16, params=300e9, step_compute_time="16min", coupling_team="none"))
    assert walk.leaf.id == "time-share" and walk.boundary["met"] is True


def test_rl_boundary_in_iteration_time(runners):
    # η = 15.36 s / T_iter crosses 0.10 at T* = 153.6 s; at the point η = 0.10 is not below the limit
    _, flips = trees_symbolic.boundaries(runners["rl-layout"], "step_compute_time", dict(RL, coupling_team="none"))
    assert [(f.below, f.above, f.at_point) for f in flips] == [("separated-fill", "time-share", "separated-fill")]
    assert flips[0].at == pytest.approx(153.6, rel=1e-12)


def test_rl_region_in_gpus(runners):
    given = {k: v for k, v in RL.items() if k != "dp_size"}
    iv, _ = trees_symbolic.intervals(runners["rl-layout"], "dp_size", dict(given, step_compute_time="16min", coupling_team="none"))
    assert text(iv, "single-node") == "[1, 8]"  # dp_size <= gpus_per_node = 8
    assert text(iv, "time-share") == "(8, +inf)"


# ---------------------------------------------------------------------- accelerator-choice
# Llama-3.1-8B on H100 SXM. F8 (GQA): 2 × 32 × 8 × 128 × 2 = 131072 B per token.

H100 = dict(hbm_capacity="80GB", peak_flops="989TFLOPS", hbm_bandwidth="3.35TB/s")
KV_L8 = 2 * 32 * 8 * 128 * 2


def test_accelerator_precision_and_training_capacity(runners):
    run = runners["accelerator-choice"]
    assert leaf(run, precision_support="unsupported") == "reject-precision"
    train = dict(precision_support="supported", pool_workload="training", params=L8_PARAMS, **H100)
    # tp 1: 16 × 8030261248 = 128484179968 > 63.36e9; tp 8: 16060522496 <= 63.36e9, 8 <= 8-GPU domain
    assert leaf(run, **train, tp_size=1) == "reject-capacity"
    assert leaf(run, **train, tp_size=8) == "train-in-domain"
    # tp 16 in an 8-GPU domain crosses it; with a 72-GPU NVL72 domain it does not
    assert leaf(run, **train, tp_size=16) == "train-cross-domain"
    assert leaf(run, **train, tp_size=16, tp_domain_size=72) == "train-in-domain"


def test_accelerator_inference_capacity_and_roofline(runners):
    run = runners["accelerator-choice"]
    infer = dict(precision_support="supported", pool_workload="inference", params=L8_PARAMS, tp_size=1, context_tokens=8192, attention="gqa",
                 layers=32, kv_heads=8, head_dim=128, kv_bytes=2, **H100)
    # weights 2 × 8030261248 = 16060522496; KV 131072 × 8192 × 32 = 34359738368; 50420260864 <= 63.36e9
    # decode intensity 2N × 32 / (weights + KV) = 513936719872 / 50420260864 = 10.19 FLOP/B < ridge 989e12 / 3.35e12 = 295.2
    intensity = 2 * L8_PARAMS * 32 / (2 * L8_PARAMS + KV_L8 * 8192 * 32)
    assert intensity == pytest.approx(10.193, rel=1e-4)
    walk = run.walk(dict(infer, concurrency=32, arith_intensity=intensity))
    assert walk.leaf.id == "infer-bandwidth-bound"
    assert walk.steps[-1].values["ridge_intensity"][0] == pytest.approx(989e12 / 3.35e12)
    # 64 requests: KV 68719476736 + 16060522496 = 84779999232 > 63.36e9
    assert leaf(run, **infer, concurrency=64, arith_intensity=intensity) == "reject-capacity"
    # a 4096³ BF16 GEMM through FX36: 2 × 4096³ / (2 × 3 × 4096²) = 4096 / 3 = 1365.3 FLOP/B >= 295.2
    walk = run.walk(dict(infer, concurrency=32, intensity_method="gemm", gemm_m=4096, gemm_n=4096, gemm_k=4096))
    assert walk.leaf.id == "infer-compute-bound"
    assert walk.steps[-1].values["arith_intensity"][0] == pytest.approx(4096 / 3)


def test_accelerator_roofline_boundary_in_bandwidth(runners):
    # I < peak / bw  <=>  bw < peak / I = 989e12 × 3 / 4096 = 7.24365e11 B/s for the 4096³ GEMM
    given = dict(precision_support="supported", pool_workload="inference", params=L8_PARAMS, tp_size=1, context_tokens=8192, concurrency=32,
                 kv_bytes_per_token=KV_L8, hbm_capacity="80GB", peak_flops="989TFLOPS", arith_intensity=4096 / 3)
    _, flips = trees_symbolic.boundaries(runners["accelerator-choice"], "hbm_bandwidth", given)
    assert [(f.below, f.above, f.at_point) for f in flips] == [("infer-bandwidth-bound", "infer-compute-bound", "infer-compute-bound")]
    assert flips[0].at == pytest.approx(989e12 * 3 / 4096, rel=1e-12)


def test_accelerator_mixed_pool_share(runners):
    run = runners["accelerator-choice"]
    mixed = dict(precision_support="supported", pool_workload="mixed", params=L8_PARAMS, tp_size=8, **H100)
    assert leaf(run, **dict(mixed, tp_size=1), inference_share=0.5) == "reject-capacity"  # 128484179968 > 63.36e9
    assert leaf(run, **mixed, inference_share=0.5) == "mixed-unified"  # 16060522496 fits; at most half (chapter 4, option one)
    assert leaf(run, **mixed, inference_share=0.6) == "mixed-split"
    iv, _ = trees_symbolic.intervals(run, "inference_share", mixed)
    assert text(iv, "mixed-unified") == "[0, 0.5]" and text(iv, "mixed-split") == "(0.5, 1]"


# ---------------------------------------------------------------------- interconnect-domain
# F17, 70B shape (h 8192, L 80, s 4096, b 1, PP 4): 2 × 2 × 2 × (t−1)/t × 4096 × 8192 × 2 B × 80 / 4.
# t = 8: 7 × 33554432 × 2 × 20 = 9395240960 B; t = 16: 7.5 × 33554432 × 2 × 20 = 10066329600 B.

IC = dict(micro_batch=1, seq_len=4096, hidden=8192, layers=80, pp_size=4, domain_bus_bandwidth="200GB/s", scaleout_bus_bandwidth="40GB/s")


def test_interconnect_in_domain_both_sides(runners):
    run = runners["interconnect-domain"]
    # 9395240960 / 200e9 = 0.046976 s; with 1 s of compute 0.046976 <= 0.3 × 1.046976 = 0.31409
    walk = run.walk(dict(IC, tp_size=8, microbatch_compute_time="1s"))
    assert walk.leaf.id == "aligned" and walk.steps[1].values["tp_act_allreduce_bytes"][0] == 9395240960
    # with 0.1 s: 0.046976 > 0.3 × 0.146976 = 0.044093
    assert leaf(run, **IC, tp_size=8, microbatch_compute_time="0.1s") == "in-domain-slow"


def test_interconnect_cross_domain_both_sides(runners):
    run = runners["interconnect-domain"]
    # TP 16 > 8-GPU domain; charged at 40 GB/s: 10066329600 / 40e9 = 0.251658 s
    # 1 s: 0.251658 <= 0.3 × 1.251658 = 0.375497 -> tolerable; 0.5 s: 0.251658 > 0.3 × 0.751658 = 0.225497
    assert leaf(run, **IC, tp_size=16, microbatch_compute_time="1s") == "cross-domain-tolerable"
    assert leaf(run, **IC, tp_size=16, microbatch_compute_time="0.5s") == "recut-or-supernode"
    # the same TP 16 inside a 72-GPU domain at 200 GB/s: 0.050332 s <= 0.3 × 1.050332
    assert leaf(run, **IC, tp_size=16, tp_domain_size=72, microbatch_compute_time="1s") == "aligned"


def test_interconnect_moe_expert_parallel(runners):
    run = runners["interconnect-domain"]
    # DeepSeek-V3: F19 with EP 8 = 2 × 2 × 8 × 7168 × 2 × 7/8 = 401408 B per token; a 4096-token micro-batch through
    # 58 MoE layers routes 237568 tokens: 401408 × 237568 = 95361859584 B; / 200e9 = 0.476809 s
    moe = dict(micro_batch=1, seq_len=4096, hidden=7168, layers=61, pp_size=1, tp_size=1, top_k=8, moe_tokens_per_microbatch=4096 * 58,
               domain_bus_bandwidth="200GB/s", scaleout_bus_bandwidth="40GB/s")
    # 2 s of compute: 0.476809 <= 0.3 × 2.476809 = 0.743043
    walk = run.walk(dict(moe, ep_size=8, microbatch_compute_time="2s"))
    assert walk.leaf.id == "aligned" and walk.steps[1].values["ep_all2all_bytes_per_token"][0] == 401408
    # EP 16 > 8: crosses; F19 with EP 16 = 458752 × 15/16 = 430080 B/token; × 237568 / 40e9 = 2.554299 s > 0.3 × 4.554299
    assert leaf(run, **moe, ep_size=16, microbatch_compute_time="2s") == "recut-or-supernode"


def test_interconnect_boundary_in_compute_time(runners):
    # comm <= 0.3 (c + comm)  <=>  c >= comm × 0.7 / 0.3 = 0.0469762048 × 7 / 3 = 0.1096111445 s
    iv, flips = trees_symbolic.boundaries(runners["interconnect-domain"], "microbatch_compute_time", dict(IC, tp_size=8))
    assert [(f.below, f.above, f.at_point) for f in flips] == [("in-domain-slow", "aligned", "aligned")]
    assert flips[0].at == pytest.approx(9395240960 / 200e9 * 7 / 3, rel=1e-12)
    assert text(iv, "aligned") == "[0.109611, +inf) s"


# ---------------------------------------------------------------------- storage-tier
# 70B, FX53: 16 × 70e9 = 1.12e12 B (the book's 1.12 TB); FX54: 1.12e12 / min(100, 100, 20 GB/s) = 56 s.

CK = dict(storage_traffic="checkpoint", checkpoint_state="measured", params=70e9, ckpt_client_bandwidth="100GB/s", ckpt_network_bandwidth="100GB/s",
          ckpt_backend_bandwidth="20GB/s", n_nodes=16, local_staging_bytes_per_node="2TB", staging_rpo="node_loss_ok")


def test_storage_sync_stall_and_burst(runners):
    run = runners["storage-tier"]
    # every 2 h: 0.01 × 7200 = 72 s >= 56 s; burst 1.12e12 <= 30e9 × 56 = 1.68e12 -> synchronous to the shared tier
    assert leaf(run, **CK, checkpoint_interval="2h", shared_write_headroom="30GB/s") == "sync-shared"
    # 15 GB/s spare: 15e9 × 56 = 0.84e12 < 1.12e12 -> the burst would hurt others -> staging (2 TB × 16 nodes holds it)
    assert leaf(run, **CK, checkpoint_interval="2h", shared_write_headroom="15GB/s") == "async-staged"
    # every 30 min (the book's case): 0.01 × 1800 = 18 s < 56 s -> staging
    walk = run.walk(dict(CK, checkpoint_interval="30min", shared_write_headroom="30GB/s"))
    assert walk.leaf.id == "async-staged" and walk.steps[2].values["checkpoint_data_time"][0] == pytest.approx(56)
    assert walk.boundary["met"] is False  # upload 1.12e12 <= 30e9 × 1800 = 5.4e13


def test_storage_staging_capacity_rpo_and_backlog(runners):
    run = runners["storage-tier"]
    base = dict(CK, checkpoint_interval="30min", shared_write_headroom="30GB/s")
    # 16 × 64 GB = 1.024e12 < 1.12e12: staging cannot hold a snapshot
    assert leaf(run, **dict(base, local_staging_bytes_per_node="64GB")) == "stagger-or-expand"
    # 16 × 70 GB = 1.12e12: exactly holds (<=)
    assert leaf(run, **dict(base, local_staging_bytes_per_node="70GB")) == "async-staged"
    assert leaf(run, **dict(base, staging_rpo="must_survive_node")) == "stagger-or-expand"
    # 0.5 GB/s to spare: an upload takes 1.12e12 / 0.5e9 = 2240 s > 1800 s: the backlog boundary is met
    assert run.walk(dict(base, shared_write_headroom="0.5GB/s")).boundary["met"] is True
    assert leaf(run, storage_traffic="checkpoint", checkpoint_state="estimated") == "measure-first"


def test_storage_boundary_in_interval(runners):
    # sync holds from 56 / 0.01 = 5600 s; below, staging
    given = {k: v for k, v in CK.items()}
    iv, flips = trees_symbolic.boundaries(runners["storage-tier"], "checkpoint_interval", dict(given, shared_write_headroom="30GB/s"))
    assert [(f.below, f.above, f.at_point) for f in flips] == [("async-staged", "sync-shared", "sync-shared")]
    assert flips[0].at == pytest.approx(5600, rel=1e-12)
    assert text(iv, "sync-shared") == "[5600, +inf) s"


def test_storage_data_supply_both_sides_and_boundary(runners):
    run = runners["storage-tier"]
    # 4e6 tokens per 12 s step = 333333.3 tokens/s × 4 B × 1.5 = 2.0e6 B/s needed
    data = dict(storage_traffic="training_data", train_throughput=4e6 / 12)
    assert leaf(run, **data, data_read_bandwidth="2.1MB/s") == "data-direct"
    assert leaf(run, **data, data_read_bandwidth="1.9MB/s") == "data-cache"
    _, flips = trees_symbolic.boundaries(run, "data_read_bandwidth", data)
    assert [(f.below, f.above) for f in flips] == [("data-cache", "data-direct")]
    assert flips[0].at == pytest.approx(2.0e6, rel=1e-12)


# ---------------------------------------------------------------------- domestic-migration

DM = dict(domestic_mandate="optional", op_coverage=0.97, critical_ops_missing=0, precision_alignment="passes", migration_risk_score=50,
          ecosystem_person_months=50, person_month_cost=80000, n_gpus=128)


def test_domestic_mandate_and_coverage_bands(runners):
    run = runners["domestic-migration"]
    assert leaf(run, domestic_mandate="required") == "mandated"
    # Appendix E table E.1.2: < 90% stop, 90-95% cautious, >= 95% continue
    assert leaf(run, **dict(DM, op_coverage=0.89)) == "stop-coverage"
    assert leaf(run, **dict(DM, op_coverage=0.90)) == "cost-the-gap"
    assert leaf(run, **dict(DM, op_coverage=0.94)) == "cost-the-gap"
    assert leaf(run, **dict(DM, op_coverage=0.95), hardware_saving=6e6) == "migrate"
    # one unsupported operator on the critical path must be costed first
    assert leaf(run, **dict(DM, critical_ops_missing=1)) == "cost-the-gap"
    assert leaf(run, **dict(DM, precision_alignment="unacceptable")) == "stop-precision"


def test_domestic_risk_score_bands(runners):
    run = runners["domestic-migration"]
    # E.4.2: 86-100 do not migrate, 66-85 high risk (inference or part only), below 66 go on to the economics
    assert leaf(run, **dict(DM, migration_risk_score=86)) == "do-not-migrate"
    assert leaf(run, **dict(DM, migration_risk_score=85)) == "partial"
    assert leaf(run, **dict(DM, migration_risk_score=66)) == "partial"
    assert leaf(run, **dict(DM, migration_risk_score=65), hardware_saving=6e6) == "migrate"


def test_domestic_ecosystem_account_ra04(runners):
    run = runners["domestic-migration"]
    # ra-04: 50 person-months × 80000 = 4.0e6 against a 6.0e6 hardware saving: the migration stands
    walk = run.walk(dict(DM, hardware_saving=6e6))
    assert walk.leaf.id == "migrate" and walk.boundary["met"] is False  # 128 cards < 1000
    assert leaf(run, **DM, hardware_saving=3e6) == "stay-single"
    assert run.walk(dict(DM, hardware_saving=6e6, n_gpus=1024)).boundary["met"] is True
    iv, flips = trees_symbolic.boundaries(run, "hardware_saving", DM)
    assert [(f.below, f.above, f.at_point) for f in flips] == [("stay-single", "migrate", "stay-single")]
    assert flips[0].at == pytest.approx(50 * 80000, rel=1e-12)
    assert text(iv, "migrate") == "(4e+06, +inf) USD"


# ---------------------------------------------------------------------- buy-vs-rent
# Book §31.2.4: 1000 cards × 1 kW × α 1.4 × PUE 1.5 = 2.1 MW; × 8760 h × 0.7 per kWh × load 0.7 = 9014040 a year.
# Capex 200000 per card (the book's tco example) over 4 years: 50e6 a year. TCO 59014040 a year.
# FX91: 59014040 / 1000 / 8760 h = 6.7367626 per GPU-hour.

BR = dict(demand_outlook="stable", facility="ready", n_gpus=1000, gpu_tdp="1000W", pue=1.5, electricity_price="0.7USD/kWh", load_factor=0.7,
          capex_per_gpu=200000)
GPU_HOUR = 59014040 / 1000 / 8760


def test_buy_rent_outlook_utilisation_facility(runners):
    run = runners["buy-vs-rent"]
    assert leaf(run, demand_outlook="unpredictable") == "cloud-first"
    assert leaf(run, **BR, utilization=0.39) == "hybrid"  # below the 40% floor of §31.4
    assert leaf(run, **dict(BR, facility="retrofit_feasible"), utilization=0.4) == "retrofit"
    assert leaf(run, **dict(BR, facility="infeasible"), utilization=0.4) == "hybrid"


def test_buy_rent_full_life_both_sides(runners):
    run = runners["buy-vs-rent"]
    walk = run.walk(dict(BR, utilization=0.7, planning_horizon="4yr", cloud_gpu_hour_price="10USD/(GPU*h)"))
    assert walk.steps[-1].values["gpu_hour_cost"][0] == pytest.approx(GPU_HOUR, rel=1e-12)
    assert walk.leaf.id == "buy"  # 6.7368 <= 10 × 0.7 = 7
    assert leaf(run, **BR, utilization=0.7, planning_horizon="4yr", cloud_gpu_hour_price="9USD/(GPU*h)") == "rent"  # > 6.3
    _, flips = trees_symbolic.boundaries(run, "cloud_gpu_hour_price", dict(BR, utilization=0.7, planning_horizon="4yr"))
    assert [(f.below, f.above, f.at_point) for f in flips] == [("rent", "buy", "buy")]
    assert flips[0].at == pytest.approx(GPU_HOUR / 0.7, rel=1e-9)  # 9.62395 per used GPU-hour


def test_buy_rent_short_horizon_both_sides(runners):
    run = runners["buy-vs-rent"]
    # 2 years < 4: own = 200e6 of capex + (59014040 − 50e6) × 2 = 218028080; rent = price × 1000 × 0.7 × 2 × 8760 = price × 12264000
    # break-even 218028080 / 12264000 = 17.7779 per GPU-hour
    assert leaf(run, **BR, utilization=0.7, planning_horizon="2yr", cloud_gpu_hour_price="18USD/(GPU*h)") == "buy"
    assert leaf(run, **BR, utilization=0.7, planning_horizon="2yr", cloud_gpu_hour_price="17USD/(GPU*h)") == "rent"
    _, flips = trees_symbolic.boundaries(run, "cloud_gpu_hour_price", dict(BR, utilization=0.7, planning_horizon="2yr"))
    assert flips[0].at == pytest.approx(218028080 / 12264000, rel=1e-9)


def test_buy_rent_regions_in_utilisation(runners):
    # at 10 per GPU-hour over a full life: buy iff 6.7367626 <= 10 u, i.e. u >= 0.67367626; below 0.4 hybrid
    iv, _ = trees_symbolic.intervals(runners["buy-vs-rent"], "utilization", dict(BR, planning_horizon="4yr", cloud_gpu_hour_price="10USD/(GPU*h)"))
    assert GPU_HOUR / 10 == pytest.approx(0.673676, rel=1e-6)
    assert text(iv, "hybrid") == "[0, 0.4)"
    assert text(iv, "rent") == "[0.4, 0.673676)"
    assert text(iv, "buy") == "[0.673676, 1]"


# ---------------------------------------------------------------------- power-budget
# 1000 cards × 1000 W × α 1.4 (FX140 default) × PUE 1.5 = 2.1e6 W (FX2).

PB = dict(n_gpus=1000, gpu_tdp="1000W", pue=1.5)


def test_power_total_both_sides_and_card_ceiling(runners):
    run = runners["power-budget"]
    assert leaf(run, **PB, contracted_power="2MW") == "power-short"  # 2.1 MW > 2 MW
    assert leaf(run, **PB, contracted_power="3MW", gpus_per_rack=16, rack_power_limit="40kW") == "cold-plate"
    # ceiling: 3e6 / (1000 × 1.4 × 1.5) = 1428.57 cards
    _, flips = trees_symbolic.boundaries(run, "n_gpus", dict(gpu_tdp="1000W", pue=1.5, contracted_power="3MW", gpus_per_rack=16, rack_power_limit="40kW"))
    assert [(f.below, f.above) for f in flips] == [("cold-plate", "power-short")]
    assert flips[0].at == pytest.approx(3e6 / 2100, rel=1e-12)


def test_power_rack_limit_and_cooling_bands(runners):
    run = runners["power-budget"]
    ok = dict(PB, contracted_power="3MW")
    # 16 × 1000 × 1.4 = 22.4 kW: over a 20 kW room, within 40 kW; 22.4 > 20 kW air limit -> cold plate
    assert leaf(run, **ok, gpus_per_rack=16, rack_power_limit="20kW") == "rack-over-limit"
    # 8 H100 (700 W) × 1.4 = 7.84 kW <= 20 kW -> air
    assert leaf(run, **dict(ok, gpu_tdp="700W"), gpus_per_rack=8, rack_power_limit="40kW") == "air"
    # 92 × 1000 × 1.4 = 128.8 kW <= 130; 93 × 1400 = 130.2 kW > 130 -> immersion
    assert leaf(run, **ok, gpus_per_rack=92, rack_power_limit="200kW") == "cold-plate"
    assert leaf(run, **ok, gpus_per_rack=93, rack_power_limit="200kW") == "immersion"


def test_power_growth_headroom_boundary(runners):
    run = runners["power-budget"]
    # 2.1e6 + one rack of 16 × 1000 × 1.4 × 1.5 = 33600 W: 2133600 > 2.12e6 (met) but <= 3e6 (not met)
    assert run.walk(dict(PB, contracted_power="2.12MW", gpus_per_rack=16, rack_power_limit="40kW")).boundary["met"] is True
    assert run.walk(dict(PB, contracted_power="3MW", gpus_per_rack=16, rack_power_limit="40kW")).boundary["met"] is False


def test_power_cooling_regions_in_cards_per_rack(runners):
    iv, _ = trees_symbolic.intervals(runners["power-budget"], "gpus_per_rack", dict(PB, contracted_power="3MW", rack_power_limit="200kW"))
    # air up to 20000 / 1400 = 14.2857 cards, cold plate up to 130000 / 1400 = 92.8571, rack limit at 200000 / 1400 = 142.857
    assert text(iv, "air") == "[1, 14.2857] GPU"
    assert text(iv, "cold-plate") == "(14.2857, 92.8571] GPU"
    assert text(iv, "immersion") == "(92.8571, 142.857] GPU"
    assert text(iv, "rack-over-limit") == "(142.857, +inf) GPU"


# ---------------------------------------------------------------------- training-hang-slowdown
# Thresholds from the runbooks: hang after 3 normal steps (rb-01), links healthy within 10% of baseline (rb-02),
# step time within ±5% (rb-01/02), straggler beyond 3% of the median, limp up to 5% (rb-04), a restart loses half
# a checkpoint interval plus the restart time (rb-04).

HANG = dict(baseline_step_time="10s", hang_evidence="collected", p2p_bandwidth_baseline="50GB/s")
SLOW = dict(time_since_last_step="10s", baseline_step_time="10s", current_step_time="11s", median_rank_step_time="10s")


def test_runbook_hang_versus_slowdown(runners):
    run = runners["training-hang-slowdown"]
    # 30 s = 3 × 10 s: a hang; without evidence, stop the loss first
    walk = run.walk(dict(time_since_last_step="30s", baseline_step_time="10s", hang_evidence="not_collected"))
    assert walk.leaf.id == "collect-then-restart" and len(walk.steps) == 2
    # 29 s < 30 s: not (yet) a hang, and 10.4 s <= 1.05 × 10 s: within the baseline
    assert leaf(run, time_since_last_step="29s", baseline_step_time="10s", current_step_time="10.4s") == "within-baseline"


@pytest.mark.parametrize("answers, expected", [
    (dict(rank_state="minority_outside"), "minority-rank"),  # rb-01 branch B
    (dict(rank_state="steps_differ"), "call-order"),  # rb-01 branch C
    (dict(rank_state="node_unreachable"), "node-down"),  # rb-01 branch D
    (dict(rank_state="all_in_collective", nic_errors="single_node"), "nic-node"),  # rb-02 node branch
    (dict(rank_state="all_in_collective", nic_errors="shared_switch"), "switch-fault"),  # rb-02 switch branch
    (dict(rank_state="all_in_collective", nic_errors="clean", p2p_bandwidth_measured="45GB/s"), "comm-software"),  # 45 >= 0.9 × 50: healthy
    (dict(rank_state="all_in_collective", nic_errors="clean", p2p_bandwidth_measured="44GB/s"), "topology-downgrade"),  # 44 < 45
])
def test_runbook_hang_diagnosis(runners, answers, expected):
    assert leaf(runners["training-hang-slowdown"], **HANG, time_since_last_step="5min", **answers) == expected


def test_runbook_regression_and_straggler_thresholds(runners):
    run = runners["training-hang-slowdown"]
    # 10.5 s = 1.05 × 10 s: still within the baseline; 10.6 s is a regression
    assert leaf(run, **dict(SLOW, current_step_time="10.5s")) == "within-baseline"
    # slowest 10.3 s = 1.03 × 10 s median: no straggler, every rank is slower
    assert leaf(run, **SLOW, slowest_rank_step_time="10.3s") == "uniform-slowdown"
    # slowest 10.4 s > 10.3 s: a straggler; with a hot spare, swap it
    assert leaf(run, **SLOW, slowest_rank_step_time="10.4s", containment="not_done", hot_spare="available") == "swap-node"


def test_runbook_containment_without_spare(runners):
    run = runners["training-hang-slowdown"]
    none = dict(SLOW, containment="not_done", hot_spare="none", restart_time="10min", checkpoint_interval="30min")
    # 10.5 s = 1.05 × 10 s: limp along
    assert leaf(run, **none, slowest_rank_step_time="10.5s", spare_wait_time="4h") == "limp-and-watch"
    # 10.8 s (8%): waiting 4 h loses 0.8 × 14400 = 11520 s·s against 10 × (600 + 0.5 × 1800) = 15000: still limp
    assert leaf(run, **none, slowest_rank_step_time="10.8s", spare_wait_time="4h") == "limp-and-watch"
    # waiting 6 h: 0.8 × 21600 = 17280 > 15000: shrink and restart
    assert leaf(run, **none, slowest_rank_step_time="10.8s", spare_wait_time="6h") == "shrink-restart"


def test_runbook_shrink_boundary_in_spare_wait(runners):
    # (10.8 − 10) × w > 10 × (600 + 900)  <=>  w > 15000 / 0.8 = 18750 s (5.2 h)
    given = dict(SLOW, slowest_rank_step_time="10.8s", containment="not_done", hot_spare="none", restart_time="10min", checkpoint_interval="30min",
                 hang_evidence="not_collected")  # closes the hang branch's routes, which --for would otherwise need values for
    iv, flips = trees_symbolic.boundaries(runners["training-hang-slowdown"], "spare_wait_time", given)
    assert [(f.below, f.above, f.at_point) for f in flips] == [("limp-and-watch", "shrink-restart", "limp-and-watch")]
    assert flips[0].at == pytest.approx(18750, rel=1e-12)
    assert text(iv, "shrink-restart") == "(18750, +inf) s"


@pytest.mark.parametrize("answers, expected", [
    (dict(slow_phase="compute", throttle_reason="thermal"), "thermal-throttle"),  # rb-04 branch A
    (dict(slow_phase="compute", throttle_reason="power_or_none"), "hw-degraded"),  # branch B
    (dict(slow_phase="communication"), "network-degraded"),  # branch C
    (dict(slow_phase="data_wait"), "data-skew"),  # branch D
])
def test_runbook_straggler_diagnosis(runners, answers, expected):
    assert leaf(runners["training-hang-slowdown"], **SLOW, slowest_rank_step_time="10.4s", containment="done", **answers) == expected


# ---------------------------------------------------------------------- through the CLI


def test_cli_walk_json_for_a_new_tree(capsys, monkeypatch):
    from engine.cli.main import main

    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    argv = ["tree", "walk", "power-budget", "--set", "n_gpus=1000", "--set", "gpu_tdp=1000W", "--set", "pue=1.5", "--set", "contracted_power=2MW",
            "--format", "json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    # 1000 × 1000 W × 1.4 × 1.5 = 2.1e6 W > 2e6 W
    assert data["leaf"]["id"] == "power-short" and data["leaf"]["severity"] == "failure"
    assert data["path"][0]["values"]["facility_power"] == {"value": pytest.approx(2.1e6), "unit": "W"}
    assert "host_overhead" in data["defaults_used"]


def test_cli_boundary_for_a_new_tree(capsys, monkeypatch):
    from engine.cli.main import main

    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    argv = ["tree", "boundary", "finetune-method", "--for", "dp_size", "--set", "adaptation=heavy", "--set", f"params={L70_PARAMS}",
            "--set", "hbm_capacity=80GB"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "full-needs-gpus below, full above" in out  # at 16 × 70553706496 / 63.36e9 = 17.8166 GPUs
    assert "17.8166" in out
