"""calc:collective (knowledge/calculators/collective.yaml): worked examples, consistency, refusals, properties.

Sources of the expected numbers, each written out beside its assertion:
- NVIDIA nccl-tests doc/PERFORMANCE.md (@03a204a1): algbw = S/t; busbw = algbw × factor with
  AllReduce 2(n − 1)/n, ReduceScatter, AllGather and AlltoAll (n − 1)/n, Broadcast and Reduce 1,
  and the ideal time t = factor × S/B (so busbw = B at the ideal time).
- The book's comm calculator (BOOK.md section 8, comm.collective_time @a98dbf79): wire bytes
  2(r − 1)/r or (r − 1)/r × payload, total = wire / bus_bw + latency × (r − 1), exposed =
  total × (1 − overlap); its *_gbps inputs are GB/s.
- The binomial tree of `aiinfra collective tree` (FX62, bojieli/ai-infra-book
  tree_collective.py@d3ab25b4): 2·⌈log2 K⌉ steps, each carrying the whole message.
No expected value was produced by running this code.
"""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main
from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.numeric.calculators import Calculator, load_records, run

# nccl-tests PERFORMANCE.md, "Summary": busbw correction factor per primitive (n ranks)
NCCL_FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "all2all": lambda n: (n - 1) / n,  # nccl-tests' AlltoAll
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


@pytest.fixture(scope="module")
def calc():
    return Calculator.from_record(load_records(shipped_root())["calc:collective"])


def coll(calc, module, **given):
    return run(calc, module, given)


def out(result, name):
    return result.outputs[name].value


def cli(argv, capsys):
    code = main(argv)
    o, e = capsys.readouterr()
    return code, o, e


# ---------------------------------------------------------------------- worked examples (nccl-tests)


def test_nccl_allreduce_8_ranks_no_latency(calc, module):
    # nccl-tests PERFORMANCE.md AllReduce: t = (S/B)·2(n − 1)/n. S = 1 GB, n = 8, B = 100 GB/s:
    # wire 2 × 7/8 × 1e9 = 1.75e9 B; t = 1.75e9 / 100e9 = 0.0175 s; algbw = 1e9 / 0.0175 = 5.7142857e10 B/s;
    # busbw = algbw × 1.75 = 1e11 B/s = B
    r = coll(calc, module, msg_bytes="1GB", ranks=8, eff_bandwidth="100GB/s", step_latency=0)
    assert out(r, "collective_wire_bytes") == pytest.approx(1.75e9, rel=1e-12)
    assert out(r, "collective_steps") == 14  # ring: 2 × (8 − 1)
    assert out(r, "collective_time") == pytest.approx(0.0175, rel=1e-12)
    assert out(r, "alg_bandwidth") == pytest.approx(1e9 / 0.0175, rel=1e-12)
    assert out(r, "bus_bandwidth") == pytest.approx(1e11, rel=1e-12)
    assert r.formulas == ["FX1", "FX110", "FX111", "FX50", "FX112", "FX51", "FX52", "FX113", "FX700", "FX701"]
    assert not r.warnings


@pytest.mark.parametrize("op, ranks, wire, steps", [
    # hand arithmetic, S = 1 GB: factor × S; ring steps (n − 1) per pass, AllReduce 2 passes
    ("allreduce", 8, 1.75e9, 14),
    ("reducescatter", 8, 8.75e8, 7),
    ("allgather", 64, 9.84375e8, 63),
    ("all2all", 64, 9.84375e8, 63),
    ("broadcast", 16, 1e9, 15),
    ("reduce", 16, 1e9, 15),
])
def test_nccl_factors_give_busbw_equal_to_link_bandwidth(calc, module, op, ranks, wire, steps):
    # nccl-tests PERFORMANCE.md: at the ideal time t = factor × S/B, busbw = algbw × factor = B
    r = coll(calc, module, collective=op, msg_bytes="1GB", ranks=ranks, eff_bandwidth="50GB/s", step_latency=0)
    assert out(r, "collective_wire_bytes") == pytest.approx(NCCL_FACTOR[op](ranks) * 1e9, rel=1e-12) == wire
    assert out(r, "collective_steps") == steps
    assert out(r, "collective_time") == pytest.approx(wire / 50e9, rel=1e-12)
    assert out(r, "alg_bandwidth") == pytest.approx(1e9 / (wire / 50e9), rel=1e-12)
    assert out(r, "bus_bandwidth") == pytest.approx(50e9, rel=1e-12)


