"""Full docs-site build time on the 2-core machine. Not a test.

Targets: a warm build (nothing changed since the last one) at most 10 s (issue 24); a cold one
(an empty cache) at most 60 s (issue 7). The median is printed with its ratio to the target.

Each run is a fresh process ``aiinfra site build --out DIR`` (page generation from the YAML,
mkdocs --strict with Material, jieba's Chinese segmentation for search), timed wall-clock and
in CPU seconds (children included), after one warm-up run that fills the caches (the generated
pages, each page's converted HTML and search entries, the compiled formulas and tree analyses)
and installs KaTeX and Mermaid from npm if missing. ``--cold`` points each run at an empty cache
folder instead, so every page is generated and converted again. A breakdown of one in-process
build follows: the generated pages (read from the cache when warm) and the rest (mkdocs).

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
WARM_TARGET_S = 10.0  # issue 24
COLD_TARGET_S = 60.0  # issue 7


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
    """One in-process build: the seconds its generated pages took (engine.site.site_cache.generated), the whole, the page count."""
    from engine.site import site_cache
    from engine.site.build import build

    timed: dict = {}
    original = site_cache.generated

    def generated(*args, **kwargs):
        start = time.perf_counter()
        site = original(*args, **kwargs)
        timed.update(seconds=time.perf_counter() - start, pages=len(site.pages))
        return site

    site_cache.generated = generated  # the mkdocs hook imports it when the build starts
    try:
        result = build(out)
    finally:
        site_cache.generated = original
    return timed["seconds"], result["seconds"], timed["pages"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="an empty cache folder for every run: every page generated and converted again")
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
    target, issue = (COLD_TARGET_S, "issue 7") if args.cold else (WARM_TARGET_S, "issue 24")
    print(f"site build ({'cold caches' if args.cold else 'warm caches'}), {args.runs} runs, {os.cpu_count()} CPUs")
    print(f"  wall: best {best:.1f} s, median {median:.1f} s; CPU (user+sys) median {statistics.median(cpus):.1f} s")
    print(f"  {pages} generated pages; in-process warm build {whole:.1f} s, of which generated pages {gen:.1f} s and mkdocs {whole - gen:.1f} s")
    print(f"  {'cold' if args.cold else 'warm'} target <= {target:.0f} s ({issue}): median {median:.1f} s = {median / target:.2f} x the target, "
          f"{'met' if median <= target else 'NOT met'}")


if __name__ == "__main__":
    main()
