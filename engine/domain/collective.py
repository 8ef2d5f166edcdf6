"""Collective schedules: who sends which chunk to whom in each round, and what that costs.

Three algorithms, each a list of lock-step rounds of point-to-point transfers:

- ``ring``: reduce-scatter then all-gather around ranks 0 → 1 → … → P−1 → 0, in chunks of
  M/P (allreduce 2(P − 1) rounds; allgather and reducescatter P − 1 rounds).
- ``tree``: the unsegmented binomial tree of the calculator in seed ``000_…``
  (bojieli/ai-infra-book ``calculations/src/infra_calc/topics/tree_collective.py@d3ab25b4``):
  a reduction to rank 0 in rounds of stride 1, 2, 4, … (rank base + stride hands the whole
  M-byte message to rank base, for every base that is a multiple of 2·stride), then the same
  edges reversed, last round first, as the broadcast. Each phase has ⌈log2 P⌉ rounds; when P
  is not a power of two, a partner base + stride ≥ P does not exist and is skipped, so the
  later rounds simply carry fewer edges. NCCL's pipelined double binary tree is a different
  algorithm and is not offered here.
- ``all-to-all``: pairwise exchange from a source × destination byte matrix; in round
  k = 1 … P − 1 rank i sends its block for rank (i + k) mod P and receives from (i − k) mod P.
  The matrix is ``balanced`` (M/P to every rank), ``hotspot`` / ``hotspot:F`` (every source
  weights rank 0 F times, default 4, and each other rank once), or relative amounts from a
  JSON file scaled by one factor so that an average rank's buffer (row sum) is M; diagonal
  entries stay local.

Ring also runs ``sendrecv`` (nccl-tests sendrecv_perf, src/sendrecv.cu @f476f4a1): one grouped
round in which rank r sends its whole buffer to r + 1 and receives from r − 1; busbw = algbw.

Without a bandwidth there are bytes and steps but no times. With one, the time is also given as
its two alpha-beta terms apart: FX700 steps × α and FX701 bytes / β. For allreduce the result also
carries the ring vs tree crossover: the message size where their alpha-beta times meet.

Per-rank traffic and time come from the formula records, evaluated through the compiled
module (FX1 collective_wire_bytes, FX50 ring_collective_time, FX51 alg_bandwidth, FX52
bus_bandwidth); the simulated schedule must agree with them, and tests check that it does.

engine.domain.collective_model adds a model's view (``--model``): the TP all-reduce budget and
the MoE dispatch + combine all-to-all budget of one forward pass.
"""

from __future__ import annotations

import math
from collections import namedtuple

from engine.core.errors import InputError
from engine.core.humanize import friendly, number
from engine.numeric.evaluate import evaluate

OPS = ("allreduce", "allgather", "reducescatter", "alltoall", "sendrecv")
ALGORITHMS = ("ring", "tree", "all-to-all")
MAX_RANKS = 512  # schedules list every transfer (P² of them); FX1/FX50 alone cover larger groups
HOTSPOT_FACTOR = 4.0
FORMULAS = ("FX1", "FX50", "FX51", "FX52")  # the JSON "formulas" list, kept as it was; the α/β outputs name FX700/FX701 in "from"
TERM_FORMULAS = ("FX700", "FX701")
# the formula records name All-to-All ``all2all``; the command line says ``alltoall``
_SELECTOR = {"allreduce": "allreduce", "allgather": "allgather", "reducescatter": "reducescatter", "alltoall": "all2all", "sendrecv": "sendrecv"}
_ALGORITHM_OPS = {"ring": ("allreduce", "allgather", "reducescatter", "sendrecv"), "tree": ("allreduce",), "all-to-all": ("alltoall",)}
_REFUSALS = {
    ("ring", "alltoall"): "alltoall is not a ring collective (every rank needs a different block from every other); use `aiinfra collective all-to-all --op alltoall`",
    ("tree", "allgather"): "tree runs allreduce only (reduce to rank 0, then broadcast); use `aiinfra collective ring --op allgather`",
    ("tree", "reducescatter"): "tree runs allreduce only (reduce to rank 0, then broadcast); use `aiinfra collective ring --op reducescatter`",
    ("tree", "alltoall"): "tree runs allreduce only (reduce to rank 0, then broadcast); use `aiinfra collective all-to-all --op alltoall`",
    ("tree", "sendrecv"): "tree runs allreduce only (reduce to rank 0, then broadcast); use `aiinfra collective ring --op sendrecv`",
}