def test_broadcast_time_is_size_over_bandwidth(calc, module):
    # nccl-tests PERFORMANCE.md Broadcast: "all data has to get out of the root rank": t = S/B, busbw = algbw.
    # S = 256 MiB = 268435456 B at 25 GB/s: t = 268435456 / 25e9 = 0.01073741824 s, algbw = busbw = 25e9 B/s
    r = coll(calc, module, collective="broadcast", msg_bytes="256MiB", ranks=32, eff_bandwidth="25GB/s", step_latency=0)
    assert out(r, "collective_time") == pytest.approx(0.01073741824, rel=1e-12)
    assert out(r, "alg_bandwidth") == pytest.approx(25e9, rel=1e-12)
    assert out(r, "bus_bandwidth") == out(r, "alg_bandwidth")


def test_allreduce_with_step_latency(calc, module):
    # time = steps × α + wire / B: 2 × 7 × 20e-6 + 1.75e9 / 100e9 = 0.00028 + 0.0175 = 0.01778 s (FX50's example);
    # algbw = 1e9 / 0.01778 = 5.6242970e10; busbw = × 1.75 = 9.8425197e10 B/s, below B because of α
    r = coll(calc, module, msg_bytes="1GB", ranks=8, eff_bandwidth="100GB/s", step_latency="20us")
    assert out(r, "collective_time") == pytest.approx(0.01778, rel=1e-12)
    assert out(r, "alg_bandwidth") == pytest.approx(5.6242970e10, rel=1e-7)
    assert out(r, "bus_bandwidth") == pytest.approx(9.8425197e10, rel=1e-7)
    assert r.inputs["step_latency"].source == "user"


def test_default_latency_is_the_books_20us(calc, module):
    # book comm calculator latency_us default 20: all-gather of 1 GB over 64 ranks at 50 GB/s:
    # 63 × 20e-6 + 9.84375e8 / 50e9 = 0.00126 + 0.0196875 = 0.0209475 s
    r = coll(calc, module, collective="allgather", msg_bytes="1GB", ranks=64, eff_bandwidth="50GB/s")
    assert out(r, "collective_time") == pytest.approx(0.0209475, rel=1e-12)
    assert r.inputs["step_latency"].source.startswith("default: Book calculators comm.collective_time (@a98dbf79)")


# ---------------------------------------------------------------------- the book's comm calculator


def test_book_comm_allgather_matches_exactly(calc, module):
    # Book comm calculator, allgather, payload_gb 1, ranks 8, bus_bw_gbps 50 (GB/s), latency_us 20, overlap 0.3:
    # wire = 7/8 × 1 GB = 0.875 GB; total = 0.875e9 / 50e9 + 20e-6 × 7 = 0.0175 + 0.00014 = 0.01764 s;
    # exposed = 0.01764 × 0.7 = 0.012348 s. K − 1 steps here too, so ours is the same.
    r = coll(calc, module, collective="allgather", msg_bytes="1GB", ranks=8, eff_bandwidth="50GB/s",
             step_latency="20us", comm_overlap_fraction=0.3)
    assert out(r, "collective_wire_bytes") == pytest.approx(0.875e9, rel=1e-12)
    assert out(r, "collective_time") == pytest.approx(0.01764, rel=1e-12)
    assert out(r, "exposed_comm_time") == pytest.approx(0.012348, rel=1e-12)


def test_book_comm_allreduce_differs_by_the_stated_latency_steps(calc, module):
    # Book comm calculator, allreduce, payload 1 GB, 8 ranks, 50 GB/s, 20 µs: wire 2 × 7/8 × 1e9 = 1.75e9 B;
    # total = 1.75e9 / 50e9 + 20e-6 × 7 = 0.035 + 0.00014 = 0.03514 s. Ours charges 2(K − 1) = 14 steps
    # (stated in the calculator's assumptions): 0.035 + 0.00028 = 0.03528 s, the book's + 7 × 20e-6.
    book_total = 1.75e9 / 50e9 + 20e-6 * 7
    r = coll(calc, module, msg_bytes="1GB", ranks=8, eff_bandwidth="50GB/s", step_latency="20us")
    assert out(r, "collective_wire_bytes") == pytest.approx(1.75e9, rel=1e-12)
    assert out(r, "collective_time") == pytest.approx(0.03528, rel=1e-12)
    assert out(r, "collective_time") - book_total == pytest.approx(7 * 20e-6, rel=1e-9)
    assert any("latency × (ranks − 1)" in a for a in r.assumptions)
    # with no latency the two agree: 1.75e9 / 50e9 = 0.035 s
    assert out(coll(calc, module, msg_bytes="1GB", ranks=8, eff_bandwidth="50GB/s", step_latency=0), "collective_time") == pytest.approx(0.035)


