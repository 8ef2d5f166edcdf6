"""engine.domain.collective: schedules replayed for correctness, bytes and times against FX1/FX50 and hand arithmetic.

Sources: NVIDIA nccl-tests doc/PERFORMANCE.md (@03a204a1) for the per-rank traffic factors
(busbw = algbw × 2(n − 1)/n for AllReduce, × (n − 1)/n for ReduceScatter, AllGather and
AlltoAll; "2(n − 1) data transfers" per element of an AllReduce whatever the algorithm);
bojieli/ai-infra-book calculations/src/infra_calc/topics/tree_collective.py (@d3ab25b4) for
the unsegmented binomial tree (reduce to rank 0 in strides 1, 2, 4, …, then the reversed
edges as broadcast, whole message on every edge). Every other number is hand arithmetic
written beside it.
"""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.domain import collective as C
from engine.numeric import compiled

GiB = 2**30
MiB = 2**20


@pytest.fixture(scope="module")
def module():
    return compiled.load(shipped_root())


def setup(algorithm="ring", op="allreduce", ranks=4, msg_bytes=float(GiB), bandwidth=50e9, latency=20e-6, routing=None, matrix=None):
    return C.Setup(algorithm, op, ranks, msg_bytes, bandwidth, latency, "given", routing, matrix)


def value(result, name):
    return result.outputs[name]["value"]


# ----------------------------------------------------------------------------- replay: the schedules compute the collective


def replay(rounds, ranks, start):
    """Lock-step data flow: holdings[rank][chunk] is the set of ranks whose input that copy contains.

    A reducing phase merges the arriving copy into the receiver's; a copying phase replaces it.
    Sends in a round read the holdings from the start of the round.
    """
    holdings = start
    for rnd in rounds:
        before = [dict(h) for h in holdings]
        for t in rnd.transfers:
            key = t.chunk
            if rnd.phase in ("reduce-scatter", "reduce"):
                holdings[t.dst][key] = before[t.dst].get(key, frozenset()) | before[t.src][key]
            else:
                holdings[t.dst][key] = before[t.src][key]
    return holdings


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 7, 8, 13, 16])
def test_ring_allreduce_leaves_every_chunk_fully_reduced_on_every_rank(p):
    everyone = frozenset(range(p))
    start = [{c: frozenset({r}) for c in range(p)} for r in range(p)]
    end = replay(C.ring_schedule("allreduce", p, 1.0 * p), p, start)
    assert all(end[r][c] == everyone for r in range(p) for c in range(p))


@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_ring_reducescatter_leaves_rank_r_with_reduced_chunk_r(p):
    start = [{c: frozenset({r}) for c in range(p)} for r in range(p)]
    end = replay(C.ring_schedule("reducescatter", p, 1.0 * p), p, start)
    assert all(end[r][r] == frozenset(range(p)) for r in range(p))


@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_ring_allgather_spreads_chunk_r_from_rank_r_to_everyone(p):
    start = [{r: frozenset({r})} for r in range(p)]
    end = replay(C.ring_schedule("allgather", p, 1.0 * p), p, start)
    assert all(end[r][c] == frozenset({c}) for r in range(p) for c in range(p))


@pytest.mark.parametrize("p", [1, 2, 3, 5, 6, 7, 8, 9, 12, 16, 17])
def test_tree_reduces_to_rank_0_then_broadcasts_to_all(p):
    rounds = C.tree_schedule(p, 1.0)
    reduce_rounds = [r for r in rounds if r.phase == "reduce"]
    start = [{"all": frozenset({r})} for r in range(p)]
    mid = replay(reduce_rounds, p, [dict(h) for h in start])
    assert mid[0]["all"] == frozenset(range(p))
    end = replay(rounds, p, start)
    assert all(end[r]["all"] == frozenset(range(p)) for r in range(p))


def test_ring_allreduce_p4_first_rounds_by_hand():
    rounds = C.ring_schedule("allreduce", 4, 4.0)
    # reduce-scatter step 0: rank r sends chunk (r - 1) mod 4 to r + 1 -> 0→1 c3, 1→2 c0, 2→3 c1, 3→0 c2
    assert [(t.src, t.dst, t.chunk) for t in rounds[0].transfers] == [(0, 1, 3), (1, 2, 0), (2, 3, 1), (3, 0, 2)]
    # all-gather step 0: rank r forwards its reduced chunk r -> 0→1 c0, 1→2 c1, 2→3 c2, 3→0 c3
    assert [(t.src, t.dst, t.chunk) for t in rounds[3].transfers] == [(0, 1, 0), (1, 2, 1), (2, 3, 2), (3, 0, 3)]
    assert [r.phase for r in rounds] == ["reduce-scatter"] * 3 + ["all-gather"] * 3


