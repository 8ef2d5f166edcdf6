"""The inference and serving decision trees (book chapters 23-26): walks, regions, boundaries.

Every expected leaf is argued in a comment from the tree's condition and hand arithmetic on
cited public numbers; every threshold is walked on both sides. Sources:
- Qwen/Qwen3-8B config.json: 36 layers, 32 attention heads, 8 KV heads, head_dim 128; its
  safetensors total of 8190735360 parameters (the figure tests/trees/test_trees.py uses).
- NVIDIA H100 SXM datasheet: 80 GB HBM3, 3.35 TB/s, 989 TFLOPS dense BF16.
- The trees' cited parameters (book chapters 23-26 at the commits named in each tree) and the
  formulas' cited defaults: F6 BF16 2 B per weight, FX30 2 FLOPs per active parameter per token,
  FX72 gpu_memory_utilization 0.9, F21 pcie_bandwidth 25 GB/s, FX130 4 FLOPs per attention
  token pair per channel (FlashAttention-2, halved for causal masking).
Derived constants used throughout (hand arithmetic):
- KV per token (F8, GQA): 2 x 36 x 8 x 128 x 2 B = 147456 B.
- BF16 weights (F6): 2 x 8190735360 = 16381470720 B; FLOPs per token (FX30): the same number.
- Prefill per token at MFU 0.5 (FX74): 16381470720 / (989e12 x 0.5) = 3.312734e-5 s.
- H100 ridge (FX37): 989e12 / 3.35e12 = 295.2238806 FLOP/B.
"""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main
from engine.core.paths import shipped_root
from engine.trees import proofs as trees_proofs
from engine.trees import regions as trees_symbolic
from engine.trees import walk as trees

QWEN = 8190735360
KV = 2 * 36 * 8 * 128 * 2  # 147456 B per token (F8)
WEIGHTS = 2 * QWEN  # 16381470720 B (F6, BF16)
PREFILL_PER_TOKEN = 2 * QWEN / (989e12 * 0.5)  # 3.312734e-5 s per prompt token (FX74 at MFU 0.5)
RIDGE = 989e12 / 3.35e12  # 295.2238806 FLOP/B (FX37)
H100 = dict(peak_flops="989TFLOPS", mfu=0.5)
QWEN_SHAPE = dict(layers=36, kv_heads=8, head_dim=128, kv_bytes=2)

MINE = ["compute-acceleration", "prefix-cache-tier", "prefix-aware-routing", "autoscaling-cold-start",
        "lora-multitenancy", "long-context", "realtime-voice", "diffusion-serving"]


@pytest.fixture(scope="module")
def shipped():
    return trees.load_trees(shipped_root())


@pytest.fixture(scope="module")
def report():
    return trees_proofs.analyse(shipped_root())


def runner(shipped, module, name):
    return trees.Runner(shipped[f"tree:{name}"], module)


def leaf(run, **given):
    return run.walk(given).leaf.id


def region(iv, name):
    return trees_symbolic.set_text(iv.sets[name], iv.scale, iv.unit)


# ---------------------------------------------------------------------- all eight trees


@pytest.mark.parametrize("name", MINE)
def test_tree_is_clean_and_proven_exactly(report, name):
    tid = f"tree:{name}"
    assert [str(p) for p in report.problems if p.id == tid] == []
    assert [str(n) for n in report.notes if n.id == tid] == []
    proofs = report.proofs[tid]
    assert proofs and all(p["method"] == "exact" and not p["found"] for p in proofs)


CHAPTER = {"compute-acceleration": "infra:ch23", "prefix-cache-tier": "infra:ch24", "prefix-aware-routing": "infra:ch24",
           "autoscaling-cold-start": "infra:ch25", "lora-multitenancy": "infra:ch25", "long-context": "infra:ch26",
           "realtime-voice": "infra:ch26", "diffusion-serving": "infra:ch26"}


@pytest.mark.parametrize("name", MINE)
def test_every_leaf_reads_its_chapter_and_every_threshold_is_cited(shipped, name):
    tree = shipped[f"tree:{name}"]
    assert tree.chapters[0] == CHAPTER[name]
    chapter = CHAPTER[name].removeprefix("infra:ch")
    # every leaf points into the tree's own chapter (a section of it, or the chapter itself)
    assert all(any(r == CHAPTER[name] or r.startswith(f"infra:{chapter}.") for r in lf.read) for lf in tree.leaves.values())
    assert all(p.source and p.description for p in tree.parameters.values())


# ---------------------------------------------------------------------- compute-acceleration (ch23)
# FX133 crossover = ridge x W x MFU / (MBU x 1 token per step x F); for a dense BF16 model W = 2N B
# and F = 2N FLOP per token, so W / F = 1 and crossover = 295.2238806 x 0.5 / 0.8 = 184.5149 requests.
CROSS = RIDGE * 0.5 / 0.8
ACC = dict(quality_gate="in_place", hbm_bandwidth="3.35TB/s", params=QWEN, params_active=QWEN, mbu=0.8, launch_share=0.3,
           low_precision_kernels="native", spec_draft_len=4, spec_acceptance_rate=0.8, draft_cost_ratio=0.1,
           verify_cost_ratio=1, peak_decode_batch=16, **H100)


def test_acc_crossover_by_hand():
    assert CROSS == pytest.approx(184.5149, rel=1e-6)
    assert CROSS / 5 == pytest.approx(36.90299, rel=1e-6)  # verify k + 1 = 5 positions per sequence


def test_acc_no_quality_gate_needs_no_numbers(shipped, module):
    walk = runner(shipped, module, "compute-acceleration").walk({"quality_gate": "missing"})
    assert walk.leaf.id == "build-quality-gate" and len(walk.steps) == 1 and walk.leaf.severity == "bottleneck"


