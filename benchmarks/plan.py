"""Training-planner speed, printed as figures (not a test): the issue-24 target (``plan`` for
llama-3.1-405b on 16,384 H100 at 8K tokens, ``--max-micro-batch 174``: 101,025,792 numbered points,
at most 0.5 s) as the whole process and in-process, then serial vs a local process pool vs 2 local
Dask workers for the same space, each result checked equal to serial. Only the valid layouts are
evaluated (engine.plan.evaluate.candidates: 996 here); ``--scan`` also times the former full scan
of every numbered point in tiles (minutes) and checks it finds the same layouts.

Usage: ``python benchmarks/plan.py [--model ID] [--gpus N] [--tile P] [--workers W] [--root DIR] [--scan]``;
``--serve`` times ``plan serve`` instead (serial vs process pool over tiles of --serve-tile points, same front).
The peak resident memory of this process is printed at the end.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    from engine.plan import executor
    from engine.plan.space import build

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="llama-3.1-405b")
    ap.add_argument("--device", default="h100-sxm")
    ap.add_argument("--gpus", type=int, default=16384)
    ap.add_argument("--global-batch", type=int, default=2048)
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--max-micro-batch", type=int, default=174)
    ap.add_argument("--scan", action="store_true", help="also time the full scan of every numbered point (minutes)")
    ap.add_argument("--tile", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--serve", action="store_true", help="benchmark plan serve (mixtral-8x7b unless --model is given) instead")
    ap.add_argument("--serve-tile", type=int, default=4096)
    a = ap.parse_args()
    if a.serve:
        return serve(a)
    space = build(a.root, a.model, a.device, a.gpus, global_batch=a.global_batch, seq=a.seq, micro_batches=a.max_micro_batch)
    executor.run(space, 5, "serial", tile=min(a.tile, 10_000))  # warm the compiled-formula cache
    target(a)
    print(f"{a.model} on {a.gpus} x {a.device}: {space.size:,} points, tiles of {a.tile:,}")
    reference = None
    for kind in ("serial", "process", "dask"):
        if kind == "dask":
            try:
                import distributed  # noqa: F401
            except ImportError:
                print("dask      skipped (pip install 'aiinfra[dask]')")
                continue
        t = time.perf_counter()
        found = executor.run(space, 5, kind, tile=a.tile, workers=None if kind == "serial" else a.workers)
        dt = time.perf_counter() - t
        reference = reference or found
        same = "equal to serial" if found.top == reference.top and found.feasible == reference.feasible else "DIFFERS FROM SERIAL"
        extra = "" if kind == "serial" else f", {a.workers} workers{' (cluster start-up included)' if kind == 'dask' else ''}"
        print(f"{kind:<9} {found.layouts:>9,} valid layouts in {dt:.3f} s ({found.tiles} tiles{extra}; {same})")
    if a.scan:
        from engine.plan.evaluate import top_of_tile

        t = time.perf_counter()
        parts = [top_of_tile(space, lo, hi, 5) for lo, hi in executor.tiles(space.size, a.tile)]
        dt = time.perf_counter() - t
        top = sorted(c for p in parts for c in p[0])[:5]
        same = "same top 5" if tuple(top) == reference.top and sum(p[2] for p in parts) == reference.feasible else "DIFFERS"
        print(f"full scan {space.size / dt:>14,.0f} points/s  ({dt:.2f} s; {same} as the valid layouts)")
    import resource

    print(f"peak resident memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


PLAN_TARGET_S = 0.5  # issue 24: plan for 405B on 16,384 H100 (101M numbered points)


def median_wall(cmd: list[str], runs: int = 5) -> float:
    import statistics
    import subprocess

    times = []
    for i in range(runs + 1):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        if i:
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def target(a) -> None:
    """The issue-24 figure: the whole ``aiinfra plan`` process and plan() in this process, beside python start."""
    from engine.plan.train import plan

    base = median_wall([sys.executable, "-c", "pass"])
    argv = [sys.executable, "-m", "engine", "plan", "--model", a.model, "--device", a.device, "--gpus", str(a.gpus), "--global-batch",
            str(a.global_batch), "--seq", str(a.seq), "--max-micro-batch", str(a.max_micro_batch), "--root", a.root]
    whole = median_wall(argv)
    plan(a.root, a.model, a.device, a.gpus, global_batch=a.global_batch, seq=a.seq, micro_batches=a.max_micro_batch)
    t = time.perf_counter()
    plan(a.root, a.model, a.device, a.gpus, global_batch=a.global_batch, seq=a.seq, micro_batches=a.max_micro_batch)
    inner = time.perf_counter() - t
    verdict = "ok" if whole <= PLAN_TARGET_S else "MISS"
    print(f"python -c pass {base * 1000:.0f} ms; aiinfra plan (whole process) {whole:.3f} s = {whole / base:.1f}x python start, "
          f"{whole / PLAN_TARGET_S:.2f}x the target <= {PLAN_TARGET_S} s: {verdict}; plan() in-process {inner:.3f} s")


def serve(a) -> int:
    from engine.plan.serve import plan_serve

    model = "mixtral-8x7b" if a.model == "llama-3.1-405b" else a.model
    args = dict(prompt=2048, output=512, ttft=1.0, tpot=0.05, qps=20, max_batch=512, prune="bound")
    plan_serve(a.root, model, a.device, keep_rows=False, **args)  # warm the caches
    reference = None
    for kind in ("serial", "process"):
        t = time.perf_counter()
        r = plan_serve(a.root, model, a.device, executor=kind, workers=None if kind == "serial" else a.workers, tile_size=a.serve_tile,
                       keep_rows=False, **args)
        dt = time.perf_counter() - t
        reference = reference or r
        same = "equal to serial" if (r.front, r.cheapest, r.feasible) == (reference.front, reference.cheapest, reference.feasible) else "DIFFERS FROM SERIAL"
        print(f"serve {kind:<8} {r.points / dt:>12,.0f} points/s  ({dt:.2f} s, {r.points:,} points, {r.tiles} tiles, "
              f"{r.pruned_bound:,} pruned by FX134; {same})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
