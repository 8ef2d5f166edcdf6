"""Speed of the serving simulation (issue 27: 10,000 requests simulated in at most 2 s on this machine).

Prints wall time per run, steps, requests per second simulated and the ratio to the 2 s target, for a closed loop,
a Poisson open loop and a bursty gamma open loop with lognormal lengths (Llama-3.1-8B on one H100 under the shipped
serving calibration). Run: .venv/bin/python benchmarks/simulate.py
"""

from __future__ import annotations

import time

TARGET_S = 2.0
N = 10_000


def main() -> None:
    from engine.measure import predict

    cases = [
        ("closed loop, 256 clients, fixed 1024/256", dict(concurrency=256)),
        ("open loop, Poisson 20 req/s, fixed 1024/256", dict(qps=20.0)),
        ("open loop, gamma cv 3 at 15 req/s, lognormal lengths", dict(qps=15.0, arrival="gamma", cv=3.0, lengths="lognormal", sigma=0.6)),
    ]
    print(f"{'case':<58} {'wall s':>7} {'steps':>8} {'req/s simulated':>16} {'x target':>9}")
    for name, kw in cases:
        best = None
        for _ in range(3):
            t0 = time.perf_counter()
            out = predict.simulate_serve(".", "llama-3.1-8b", "h100-sxm", tp=1, prompt=1024, output=256, requests=N, engine="vllm", **kw)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        s = out["summary"]
        print(f"{name:<58} {best:>7.2f} {s['steps']:>8,} {N / best:>16,.0f} {best / TARGET_S:>9.2f}")


if __name__ == "__main__":
    main()