def test_acc_regime_both_sides(shipped, module):
    run = runner(shipped, module, "compute-acceleration")
    # 184 <= 184.51: memory-bound; 184 x 5 = 920 > 184.51 so no speculation, launch 0.3 > 0.15: graph
    assert leaf(run, **ACC, decode_batch=184) == "wq-graph"
    # 185 > 184.51: compute-bound -> low-precision question
    assert leaf(run, **ACC, decode_batch=185) == "activation-quant"
    assert leaf(run, **{**ACC, "low_precision_kernels": "missing"}, decode_batch=185) == "fusion-only"


def test_acc_launch_share_both_sides(shipped, module):
    run = runner(shipped, module, "compute-acceleration")
    # graph mode only when launch_share > 0.15 (book figure 23-4); at exactly 0.15 it stays off
    assert leaf(run, **{**ACC, "launch_share": 0.15}, decode_batch=16) == "wq-spec"
    assert leaf(run, **{**ACC, "launch_share": 0.16}, decode_batch=16) == "wq-graph-spec"


@pytest.mark.parametrize("launch, free, busy", [(0.3, "wq-graph-spec", "wq-graph"), (0.1, "wq-spec", "wq")])
def test_acc_verify_crossover_both_sides(shipped, module, launch, free, busy):
    run = runner(shipped, module, "compute-acceleration")
    # 36 x 5 = 180 <= 184.51: verification nearly free; 37 x 5 = 185 > 184.51: it would be compute-bound
    assert leaf(run, **{**ACC, "launch_share": launch}, decode_batch=36) == free
    assert leaf(run, **{**ACC, "launch_share": launch}, decode_batch=37) == busy


@pytest.mark.parametrize("launch, spec, plain", [(0.3, "wq-graph-spec", "wq-graph"), (0.1, "wq-spec", "wq")])
def test_acc_speculative_payoff_both_sides(shipped, module, launch, spec, plain):
    run = runner(shipped, module, "compute-acceleration")
    # FX80: alpha 0.6, k 4: E = (1 - 0.6^5) / 0.4 = (1 - 0.07776) / 0.4 = 2.3056 tokens per iteration
    # cost k c + v = 0.4 + v: v = 1.9 -> 2.3 < 2.3056 pays; v = 1.91 -> 2.31 > 2.3056 does not
    base = {**ACC, "launch_share": launch, "spec_acceptance_rate": 0.6, "decode_batch": 16}
    assert leaf(run, **{**base, "verify_cost_ratio": 1.9}) == spec
    assert leaf(run, **{**base, "verify_cost_ratio": 1.91}) == plain


def test_acc_walk_records_e_and_the_crossover(shipped, module):
    walk = runner(shipped, module, "compute-acceleration").walk({**ACC, "decode_batch": 16})
    values = {k: v for s in walk.steps for k, v in s.values.items()}
    assert values["crossover_batch"][0] == pytest.approx(CROSS, rel=1e-9)
    assert values["spec_tokens_per_step"][0] == pytest.approx(3.3616, rel=1e-9)  # (1 - 0.8^5) / 0.2 = 0.67232 / 0.2


def test_acc_failure_boundaries_both_sides(shipped, module):
    run = runner(shipped, module, "compute-acceleration")
    # speculation must switch off at peak when peak x 5 > 184.51: 36 -> 180 not met, 37 -> 185 met
    assert run.walk({**ACC, "decode_batch": 16, "peak_decode_batch": 36}).boundary["met"] is False
    assert run.walk({**ACC, "decode_batch": 16, "peak_decode_batch": 37}).boundary["met"] is True
    # weight-only quantisation fades when the peak batch passes the crossover itself: 184 not met, 185 met
    no_spec = {**ACC, "decode_batch": 40, "launch_share": 0.1}  # 40 x 5 = 200 > 184.51: leaf wq
    assert run.walk({**no_spec, "peak_decode_batch": 184}).leaf.id == "wq"
    assert run.walk({**no_spec, "peak_decode_batch": 184}).boundary["met"] is False
    assert run.walk({**no_spec, "peak_decode_batch": 185}).boundary["met"] is True


def test_acc_boundary_and_region_in_decode_batch(shipped, module):
    run = runner(shipped, module, "compute-acceleration")
    given = {k: v for k, v in ACC.items()}
    iv, flips = trees_symbolic.boundaries(run, "decode_batch", given)
    # hand: crossover / (k + 1) = 184.5149 / 5 = 36.90299 and crossover = 184.5149 requests
    assert [(f.below, f.above) for f in flips] == [("wq-graph-spec", "wq-graph"), ("wq-graph", "activation-quant")]
    assert [f.at for f in flips] == pytest.approx([CROSS / 5, CROSS], rel=1e-9)
    assert flips[0].closed_form.startswith("decode_batch = crossover_batch/((1 + spec_draft_len))")
    assert region(iv, "wq-graph-spec") == "[0, 36.903] requests"
    assert region(iv, "wq-graph") == "(36.903, 184.515] requests"
    assert region(iv, "activation-quant") == "(184.515, +inf) requests"
    assert region(iv, "wq") == "never"  # launch_share 0.3 > 0.15 closes the no-graph leaves


