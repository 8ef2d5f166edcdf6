"""Calculator speed, printed as figures and ratios (not a test).

Targets (issue 5): a 1e6-point sweep of each calculator at >= 1e6 points/s (vectorised NumPy
through the compiled formulas, no per-point SymPy), and a cold ``aiinfra calc`` process at
most 2x ``python -c pass``. Issue 12: ``api.calculator(name).run(...)`` with its presets at
least 500 runs/s after the first (the preset tables and the formula graph are kept in the
process; a run whose ranges are sampled pays for its NumPy samples and is marked so).

Usage: ``python benchmarks/calculators.py [--points N] [--runs N]``. Uses the ``aiinfra`` on
PATH (or ``--exe``) for the process timings. ``--points`` defaults to the sweep's cap
(engine.numeric.calc_sweep.MAX_POINTS, 100,000: a sweep's points are CSV rows) and is clamped
to it; the rate target is per point, so it holds at any size.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time

# one realistic input set per calculator: (swept input, low, high, inputs, presets)
CASES = {
    "kv-concurrency": ("context_tokens", 1024, 131072, dict(kv_bytes=2, tp_size=1, gpu_memory_utilization=0.9, engine_overhead_bytes="2GiB"),
                       dict(model="qwen3-8b", device="h100-sxm")),
    "training-duration": ("mfu", 0.2, 0.6, dict(train_tokens="15T", n_gpus=1024), dict(model="llama-3.1-70b", device="h100-sxm")),
    "training-memory": ("params", 1e9, 1e12, dict(tp_size=8, pp_size=4, dp_size=32, zero_stage="1", seq_len=8192, micro_batch=1, recompute="selective"),
                        dict(model="llama-3.1-70b", device="h100-sxm")),
    "collective": ("msg_bytes", 1e3, 1e10, dict(collective="allreduce", ranks=8, eff_bandwidth="450GB/s", step_latency="5us"), {}),
    "checkpoint-window": ("mtbf", 3600, 360000, dict(checkpoint_stall=30, restart_time=600), {}),
    "inference-capacity": ("prompt_tokens", 128, 131072, dict(kv_bytes=2, engine_overhead_bytes="4GiB", batch_size=64, avg_output_tokens=256),
                           dict(model="qwen3-8b", device="h100-sxm")),
    "serving-fleet": ("qps", 1, 1000, dict(kv_bytes=2, engine_overhead_bytes="4GiB", prompt_tokens=2048, avg_output_tokens=256,
                                          ttft_target="1s", tpot_target="50ms"), dict(model="qwen3-8b", device="h100-sxm")),
    "power-tco": ("utilization", 0.01, 1, dict(n_gpus=1024, gpus_per_node=8, node_overhead_power="4600W", capex_per_gpu=30000,
                                               electricity_price=0.08), dict(device="h100-sxm")),
}


def sweeps(points: int) -> None:
    from engine import api

    handles = api.calculators()
    for name, handle in handles.items():
        case = CASES.get(name)
        if case is None:
            print(f"{name:22s} (no benchmark input set yet)")
            continue
        var, lo, hi, inputs, presets = case
        handle.sweep(var, lo, hi, 16, **presets, **inputs)  # warm: compiled module, presets
        start = time.perf_counter()
        xs, ys = handle.sweep(var, lo, hi, points, **presets, **inputs)
        took = time.perf_counter() - start
        n = len(xs)
        print(f"{name:22s} {n:>9,d} points over {var:16s} {took * 1000:8.1f} ms   {n / took:>12,.0f} points/s   (target >= 1,000,000)")


RUNS_TARGET = 500  # runs/s, issue 12


def api_runs(seconds: float = 0.5) -> None:
    """``calculator.run`` per second for each case's point inputs (the swept input at its low end)."""
    from engine import api

    for name, handle in api.calculators().items():
        case = CASES.get(name)
        if case is None:
            continue
        var, lo, _hi, inputs, presets = case
        kwargs = {**presets, **inputs, var: lo}
        result = handle.run(**kwargs)  # the first run builds the caches
        sampled = any(v.method == "sampled" for v in result.outputs.values())
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            handle.run(**kwargs)
            count += 1
        rate = count / (time.perf_counter() - start)
        note = "" if rate >= RUNS_TARGET else "   MISSES" + (" (ranges sampled through NumPy)" if sampled else "")
        print(f"{name:22s} calculator.run {1000 / rate:7.2f} ms   {rate:>8,.0f} runs/s   (target >= {RUNS_TARGET}){note}")


def process(exe: str, runs: int) -> None:
    argv = [exe, "calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes=2", "--set", "tp_size=1",
            "--set", "context_tokens=8192", "--set", "gpu_memory_utilization=0.9", "--set", "engine_overhead_bytes=2GiB"]

    def timed(cmd):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        out = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
            out.append(time.perf_counter() - start)
        return out

    base = timed([sys.executable, "-c", "pass"])
    calc = timed(argv)
    med = statistics.median
    print(f"python -c pass         median {med(base) * 1000:7.1f} ms")
    print(f"aiinfra calc (presets) median {med(calc) * 1000:7.1f} ms   ratio {med(calc) / med(base):.2f}x   (target <= 2x; warm on-disk caches)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from engine.numeric.calc_sweep import MAX_POINTS

    ap.add_argument("--points", type=int, default=MAX_POINTS, help=f"points per sweep, 2 to {MAX_POINTS:,} (default {MAX_POINTS:,})")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--exe", default=shutil.which("aiinfra"))
    args = ap.parse_args()
    points = min(max(args.points, 2), MAX_POINTS)
    if points != args.points:
        print(f"--points {args.points:,} clamped to {points:,} (a sweep takes 2 to {MAX_POINTS:,} points)")
    sweeps(points)
    api_runs()
    if args.exe:
        process(args.exe, args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
