"""Full docs-site build time (issue 7 target: at most 60 s on the 2-core machine). Not a test.

Each run is a fresh process ``aiinfra site build --out DIR`` (page generation from the YAML,
mkdocs --strict with Material, jieba's Chinese segmentation for search), timed wall-clock and
in CPU seconds (children included), after one warm-up run that fills the compiled-formula and
tree-analysis caches and installs KaTeX and Mermaid from npm if missing. ``--cold`` points
each run at an empty cache folder instead, so the formulas are recompiled and the trees
re-analysed every time. A breakdown of one in-process build follows: the page generation
(``engine.site.generate``) and the rest (mkdocs).

Usage: ``python benchmarks/site.py [--runs N] [--cold]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 60.0


def one_build(out: str, env: dict) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "engine", "site", "build", "--out", out], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"site build failed:\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def breakdown(out: str) -> tuple[float, float, int]:
    from engine.core.paths import shipped_root
    from engine.site.build import build
    from engine.site.generate import generate

    start = time.perf_counter()
    site = generate(shipped_root())
    gen = time.perf_counter() - start
    result = build(out)
    return gen, result["seconds"], len(site.pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="recompile the formulas and re-analyse the trees in every run")
    args = parser.parse_args()
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    with tempfile.TemporaryDirectory(prefix="aiinfra-site-bench-") as tmp:
        out = str(Path(tmp) / "site")
        one_build(out, env)  # warm-up: caches, npm
        walls, cpus = [], []
        for i in range(args.runs):
            run_env = dict(env, AIINFRA_CACHE_DIR=str(Path(tmp) / f"cache{i}")) if args.cold else env
            wall, cpu = one_build(out, run_env)
            walls.append(wall)
            cpus.append(cpu)
        gen, whole, pages = breakdown(out)
    best, median = min(walls), statistics.median(walls)
    print(f"site build ({'cold caches' if args.cold else 'warm caches'}), {args.runs} runs, {os.cpu_count()} CPUs")
    print(f"  wall: best {best:.1f} s, median {median:.1f} s; CPU (user+sys) median {statistics.median(cpus):.1f} s")
    print(f"  {pages} generated pages; in-process build {whole:.1f} s, of which page generation {gen:.1f} s and mkdocs {whole - gen:.1f} s")
    print(f"  target <= {TARGET_S:.0f} s: {'met' if median <= TARGET_S else 'NOT met'}")


if __name__ == "__main__":
    main()