# chunk: ring, the index c of the slice [c·M/P, (c+1)·M/P); tree, "all" (the whole message);
# all-to-all, "i->j" (the block rank i addresses to rank j)
Transfer = namedtuple("Transfer", "src dst chunk nbytes")
Round = namedtuple("Round", "phase step transfers")


# ----------------------------------------------------------------------------- schedules


def ring_schedule(op: str, ranks: int, msg_bytes: float) -> list[Round]:
    """Rounds of the ring; every rank sends one M/P chunk to its right neighbour per round.

    Reduce-scatter step s: rank r sends chunk (r − s − 1) mod P, which it has reduced so
    far, and adds the chunk arriving from its left; after P − 1 steps rank r owns the fully
    reduced chunk r. All-gather step s: rank r forwards chunk (r − s) mod P, its own at s = 0.
    """
    if op == "sendrecv":  # nccl-tests sendrecv_perf: one grouped send to r + 1 and receive from r − 1
        return [Round("send-recv", 0, [Transfer(r, (r + 1) % ranks, "all", msg_bytes) for r in range(ranks)])]
    chunk = msg_bytes / ranks
    phases = {"allreduce": ("reduce-scatter", "all-gather"), "reducescatter": ("reduce-scatter",), "allgather": ("all-gather",)}[op]
    rounds = []
    for phase in phases:
        lag = 1 if phase == "reduce-scatter" else 0
        for step in range(ranks - 1):
            rounds.append(Round(phase, step, [Transfer(r, (r + 1) % ranks, (r - step - lag) % ranks, chunk) for r in range(ranks)]))
    return rounds


def tree_schedule(ranks: int, msg_bytes: float) -> list[Round]:
    """Binomial reduction to rank 0 (strides 1, 2, 4, …), then the broadcast on the reversed edges."""
    reduce_rounds = []
    stride = 1
    while stride < ranks:
        edges = [Transfer(base + stride, base, "all", msg_bytes) for base in range(0, ranks - stride, 2 * stride)]
        reduce_rounds.append(Round("reduce", len(reduce_rounds), edges))
        stride *= 2
    broadcast = [Round("broadcast", i, [Transfer(t.dst, t.src, "all", msg_bytes) for t in rnd.transfers])
                 for i, rnd in enumerate(reversed(reduce_rounds))]
    return reduce_rounds + broadcast


def pairwise_schedule(matrix: list[list[float]]) -> list[Round]:
    """P − 1 rounds; in round k rank i sends its block for (i + k) mod P. Zero-byte blocks are not listed."""
    ranks = len(matrix)
    rounds = []
    for k in range(1, ranks):
        moves = [Transfer(i, (i + k) % ranks, f"{i}->{(i + k) % ranks}", matrix[i][(i + k) % ranks]) for i in range(ranks)]
        rounds.append(Round("exchange", k - 1, [t for t in moves if t.nbytes > 0]))
    return rounds


def ceil_log2(n: int) -> int:
    """⌈log2 n⌉ for n ≥ 1, in integers (0 for one rank)."""
    return (n - 1).bit_length()


# ----------------------------------------------------------------------------- all-to-all traffic


def balanced_matrix(ranks: int, msg_bytes: float) -> list[list[float]]:
    """Each rank's M-byte buffer split evenly: M/P to every rank, its own share staying local."""
    return [[msg_bytes / ranks] * ranks for _ in range(ranks)]


