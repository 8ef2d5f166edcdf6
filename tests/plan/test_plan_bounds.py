"""Issue #24: hostile sizes given to the planner (and to generate) are refused with exit 2 and
one line, or answered, within a time bound; never an exhausted memory, an overflow or a hang."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from engine.plan import executor

BOUND_S = 30  # each command below answers in about a second; the bound catches a search that runs away


def aiinfra(*argv: str) -> tuple[int, str, str, float]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "engine", *argv], capture_output=True, text=True, timeout=BOUND_S)
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start


TRAIN = ("plan", "--model", "llama-3.1-8b", "--device", "h100-sxm")
SERVE = ("plan", "serve", "--model", "qwen3-8b", "--device", "h100-sxm", "--qps", "10", "--prompt", "1000", "--output", "100",
         "--ttft", "1s", "--tpot", "50ms")

CASES = {
    "micro-batch 1e9": (TRAIN + ("--gpus", "64", "--global-batch", "1000000000", "--max-micro-batch", "1000000000"),
                        "--max-micro-batch: 1,000,000,000 is more micro-batch sizes than one search takes; expected at most 4,096"),
    "decode batch 1e9": (SERVE + ("--max-batch", "1000000000",),
                         "--max-batch: 1,000,000,000 is more decode batch sizes than one search takes; expected at most 65,536"),
    "gpus 1e20": (TRAIN + ("--gpus", "100000000000000000000"),
                  "--gpus: 100,000,000,000,000,000,000 is more GPUs than one search takes; expected at most 1,048,576"),
    "tile 1": (TRAIN + ("--gpus", "64", "--tile", "1"), None),
    # integers past int64 or past a float: NumPy's % and float() overflowed (exit 70)
    "global batch 2^63": (TRAIN + ("--gpus", "64", "--global-batch", str(2**63)),
                          "--global-batch: 9,223,372,036,854,775,808 is more sequences per step than one search takes; expected at most 4,294,967,296"),
    "seq 1e400": (TRAIN + ("--gpus", "64", "--seq", "1" + "0" * 400),
                  "--seq: a 401-digit number is more tokens per sequence than one search takes; expected at most 4,294,967,296"),
    "nvlink domain 1e400": (TRAIN + ("--gpus", "64", "--nvlink-domain", "1" + "0" * 400),
                            "--nvlink-domain: a 401-digit number is more GPUs in one NVLink domain than one search takes; expected at most 1,048,576"),
    "forward tokens 1e400": (("forward", "--model", "qwen3-8b", "--tokens", "1" + "0" * 400),
                             "--tokens: expected a whole number from 1 to 10^18, got a 401-digit number"),
    "generate history 1e21": (("generate", "--model", "qwen3-8b", "--history", "1" + "0" * 21, "--steps", "16"),
                              "--history: expected a whole number from 0 to 10^18, got 1,000,000,000,000,000,000,000"),
    "roofline batch 1e400": (("roofline", "--model", "qwen3-8b", "--device", "h100-sxm", "--tokens", "1", "--batch", "1" + "0" * 400),
                             "--batch: expected a whole number from 1 to 10^18, got a 401-digit number"),
    "workers 100000": (TRAIN + ("--gpus", "64", "--executor", "process", "--workers", "100000"), None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_sizes_are_refused_with_one_line(case):
    argv, message = CASES[case]
    code, out, err, seconds = aiinfra(*argv)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and "Traceback" not in err
    if message is not None:
        assert err == f"aiinfra: error: {message}\n"
    assert seconds < BOUND_S


def test_tile_and_worker_messages():
    with pytest.raises(executor.InputError) as err:
        executor.tiles(1578, 1)
    assert str(err.value) == "--tile: 1 points per tile cut 1,578 points into 1,578 tiles; expected at most 1,000 (--tile 2 or more)"
    assert executor.tiles(1578, 2)[-1] == (1576, 1578)
    with pytest.raises(executor.InputError) as err:
        executor._check_workers(executor.max_workers() + 1)
    assert str(err.value) == (f"--workers: {executor.max_workers() + 1} is more than this machine runs at once; "
                              f"expected at most {executor.max_workers()} (twice its CPUs, at least 8)")


def test_generate_over_1e16_steps_finishes_exactly():
    # the affine test of ledger._sum_range took one step's difference of floats past 2^53, failed,
    # and bisected to O(steps) terms; the slope is now taken from the ends of a stretch
    code, out, err, seconds = aiinfra("generate", "--model", "qwen3-8b", "--history", "1000", "--steps", str(10**16), "--format", "json")
    assert (code, err) == (0, "")
    assert seconds < BOUND_S
    import json

    totals = json.loads(out)["totals"]
    # Qwen3-8B decode call j attends over 1001 + j positions: 4 x 36 layers x 32 heads x 128 = 589,824 FLOP
    # each (590,413,824 at --steps 1); the sum over 10^16 calls, exactly, as Python's integers give it
    steps = 10**16
    assert totals["attention_matrix_flops"] == 589_824 * (1001 * steps + steps * (steps - 1) // 2)


def test_sum_range_is_exact_for_large_affine_entries_and_finds_kinks():
    from engine.domain.ledger import _sum_range

    window = 10**9

    def f(h):  # one entry affine with a large value, one with a kink at the window, one constant
        return [3.0e5 * h + 7.0, float(min(h, window)), 2.0]

    lo, hi = 1000, 1000 + 10**16 - 1
    got = _sum_range(f, lo, hi)
    n = hi - lo + 1
    assert got[2] == 2 * n
    assert got[1] == sum(range(lo, window + 1)) + window * (hi - window)
    assert abs(got[0] - (3.0e5 * (lo + hi) * n / 2 + 7.0 * n)) <= 1e-9 * got[0]
    small = _sum_range(lambda h: [float(h), float(min(h, 50))], 1, 200)  # against the term-by-term sum
    assert small == [sum(range(1, 201)), sum(min(h, 50) for h in range(1, 201))]


# A process limit (RLIMIT_NPROC counts threads too) met half way through starting a pool: the first fork works, then
# the next fork fails (EAGAIN) or the pool's manager thread cannot start. Before, the thread case was exit 70 ('cannot
# join thread before it is started') and both then hung at exit, waiting for the worker that had been forked.
LIMITED = """
import os, sys, threading
from concurrent.futures import process
case = sys.argv[1]
if case == "fork":
    real, forks = os.fork, []
    def fork():
        if forks:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        forks.append(1)
        return real()
    os.fork = fork
else:
    real_start = threading.Thread.start
    def start(self):
        if isinstance(self, process._ExecutorManagerThread):
            raise RuntimeError("can't start new thread")
        return real_start(self)
    threading.Thread.start = start
from engine.cli.main import main
sys.exit(main(["plan", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--gpus", "64", "--executor", "process", "--workers", "2"]))
"""


@pytest.mark.parametrize("case, reason", [("fork", "[Errno 11] Resource temporarily unavailable"), ("thread", "can't start new thread")])
def test_a_pool_that_cannot_start_its_workers_is_refused_and_leaves_none_behind(case, reason):
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", LIMITED, case], capture_output=True, text=True, timeout=BOUND_S)
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr == f"aiinfra: error: --workers: cannot start 2 worker processes ({reason}); give fewer\n"
    assert time.monotonic() - start < BOUND_S