# ---------------------------------------------------------------------- prefix-cache-tier (ch24)
# KV entering the caches (FX86 prefill phase): 20 QPS x 8192 tokens x (1 - 0.9) = 16384 tokens/s,
# x 147456 B = 2415919104 B/s. Working set after T seconds = 2415919104 x T B against, over 8
# instances, 80 GB of HBM, 800 GB of DRAM, 8 TB of SSD, and a 10 TB remote pool:
# T_hbm = 80e9 / 2415919104 = 33.1137 s, T_host = 331.137 s, T_ssd = 3311.37 s, T_remote = 4139.21 s.
FILL = 20 * 8192 * 0.1 * KV
TIER = dict(prefix_hit_rate=0.9, prefill_flop_share=0.7, qps=20, avg_input_tokens=8192, n_instances_total=8, prefix_tokens=8000,
            hbm_cache_bytes="10GB", host_cache_bytes="100GB", ssd_cache_bytes="1TB", remote_cache_bytes="10TB",
            ssd_bandwidth="6GB/s", remote_bandwidth="20GB/s", remote_fetch_latency="5ms", params_active=QWEN, **QWEN_SHAPE, **H100)
# recompute of the 8000-token prefix: 8000 x 3.312734e-5 = 0.2650187 s; a tier pays above
# bw* = 147456 B / 3.312734e-5 s = 4.4512e9 B/s (the prefix length cancels with no queue credit)
RECOMPUTE = 8000 * PREFILL_PER_TOKEN
BW_STAR = KV / PREFILL_PER_TOKEN


def test_tier_thresholds_by_hand():
    assert FILL == pytest.approx(2415919104, rel=1e-12)
    assert [80e9 / FILL, 800e9 / FILL, 8e12 / FILL, 1e13 / FILL] == pytest.approx([33.11369, 331.1369, 3311.369, 4139.211], rel=1e-6)
    assert RECOMPUTE == pytest.approx(0.2650187, rel=1e-6) and BW_STAR == pytest.approx(4.451187e9, rel=1e-6)


def test_tier_worth_both_sides(shipped, module):
    run = runner(shipped, module, "prefix-cache-tier")
    # FX82: 0.9 x 0.11 = 0.099 < 0.10 -> no tiers; 0.9 x 0.12 = 0.108 >= 0.10 -> on to the tiers
    assert leaf(run, **{**TIER, "prefill_flop_share": 0.11}, prefix_reuse_interval="10s") == "hbm-default"
    assert leaf(run, **{**TIER, "prefill_flop_share": 0.12}, prefix_reuse_interval="10s") == "hbm-resident"


def test_tier_reuse_distance_both_sides_of_every_capacity(shipped, module):
    run = runner(shipped, module, "prefix-cache-tier")
    assert leaf(run, **TIER, prefix_reuse_interval="33s") == "hbm-resident"  # 33 <= 33.11 s
    assert leaf(run, **TIER, prefix_reuse_interval="34s") == "host-dram"  # > HBM, <= DRAM; 25 GB/s > bw*
    assert leaf(run, **TIER, prefix_reuse_interval="331s") == "host-dram"  # <= 331.14 s
    assert leaf(run, **TIER, prefix_reuse_interval="332s") == "local-ssd"  # 6 GB/s > bw*
    assert leaf(run, **TIER, prefix_reuse_interval="3311s") == "local-ssd"  # <= 3311.37 s
    assert leaf(run, **TIER, prefix_reuse_interval="3312s") == "remote-pool"  # 5 ms + 0.059 s <= 0.265 s
    assert leaf(run, **TIER, prefix_reuse_interval="4139s") == "remote-pool"  # <= 4139.21 s
    assert leaf(run, **TIER, prefix_reuse_interval="4140s") == "recompute"  # no tier holds it


def test_tier_swap_in_against_recompute_both_sides(shipped, module):
    run = runner(shipped, module, "prefix-cache-tier")
    # host link at bw* = 4.4512 GB/s: 4.4 GB/s loses to recompute, 4.5 GB/s wins
    assert leaf(run, **{**TIER, "pcie_bandwidth": "4.4GB/s"}, prefix_reuse_interval="100s") == "recompute"
    assert leaf(run, **{**TIER, "pcie_bandwidth": "4.5GB/s"}, prefix_reuse_interval="100s") == "host-dram"
    # the queue wait relaxes it: 8000 x 147456 / 4e9 = 0.294912 s against 0.2650187 + queue
    slow = {**TIER, "pcie_bandwidth": "4GB/s", "prefix_reuse_interval": "100s"}
    assert leaf(run, **slow, queue_time="20ms") == "recompute"  # 0.2850 < 0.2949
    assert leaf(run, **slow, queue_time="50ms") == "host-dram"  # 0.3150 >= 0.2949
    # the SSD the same way: 4.4 GB/s falls through to the remote pool, 4.5 GB/s stays local
    assert leaf(run, **{**TIER, "ssd_bandwidth": "4.4GB/s"}, prefix_reuse_interval="1000s") == "remote-pool"
    assert leaf(run, **{**TIER, "ssd_bandwidth": "4.5GB/s"}, prefix_reuse_interval="1000s") == "local-ssd"
    # remote: latency + 8000 x 147456 / 20e9 = L + 0.0589824 s against 0.2650187 s: L* = 0.2060363 s
    assert leaf(run, **{**TIER, "remote_fetch_latency": "200ms"}, prefix_reuse_interval="4000s") == "remote-pool"
    assert leaf(run, **{**TIER, "remote_fetch_latency": "210ms"}, prefix_reuse_interval="4000s") == "recompute"


def test_tier_host_link_saturation_boundary(shipped, module):
    run = runner(shipped, module, "prefix-cache-tier")
    fast = {**TIER, "pcie_bandwidth": "4.5GB/s", "prefix_reuse_interval": "100s"}
    # hits stream qps x 8192 x 0.9 x 147456 B/s against 8 x 4.5e9 = 3.6e10 B/s
    # 20 QPS: 2.1743e10 -> not met; 40 QPS: 4.3487e10 -> met (working set 4.83e11 B still fits 8e11 of DRAM)
    assert run.walk(fast).boundary["met"] is False
    walk = run.walk({**fast, "qps": 40})
    assert walk.leaf.id == "host-dram" and walk.boundary["met"] is True