def hotspot_matrix(ranks: int, msg_bytes: float, factor: float = HOTSPOT_FACTOR) -> list[list[float]]:
    """Every source weights destination rank 0 ``factor`` times and every other rank once.

    Each row is still M bytes (the source's buffer, its own block local), so rank 0 receives
    ``factor`` times what any other rank receives from each source: a teaching pattern for a
    popular expert, not a measurement.
    """
    unit = msg_bytes / (factor + ranks - 1)
    return [[unit * (factor if j == 0 else 1.0) for j in range(ranks)] for _ in range(ranks)]


def check_matrix(data: object, ranks: int, field: str = "--routing") -> list[list[float]]:
    """A square ranks × ranks list of lists of finite numbers ≥ 0; InputError otherwise."""
    if not isinstance(data, list) or not all(isinstance(row, list) for row in data):
        raise InputError(field, "the matrix must be a JSON list of rows (one list of numbers per source rank)")
    if len(data) != ranks or any(len(row) != ranks for row in data):
        shape = f"{len(data)} rows of lengths {sorted({len(row) for row in data})}" if data else "no rows"
        raise InputError(field, f"the matrix must be {ranks} x {ranks} for --ranks {ranks} (found {shape})")
    for i, row in enumerate(data):
        for j, x in enumerate(row):
            if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x) or x < 0:
                raise InputError(field, f"entry [{i}][{j}] is {x!r} (expected a number >= 0)")
    if not any(x > 0 for row in data for x in row):
        raise InputError(field, "every entry of the matrix is 0 (nothing to exchange)")
    return [[float(x) for x in row] for row in data]


def scale_matrix(weights: list[list[float]], msg_bytes: float) -> tuple[list[list[float]], float]:
    """Scale relative amounts by one factor so that an average rank's buffer (row sum, diagonal included) is M bytes."""
    ranks = len(weights)
    factor = ranks * msg_bytes / sum(map(sum, weights))
    return [[x * factor for x in row] for row in weights], factor


def routing_matrix(routing: str, ranks: int, msg_bytes: float, matrix: list[list[float]] | None = None) -> tuple[list[list[float]], str]:
    """The byte matrix for ``balanced``, ``hotspot`` / ``hotspot:F``, or given relative amounts; with a description."""
    if matrix is not None:
        scaled, factor = scale_matrix(check_matrix(matrix, ranks), msg_bytes)
        return scaled, f"matrix {routing} (entries x {factor:.6g} so that an average rank's buffer is {msg_bytes:g} B; the diagonal stays local)"
    if routing == "balanced":
        return balanced_matrix(ranks, msg_bytes), "balanced: M/P from every rank to every rank (own share local)"
    name, _, text = routing.partition(":")
    if name == "hotspot":
        try:
            factor = float(text) if text else HOTSPOT_FACTOR
        except ValueError:
            factor = -1.0
        if not math.isfinite(factor) or factor < 1:
            raise InputError("--routing", f"{routing!r}: the hotspot factor must be a number >= 1 (e.g. hotspot:8)")
        return hotspot_matrix(ranks, msg_bytes, factor), f"hotspot: every source sends {factor:g}x as much to rank 0 as to any other rank; each source's buffer is M"
    raise InputError("--routing", f"{routing!r} is not balanced, hotspot, hotspot:F or a matrix .json file")


# ----------------------------------------------------------------------------- simulation


def per_rank(rounds: list[Round], ranks: int) -> tuple[list[float], list[float]]:
    """Bytes each rank sends and receives over the whole schedule."""
    sent, received = [0.0] * ranks, [0.0] * ranks
    for rnd in rounds:
        for t in rnd.transfers:
            sent[t.src] += t.nbytes
            received[t.dst] += t.nbytes
    return sent, received


def round_bytes(rnd: Round) -> float:
    """The bytes that pace a round: the largest one rank sends or receives in it."""
    out: dict[int, float] = {}
    inn: dict[int, float] = {}
    for t in rnd.transfers:
        out[t.src] = out.get(t.src, 0.0) + t.nbytes
        inn[t.dst] = inn.get(t.dst, 0.0) + t.nbytes
    return max([0.0, *out.values(), *inn.values()])