# ----------------------------------------------------------------------------- ring bytes and time


def test_ring_allreduce_p4_one_gib_by_hand(module):
    r = C.run(setup(), module)
    # each rank sends 2·(3/4)·2^30 = 1610612736 B, in 6 rounds of one 2^30/4 = 268435456 B chunk
    assert value(r, "max_rank_send_bytes") == 1610612736
    assert value(r, "max_rank_recv_bytes") == 1610612736
    assert value(r, "critical_path_steps") == 6
    assert {t.nbytes for rnd in r.rounds for t in rnd.transfers} == {268435456}
    # network bytes counted once: 4 ranks × 1610612736 = 6442450944 = 2(P − 1)·M = 6·2^30
    assert value(r, "network_bytes") == 6442450944
    # FX50: 2·3·20e-6 + 1610612736 / 50e9 = 0.00012 + 0.03221225472 = 0.03233225472 s
    assert value(r, "collective_time") == pytest.approx(0.03233225472, rel=1e-12)
    assert r.outputs["collective_time"]["from"] == "FX50"
    assert r.warnings == []


@pytest.mark.parametrize("op", ["allreduce", "allgather", "reducescatter"])
@pytest.mark.parametrize("p", [2, 3, 4, 5, 8, 16, 64])
def test_ring_simulation_agrees_with_fx1_and_fx50(op, p, module):
    m, alpha, beta = 3.0 * GiB, 7e-6, 25e9
    r = C.run(setup(op=op, ranks=p, msg_bytes=m, bandwidth=beta, latency=alpha), module)
    fx1 = C.wire_bytes(module, op, m, p)
    assert r.sent == pytest.approx([fx1] * p, rel=1e-12)
    assert r.received == pytest.approx([fx1] * p, rel=1e-12)
    fx50 = C.formula_time(module, op, p, alpha, fx1, beta)
    steps, path_bytes = value(r, "critical_path_steps"), value(r, "critical_path_bytes")
    assert steps * alpha + path_bytes / beta == pytest.approx(fx50, rel=1e-12)
    assert value(r, "schedule_time") == pytest.approx(fx50, rel=1e-12)
    # 2(P − 1) rounds for allreduce, P − 1 for the halves
    assert steps == (2 if op == "allreduce" else 1) * (p - 1)


@pytest.mark.parametrize("p", [2, 3, 4, 8, 16, 100])
def test_nccl_tests_busbw_factors(p, module):
    # nccl-tests PERFORMANCE.md: per-rank traffic / S = 2(n − 1)/n for AllReduce, (n − 1)/n otherwise
    m = 1e9
    for op, factor in (("allreduce", 2 * (p - 1) / p), ("allgather", (p - 1) / p), ("reducescatter", (p - 1) / p)):
        r = C.run(setup(op=op, ranks=p, msg_bytes=m, latency=0.0), module)
        assert value(r, "max_rank_send_bytes") / m == pytest.approx(factor, rel=1e-12)
        # with no latency the link runs flat out, so the bus bandwidth (FX52) is the link bandwidth
        assert value(r, "bus_bandwidth") == pytest.approx(50e9, rel=1e-12)
    a2a = C.run(setup("all-to-all", "alltoall", p, m, latency=0.0, routing="balanced"), module)
    assert value(a2a, "max_rank_send_bytes") / m == pytest.approx((p - 1) / p, rel=1e-12)
    assert value(a2a, "bus_bandwidth") == pytest.approx(50e9, rel=1e-12)


def test_ring_allgather_64_ranks_matches_fx50_worked_example(module):
    # FX50's example: 1 GB all-gather over 64 ranks at 50 GB/s, 10 µs: 63 × 10e-6 + 9.84375e8 / 50e9 = 0.0203175 s
    r = C.run(setup(op="allgather", ranks=64, msg_bytes=1e9, bandwidth=50e9, latency=10e-6), module)
    assert value(r, "schedule_time") == pytest.approx(0.0203175, rel=1e-12)
    assert value(r, "max_rank_send_bytes") == pytest.approx(9.84375e8, rel=1e-12)


def test_uneven_chunks_are_warned_about(module):
    r = C.run(setup(op="allreduce", ranks=3, msg_bytes=1e9), module)
    assert r.warnings == ["M/P = 3.33333e+08 B is not a whole number of bytes; libraries split such buffers unevenly, which this model averages"]


