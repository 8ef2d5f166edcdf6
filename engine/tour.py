"""A short tour of the shipped formulas: what ``make run`` shows after ``aiinfra check``.

Every command here is an ordinary ``aiinfra`` invocation, printed before its output so a
reader can copy it.
"""

from __future__ import annotations

import sys

from engine.cli.main import main

STEPS = [
    ("The formulas, keyed to the book's Appendix B", ["formula", "list"]),
    ("One formula in full: KV cache bytes per token", ["formula", "show", "F8"]),
    ("Qwen3-8B's KV cache per token (config.json: 36 layers, 8 KV heads, head_dim 128, BF16)",
     ["formula", "eval", "F8", "--set", "layers=36", "--set", "kv_heads=8", "--set", "head_dim=128", "--set", "kv_bytes=2B", "--set", "attention=gqa"]),
    ("Training time with uncertain MFU: 70B params, 15T tokens (6ND), 1024 GPUs at 989 TFLOPS dense BF16",
     ["formula", "eval", "F2", "--set", "train_flops=6.3e24", "--set", "n_gpus=1024", "--set", "peak_flops=989TFLOPS", "--set", "mfu=35..45%"]),
    ("What MFU finishes that run within 120 days?",
     ["formula", "solve", "F2", "--for", "mfu", "--set", "train_flops=6.3e24", "--set", "n_gpus=1024", "--set", "peak_flops=989TFLOPS", "--le", "120d"]),
    ("Models from official config.json files, with parameter totals that match the checkpoints", ["model", "list"]),
    ("Per-operator account of a 2048-token prefill of Qwen3-8B", ["forward", "--model", "qwen3-8b", "--tokens", "2048"]),
    ("The same operators bounded on an H100 SXM (dense BF16 peak, HBM3 bandwidth)",
     ["roofline", "--device", "h100-sxm", "--model", "qwen3-8b", "--tokens", "2048"]),
    ("Ring AllReduce of 1 GiB over 8 ranks at 50 GB/s, round by round", ["collective", "ring", "--op", "allreduce", "--ranks", "8", "--bytes", "1GiB", "--bandwidth", "50GB/s", "--show-rounds", "3"]),
    ("The calculators, declared as data", ["calc", "list"]),
    ("How many 8k-token requests fit: Qwen3-8B on one H100 SXM (presets name their sources)",
     ["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes=2", "--set", "context_tokens=8192",
      "--set", "gpu_memory_utilization=0.9", "--set", "engine_overhead_bytes=2GiB"]),
    ("Training memory per GPU: Llama-3.1-70B, TP 8 x PP 4 x DP 32, ZeRO-1, selective recompute",
     ["calc", "training-memory", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--set", "tp_size=8", "--set", "pp_size=4",
      "--set", "dp_size=32", "--set", "zero_stage=1", "--set", "seq_len=8192", "--set", "micro_batch=1", "--set", "recompute=selective",
      "--set", "sp_degree=8"]),
    ("A reference architecture, computed", ["arch", "show", "ra-02"]),
    ("The decision trees", ["tree", "list"]),
    ("Where disaggregating prefill and decode starts to pay, for Qwen3-8B on H100",
     ["tree", "boundary", "pd-disaggregation", "--for", "prompt_tokens", "--model", "qwen3-8b", "--device", "h100-sxm",
      "--set", "latency_slo=interactive", "--set", "decode_batch=32", "--set", "avg_output_tokens=256", "--set", "kv_bytes=2",
      "--set", "tpot_slo=50ms", "--set", "serving_gpus=64", "--set", "kv_link_bandwidth=50GB/s"]),
    ("What to read before chapter 24", ["path", "prereq", "24"]),
    ("The knowledge graph", ["graph", "stats"]),
]


def run() -> int:
    worst = 0
    for title, argv in STEPS:
        print(f"\n== {title}\n$ aiinfra {' '.join(argv)}\n", flush=True)
        code = main(argv)
        sys.stdout.flush()
        worst = max(worst, code)
    return worst


if __name__ == "__main__":
    raise SystemExit(run())
