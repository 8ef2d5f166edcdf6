"""Every speed target of issues 12 and 24, printed as figure, ratio, target and ok/MISS (a report, not a test).

Targets (issue 12, "Fast everywhere"), measured in one run on this machine:
- every single-record or numeric command at most 3x ``python -c pass`` with warm caches
  (``tree walk`` and a 32-point ``calc --sweep`` among them);
- warm ``aiinfra check`` at most 1.5 s; cold (empty cache folder) at most 4 s (issue 24; was 8 s);
- ``api.evaluate`` at least 20,000 calls/s after the first; ``calculator.run`` with presets
  at least 500 runs/s;
- ``roofline --tp`` gives a per-GPU bound; ``serving-fleet`` with a ranged input avoids NumPy.
Issue 24 ("the slow paths get fast"):
- ``plan`` for llama-3.1-405b on 16,384 H100 (101,025,792 numbered points) at most 0.5 s;
- ``calc --sweep`` of 100,000 points (the cap) reported as a figure;
- ``site build`` with warm caches at most 10 s (``--no-site`` skips it: it needs the site extras).
Ratios are to the venv's ``python -c pass`` measured in the same run.

A miss is reported, never raised: the exit status is 0 unless the script itself breaks.
Usage: ``python benchmarks/targets.py [--runs N] [--exe PATH] [--before DIR]``; about 2-3 minutes
with the defaults. ``--before DIR`` also times cold ``check`` and ``tree walk`` of an older checkout
(``git archive <commit> | tar -x -C DIR``) interleaved with this one; :data:`RECORDED` keeps the
figures of such a run for issue 24, printed at the end. The commands use the configured cache folder (``AIINFRA_CACHE_DIR`` or the
default; each command's first run warms it); cold ``check`` runs with an empty temporary one.
Bytecode is cached under build/bench-pycache, as an installed package would have it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from calculators import CASES  # noqa: E402  (benchmarks/calculators.py: one input set per calculator)
from run import EVAL  # noqa: E402  (benchmarks/run.py: the formula eval of issue 2)

COMMAND_RATIO = 3.0  # x python start
WARM_CHECK_S, COLD_CHECK_S = 1.5, 4.0  # issue 24: cold at most 4 s (issue 12 had 8 s)
PLAN_S, SITE_WARM_S = 0.5, 10.0  # issue 24
PLAN_405B = ["plan", "--model", "llama-3.1-405b", "--device", "h100-sxm", "--gpus", "16384", "--global-batch", "2048", "--seq", "8192",
             "--max-micro-batch", "174"]
API_EVALUATE_PER_S, CALC_RUN_PER_S = 20_000, 500

# issue 24, measured side by side with --before on the 2-CPU machine shared with other sessions (load average
# 1.2-2.4 during the runs, so every figure moves by +-30%): before = 6ac5ce4, now = cc10c7c. Where a cold check
# went before (phases, load ~1): knowledge load 2.4-2.8 s, measurement tables 4.1 s (jsonschema on ~3,000 rows),
# the trees' SymPy proofs 5.4 s (not the 17 s guessed: the rest was load), worked examples, templates and
# architectures 1.1 s. Now: the proofs come from engine/trees/proven.json (0.3 s, no SymPy), schema checks from a
# compiled predicate (engine/kb/fastschema.py, no jsonschema), file reads are sized to the file, YAML scalars
# resolve once per text, the formula table is written with repr, and the measurement tables are read by a
# forked worker while the rest loads (a gain only where a CPU is free). Tree walk: its one tree's cache entry,
# no shutil through argparse, fewer calculator modules imported, sized reads, file keys kept by stat.
RECORDED = {
    "check (cold)": ("12.9-15.5 s (median of 3-5 runs; min 10.8)", "5.0-6.3 s (min 3.7); 4 s is met only with a CPU free"),
    "tree walk / python start": ("2.85-3.01x (interleaved medians)", "2.53-2.68x"),
}

COMMANDS = {
    "formula eval": EVAL,
    "forward": ["forward", "--model", "qwen3-8b", "--tokens", "2048"],
    "generate": ["generate", "--model", "deepseek-v3", "--history", "4096", "--steps", "256"],
    "roofline": ["roofline", "--device", "h100-sxm", "--model", "qwen3-8b", "--tokens", "2048"],
    "roofline --tp": ["roofline", "--device", "h100-sxm", "--model", "llama-3.1-70b", "--tokens", "1", "--history", "1024", "--tp", "8"],
    "hardware show": ["hardware", "show", "h100-sxm"],
    "model show": ["model", "show", "qwen3-8b"],
    "path for": ["path", "for", "上线一个推理服务"],
    "path show": ["path", "show", "first-training-run"],
    "tree walk": ["tree", "walk", "pd-disaggregation", "--model", "qwen3-8b", "--set", "latency_slo=offline"],
    "arch show": ["arch", "show", "ra-02"],
    "calc --sweep (32 points)": ["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes=2",
                                 "--set", "tp_size=1", "--set", "gpu_memory_utilization=0.9", "--set", "engine_overhead_bytes=2GiB",
                                 "--sweep", "context_tokens=1024..131072"],
}


def calc_argv(name: str) -> list[str]:
    """``aiinfra calc NAME`` with benchmarks/calculators.py's inputs, the swept one at its low end."""
    var, low, _high, inputs, presets = CASES[name]
    argv = ["calc", name]
    for key, value in presets.items():
        argv += [f"--{key}", str(value)]
    for key, value in {**inputs, var: low}.items():
        argv += ["--set", f"{key}={value}"]
    return argv