def test_single_rank_is_refused(module):
    # one rank is no collective: FX50's busbw factor (P − 1)/P and FX51's 2(P − 1) steps are 0
    with pytest.raises(InputError) as exc:
        C.run(setup(ranks=1), module)
    assert str(exc.value) == "--ranks: expected a whole number from 2 to 512, got 1 (a collective needs at least 2 ranks; schedules list every transfer, so for larger groups evaluate FX1 and FX50 with `aiinfra formula eval`)"


def test_without_bandwidth_there_are_no_times(module):
    r = C.run(setup(bandwidth=None), module)
    assert "collective_time" not in r.outputs and r.crossover is None
    assert r.round_times == [None] * 6
    assert r.warnings[-1].startswith("no --bandwidth:")


def test_default_latency_is_fx50s_20_us_from_the_books_calculator(module):
    latency, source = C.default_latency(module)
    # book calculators comm.collective_time (@a98dbf79): latency_us default 20
    assert latency == pytest.approx(20e-6, rel=1e-12)
    assert source.startswith("Book calculators comm.collective_time (@a98dbf79)")


# ----------------------------------------------------------------------------- binomial tree


@pytest.mark.parametrize("p, steps", [(1, 0), (2, 2), (3, 4), (4, 4), (5, 6), (6, 6), (8, 6), (9, 8), (16, 8), (17, 10)])
def test_tree_takes_two_ceil_log2_steps(p, steps):
    # 2·⌈log2 P⌉: ⌈log2 5⌉ = 3 (4 < 5 ≤ 8), ⌈log2 9⌉ = 4, ⌈log2 17⌉ = 5
    assert len(C.tree_schedule(p, 1.0)) == steps
    assert 2 * C.ceil_log2(p) == steps


def test_tree_five_ranks_edges_by_hand():
    rounds = C.tree_schedule(5, 1.0)
    edges = [[(t.src, t.dst) for t in r.transfers] for r in rounds]
    # stride 1: 1→0, 3→2 (rank 4's partner 5 is absent); stride 2: 2→0 (partner 6 absent); stride 4: 4→0
    assert edges[:3] == [[(1, 0), (3, 2)], [(2, 0)], [(4, 0)]]
    # broadcast: the same edges reversed, last round first
    assert edges[3:] == [[(0, 4)], [(0, 2)], [(0, 1), (2, 3)]]
    assert [r.phase for r in rounds] == ["reduce"] * 3 + ["broadcast"] * 3


def test_tree_eight_ranks_traffic_and_time_by_hand(module):
    m = float(MiB)
    r = C.run(setup("tree", ranks=8, msg_bytes=m, bandwidth=50e9, latency=2e-6), module)
    # root: receives in 3 reduce rounds and sends in 3 broadcast rounds, the whole MiB each time
    assert (r.sent[0], r.received[0]) == (3 * m, 3 * m)
    # odd ranks are leaves: one send (reduce), one receive (broadcast)
    assert all((r.sent[k], r.received[k]) == (m, m) for k in (1, 3, 5, 7))
    # network: 2(P − 1)·M = 14 MiB, as nccl-tests' 2(n − 1) transfers per element
    assert value(r, "network_bytes") == 14 * m
    # 6 rounds × (2e-6 + 1048576 / 50e9) = 6 × (2e-6 + 2.097152e-5) = 1.3782912e-4 s
    assert value(r, "collective_time") == pytest.approx(1.3782912e-4, rel=1e-12)
    assert r.outputs["collective_time"]["from"] == "FX62"  # the binomial-tree record; the schedule agrees
    assert value(r, "critical_path_bytes") == 6 * m


@pytest.mark.parametrize("p", [2, 3, 5, 6, 8, 12])
def test_tree_network_bytes_equal_ranks_times_fx1(p, module):
    # total traffic of the binomial allreduce is P × FX1's per-rank ring figure, 2(P − 1)·M
    r = C.run(setup("tree", ranks=p, msg_bytes=1e6), module)
    assert value(r, "network_bytes") == pytest.approx(p * C.wire_bytes(module, "allreduce", 1e6, p), rel=1e-12)


# ----------------------------------------------------------------------------- ring vs tree crossover


def test_crossover_four_ranks_by_hand(module):
    cross = C.crossover(module, 4, 20e-6, 50e9, float(GiB))
    # ring 6α + 1.5M/β = tree 4α + 4M/β  ->  M = 2αβ / 2.5 = 2 × 20e-6 × 50e9 / 2.5 = 800000 B
    assert cross["msg_bytes"] == pytest.approx(8e5, rel=1e-9)
    assert cross["faster_below"] == "tree"
    row = next(x for x in cross["table"] if x["note"] == "crossover")
    assert row["ring_time"] == pytest.approx(row["tree_time"], rel=1e-9)
    # ring at M*: 6 × 20e-6 + 1.5 × 8e5 / 50e9 = 1.2e-4 + 2.4e-5 = 1.44e-4 s
    assert row["ring_time"] == pytest.approx(1.44e-4, rel=1e-9)
    small, big = cross["table"][0], cross["table"][-1]
    assert (small["msg_bytes"], small["faster"]) == (1024, "tree")
    assert (big["msg_bytes"], big["faster"]) == (2**34, "ring")