def schedule_time(rounds: list[Round], latency: float, bandwidth: float) -> float:
    """Lock-step rounds under the alpha-beta model: each round costs α plus its pacing bytes / β.

    The same model FX50 states (Hockney: a fixed latency per step, bytes at B_eff per rank
    and direction); kept as a sum over rounds because FX50 only has the ring's step count.
    """
    return sum((latency + round_bytes(r) / bandwidth for r in rounds), 0.0)


# ----------------------------------------------------------------------------- formulas


def _formula(module, fid: str) -> dict:
    meta = module.FORMULAS.get(fid)
    if meta is None:
        raise InputError("--root", f"the knowledge root has no formula {fid} (collective needs {', '.join(FORMULAS)})")
    return meta


def _value(module, fid: str, given: dict) -> float:
    meta = _formula(module, fid)
    result = evaluate(meta, module, given)
    return result.outputs[meta["output"]["symbol"]].value


def wire_bytes(module, op: str, msg_bytes: float, ranks: int) -> float:
    """FX1: bytes each rank sends (and receives) in a bandwidth-optimal collective."""
    return _value(module, "FX1", {"collective": _SELECTOR[op], "msg_bytes": float(msg_bytes), "ranks": ranks})


def formula_time(module, op: str, ranks: int, latency: float, wire: float, bandwidth: float) -> float:
    """FX50: ring (or pairwise) step count × α + wire bytes / β."""
    given = {"collective": _SELECTOR[op], "ranks": ranks, "step_latency": latency, "collective_wire_bytes": wire, "eff_bandwidth": bandwidth}
    return _value(module, "FX50", given)


def alpha_beta_terms(module, algorithm: str, steps: int, latency: float, wire: float, msg_bytes: float, bandwidth: float) -> tuple[float, float]:
    """FX700 steps × α and FX701 bytes / β: the two terms of the alpha-beta time, apart.

    ``wire`` is the per-rank bytes of the ring (FX1) or the busiest rank's bytes of the
    pairwise all-to-all; the tree sends the whole ``msg_bytes`` on each of its steps.
    """
    alpha = _value(module, "FX700", {"collective_steps": steps, "step_latency": latency})
    given = {"collective_algorithm": "tree" if algorithm == "tree" else "ring", "collective_steps": steps,
             "collective_wire_bytes": float(wire), "msg_bytes": float(msg_bytes), "eff_bandwidth": bandwidth}
    return alpha, _value(module, "FX701", given)


def bandwidths(module, op: str, ranks: int, msg_bytes: float, time: float) -> tuple[float, float]:
    """FX51 algbw = M / t and FX52 busbw = algbw × the nccl-tests factor of ``op``."""
    alg = _value(module, "FX51", {"msg_bytes": float(msg_bytes), "collective_time": time})
    bus = _value(module, "FX52", {"collective": _SELECTOR[op], "alg_bandwidth": alg, "ranks": ranks})
    return alg, bus


def default_latency(module) -> tuple[float, str]:
    """FX50's default step latency and its source (20 µs, the book's comm calculator default)."""
    spec = _formula(module, "FX50")["symbols"]["step_latency"]
    return float(spec["default"][0]), spec["default_source"]


# ----------------------------------------------------------------------------- ring vs tree


CROSSOVER_SIZES = tuple(2.0 ** e for e in range(10, 35, 4))  # 1 KiB, 16 KiB, 256 KiB, 4 MiB, 64 MiB, 1 GiB, 16 GiB


def ring_allreduce_time(module, ranks: int, msg_bytes: float, latency: float, bandwidth: float) -> float:
    return formula_time(module, "allreduce", ranks, latency, wire_bytes(module, "allreduce", msg_bytes, ranks), bandwidth)