def line(label: str, figure: str, ratio: str, target: str, ok: bool | None) -> None:
    verdict = "n/a" if ok is None else ("ok" if ok else "MISS")
    print(f"{label:34s} {figure:>16s} {ratio:>9s}   {target:22s} {verdict}")


def timed(cmd: list[str], runs: int, env: dict) -> tuple[float | None, str]:
    """Median wall time of ``runs`` runs after one warm-up; None and the error when it fails."""
    times = []
    for i in range(runs + 1):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        took = time.perf_counter() - start
        if proc.returncode not in (0, 1):
            tail = proc.stderr.decode(errors="replace").strip().splitlines()
            return None, tail[-1] if tail else f"exit {proc.returncode}"
        if i:
            times.append(took)
    return statistics.median(times), ""


def commands(exe: list[str], runs: int, env: dict, base: float) -> None:
    table = dict(COMMANDS)
    table.update({f"calc {name}": calc_argv(name) for name in CASES})
    for label, argv in table.items():
        t, error = timed([*exe, *argv], runs, env)
        if t is None:
            line(label, "failed", "", error[:60], False)
            continue
        line(label, f"{t * 1000:.0f} ms", f"{t / base:.1f}x", f"<= {COMMAND_RATIO:g}x python start", t / base <= COMMAND_RATIO)