def test_tier_boundary_and_region_in_reuse_interval(shipped, module):
    run = runner(shipped, module, "prefix-cache-tier")
    iv, flips = trees_symbolic.boundaries(run, "prefix_reuse_interval", TIER)
    assert [(f.below, f.above) for f in flips] == [("hbm-resident", "host-dram"), ("host-dram", "local-ssd"),
                                                     ("local-ssd", "remote-pool"), ("remote-pool", "recompute")]
    assert [f.at for f in flips] == pytest.approx([80e9 / FILL, 800e9 / FILL, 8e12 / FILL, 1e13 / FILL], rel=1e-9)
    assert region(iv, "hbm-resident") == "(0, 33.1137] s"
    assert region(iv, "host-dram") == "(33.1137, 331.137] s"
    assert region(iv, "remote-pool") == "(3311.37, 4139.21] s"
    assert region(iv, "hbm-default") == "never"  # FX82 = 0.63 >= 0.10 whatever the interval


# ---------------------------------------------------------------------- prefix-aware-routing (ch24)
# FX82 = 0.5 x 0.26 = 0.13; load-only routing loses 0.13 x (1 - 1/N) >= 0.10 from N = 0.13 / 0.03 = 4.333
ROUTE = dict(prefix_hit_rate=0.5, prefill_flop_share=0.26, prefix_sharing="cross_session", hot_prefix_share=0.1,
             queue_time="50ms", prompt_tokens=8000, params_active=QWEN, **H100)
SAVED = 8000 * 0.5 * PREFILL_PER_TOKEN  # recompute a hit saves: 0.1325094 s


def test_route_value_both_sides(shipped, module):
    run = runner(shipped, module, "prefix-aware-routing")
    assert leaf(run, **ROUTE, n_instances_total=4) == "least-load"  # 0.13 x 3 = 0.39 < 0.40
    assert leaf(run, **ROUTE, n_instances_total=5) == "prefix-hash"  # 0.13 x 4 = 0.52 >= 0.50
    assert leaf(run, **{**ROUTE, "prefix_sharing": "within_session"}, n_instances_total=5) == "session-affinity"
    assert leaf(run, **ROUTE, n_instances_total=1) == "least-load"  # one instance: nothing to route


def test_route_hot_prefix_both_sides(shipped, module):
    run = runner(shipped, module, "prefix-aware-routing")
    # hot share x N <= 1: 0.19 x 5 = 0.95 fits one instance's share; 0.21 x 5 = 1.05 does not
    assert leaf(run, **{**ROUTE, "hot_prefix_share": 0.19}, n_instances_total=5) == "prefix-hash"
    assert leaf(run, **{**ROUTE, "hot_prefix_share": 0.21}, n_instances_total=5) == "cache-aware-replicate"


def test_route_spill_boundary_both_sides(shipped, module):
    run = runner(shipped, module, "prefix-aware-routing")
    assert SAVED == pytest.approx(0.1325094, rel=1e-6)
    # spill when the queue wait at the prefix's instance exceeds the 0.1325 s the hit saves
    assert run.walk({**ROUTE, "n_instances_total": 5, "queue_time": "130ms"}).boundary["met"] is False
    assert run.walk({**ROUTE, "n_instances_total": 5, "queue_time": "140ms"}).boundary["met"] is True


def test_route_boundary_and_region_in_instances(shipped, module):
    run = runner(shipped, module, "prefix-aware-routing")
    iv, flips = trees_symbolic.boundaries(run, "n_instances_total", ROUTE)
    # N* = 0.13 / (0.13 - 0.10) = 13/3 = 4.3333; hot prefix 0.1 x N <= 1 up to N = 10
    assert [(f.below, f.above) for f in flips] == [("least-load", "prefix-hash"), ("prefix-hash", "cache-aware-replicate")]
    assert [f.at for f in flips] == pytest.approx([13 / 3, 10], rel=1e-9)
    assert region(iv, "cache-aware-replicate") == "(10, +inf)"
    assert region(iv, "session-affinity") == "never"  # the answer is cross_session


def test_route_symbolic_regions(report):
    regions = report.regions["tree:prefix-aware-routing"]
    # the path conditions, conjoined: an ask answer, then the test that led there
    assert regions["least-load"] == ["prefix_cache_compute_saving * (n_instances_total - 1) < optimisation_share_min * n_instances_total"]
    assert regions["cache-aware-replicate"] == [  # the ask answer is listed first
        "prefix_sharing = cross_session and prefix_cache_compute_saving * (n_instances_total - 1) >= optimisation_share_min * n_instances_total "
        "and hot_prefix_share * n_instances_total > 1"]


# ---------------------------------------------------------------------- autoscaling-cold-start (ch25)
# FX86 decode: 100 QPS x 500 tokens = 50000 tokens/s; surge 1.5 -> 75000 tokens/s; 5000 per instance.
SCALE = dict(qps=100, avg_output_tokens=500, surge_factor=1.5, instance_goodput=5000, scaling_signal="kv_cache_usage",
             traffic_pattern="bursty", scale_detect_time="60s", scale_ramp_time="15s", surge_ramp_time="120s", ttft_headroom="10s")


def test_scale_absorb_both_sides(shipped, module):
    run = runner(shipped, module, "autoscaling-cold-start")
    # FX146: 75000 <= N x 5000 from N = 15
    assert leaf(run, **SCALE, n_instances_total=15, cold_start_time="40s") == "resident-headroom"
    assert leaf(run, **SCALE, n_instances_total=14, cold_start_time="40s") == "on-demand"  # 60 + 40 + 15 = 115 < 120