def tree_allreduce_time(module, ranks: int, msg_bytes: float, latency: float, bandwidth: float) -> float:
    """FX62: 2·⌈log2 K⌉ · (α + M/β) for the unsegmented binomial tree."""
    given = {"ranks": ranks, "msg_bytes": float(msg_bytes), "step_latency": latency, "eff_bandwidth": bandwidth}
    return _value(module, "FX62", given)


def crossover(module, ranks: int, latency: float, bandwidth: float, msg_bytes: float) -> dict:
    """The allreduce size where the ring and the binomial tree take equal time, and a table of sizes.

    Both times are straight lines in M (α terms fixed, byte terms proportional), so the
    crossing is found from each line's value at two sizes rather than by re-typing FX50.
    """
    near, far = 1.0, 2.0 ** 40  # FX62 takes a positive message size: fit each line through 1 B and 1 TiB
    r_near, r1 = ring_allreduce_time(module, ranks, near, latency, bandwidth), ring_allreduce_time(module, ranks, far, latency, bandwidth)
    t_near, t1 = tree_allreduce_time(module, ranks, near, latency, bandwidth), tree_allreduce_time(module, ranks, far, latency, bandwidth)
    ring_slope, tree_slope = (r1 - r_near) / (far - near), (t1 - t_near) / (far - near)
    r0, t0 = r_near - ring_slope * near, t_near - tree_slope * near
    size = None
    if r0 > t0 and tree_slope > ring_slope:
        size = (r0 - t0) / (tree_slope - ring_slope)
    sizes = sorted({*CROSSOVER_SIZES, float(msg_bytes), *([size] if size else [])})
    table = []
    for m in sizes:
        ring, tree = ring_allreduce_time(module, ranks, m, latency, bandwidth), tree_allreduce_time(module, ranks, m, latency, bandwidth)
        faster = "equal" if math.isclose(ring, tree, rel_tol=1e-9) else ("tree" if tree < ring else "ring")
        note = "crossover" if m == size else ("given" if m == msg_bytes else "")
        table.append({"msg_bytes": m, "ring_time": ring, "tree_time": tree, "faster": faster, "note": note})
    if size is None:
        summary = f"no crossover at {ranks} ranks: the ring is never slower (its {2 * (ranks - 1)} steps are not more than the tree's {2 * ceil_log2(ranks)})"
    else:
        summary = f"below {number(size)} B ({friendly(size, 'B') or 'under 1 KiB'}) the tree is faster (fewer α steps); above it the ring is (fewer bytes per rank)"
    return {"ranks": ranks, "step_latency": latency, "eff_bandwidth": bandwidth, "msg_bytes": size,
            "faster_below": "tree" if size else None, "summary": summary, "table": table}


# ----------------------------------------------------------------------------- one collective


Setup = namedtuple("Setup", "algorithm op ranks msg_bytes bandwidth latency latency_source routing matrix")
Setup.__doc__ = """What to schedule. bandwidth (B/s) may be None: then no times. routing and matrix apply
to all-to-all: routing names the pattern (balanced, hotspot, hotspot:F, or the matrix file),
matrix holds the relative amounts read from that file (None for the named patterns)."""

