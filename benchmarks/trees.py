"""Decision-tree speed, printed as figures (not a test).

Targets (issue 6): regions and checks of all trees at most 10 s (uncached: structure,
gap/overlap proofs at every test node, unreachable leaves and every leaf's simplified
region), and 10,000 numeric walks at most 1 s. Walks are timed two ways: vectorised
(``Runner.walk_many``: the chain planned once, formulas and conditions as NumPy twins over
all points) and one at a time (``Runner.walk``: every value read and domain-checked, the
chain planned per walk, as the CLI does).

Usage: ``python benchmarks/trees.py [--walks N] [--root DIR]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# one realistic input set per tree and the input swept over the walks (public sources as in tests/trees/test_trees.py)
QWEN = 8190735360
CASES = {
    "pd-disaggregation": (dict(latency_slo="interactive", tpot_slo=0.05, serving_gpus=64, kv_link_bandwidth=50e9, peak_flops=989e12, mfu=0.5,
                               params_active=QWEN, params=QWEN, decode_batch=32, context_tokens=2048, hbm_bandwidth=3.35e12,
                               layers=36, kv_heads=8, head_dim=128, kv_bytes=2), "prompt_tokens", 64, 32768),
    "checkpoint-strategy": (dict(checkpoint_mode="sync", checkpoint_durable_time=60), "mtbf", 3600, 3.6e6),
    "training-parallelism": (dict(params=8030261248, hbm_capacity=80e9, layers=32, seq_len=4096, micro_batch=1, hidden=4096, heads=32,
                                  dp_size=64, eff_bandwidth=50e9), "step_compute_time", 0.1, 10),
    "batching-policy": (dict(traffic="online", tpot_slo=0.05, context_tokens=4096, weight_bytes=16 * 2**30, gpu_memory_total=80 * 2**30,
                             engine_overhead_bytes=4 * 2**30, layers=36, kv_heads=8, head_dim=128, kv_bytes=2, hbm_bandwidth=3.35e12,
                             params_active=QWEN, peak_flops=989e12, mfu=0.5, prompt_tokens=512), "decode_batch", 1, 128),
    "training-divergence": (dict(job_state="stopped", loss_symptom="spike", warmup_steps=2000, spike_recovery="persists"), "spike_step", 0, 10000),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--walks", type=int, default=10_000)
    parser.add_argument("--root", default=None)
    args = parser.parse_args()

    import numpy as np

    from engine.core.paths import shipped_root
    from engine.kb.knowledge import Knowledge
    from engine.numeric import compiled
    from engine.trees import proofs as trees_proofs
    from engine.trees import walk as trees

    root = Path(args.root or shipped_root())
    start = time.perf_counter()
    knowledge = Knowledge.load(root, strict=False)
    module = compiled.load(root)
    import sympy  # noqa: F401 - its import is part of the symbolic cost, shown apart

    setup = time.perf_counter() - start
    start = time.perf_counter()
    report = trees_proofs._analyse(root, knowledge, shipped=False)  # uncached on purpose, every tree proven with SymPy
    analysis = time.perf_counter() - start
    checks = sum(len(p) for p in report.proofs.values())
    print(f"setup (knowledge, compiled formulas, sympy import): {setup:.2f} s")
    print(f"regions + checks, {len(report.proofs)} trees, {checks} node checks, uncached: {analysis:.2f} s (target <= 10 s); "
          f"{len(report.problems)} problems, {len(report.notes)} notes")
    start = time.perf_counter()
    shipped = trees_proofs._analyse(root, knowledge)  # what a cold check does: proofs from engine/trees/proven.json where current
    print(f"the same from the shipped proofs (issue 24): {time.perf_counter() - start:.2f} s; "
          f"{'identical' if shipped.to_json() == report.to_json() else 'DIFFERENT (refresh: python -m engine.trees.proofs --write)'}")

    loaded = trees.load_trees(root)
    calc = None
    from engine.numeric.calculators import load_records

    calc = load_records(root)
    total_many = total_one = 0.0
    per_tree = max(1, args.walks // len(CASES))
    for name, (given, var, lo, hi) in CASES.items():
        run = trees.Runner(loaded[f"tree:{name}"], module, calc)
        xs = np.linspace(lo, hi, per_tree)
        if run.symbols.info(var)["domain"].endswith("integer"):
            xs = np.round(xs)
        run.walk_many(given, {var: xs[:4]})  # warm
        start = time.perf_counter()
        leaves = run.walk_many(given, {var: xs})
        many = time.perf_counter() - start
        start = time.perf_counter()
        for x in xs:
            run.walk({**given, var: float(x)})
        one = time.perf_counter() - start
        total_many += many
        total_one += one
        print(f"  {name:22s} {per_tree} walks over {var}: vectorised {many * 1e3:7.1f} ms, one at a time {one:6.2f} s "
              f"({one / per_tree * 1e6:.0f} us each); leaves reached: {len(set(leaves))}")
    n = per_tree * len(CASES)
    print(f"{n} numeric walks: vectorised {total_many:.3f} s (target <= 1 s); one at a time {total_one:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
