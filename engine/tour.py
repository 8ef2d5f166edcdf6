"""A short tour of the shipped knowledge: what ``make run`` shows after ``aiinfra check``.

Every step is an ordinary ``aiinfra`` invocation, printed before its output so a reader can copy it. A step shows
the part of its output that makes the point (the result, not every input row) and says how many lines it left
out; the whole tour stays under about 100 lines (issue 28). It exits with the worst exit code of its steps, so
``make run`` stops on a broken step.
"""

from __future__ import annotations

import contextlib
import io
import sys

from engine.cli.main import main

# (title, argv, what to show): ("head", N) the first N lines; ("from", TEXT, N) N lines from the first line that
# starts with TEXT (a calculator's output table, a planner's summary)
STEPS = [
    ("Qwen3-8B's K/V cache per token, from its config.json (36 layers, 8 KV heads, head_dim 128, BF16)",
     ["formula", "eval", "F8", "--set", "layers=36", "--set", "kv_heads=8", "--set", "head_dim=128", "--set", "kv_bytes=2B",
      "--set", "attention=gqa"], ("from", "kv_bytes_per_token =", 1)),
    ("Training time with an uncertain MFU: 6.3e24 FLOP (70B params x 15T tokens x 6) on 1,024 GPUs at 989 TFLOP/s",
     ["formula", "eval", "F2", "--set", "train_flops=6.3e24", "--set", "n_gpus=1024", "--set", "peak_flops=989TFLOPS", "--set", "mfu=35..45%"],
     ("from", "train_time =", 2)),
    ("The MFU that finishes the same run within 120 days",
     ["formula", "solve", "F2", "--for", "mfu", "--set", "train_flops=6.3e24", "--set", "n_gpus=1024", "--set", "peak_flops=989TFLOPS", "--le", "120d"],
     ("from", "  mfu in", 1)),
    ("Models from official config.json files, parameter totals equal to the checkpoints",
     ["model", "list"], ("head", 6)),
    ("How many 8K-token requests fit on one H100 SXM with Qwen3-8B (presets from the model and device records)",
     ["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "context_tokens=8192"], ("from", "output ", 8)),
    ("GPUs for 20 requests/s of Qwen3-8B on H100s within a 500 ms TTFT and a 30 ms TPOT",
     ["plan", "serve", "--model", "qwen3-8b", "--device", "h100-sxm", "--prompt", "2048", "--output", "256", "--ttft", "500ms", "--tpot", "30ms",
      "--qps", "20"], ("from", "knee of the front", 4)),
    ("Where disaggregating prefill and decode starts to pay, for Qwen3-8B on H100",
     ["tree", "boundary", "pd-disaggregation", "--for", "prompt_tokens", "--model", "qwen3-8b", "--device", "h100-sxm",
      "--set", "latency_slo=interactive", "--set", "decode_batch=32", "--set", "avg_output_tokens=256", "--set", "kv_bytes=2",
      "--set", "tpot_slo=50ms", "--set", "serving_gpus=64", "--set", "kv_link_bandwidth=50GB/s"], ("head", 3)),
    ("Ring all-reduce of 1 GiB over 8 ranks at 50 GB/s", ["collective", "ring", "--op", "allreduce", "--ranks", "8", "--bytes", "1GiB",
                                                          "--bandwidth", "50GB/s"], ("from", "output ", 10)),
    ("What to read before chapter 24", ["path", "prereq", "24"], ("head", 8)),
]

NEXT = """
== Where to go next
  aiinfra --help                 every command; each has its own --help
  aiinfra formula list           the 'Appendix B' formulas;  aiinfra calc list   the calculators
  aiinfra tree list              the decision trees;         aiinfra validate    our error against measurements
  the docs site (make run serves it on http://127.0.0.1:8000) has every formula, calculator and tree as a page"""


def shown(text: str, how: tuple) -> tuple[list[str], int]:
    """The lines of ``text`` a step shows, and how many it leaves out."""
    lines = text.rstrip("\n").splitlines()
    if how[0] == "from":
        start = next((i for i, line in enumerate(lines) if line.startswith(how[1])), 0)
        keep = lines[start:start + how[2]]
    else:
        keep = lines[:how[1]]
    return keep, len(lines) - len(keep)


def run() -> int:
    worst = 0
    for title, argv, how in STEPS:
        print(f"\n== {title}\n$ aiinfra {' '.join(argv)}", flush=True)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main(argv)
        keep, left = shown(buf.getvalue(), how)
        print("\n".join(keep))
        if left:
            print(f"  [... {left} more lines: run the command above to see them all]")
        sys.stdout.flush()
        worst = max(worst, code)
    print(NEXT)
    return worst


if __name__ == "__main__":
    raise SystemExit(run())