_ASSUMPTIONS = {
    "ring": [
        "Ranks 0 → 1 → … → P−1 → 0 form one ring; every round each rank sends one M/P chunk to its right neighbour and receives one from its left, all in lock-step (Hockney alpha-beta model, as FX50).",
        "M is the whole buffer as nccl-tests defines it: allreduce and reducescatter inputs, allgather output; reducescatter leaves rank r with reduced chunk r, allgather starts with chunk r on rank r.",
        "Network bytes count each byte once, at its sender; the reduction arithmetic, topology, link sharing and pipelining over channels are not modelled.",
    ],
    "tree": [
        "Unsegmented binomial tree rooted at rank 0, as the calculator in seed 000 (bojieli/ai-infra-book calculations/src/infra_calc/topics/tree_collective.py@d3ab25b4): reduce in rounds of stride 1, 2, 4, …, then broadcast on the same edges in reverse order.",
        "Each edge carries the whole M-byte message and each round is a barrier, so the time is 2·⌈log2 P⌉ · (α + M/β); ranks whose partner would be ≥ P sit the round out. This is not NCCL's pipelined double binary tree.",
        "The network moves 2(P − 1)·M bytes, as a ring does (nccl-tests PERFORMANCE.md: 2(n − 1) transfers per element whatever the algorithm), but unevenly: rank 0 sends and receives ⌈log2 P⌉·M. collective_wire_bytes is FX1's bandwidth-optimal per-rank figure, shown for comparison.",
    ],
    "all-to-all": [
        "Pairwise exchange: in round k = 1 … P − 1 rank i sends its block for (i + k) mod P and receives the block from (i − k) mod P; every round is a synchronised step (as FX50 counts P − 1 steps), and it lasts α plus its largest block / β.",
        "M is each rank's send buffer, of which the diagonal block stays local (FX1's All2All convention); collective_time is FX50 with the busiest rank's send or receive bytes: a lower bound, which the lock-step schedule_time exceeds when one round's blocks are uneven (it waits for the largest).",
        "Congestion in the fabric, routing skew across switches and overlap of rounds are not modelled.",
    ],
}


_SENDRECV = ("SendRecv as nccl-tests sendrecv_perf runs it (src/sendrecv.cu @f476f4a1): every rank sends its whole M-byte buffer to (r + 1) mod P "
             "and receives M from (r − 1) mod P in one grouped step, so the time is one α plus M / β whatever P (FX50), and busbw = algbw (FX52).")


def check_setup(s: Setup) -> None:
    """Refuse combinations and values the schedules cannot take; InputError names the option."""
    if s.algorithm not in ALGORITHMS:
        raise InputError("ALGORITHM", f"{s.algorithm!r} is not one of {', '.join(ALGORITHMS)}")
    if s.op not in OPS:
        raise InputError("--op", f"{s.op!r} is not one of {', '.join(OPS)}")
    if s.op not in _ALGORITHM_OPS[s.algorithm]:
        raise InputError("--op", _REFUSALS.get((s.algorithm, s.op), f"all-to-all runs --op alltoall only; use `aiinfra collective ring --op {s.op}`"))
    if isinstance(s.ranks, bool) or not isinstance(s.ranks, int) or not 2 <= s.ranks <= MAX_RANKS:  # 2: the formulas' ranks domain
        raise InputError("--ranks", f"expected a whole number from 2 to {MAX_RANKS}, got {s.ranks!r} (a collective needs at least 2 ranks; schedules list every transfer, so for larger groups evaluate FX1 and FX50 with `aiinfra formula eval`)")
    for field, value, low in (("--bytes", s.msg_bytes, 0.0), ("--latency", s.latency, 0.0)):
        if not math.isfinite(value) or value < low:
            raise InputError(field, f"expected a number >= 0, got {value:g}")
    if s.bandwidth is not None and (not math.isfinite(s.bandwidth) or s.bandwidth <= 0):
        raise InputError("--bandwidth", f"expected a bandwidth > 0, got {s.bandwidth:g} B/s")
    if s.algorithm != "all-to-all" and (s.routing not in (None, "balanced") or s.matrix is not None):
        raise InputError("--routing", "applies to all-to-all only")