@pytest.mark.parametrize("signal, expected", [("gpu_utilization", "fix-signal"), ("container_memory", "fix-signal"),
                                               ("kv_cache_usage", "on-demand"), ("queue_depth", "on-demand")])
def test_scale_signal(shipped, module, signal, expected):
    # GPU-Util and container memory say nothing about spare KV capacity (section 25.4.2)
    assert leaf(runner(shipped, module, "autoscaling-cold-start"), **{**SCALE, "scaling_signal": signal},
                n_instances_total=13, cold_start_time="40s") == expected


def test_scale_cold_start_gate_both_sides(shipped, module):
    run = runner(shipped, module, "autoscaling-cold-start")
    # 300 s is still allowed (<=); 301 s is the unoptimised range of section 25.7
    assert leaf(run, **SCALE, n_instances_total=13, cold_start_time="300s") == "warm-pool"
    assert leaf(run, **SCALE, n_instances_total=13, cold_start_time="301s") == "optimise-cold-start"
    assert leaf(run, **{**SCALE, "traffic_pattern": "predictable"}, n_instances_total=13, cold_start_time="300s") == "scheduled"


def test_scale_feasibility_both_sides(shipped, module):
    run = runner(shipped, module, "autoscaling-cold-start")
    # T_detect + T_cold + T_ramp < T_surge: 60 + 44 + 15 = 119 < 120; 60 + 45 + 15 = 120 is not <
    assert leaf(run, **SCALE, n_instances_total=13, cold_start_time="44s") == "on-demand"
    assert leaf(run, **SCALE, n_instances_total=13, cold_start_time="45s") == "warm-pool"


def test_scale_warm_pool_cost_both_sides(shipped, module):
    run = runner(shipped, module, "autoscaling-cold-start")
    # deficit 75000 - N x 5000 against 0.2 x N x 5000: N = 13 -> 10000 <= 13000; N = 12 -> 15000 > 12000
    assert leaf(run, **SCALE, n_instances_total=13, cold_start_time="100s") == "warm-pool"
    assert leaf(run, **SCALE, n_instances_total=12, cold_start_time="100s") == "raise-resident"


def test_scale_failure_boundaries_both_sides(shipped, module):
    run = runner(shipped, module, "autoscaling-cold-start")
    # on-demand: FX147 backlog (75000 - 65000) x 44 s = 440000 tokens against 50000 tokens/s x headroom
    step = {**SCALE, "n_instances_total": 13, "cold_start_time": "44s"}
    assert run.walk({**step, "ttft_headroom": "9s"}).boundary["met"] is False  # 450000 >= 440000
    walk = run.walk({**step, "ttft_headroom": "8s"})  # 400000 < 440000
    assert walk.leaf.id == "on-demand" and walk.boundary["met"] is True
    assert walk.boundary["values"]["surge_backlog"]["value"] == pytest.approx(440000)
    # warm pool: detection + ramp = 75 s against T_surge: 120 s not met, 75 s met
    warm = {**SCALE, "n_instances_total": 13, "cold_start_time": "100s"}
    assert run.walk(warm).boundary["met"] is False
    assert run.walk({**warm, "surge_ramp_time": "75s"}).boundary["met"] is True
    # scheduled: an off-calendar surge; 60 + 44 + 15 = 119 < 120 not met, 60 + 45 + 15 = 120 met
    plan = {**SCALE, "traffic_pattern": "predictable", "n_instances_total": 13}
    assert run.walk({**plan, "cold_start_time": "44s"}).boundary["met"] is False
    assert run.walk({**plan, "cold_start_time": "45s"}).boundary["met"] is True


def test_scale_boundary_and_region_in_cold_start(shipped, module):
    run = runner(shipped, module, "autoscaling-cold-start")
    iv, flips = trees_symbolic.boundaries(run, "cold_start_time", {**SCALE, "n_instances_total": 13})
    # 120 - 60 - 15 = 45 s (section 25.4.2's inequality), then the 300 s gate of section 25.7
    assert [(f.below, f.above, f.at) for f in flips] == [("on-demand", "warm-pool", pytest.approx(45)),
                                                         ("warm-pool", "optimise-cold-start", pytest.approx(300))]
    assert flips[0].closed_form == "cold_start_time = surge_ramp_time - scale_detect_time - scale_ramp_time"
    assert region(iv, "on-demand") == "[0, 45) s"
    assert region(iv, "warm-pool") == "[45, 300] s"
    assert region(iv, "optimise-cold-start") == "(300, +inf) s"


# ---------------------------------------------------------------------- lora-multitenancy (ch25)
LORA = dict(base_compatibility="shared_base", n_instances_total=10, top_tenant_share=0.05, adapter_slots=8, lora_rank=16)


def test_lora_base_and_top_tenant_both_sides(shipped, module):
    run = runner(shipped, module, "lora-multitenancy")
    assert leaf(run, **{**LORA, "base_compatibility": "mixed_bases"}) == "per-base-pools"
    # share x N >= 1: 0.09 x 10 = 0.9 stays pooled; 0.11 x 10 = 1.1 fills a dedicated instance
    assert leaf(run, **{**LORA, "top_tenant_share": 0.09}, active_adapters=8) == "multi-lora"
    assert leaf(run, **{**LORA, "top_tenant_share": 0.11}, active_adapters=8) == "merge-top-tenant"


def test_lora_slots_both_sides(shipped, module):
    run = runner(shipped, module, "lora-multitenancy")
    assert leaf(run, **LORA, active_adapters=8) == "multi-lora"  # 8 <= 8 slots per instance
    assert leaf(run, **LORA, active_adapters=9) == "multi-lora-affinity"  # 9 > 8, but <= 10 x 8
    assert leaf(run, **LORA, active_adapters=80) == "multi-lora-affinity"  # 80 <= 80
    assert leaf(run, **LORA, active_adapters=81) == "adapter-thrash"  # 81 > 80 slots in the whole pool