def checks(exe: list[str], runs: int, env: dict) -> None:
    t, error = timed([*exe, "check"], runs, env)
    line("check (warm)", "failed" if t is None else f"{t:.2f} s", "", f"<= {WARM_CHECK_S:g} s", None if t is None else t <= WARM_CHECK_S)
    with tempfile.TemporaryDirectory(prefix="aiinfra-cold-") as folder:
        start = time.perf_counter()
        proc = subprocess.run([*exe, "check"], env=dict(env, AIINFRA_CACHE_DIR=folder), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        t = time.perf_counter() - start
    line("check (cold)", f"{t:.2f} s" if proc.returncode in (0, 1) else "failed", "", f"<= {COLD_CHECK_S:g} s", t <= COLD_CHECK_S)


def before_after(before: Path, exe: list[str], runs: int, env: dict) -> None:
    """Cold check and tree walk of the checkout ``before`` and of this one, interleaved run by run."""
    old = ([sys.executable, "-m", "engine"], dict(env, PYTHONPATH=str(before), PYTHONPYCACHEPREFIX=str(before / "build" / "bench-pycache")), before)
    now = (exe, env, None)
    walks: dict[str, list[float]] = {"python -c pass": [], "before": [], "now": []}
    colds: dict[str, list[float]] = {"before": [], "now": []}
    for i in range(10 * runs + 1):
        for label, (cmd, e, cwd) in (("python -c pass", ([sys.executable, "-c", "pass"], env, None)), ("before", old), ("now", now)):
            args = [*cmd] if label == "python -c pass" else [*cmd, *COMMANDS["tree walk"]]
            start = time.perf_counter()
            subprocess.run(args, env=e, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            if i:
                walks[label].append(time.perf_counter() - start)
    for _ in range(runs):
        for label, (cmd, e, cwd) in (("before", old), ("now", now)):
            with tempfile.TemporaryDirectory(prefix="aiinfra-cold-") as folder:
                start = time.perf_counter()
                subprocess.run([*cmd, "check"], env=dict(e, AIINFRA_CACHE_DIR=folder), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
                colds[label].append(time.perf_counter() - start)
    base = statistics.median(walks["python -c pass"])
    for label in ("before", "now"):
        t = statistics.median(walks[label])
        line(f"tree walk, {label}", f"{t * 1000:.0f} ms", f"{t / base:.2f}x", f"<= {COMMAND_RATIO:g}x python start", t / base <= COMMAND_RATIO)
    for label in ("before", "now"):
        t = statistics.median(colds[label])
        line(f"check (cold), {label}", f"{t:.2f} s", "", f"<= {COLD_CHECK_S:g} s (min {min(colds[label]):.2f})", t <= COLD_CHECK_S)


def issue24(exe: list[str], runs: int, env: dict, base: float, site: bool) -> None:
    t, error = timed([*exe, *PLAN_405B], runs, env)
    if t is None:
        line("plan 405B, 16,384 GPUs", "failed", "", error[:60], False)
    else:
        line("plan 405B, 16,384 GPUs (101M pts)", f"{t * 1000:.0f} ms", f"{t / base:.1f}x", f"<= {PLAN_S:g} s", t <= PLAN_S)
    sweep = [*COMMANDS["calc --sweep (32 points)"], "--points", "100000"]
    t, error = timed([*exe, *sweep], runs, env)
    line("calc --sweep (100,000 points)", "failed" if t is None else f"{t * 1000:.0f} ms", "" if t is None else f"{t / base:.1f}x",
         "(figure)", None if t is not None else False)
    if not site:
        line("site build (warm)", "skipped", "", f"<= {SITE_WARM_S:g} s", None)
        return
    with tempfile.TemporaryDirectory(prefix="aiinfra-site-") as folder:
        t, error = timed([*exe, "site", "build", "--out", folder], 1, env)
    line("site build (warm)", "failed" if t is None else f"{t:.1f} s", "" if t is None else f"{t / base:.0f}x", f"<= {SITE_WARM_S:g} s",
         False if t is None else t <= SITE_WARM_S)


def rate(fn, budget: float = 0.5) -> float:
    """Calls per second of ``fn()`` over about ``budget`` seconds (after one call)."""
    fn()
    n, start = 0, time.perf_counter()
    while (took := time.perf_counter() - start) < budget or n < 3:
        fn()
        n += 1
    return n / took


def api_rates() -> None:
    from engine import api

    given = dict(attention="gqa", layers=36, kv_heads=8, head_dim=128, kv_bytes="2B")  # the README's Qwen3-8B example
    start = time.perf_counter()
    api.evaluate("F8", **given)
    first = time.perf_counter() - start
    line("api.evaluate first call", f"{first * 1000:.1f} ms", "", "(figure)", None)
    r = rate(lambda: api.evaluate("F8", **given), 1.0)
    line("api.evaluate", f"{r:,.0f} /s", "", f">= {API_EVALUATE_PER_S:,} calls/s", r >= API_EVALUATE_PER_S)
    for name, (var, low, _high, inputs, presets) in CASES.items():
        if not presets:
            continue
        handle = api.calculator(name)
        r = rate(lambda handle=handle, var=var, low=low, inputs=inputs, presets=presets: handle.run(**presets, **inputs, **{var: low}))
        line(f"calculator.run {name}", f"{r:,.0f} /s", "", f">= {CALC_RUN_PER_S} runs/s", r >= CALC_RUN_PER_S)


NUMPY_PROBE = """
import sys
from engine.cli.main import main
code = main(sys.argv[1:])
print('numpy' in sys.modules, file=sys.stderr)
"""


# outputs of serving-fleet that genuinely are not monotone in qps: surge_absorbed compares the
# demand with ceil(demand / goodput) instances' capacity, a sawtooth in qps
NON_MONOTONE_FLEET = {"surge_absorbed", "surge_backlog"}


def features(env: dict) -> None:
    argv = ["calc", "serving-fleet", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "qps=40..60", "--set", "prompt_tokens=2048",
            "--set", "avg_output_tokens=256", "--set", "ttft_target=1s", "--set", "tpot_target=50ms", "--set", "kv_bytes=2",
            "--set", "engine_overhead_bytes=4GiB", "--format", "json"]
    proc = subprocess.run([sys.executable, "-c", NUMPY_PROBE, *argv], env=env, capture_output=True, text=True, check=False)
    used = proc.stderr.strip().splitlines()[-1:] == ["True"]
    try:
        sampled = sorted(n for n, v in json.loads(proc.stdout)["outputs"].items() if v["method"] == "sampled")
    except (ValueError, KeyError):
        sampled = ["?"]
    # NumPy is needed only for outputs that are not monotone in qps (the surge check steps with
    # the ceiling of the instance count); the others must come from exact corners
    ok = proc.returncode == 0 and (not used or set(sampled) <= NON_MONOTONE_FLEET)
    figure = ("numpy for " + ", ".join(sampled)) if used else ("no numpy" if proc.returncode == 0 else "failed")
    line("serving-fleet qps range", figure[:34], "", "NumPy only if not monotone", ok)
    proc = subprocess.run([sys.executable, "-m", "engine", *COMMANDS["roofline --tp"], "--format", "json"], env=env, capture_output=True, text=True, check=False)
    line("roofline --tp per-GPU bound", "present" if '"tensor_parallel"' in proc.stdout else "absent", "", "per-GPU result", '"tensor_parallel"' in proc.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="timed runs per command after one warm-up (default 3)")
    ap.add_argument("--exe", default=shutil.which("aiinfra", path=os.path.dirname(sys.executable)) or shutil.which("aiinfra"))
    ap.add_argument("--no-site", action="store_true", help="skip the site build (it needs the site extras and npm's KaTeX/Mermaid)")
    ap.add_argument("--before", type=Path, metavar="DIR", help="an older checkout to time cold check and tree walk against (interleaved)")
    args = ap.parse_args()
    exe = [args.exe] if args.exe else [sys.executable, "-m", "engine"]
    # bytecode cached as an installed package has it (PYTHONDONTWRITEBYTECODE would time the compiler)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(HERE.parent / "build" / "bench-pycache")
    base, _ = timed([sys.executable, "-c", "pass"], max(args.runs, 5), env)
    print(f"{'':34s} {'figure':>16s} {'ratio':>9s}   {'target':22s} verdict")
    line("python -c pass", f"{base * 1000:.0f} ms", "1.0x", "(baseline)", None)
    commands(exe, args.runs, env, base)
    checks(exe, args.runs, env)
    issue24(exe, args.runs, env, base, not args.no_site)
    api_rates()
    features(env)
    if args.before:
        before_after(args.before.resolve(), exe, args.runs, env)
    for label, (was, now) in RECORDED.items():
        print(f"recorded (issue 24) {label}: {was} -> {now}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