class CollectiveResult:
    """One scheduled collective: inputs and outputs in the DESIGN.md shape, the rounds and per-rank bytes.

    ``to_json`` builds every round (P² transfers for a ring); ``round_rows(n)`` only the first n.
    """

    def __init__(self, setup: Setup, inputs: dict, outputs: dict, rounds: list[Round], paces: list[float],
                 round_times: list, sent: list[float], received: list[float], matrix, crossover_: dict | None, warnings: list[str]):
        self.setup, self.inputs, self.outputs, self.rounds = setup, inputs, outputs, rounds
        self.paces, self.round_times, self.sent, self.received = paces, round_times, sent, received
        self.matrix, self.crossover, self.warnings = matrix, crossover_, warnings
        self.assumptions = list(_ASSUMPTIONS[setup.algorithm])
        self.chunks = "all: each rank's whole M-byte buffer" if setup.op == "sendrecv" else _CHUNKS[setup.algorithm]
        self.model_budget: dict | None = None  # set by engine.domain.collective_model for --model runs
        if setup.op == "sendrecv":
            self.assumptions = [_SENDRECV] + self.assumptions[2:]

    def round_rows(self, limit: int | None = None) -> list[dict]:
        n = len(self.rounds) if limit is None else min(limit, len(self.rounds))
        return [_round_json(i, self.rounds[i], self.paces[i], self.round_times[i]) for i in range(n)]

    def rank_rows(self, limit: int | None = None) -> list[dict]:
        n = len(self.sent) if limit is None else min(limit, len(self.sent))
        return [{"rank": r, "send_bytes": self.sent[r], "recv_bytes": self.received[r],
                 "local_bytes": self.matrix[r][r] if self.matrix else None} for r in range(n)]

    def to_json(self) -> dict:
        s = self.setup
        return {
            "calculator": "collective",
            "algorithm": s.algorithm,
            "collective": s.op,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "formulas": list(FORMULAS),
            "assumptions": self.assumptions,
            "warnings": self.warnings,
            "schedule": {"chunk_bytes": s.msg_bytes / s.ranks if s.algorithm == "ring" and s.op != "sendrecv" else None,
                         "chunks": self.chunks, "rounds": self.round_rows()},
            "per_rank": self.rank_rows(),
            "traffic_matrix": self.matrix,
            "crossover": self.crossover,
            "model_budget": self.model_budget,
        }


def run(s: Setup, module) -> CollectiveResult:
    """Schedule, simulate and cost one collective."""
    check_setup(s)
    matrix, routing_text = None, None
    if s.algorithm == "ring":
        rounds = ring_schedule(s.op, s.ranks, s.msg_bytes)
    elif s.algorithm == "tree":
        rounds = tree_schedule(s.ranks, s.msg_bytes)
    else:
        matrix, routing_text = routing_matrix(s.routing or "balanced", s.ranks, s.msg_bytes, s.matrix)
        rounds = pairwise_schedule(matrix)
    sent, received = per_rank(rounds, s.ranks)
    paces = [round_bytes(r) for r in rounds]
    wire = wire_bytes(module, s.op, s.msg_bytes, s.ranks)
    outputs = {
        "collective_wire_bytes": _out(wire, "B", "FX1"),
        "max_rank_send_bytes": _out(max(sent), "B", "schedule"),
        "max_rank_recv_bytes": _out(max(received), "B", "schedule"),
        "network_bytes": _out(sum(sent), "B", "schedule"),
        "critical_path_steps": _out(len(rounds), "1", "schedule"),
        "critical_path_bytes": _out(sum(paces, 0.0), "B", "schedule"),
    }
    warnings = _size_warnings(s)
    round_times: list[float | None] = [None] * len(rounds)
    if s.bandwidth is None:
        warnings.append("no --bandwidth: times, algbw/busbw and the ring/tree crossover need one (e.g. --bandwidth 50GB/s)")
    else:
        round_times = [s.latency + b / s.bandwidth for b in paces]
        warnings += _timed(s, module, outputs, sent, received, wire, sum(round_times, 0.0), len(rounds))
    cross = None
    if s.op == "allreduce" and s.bandwidth is not None and s.ranks > 1:
        cross = crossover(module, s.ranks, s.latency, s.bandwidth, s.msg_bytes)
    return CollectiveResult(s, _inputs(s, routing_text), outputs, rounds, paces, round_times, sent, received, matrix, cross, warnings)