def test_book_units_gb_not_gib(calc, module):
    # ECOSYSTEM.md peer mistake "GB and GiB mixed": the book's bus_bw_gbps = 50 is 50e9 B/s, not 50 GiB/s.
    # reducescatter of 1 GB over 2 ranks: 0.5e9 / 50e9 = 0.01 s (with GiB it would be 0.0093132 s)
    r = coll(calc, module, collective="reducescatter", msg_bytes="1GB", ranks=2, eff_bandwidth="50GB/s", step_latency=0)
    assert out(r, "collective_time") == pytest.approx(0.01, rel=1e-12)


def test_chapter_16_dp_gradient_allreduce(calc, module):
    # Book ch16 (@108da486) §16.4.8: 70B, t = 8, p = 4, d = 8, BF16: each DP rank all-reduces
    # 70e9 / 32 × 2 B = 4.375e9 B of gradients; ring wire 2 × 7/8 × 4.375e9 = 7.65625e9 B (F15);
    # over 40 GB/s cross-node RDMA: 7.65625e9 / 40e9 = 0.19140625 s (the book: 191 ms)
    r = coll(calc, module, msg_bytes=4.375e9, ranks=8, eff_bandwidth="40GB/s", step_latency=0)
    assert out(r, "collective_wire_bytes") == pytest.approx(7.65625e9, rel=1e-12)
    assert out(r, "collective_time") == pytest.approx(0.19140625, rel=1e-12)


# ---------------------------------------------------------------------- tree: the same as `aiinfra collective tree`


def test_tree_matches_fx62_hand_arithmetic(calc, module):
    # FX62: 2 × ⌈log2 8⌉ = 6 steps; 6 × (20e-6 + 1073741824 / 50e9) = 0.12896901888 s
    r = coll(calc, module, collective_algorithm="tree", msg_bytes="1GiB", ranks=8, eff_bandwidth="50GB/s", step_latency="20us")
    assert out(r, "collective_steps") == 6
    assert out(r, "collective_time") == pytest.approx(0.12896901888, rel=1e-12)
    # algbw = 1073741824 / 0.12896901888; busbw = × 2 × 7/8 (nccl-tests: independent of the algorithm)
    assert out(r, "alg_bandwidth") == pytest.approx(1073741824 / 0.12896901888, rel=1e-12)
    assert out(r, "bus_bandwidth") == pytest.approx(1073741824 / 0.12896901888 * 1.75, rel=1e-12)
    assert "FX62" in r.formulas and "FX50" not in r.formulas


@pytest.mark.parametrize("ranks, size", [(5, "1MiB"), (8, "64MiB"), (13, "4KiB")])
def test_tree_agrees_with_aiinfra_collective_tree(calc, module, capsys, ranks, size):
    code, o, _ = cli(["collective", "tree", "--op", "allreduce", "--ranks", str(ranks), "--bytes", size,
                      "--bandwidth", "50GB/s", "--latency", "2us", "--format", "json"], capsys)
    assert code == 0
    sched = json.loads(o)["outputs"]
    r = coll(calc, module, collective_algorithm="tree", msg_bytes=size, ranks=ranks, eff_bandwidth="50GB/s", step_latency="2us")
    assert out(r, "collective_steps") == sched["critical_path_steps"]["value"]
    for name in ("collective_time", "alg_bandwidth", "bus_bandwidth"):
        assert out(r, name) == pytest.approx(sched[name]["value"], rel=1e-12)
    # the tree moves 2(K − 1)·S in all; per rank on average that is FX1's 2(K − 1)/K·S
    assert out(r, "collective_wire_bytes") == pytest.approx(sched["network_bytes"]["value"] / ranks, rel=1e-12)


def test_tree_hand_arithmetic_five_ranks(calc, module):
    # ⌈log2 5⌉ = 3, so 6 steps; 6 × (2e-6 + 1048576 / 50e9) = 1.3782912e-4 s (FX62's second example)
    r = coll(calc, module, collective_algorithm="tree", msg_bytes="1MiB", ranks=5, eff_bandwidth="50GB/s", step_latency="2us")
    assert out(r, "collective_time") == pytest.approx(1.3782912e-4, rel=1e-12)