def test_crossover_eight_ranks_by_hand(module):
    # ring 14α + 1.75M/β = tree 6α + 6M/β  ->  M = 8αβ / 4.25 = 8 × 2e-5 × 1e11 / 4.25 = 3764705.88 B
    cross = C.crossover(module, 8, 2e-5, 1e11, 1e9)
    assert cross["msg_bytes"] == pytest.approx(1.6e7 / 4.25, rel=1e-9)


@pytest.mark.parametrize("p", [2, 3])
def test_no_crossover_when_the_tree_has_as_many_steps(p, module):
    # P = 2: 2 steps each; P = 3: ring 2·2 = 4 steps, tree 2·⌈log2 3⌉ = 4; the ring moves fewer bytes
    cross = C.crossover(module, p, 20e-6, 50e9, 1e6)
    assert cross["msg_bytes"] is None and cross["faster_below"] is None
    assert all(row["faster"] == "ring" for row in cross["table"])


# ----------------------------------------------------------------------------- all-to-all


def test_balanced_all_to_all_by_hand(module):
    m = 4.0 * MiB
    r = C.run(setup("all-to-all", "alltoall", 4, m, routing="balanced"), module)
    # each rank keeps 1 MiB and sends 1 MiB to each of 3 others: 3 MiB = FX1's 4 MiB × 3/4
    assert r.sent == [3 * MiB] * 4 and r.received == [3 * MiB] * 4
    assert value(r, "collective_wire_bytes") == 3 * MiB
    assert [rr["local_bytes"] for rr in r.rank_rows()] == [MiB] * 4
    assert value(r, "critical_path_steps") == 3
    # FX50 all2all: 3 × 20e-6 + 3145728 / 50e9 = 6e-5 + 6.291456e-5 = 1.2291456e-4 s; the schedule agrees
    assert value(r, "collective_time") == pytest.approx(1.2291456e-4, rel=1e-12)
    assert value(r, "schedule_time") == pytest.approx(1.2291456e-4, rel=1e-12)


def test_hotspot_all_to_all_by_hand(module):
    m = 7.0 * MiB
    r = C.run(setup("all-to-all", "alltoall", 4, m, routing="hotspot"), module)
    # weights: rank 0 counts 4, the others 1 each: 4 + 3 = 7 shares of 1 MiB per source
    assert r.matrix[1] == [4 * MiB, MiB, MiB, MiB]
    # rank 0 receives 4 MiB from each of 3 sources = 12 MiB; sources 1..3 send 4 + 1 + 1 = 6 MiB
    assert r.received[0] == 12 * MiB and r.sent[1:] == [6 * MiB] * 3
    assert r.sent[0] == 3 * MiB and r.received[1:] == [3 * MiB] * 3
    # FX50 bound from the busiest rank: 3 × 20e-6 + 12582912 / 50e9 = 6e-5 + 2.5165824e-4 = 3.1165824e-4 s
    assert value(r, "collective_time") == pytest.approx(3.1165824e-4, rel=1e-12)


def test_skewed_rounds_make_the_schedule_slower_than_the_bound(module):
    # 0 sends 2 B to 1 (round k = 1) and 1 sends 2 B to 0 (round k = 2): two rounds of 2 B, while
    # the busiest rank moves only 2 B each way. Weights sum to 4 over 3 ranks: --bytes 4/3 keeps them as bytes.
    weights = [[0, 2, 0], [2, 0, 0], [0, 0, 0]]
    r = C.run(setup("all-to-all", "alltoall", 3, 4 / 3, bandwidth=1.0, latency=1.0, routing="m.json", matrix=weights), module)
    assert [x for row in r.matrix for x in row] == pytest.approx([0, 2, 0, 2, 0, 0, 0, 0, 0], rel=1e-12)
    # FX50: 2 steps × 1 s + 2 B / 1 B/s = 4 s; schedule: (1 + 2) + (1 + 2) = 6 s
    assert value(r, "collective_time") == pytest.approx(4.0, rel=1e-12)
    assert value(r, "schedule_time") == pytest.approx(6.0, rel=1e-12)


