"""Start-up and check timings, printed as figures and ratios (not a test).

Targets (issue 2): the whole-process time of ``aiinfra formula eval`` at most 2x that of
``python -c pass``, measured on an installed (not editable) package; ``aiinfra check``
reported as is.

Usage: ``python benchmarks/run.py [--runs N] [--venv DIR]``. Without ``--venv`` it builds
``build/bench-venv`` with a regular (non-editable) install of this checkout.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVAL = ["formula", "eval", "F8", "--set", "layers=36", "--set", "kv_heads=8", "--set", "head_dim=128", "--set", "attention=gqa", "--set", "kv_bytes=2"]


def build_venv(venv: Path) -> None:
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run(pip + ["--upgrade", "--force-reinstall", "--no-deps", str(ROOT)], check=True)
    subprocess.run(pip + [str(ROOT)], check=True)  # dependencies, if missing


def timed(cmd: list[str], runs: int, env: dict[str, str]) -> list[float]:
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)  # warm caches
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        out.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-400:]}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--venv", type=Path, default=ROOT / "build" / "bench-venv")
    args = ap.parse_args()
    build_venv(args.venv)
    py = str(args.venv / "bin" / "python")
    exe = str(args.venv / "bin" / "aiinfra")
    env = dict(os.environ, AIINFRA_CACHE_DIR=str(ROOT / "build" / "bench-cache"))
    base = timed([py, "-c", "pass"], args.runs, env)
    ev = timed([exe, *EVAL], args.runs, env)
    check = timed([exe, "check"], max(3, args.runs // 5), env)
    med = statistics.median
    print(f"python -c pass        median {med(base) * 1000:7.1f} ms  (min {min(base) * 1000:.1f})")
    print(f"aiinfra formula eval  median {med(ev) * 1000:7.1f} ms  (min {min(ev) * 1000:.1f})")
    print(f"  ratio eval / pass   {med(ev) / med(base):.2f}x median, {min(ev) / min(base):.2f}x best   (target <= 2x)")
    print(f"aiinfra check         median {med(check) * 1000:7.1f} ms  (min {min(check) * 1000:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