def test_tree_beats_ring_on_small_messages_of_large_groups(calc, module):
    # 4 KiB all-reduce over 1024 ranks at 50 GB/s, 20 µs: ring 2046 × 20e-6 + 2 × 1023/1024 × 4096 / 50e9
    # = 0.04092 + 1.636800e-7 = 0.0409201637 s; tree 20 × (20e-6 + 4096 / 50e9) = 20 × 2.008192e-5 = 4.016384e-4 s
    ring = coll(calc, module, msg_bytes="4KiB", ranks=1024, eff_bandwidth="50GB/s", step_latency="20us")
    tree = coll(calc, module, collective_algorithm="tree", msg_bytes="4KiB", ranks=1024, eff_bandwidth="50GB/s", step_latency="20us")
    assert out(ring, "collective_time") == pytest.approx(0.04092 + 2 * 1023 / 1024 * 4096 / 50e9, rel=1e-12)
    assert out(tree, "collective_time") == pytest.approx(4.016384e-4, rel=1e-12)


# ---------------------------------------------------------------------- refused pairs


@pytest.mark.parametrize("op", ["allgather", "reducescatter", "all2all", "broadcast", "reduce"])
def test_tree_with_other_primitives_is_refused(calc, module, op):
    with pytest.raises(InputError) as exc:
        coll(calc, module, collective=op, collective_algorithm="tree", msg_bytes="1MiB", ranks=8, eff_bandwidth="50GB/s")
    assert str(exc.value) == (
        f"--set collective_algorithm: collective_algorithm=tree, collective={op} is refused: the tree here is the unsegmented "
        "binomial allreduce of `aiinfra collective tree` (FX62: reduce to rank 0, then broadcast); use collective_algorithm=ring "
        "for the other primitives")


def test_refused_pair_cli_one_line_exit_2(capsys):
    code, o, e = cli(["calc", "collective", "--set", "collective=all2all", "--set", "collective_algorithm=tree",
                      "--set", "msg_bytes=1MiB", "--set", "ranks=8", "--set", "eff_bandwidth=50GB/s"], capsys)
    assert code == 2 and o == ""
    assert e.count("\n") == 1 and "Traceback" not in e
    assert e.startswith("aiinfra: error: --set collective_algorithm: collective_algorithm=tree, collective=all2all is refused")


@pytest.mark.parametrize("extra, field", [
    (["--set", "collective=alltoall"], "--set collective"),  # nccl-tests' name; the formula value is all2all
    (["--set", "collective_algorithm=butterfly"], "--set collective_algorithm"),
    (["--set", "ranks=0"], "--set ranks"),
    (["--set", "ranks=2.5"], "--set ranks"),
    (["--set", "eff_bandwidth=1GB"], "--set eff_bandwidth"),
    (["--set", "comm_overlap_fraction=1.5"], "--set comm_overlap_fraction"),
    (["--set", "payload_gb=1"], "--set payload_gb"),
])
def test_bad_input_is_one_line_exit_2(capsys, extra, field):
    base = ["calc", "collective", "--set", "msg_bytes=1GB", "--set", "ranks=8", "--set", "eff_bandwidth=50GB/s"]
    code, o, e = cli([*base, *extra], capsys)
    assert code == 2 and o == ""
    assert e.count("\n") == 1 and field in e and "Traceback" not in e


def test_one_rank_is_refused_by_the_ranks_domain(capsys):
    # a collective of one rank moves nothing and FX50/FX52 divide by P - 1 steps; the formulas' ranks
    # domain (ge_two_integer) refuses it before any division
    code, o, e = cli(["calc", "collective", "--set", "msg_bytes=1GiB", "--set", "ranks=1", "--set", "eff_bandwidth=50GB/s"], capsys)
    assert (code, o, e) == (2, "", "aiinfra: error: --set ranks: expected a whole number >= 2, got 1\n")


# ---------------------------------------------------------------------- properties


