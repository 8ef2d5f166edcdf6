"""``aiinfra plan serve --simulate`` as a user runs it (subprocess): the pinned layout stepped request by request.

What the tests hold to: Little's law on the printed run (time-average requests in the system = completion rate x mean
E2E), the same seed giving the same run, a trace file replayed row by row, percentiles ordered, and bad input named on
one line with exit 2.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

BASE = ["plan", "serve", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--prompt", "512", "--output", "128", "--ttft", "2s",
        "--tpot", "100ms", "--max-batch", "8", "--no-split", "--tp", "1", "--simulate", "--requests", "300"]


def aiinfra(*argv):
    return subprocess.run([sys.executable, "-m", "engine", *argv], capture_output=True, text=True, timeout=300)


def test_open_loop_json_obeys_littles_law_and_orders_its_percentiles():
    p = aiinfra(*BASE, "--qps", "5", "--engine", "vllm", "--format", "json")
    assert p.returncode == 0, p.stderr
    sim = json.loads(p.stdout)["simulated"]
    assert sim["available"] and sim["loop"] == "open" and sim["admission"] == "on-demand"
    s = sim["summary"]
    assert s["little"]["in_system"] == pytest.approx(s["little"]["rate_x_e2e"], rel=1e-9)
    for name in ("ttft", "tpot", "e2e_latency"):
        assert s[name]["p50"] <= s[name]["p90"] <= s[name]["p99"]
    # 300 requests of 128 output tokens at about 5 req/s: the run cannot complete more than it was offered
    assert s["request_throughput"] <= 5 * 1.2


def test_closed_loop_text_and_the_same_seed_gives_the_same_run():
    a = aiinfra(*BASE, "--concurrency", "16", "--lengths", "lognormal", "--seed", "3")
    b = aiinfra(*BASE, "--concurrency", "16", "--lengths", "lognormal", "--seed", "3")
    assert a.returncode == 0, a.stderr
    assert "16 clients in a closed loop" in a.stdout and "Little's law" in a.stdout and "targets at P90" in a.stdout
    assert a.stdout == b.stdout


def test_the_step_schedule_follows_the_engine_and_prefill_first_delays_the_decodes():
    # SGLang runs prompts in steps of their own (prefill-first); --schedule mixed overrides it. 16 clients of equal
    # 2048-token prompts (4 steps of 8192 tokens a wave): under prefill-first every wave's prompts run while its decodes
    # wait, so the mean TTFT is longer than with prompt chunks mixed into decode steps, where only the first wave waits
    # for the others' prompts and the later requests arrive staggered
    argv = [*BASE, "--concurrency", "16", "--engine", "sglang", "--prompt", "2048", "--format", "json"]
    first = aiinfra(*argv)
    mixed = aiinfra(*argv, "--schedule", "mixed")
    assert first.returncode == 0 and mixed.returncode == 0, first.stderr + mixed.stderr
    a, b = json.loads(first.stdout)["simulated"], json.loads(mixed.stdout)["simulated"]
    assert a["schedule"] == "prefill-first" and b["schedule"] == "mixed"
    assert a["summary"]["ttft"]["mean"] > b["summary"]["ttft"]["mean"]
    bad = aiinfra(*BASE, "--concurrency", "16", "--schedule", "decode-first")
    assert bad.returncode == 2 and "--schedule" in bad.stderr and "Traceback" not in bad.stderr


def test_a_trace_is_replayed(tmp_path):
    trace = tmp_path / "t.csv"
    # 4 requests, one every second, short enough that each finishes before the next arrives: 4 requests complete
    trace.write_text("arrival_s,prompt,output\n0,100,10\n1,100,10\n2,100,10\n3,100,10\n")
    p = aiinfra(*BASE, "--trace", str(trace), "--format", "json")
    assert p.returncode == 0, p.stderr
    sim = json.loads(p.stdout)["simulated"]
    assert sim["requests_per_instance"] == 4 and sim["loop"] == "open"
    assert sim["summary"]["preemptions"] == 0


@pytest.mark.parametrize(("extra", "field"), [
    (["--qps", "5", "--percentile", "75"], "--percentile"),
    (["--trace", "/nonexistent/trace.csv"], "--trace"),
    ([], "--simulate"),  # no load given
])
def test_bad_input_is_one_line_exit_2(extra, field):
    p = aiinfra(*BASE, *extra)
    assert p.returncode == 2
    assert field in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_simulate_needs_a_pinned_layout():
    argv = [a for a in BASE if a not in ("--tp",)]
    argv.remove("1")  # the value after --tp
    p = aiinfra(*argv, "--qps", "5")
    assert p.returncode == 2 and "--tp" in p.stderr