def test_lora_vllm_default_slot(shipped, module):
    walk = runner(shipped, module, "lora-multitenancy").walk({k: v for k, v in LORA.items() if k != "adapter_slots"} | {"active_adapters": 8})
    # vLLM max_loras defaults to 1: 8 active adapters > 1 slot, <= 10 x 1 -> affinity
    assert walk.leaf.id == "multi-lora-affinity" and "adapter_slots" in walk.defaults_used


def test_lora_rank_boundary_both_sides(shipped, module):
    run = runner(shipped, module, "lora-multitenancy")
    # vLLM max_lora_rank defaults to 16: rank 16 loads, rank 32 is refused
    assert run.walk({**LORA, "active_adapters": 8}).boundary["met"] is False
    walk = run.walk({**LORA, "active_adapters": 8, "lora_rank": 32})
    assert walk.boundary["met"] is True and walk.boundary["severity"] == "failure"


def test_lora_boundaries_and_regions(shipped, module):
    run = runner(shipped, module, "lora-multitenancy")
    iv, flips = trees_symbolic.boundaries(run, "active_adapters", LORA)
    # 8 slots per instance, 10 x 8 = 80 in the pool
    assert [(f.below, f.above, f.at) for f in flips] == [("multi-lora", "multi-lora-affinity", 8), ("multi-lora-affinity", "adapter-thrash", 80)]
    assert region(iv, "adapter-thrash") == "(80, +inf)"
    _, flips = trees_symbolic.boundaries(run, "top_tenant_share", {k: v for k, v in LORA.items() if k != "top_tenant_share"} | {"active_adapters": 8})
    assert [(f.below, f.above) for f in flips] == [("multi-lora", "merge-top-tenant")]
    assert flips[0].at == pytest.approx(1 / 10)  # 1 / N


def test_lora_symbolic_regions(report):
    regions = report.regions["tree:lora-multitenancy"]
    assert regions["per-base-pools"] == ["base_compatibility = mixed_bases"]
    assert regions["multi-lora"] == ["base_compatibility = shared_base and top_tenant_share * n_instances_total < 1 and active_adapters <= adapter_slots"]


# ---------------------------------------------------------------------- long-context (ch26)
# FX72: 80 GiB x 0.9 - 16381470720 - 4 GiB = 77309411328 - 16381470720 - 4294967296 = 56632973312 B
# per GPU (TP 1: FX73 share = F8). Tokens that fit: 56632973312 / 147456 = 384066.93; FP8 KV doubles it.
BUDGET = 80 * 2**30 * 0.9 - WEIGHTS - 4 * 2**30
TOKENS = BUDGET / KV
LONG = dict(heads=32, gpu_memory_total="80GiB", params=QWEN, engine_overhead_bytes="4GiB", decode_batch=8, model_choice="fixed",
            prompt_tokens=30000, params_active=QWEN, ttft_target="10s", **QWEN_SHAPE, **H100)
# FX130 + FX74: (2 x 8190735360 x 30000 + 4 x 36 x 32 x 128 x 30000^2 / 2) / (989e12 x 0.5) = 1.5305661 s
PREFILL_30K = (2 * QWEN * 30000 + 4 * 36 * 32 * 128 * 30000**2 / 2) / (989e12 * 0.5)


def test_long_thresholds_by_hand():
    assert BUDGET == 56632973312
    assert [TOKENS / 8, 2 * TOKENS / 8, 2 * TOKENS] == pytest.approx([48008.37, 96016.73, 768133.9], rel=1e-6)
    assert PREFILL_30K == pytest.approx(1.5305661, rel=1e-7)


def test_long_fit_pool_and_quantisation_both_sides(shipped, module):
    run = runner(shipped, module, "long-context")
    assert leaf(run, **LONG, context_tokens=32768) == "shared-pool"  # fits, 32768 <= 32K pool threshold
    assert leaf(run, **LONG, context_tokens=32769) == "separate-pool"
    assert leaf(run, **LONG, context_tokens=48008) == "separate-pool"  # 8 x 48008 = 384064 <= 384066.9 tokens
    assert leaf(run, **LONG, context_tokens=48009) == "kv-quant"  # 384072 > 384066.9; FP8 fits
    assert leaf(run, **LONG, context_tokens=96016) == "kv-quant"  # 8 x 96016 = 768128 <= 768133.9
    assert leaf(run, **LONG, context_tokens=96017) == "cap-and-offload"  # 768136 > 768133.9; one request fits
    assert leaf(run, **{**LONG, "decode_batch": 1}, context_tokens=768133) == "kv-quant"  # a batch of one still fits in FP8
    assert leaf(run, **LONG, context_tokens=768133) == "cap-and-offload"  # one FP8 request: 768133 <= 768133.9
    assert leaf(run, **LONG, context_tokens=768134) == "context-parallel"  # one request fits nowhere, model fixed


def test_long_sliding_window_choices(shipped, module):
    run = runner(shipped, module, "long-context")
    big = {**LONG, "context_tokens": 1000000, "model_choice": "open"}
    assert leaf(run, **big) == "sliding-window-model"  # window_layers 0 < 36 layers
    # a window as long as the context changes nothing (FX70), so 35 windowed layers still do not fit
    assert leaf(run, **big, window_layers=35, sliding_window=2097152) == "sliding-window-model"  # 35 < 36
    assert leaf(run, **big, window_layers=36, sliding_window=2097152) == "context-parallel"  # all windowed already
    # FX70 with a real window: 147456 x (1 x 1e6 + 35 x 4096) / 36 = 147456 x 31760 = 4683202560 B per request;
    # 8 of them = 3.7466e10 <= 5.6633e10 B: the windowed model fits at 1M tokens (its own pool, 1M > 32K)
    walk = run.walk({**big, "window_layers": 35, "sliding_window": 4096})
    assert walk.leaf.id == "separate-pool"
    assert walk.steps[0].values["kv_bytes_per_request"][0] == pytest.approx(147456 * 31760)