@pytest.mark.parametrize("op, algorithm", [(op, "ring") for op in NCCL_FACTOR] + [("allreduce", "tree")])
def test_doubling_the_message_doubles_the_bandwidth_term(calc, module, op, algorithm):
    # time − steps × α is the bandwidth term; it is proportional to S for both algorithms
    terms = []
    for size in (3e8, 6e8, 1.2e9):
        r = coll(calc, module, collective=op, collective_algorithm=algorithm, msg_bytes=size, ranks=12,
                 eff_bandwidth="80GB/s", step_latency="15us")
        terms.append(out(r, "collective_time") - out(r, "collective_steps") * 15e-6)
    assert terms[1] == pytest.approx(2 * terms[0], rel=1e-9)
    assert terms[2] == pytest.approx(2 * terms[1], rel=1e-9)


@pytest.mark.parametrize("op", list(NCCL_FACTOR))
def test_latency_term_is_steps_times_alpha(calc, module, op):
    base = dict(collective=op, msg_bytes="64MiB", ranks=24, eff_bandwidth="40GB/s")
    t0 = out(coll(calc, module, step_latency=0, **base), "collective_time")
    r = coll(calc, module, step_latency="7us", **base)
    assert out(r, "collective_time") - t0 == pytest.approx(out(r, "collective_steps") * 7e-6, rel=1e-9)


def test_exposed_time_scales_with_overlap(calc, module):
    # exposed = total × (1 − overlap): book comm calculator rule
    full = out(coll(calc, module, msg_bytes="1GB", ranks=8, eff_bandwidth="50GB/s"), "collective_time")
    for overlap in (0.0, 0.25, 0.9, 1.0):
        r = coll(calc, module, msg_bytes="1GB", ranks=8, eff_bandwidth="50GB/s", comm_overlap_fraction=overlap)
        assert out(r, "exposed_comm_time") == pytest.approx(full * (1 - overlap), abs=1e-15)


def test_message_range_is_exact(calc, module):
    # time is increasing in S: 1 GB..2 GB all-reduce, 8 ranks, 100 GB/s, no latency:
    # 1.75e9 / 1e11 = 0.0175 s .. 3.5e9 / 1e11 = 0.035 s; the point is the middle, 1.5 GB: 0.02625 s
    r = coll(calc, module, msg_bytes="1GB..2GB", ranks=8, eff_bandwidth="100GB/s", step_latency=0)
    t = r.outputs["collective_time"]
    assert t.method == "exact"
    assert (t.low, t.value, t.high) == (pytest.approx(0.0175), pytest.approx(0.02625), pytest.approx(0.035))


def test_latency_bound_boundary_warns(calc, module):
    # 4 KiB all-reduce over 64 ranks, 20 µs: 126 × 20e-6 = 2.52e-3 s of α against 2 × 63/64 × 4096 / 50e9 = 1.6128e-7 s
    # of bytes: busbw is about 1.6e-4 of B, far below half of it
    r = coll(calc, module, msg_bytes="4KiB", ranks=64, eff_bandwidth="50GB/s", step_latency="20us")
    assert any(w.startswith("latency-bound") for w in r.warnings)


# ---------------------------------------------------------------------- CLI


def test_cli_json_and_explain(capsys):
    argv = ["calc", "collective", "--set", "msg_bytes=1GB", "--set", "ranks=8", "--set", "eff_bandwidth=100GB/s",
            "--set", "step_latency=0", "--format", "json"]
    code, o, _ = cli(argv, capsys)
    assert code == 0
    data = json.loads(o)
    assert data["calculator"] == "calc:collective"
    # nccl-tests AllReduce at the ideal time: busbw = B = 1e11 B/s; time 1.75e9 / 1e11 = 0.0175 s
    assert data["outputs"]["bus_bandwidth"]["value"] == pytest.approx(1e11, rel=1e-12)
    assert data["outputs"]["collective_time"]["value"] == pytest.approx(0.0175, rel=1e-12)
    assert data["inputs"]["collective"]["value"] == "allreduce"
    code, o, _ = cli(argv[:-2] + ["--explain"], capsys)
    assert code == 0
    assert "FX50 Alpha-beta time of one ring collective (allreduce)" in o
    assert "= 2 * 1000000000 * (8 - 1) / 8" in o  # FX1 with the values substituted


def test_cli_help_names_the_books_terms(capsys):
    code, o, _ = cli(["calc", "collective", "--help"], capsys)
    assert code == 0
    for term in ("payload_gb", "bus_bw_gbps", "latency_us", "overlap_fraction"):
        assert term in o
    assert "collective_algorithm [one of ring|tree] default ring" in o