def _timed(s: Setup, module, outputs: dict, sent, received, wire: float, simulated: float, steps: int) -> list[str]:
    """Add collective_time, its α and β terms, schedule_time, algbw and busbw to ``outputs``; warn if FX50 and the schedule disagree."""
    time, source = _time(s, module, sent, received, wire, simulated)
    outputs["collective_time"] = _out(time, "s", source)
    paced = max(max(sent), max(received)) if s.algorithm == "all-to-all" else wire
    alpha, beta = alpha_beta_terms(module, s.algorithm, steps, s.latency, paced, s.msg_bytes, s.bandwidth)
    outputs["collective_latency_time"] = _out(alpha, "s", "FX700")
    outputs["collective_bandwidth_time"] = _out(beta, "s", "FX701")
    outputs["schedule_time"] = _out(simulated, "s", "schedule")
    if time > 0:
        alg, bus = bandwidths(module, s.op, s.ranks, s.msg_bytes, time)
        outputs["alg_bandwidth"] = _out(alg, "B/s", "FX51")
        outputs["bus_bandwidth"] = _out(bus, "B/s", "FX52")
    uniform = s.algorithm == "ring" or s.routing in (None, "balanced")
    if source == "FX50" and uniform and not math.isclose(time, simulated, rel_tol=1e-9, abs_tol=1e-15):
        return [f"the simulated schedule ({simulated:.6g} s) disagrees with FX50 ({time:.6g} s): check the formula record"]
    return []


_CHUNKS = {
    "ring": "chunk c is bytes [c·M/P, (c+1)·M/P) of the buffer",
    "tree": "all: the whole M-byte message",
    "all-to-all": "i->j: the block rank i addresses to rank j",
}


def _time(s: Setup, module, sent, received, wire, simulated) -> tuple[float, str]:
    """collective_time: FX50 for the ring and for all-to-all (with the busiest rank's bytes), FX62 for the tree.

    The lock-step round sum of the simulated schedule is checked against the formula; a
    disagreement is reported as a warning by the caller.
    """
    if s.algorithm == "ring":
        return formula_time(module, s.op, s.ranks, s.latency, wire, s.bandwidth), "FX50"
    if s.algorithm == "all-to-all":
        busiest = max(max(sent), max(received))
        return formula_time(module, s.op, s.ranks, s.latency, busiest, s.bandwidth), "FX50"
    if s.msg_bytes > 0 and s.ranks > 0:
        return tree_allreduce_time(module, s.ranks, s.msg_bytes, s.latency, s.bandwidth), "FX62"
    return simulated, "schedule"


def _size_warnings(s: Setup) -> list[str]:
    if s.algorithm == "ring" and s.op != "sendrecv" and s.ranks > 1 and not float(s.msg_bytes / s.ranks).is_integer():
        return [f"M/P = {s.msg_bytes / s.ranks:.6g} B is not a whole number of bytes; libraries split such buffers unevenly, which this model averages"]
    return []


def _out(value: float, unit: str, source: str) -> dict:
    return {"value": value, "unit": unit, "low": value, "high": value, "method": "exact", "from": source}


def _inputs(s: Setup, routing_text: str | None) -> dict:
    def point(value, unit, source="given"):
        return {"value": value, "unit": unit, "low": value, "high": value, "source": source}

    inputs = {"ranks": point(s.ranks, "1"), "msg_bytes": point(s.msg_bytes, "B"),
              "eff_bandwidth": point(s.bandwidth, "B/s") if s.bandwidth is not None else None,
              "step_latency": point(s.latency, "s", s.latency_source)}
    if s.algorithm == "all-to-all":
        inputs["routing"] = {"value": s.routing or "balanced", "unit": "", "low": None, "high": None, "source": routing_text}
    return inputs


def _round_json(index: int, r: Round, pace: float, time: float | None) -> dict:
    return {"round": index + 1, "phase": r.phase, "step": r.step + 1, "bytes": pace, "time": time,
            "transfers": [{"src": t.src, "dst": t.dst, "chunk": t.chunk, "bytes": t.nbytes} for t in r.transfers]}