def test_matrix_is_scaled_so_the_average_buffer_is_m(module):
    # weights sum to 9 over 3 ranks (average row 3); --bytes 6 doubles every entry
    weights = [[0, 1, 2], [3, 0, 1], [1, 1, 0]]
    r = C.run(setup("all-to-all", "alltoall", 3, 6.0, routing="m.json", matrix=weights), module)
    assert r.matrix == [[0, 2, 4], [6, 0, 2], [2, 2, 0]]
    # sends: 6, 8, 4; receives: columns 8, 4, 6
    assert r.sent == [6, 8, 4] and r.received == [8, 4, 6]
    assert value(r, "network_bytes") == 18


MATRIX_ERRORS = [
    ({"a": 1}, "--routing: the matrix must be a JSON list of rows (one list of numbers per source rank)"),
    ([1, 2, 3], "--routing: the matrix must be a JSON list of rows (one list of numbers per source rank)"),
    ([[0, 1], [1, 0]], "--routing: the matrix must be 3 x 3 for --ranks 3 (found 2 rows of lengths [2])"),
    ([[0, 1, 1], [1, 0], [1, 1, 0]], "--routing: the matrix must be 3 x 3 for --ranks 3 (found 3 rows of lengths [2, 3])"),
    ([[0, -1, 1], [1, 0, 1], [1, 1, 0]], "--routing: entry [0][1] is -1 (expected a number >= 0)"),
    ([[0, 1, 1], [1, 0, "2"], [1, 1, 0]], "--routing: entry [1][2] is '2' (expected a number >= 0)"),
    ([[0, 1, 1], [1, 0, 1], [True, 1, 0]], "--routing: entry [2][0] is True (expected a number >= 0)"),
    ([[0, 1, 1], [1, 0, float("nan")], [1, 1, 0]], "--routing: entry [1][2] is nan (expected a number >= 0)"),
    ([[0, 0, 0], [0, 0, 0], [0, 0, 0]], "--routing: every entry of the matrix is 0 (nothing to exchange)"),
]


@pytest.mark.parametrize("data, message", MATRIX_ERRORS)
def test_matrix_validation_names_the_problem(data, message):
    with pytest.raises(InputError) as info:
        C.check_matrix(data, 3)
    assert str(info.value) == message


def test_diagonal_entries_are_local_traffic(module):
    # all of rank 0's buffer stays home; nothing crosses the network from it
    weights = [[3, 0, 0], [0, 0, 3], [0, 3, 0]]
    r = C.run(setup("all-to-all", "alltoall", 3, 3.0, routing="m.json", matrix=weights), module)
    assert r.sent == [0, 3, 3] and r.received == [0, 3, 3]
    assert [x["local_bytes"] for x in r.rank_rows()] == [3, 0, 0]


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(algorithm="ring", op="alltoall"), "--op: alltoall is not a ring collective (every rank needs a different block from every other); use `aiinfra collective all-to-all --op alltoall`"),
        (dict(algorithm="tree", op="allgather"), "--op: tree runs allreduce only (reduce to rank 0, then broadcast); use `aiinfra collective ring --op allgather`"),
        (dict(algorithm="all-to-all", op="allreduce"), "--op: all-to-all runs --op alltoall only; use `aiinfra collective ring --op allreduce`"),
        (dict(ranks=0), "--ranks: expected a whole number from 2 to 512, got 0 (a collective needs at least 2 ranks; schedules list every transfer, so for larger groups evaluate FX1 and FX50 with `aiinfra formula eval`)"),
        (dict(ranks=513), "--ranks: expected a whole number from 2 to 512, got 513 (a collective needs at least 2 ranks; schedules list every transfer, so for larger groups evaluate FX1 and FX50 with `aiinfra formula eval`)"),
        (dict(msg_bytes=-1.0), "--bytes: expected a number >= 0, got -1"),
        (dict(latency=-1e-6), "--latency: expected a number >= 0, got -1e-06"),
        (dict(bandwidth=0.0), "--bandwidth: expected a bandwidth > 0, got 0 B/s"),
        (dict(algorithm="tree", routing="hotspot"), "--routing: applies to all-to-all only"),
        (dict(algorithm="all-to-all", op="alltoall", routing="hotspot:0.5"), "--routing: 'hotspot:0.5': the hotspot factor must be a number >= 1 (e.g. hotspot:8)"),
        (dict(algorithm="all-to-all", op="alltoall", routing="uniform"), "--routing: 'uniform' is not balanced, hotspot, hotspot:F or a matrix .json file"),
    ],
)
def test_refusals_name_the_option(kwargs, message, module):
    with pytest.raises(InputError) as info:
        C.run(setup(**kwargs), module)
    assert str(info.value) == message