def test_long_ttft_boundary_both_sides(shipped, module):
    run = runner(shipped, module, "long-context")
    # prefill of a 30000-token prompt 1.5306 s: a 1.6 s target holds, a 1.5 s target does not
    assert run.walk({**LONG, "context_tokens": 32768, "ttft_target": "1.6s"}).boundary["met"] is False
    walk = run.walk({**LONG, "context_tokens": 32768, "ttft_target": "1.5s"})
    assert walk.boundary["met"] is True
    assert walk.boundary["values"]["prefill_time"]["value"] == pytest.approx(PREFILL_30K, rel=1e-9)


def test_long_no_kv_room_is_the_context_parallel_failure_boundary(shipped, module):
    # 20 GiB card: 20 x 2^30 x 0.9 = 19327352832 - 16381470720 - 4294967296 = -1349085184 B: no KV at all
    walk = runner(shipped, module, "long-context").walk({**LONG, "gpu_memory_total": "20GiB", "context_tokens": 4096})
    assert walk.leaf.id == "context-parallel"
    assert walk.boundary["met"] is True and walk.boundary["severity"] == "failure"
    assert walk.boundary["values"]["kv_budget_per_gpu"]["value"] == pytest.approx(-1349085184)


def test_long_boundary_and_region_in_context(shipped, module):
    run = runner(shipped, module, "long-context")
    iv, flips = trees_symbolic.boundaries(run, "context_tokens", LONG)
    assert [(f.below, f.above) for f in flips] == [("shared-pool", "separate-pool"), ("separate-pool", "kv-quant"),
                                                     ("kv-quant", "cap-and-offload"), ("cap-and-offload", "context-parallel")]
    assert [f.at for f in flips] == pytest.approx([32768, TOKENS / 8, 2 * TOKENS / 8, 2 * TOKENS], rel=1e-9)
    assert region(iv, "shared-pool") == "(0, 32768] tokens/requests"
    assert region(iv, "kv-quant") == "(48008.4, 96016.7] tokens/requests"
    assert region(iv, "sliding-window-model") == "never"  # model_choice = fixed


# ---------------------------------------------------------------------- realtime-voice (ch26)
# budget 0.8 s (section 26.4.3); VAD 0.25 + ASR 0.10 + TTS 0.15 + network 0.10 = 0.60 s, so TTFT <= 0.20 s.
VOICE = dict(interaction="realtime_dialogue", vad_endpoint_time="250ms", asr_final_time="100ms", tts_first_audio_time="150ms",
             network_codec_time="100ms", queue_time="100ms", prompt_tokens=2000, prefix_hit_rate=0.5, params_active=QWEN, **H100)
# FX74: 2000 x 0.5 x 3.312734e-5 = 0.0331273 s; 8000 tokens: 0.1325094 s


def test_voice_offline(shipped, module):
    walk = runner(shipped, module, "realtime-voice").walk({"interaction": "offline_speech"})
    assert walk.leaf.id == "batch-speech" and len(walk.steps) == 1


def test_voice_floor_both_sides(shipped, module):
    run = runner(shipped, module, "realtime-voice")
    # VAD 0.46: 0.46 + 0.35 = 0.81 >= 0.8, nothing left; VAD 0.44: 0.79 < 0.8, the LLM gets 0.01 s and its
    # 0.133 s TTFT is late, mostly queueing (0.1 > 0.033)
    assert leaf(run, **{**VOICE, "vad_endpoint_time": "460ms"}) == "pipeline-over-budget"
    assert leaf(run, **{**VOICE, "vad_endpoint_time": "440ms"}) == "queue-bound-voice"


def test_voice_ttft_both_sides(shipped, module):
    run = runner(shipped, module, "realtime-voice")
    assert leaf(run, **{**VOICE, "queue_time": "160ms"}) == "streaming-pool"  # 0.16 + 0.0331 = 0.1931 <= 0.2
    assert leaf(run, **{**VOICE, "queue_time": "170ms"}) == "queue-bound-voice"  # 0.2031 > 0.2, queue > prefill


def test_voice_queue_or_prefill_both_sides(shipped, module):
    run = runner(shipped, module, "realtime-voice")
    long_prompt = {**VOICE, "prompt_tokens": 8000}  # prefill 0.1325 s, TTFT > 0.2 s for both queue times
    assert leaf(run, **{**long_prompt, "queue_time": "130ms"}) == "prefill-bound-voice"  # 0.13 <= 0.1325
    assert leaf(run, **{**long_prompt, "queue_time": "140ms"}) == "queue-bound-voice"  # 0.14 > 0.1325


def test_voice_cache_miss_boundary_both_sides(shipped, module):
    run = runner(shipped, module, "realtime-voice")
    # a miss costs prefill / (1 - h); it breaks the budget when prefill > (0.8 - 0.6 - 0.1) x 0.5 = 0.05 s,
    # i.e. above 0.05 / (0.5 x 3.312734e-5) = 3018.66 prompt tokens
    assert 0.05 / (0.5 * PREFILL_PER_TOKEN) == pytest.approx(3018.66, rel=1e-5)
    assert run.walk({**VOICE, "prompt_tokens": 3000}).boundary["met"] is False
    walk = run.walk({**VOICE, "prompt_tokens": 3100})
    assert walk.leaf.id == "streaming-pool" and walk.boundary["met"] is True


def test_voice_boundary_and_region_in_ttft(shipped, module):
    run = runner(shipped, module, "realtime-voice")
    given = {**{k: v for k, v in VOICE.items() if k not in ("prompt_tokens", "prefix_hit_rate", "params_active", "peak_flops", "mfu")},
             "prefill_time": "50ms"}
    iv, flips = trees_symbolic.boundaries(run, "ttft", given)
    # TTFT target = 0.8 - 0.25 - 0.10 - 0.15 - 0.10 = 0.2 s; above it the queue (0.1 s) outweighs the prefill (0.05 s)
    assert [(f.below, f.above) for f in flips] == [("streaming-pool", "queue-bound-voice")]
    assert flips[0].at == pytest.approx(0.2, rel=1e-12)
    assert flips[0].closed_form == "ttft = voice_response_budget - asr_final_time - network_codec_time - tts_first_audio_time - vad_endpoint_time"
    assert region(iv, "streaming-pool") == "[0, 0.2] s"
    assert region(iv, "queue-bound-voice") == "(0.2, +inf) s"


# ---------------------------------------------------------------------- diffusion-serving (ch26)
# 12B DiT in BF16: 24e9 B of weights (F6); ridge x W = 295.2238806 x 24e9 = 7.0854e12 FLOP per step.
# One GPU at MFU 0.5 for a 20 s SLO does 20 x 989e12 x 0.5 = 9.89e15 FLOP; split up to 4.5x (90 s -> 20 s).
DIFF = dict(volume="sustained", step_flops=1e15, hbm_bandwidth="3.35TB/s", params=12e9, gen_latency_slo="20s", **H100)


def test_diffusion_volume(shipped, module):
    walk = runner(shipped, module, "diffusion-serving").walk({"volume": "sparse"})
    assert walk.leaf.id == "hosted-api" and len(walk.steps) == 1


def test_diffusion_roofline_both_sides(shipped, module):
    run = runner(shipped, module, "diffusion-serving")
    assert RIDGE * 24e9 == pytest.approx(7.0853731e12, rel=1e-7)
    assert leaf(run, **{**DIFF, "step_flops": 7.0e12}, denoise_steps=9) == "batch-to-ridge"  # below the ridge
    assert leaf(run, **{**DIFF, "step_flops": 7.1e12}, denoise_steps=9) == "batch-one-queue"  # compute-bound, 6.4e13 <= 9.89e15


def test_diffusion_steps_both_sides(shipped, module):
    run = runner(shipped, module, "diffusion-serving")
    assert leaf(run, **DIFF, denoise_steps=9) == "batch-one-queue"  # 9e15 <= 9.89e15
    assert leaf(run, **DIFF, denoise_steps=10) == "split-request"  # 1e16 > 9.89e15, <= 4.4505e16
    assert leaf(run, **DIFF, denoise_steps=44) == "split-request"  # 4.4e16 <= 4.4505e16
    assert leaf(run, **DIFF, denoise_steps=45) == "cut-steps"  # 4.5e16 > 4.4505e16


def test_diffusion_batch_boundary_both_sides(shipped, module):
    run = runner(shipped, module, "diffusion-serving")
    # compute-bound: a batch of b multiplies the time: 1 x 9e15 <= 9.89e15; 2 x 9e15 = 1.8e16 > 9.89e15
    walk = run.walk({**DIFF, "denoise_steps": 9})
    assert walk.boundary["met"] is False and walk.boundary["values"]["gen_batch"]["value"] == 1  # the book's batch of 1 (default)
    assert run.walk({**DIFF, "denoise_steps": 9, "gen_batch": 2}).boundary["met"] is True
    # below the ridge the weight reads set the step: 9 x 24e9 = 2.16e11 B against SLO x 3.35e12 B/s
    small = {**DIFF, "step_flops": 7.0e12, "denoise_steps": 9}
    assert run.walk({**small, "gen_latency_slo": "0.07s"}).boundary["met"] is False  # 2.345e11 >= 2.16e11
    assert run.walk({**small, "gen_latency_slo": "0.06s"}).boundary["met"] is True  # 2.01e11 < 2.16e11


def test_diffusion_boundary_and_region_in_steps(shipped, module):
    run = runner(shipped, module, "diffusion-serving")
    iv, flips = trees_symbolic.boundaries(run, "denoise_steps", DIFF)
    # steps* = 9.89e15 / 1e15 = 9.89 on one GPU, x 4.5 = 44.505 split
    assert [(f.below, f.above) for f in flips] == [("batch-one-queue", "split-request"), ("split-request", "cut-steps")]
    assert [f.at for f in flips] == pytest.approx([9.89, 44.505], rel=1e-9)
    assert flips[1].closed_form == "denoise_steps = request_split_speedup_max*gen_latency_slo*mfu*peak_flops/step_flops"
    assert region(iv, "split-request") == "(9.89, 44.505]"
    assert region(iv, "batch-to-ridge") == "never"  # 1e15 FLOP per step is far above the ridge


def test_diffusion_cli_walk_json(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    argv = ["tree", "walk", "diffusion-serving", "--format", "json", "--set", "volume=sustained", "--set", "step_flops=1e15",
            "--set", "hbm_bandwidth=3.35TB/s", "--set", "params=12e9", "--set", "gen_latency_slo=20s",
            "--set", "peak_flops=989TFLOPS", "--set", "mfu=0.5", "--set", "denoise_steps=10"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    # 10 x 1e15 = 1e16 > 9.89e15 on one GPU, <= 4.4505e16 split across a group
    assert out["leaf"]["id"] == "split-request"
    assert [s["node"] for s in out["path"]] == ["volume", "roofline", "single", "split"]
    assert out["path"][1]["values"]["ridge_intensity"]["value"] == pytest.approx(RIDGE, rel=1e-9)
