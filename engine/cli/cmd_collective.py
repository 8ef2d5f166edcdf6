"""``aiinfra collective ring|tree|all-to-all``: a collective's schedule, traffic and alpha-beta time.

Options are read here (quantities with units, the all-to-all routing file); the schedule
and its costs come from ``engine.domain.collective``; printing is this module's job. ``--format
json`` carries everything (all rounds), ``csv`` the rounds table (one row per transfer),
``text`` and ``md`` a summary, the first ``--show-rounds`` rounds, the ranks and the ring
vs tree crossover.
"""

from __future__ import annotations

from engine.cli.common import emit, root_of
from engine.cli.render import table, to_json
from engine.core.errors import InputError, UnitError
from engine.core.humanize import friendly, number
from engine.core.units import parse_quantity
from engine.domain import collective
from engine.numeric import compiled

TRANSFERS_SHOWN = 8
RANKS_SHOWN = 16


def run(args) -> int:
    module = compiled.load(root_of(args))
    result = collective.run(setup_from(args, module), module)
    emit(render(result, args.format, args.show_rounds))
    return 0


def setup_from(args, module) -> collective.Setup:
    if args.show_rounds < 0:
        raise InputError("--show-rounds", f"expected a whole number >= 0, got {args.show_rounds}")
    latency, latency_source = collective.default_latency(module)
    latency_source = f"default: {latency_source}"
    if args.latency is not None:
        latency, latency_source = quantity("--latency", args.latency, "s"), "given"
    bandwidth = quantity("--bandwidth", args.bandwidth, "B/s") if args.bandwidth is not None else None
    routing, matrix = args.routing, None
    if args.action == "all-to-all" and not _named_pattern(routing):
        matrix = read_matrix(routing)
    return collective.Setup(args.action, args.op, args.ranks, quantity("--bytes", args.bytes, "B"), bandwidth,
                            latency, latency_source, routing, matrix)


def quantity(option: str, text: str, unit: str) -> float:
    """One value (not a range) of ``text`` in ``unit``; UnitError becomes an InputError naming ``option``."""
    try:
        q = parse_quantity(text, unit)
    except UnitError as exc:
        raise InputError(option, f"{exc.text!r} {exc.message}") from None
    if q.is_range:
        raise InputError(option, f"{text!r} is a range; give one value (e.g. {_EXAMPLES[unit]})")
    return q.value


_EXAMPLES = {"B": "1GB or 256MiB", "B/s": "50GB/s or 400Gb/s", "s": "20us"}


def _named_pattern(routing: str) -> bool:
    return routing == "balanced" or routing.partition(":")[0] == "hotspot"


def read_matrix(path: str) -> object:
    """The JSON of a source x destination matrix file (checked for shape by engine.domain.collective)."""
    from engine.kb.config_json import read_json

    return read_json(path, "--routing", "balanced, hotspot, hotspot:F or a matrix .json file")


# ----------------------------------------------------------------------------- rendering


def render(result: collective.CollectiveResult, fmt: str, show_rounds: int) -> str:
    if fmt == "json":
        return to_json(result.to_json())
    if fmt == "csv":
        return rounds_csv(result)
    return document(result, fmt == "md", show_rounds)


def rounds_csv(result: collective.CollectiveResult) -> str:
    rows = [dict(round=r["round"], phase=r["phase"], step=r["step"], src=t["src"], dst=t["dst"], chunk=t["chunk"], bytes=t["bytes"], round_time=r["time"])
            for r in result.round_rows() for t in r["transfers"]]
    cols = [(k, k) for k in ("round", "phase", "step", "src", "dst", "chunk", "bytes", "round_time")]
    return table(rows, cols, "csv")


def document(result: collective.CollectiveResult, md: bool, show_rounds: int) -> str:
    fmt = "md" if md else "text"
    lines = [_heading(result, md), ""]
    lines += [_input_line(name, spec, md) for name, spec in result.inputs.items() if spec is not None]
    lines.append("")
    rows = [dict(name=name, value=number(o["value"]), unit=o["unit"], friendly=friendly(o["value"], o["unit"]), source=o["from"])
            for name, o in result.outputs.items()]
    lines.append(table(rows, [("name", "output"), ("value", "value"), ("unit", "unit"), ("friendly", ""), ("source", "from")], fmt))
    lines += _rounds_section(result, fmt, show_rounds)
    lines += _ranks_section(result, fmt)
    lines += _crossover_section(result, fmt)
    lines += ["", "### Assumptions" if md else "Assumptions:"] + [f"- {a}" for a in result.assumptions]
    if result.warnings:
        lines += ["", "### Warnings" if md else "Warnings:"] + [f"- {w}" for w in result.warnings]
    return "\n".join(lines)


def _heading(result: collective.CollectiveResult, md: bool) -> str:
    ranks, m = result.setup.ranks, result.setup.msg_bytes
    head = f"collective {result.setup.algorithm} · {result.setup.op} · {ranks} ranks · M = {number(m)} B" + (f" ({friendly(m, 'B')})" if friendly(m, "B") else "")
    return f"## {head}" if md else head


def _input_line(name: str, spec: dict, md: bool) -> str:
    unit = "" if spec["unit"] in ("1", "") else f" {spec['unit']}"
    value = spec["value"] if isinstance(spec["value"], str) else f"{number(spec['value'])}{unit}"
    extra = friendly(spec["value"], spec["unit"]) if not isinstance(spec["value"], str) else ""
    text = f"{name} = {value}" + (f" ({extra})" if extra else "") + f" · {spec['source']}"
    return f"- {text}" if md else f"  {text}"


def _rounds_section(result: collective.CollectiveResult, fmt: str, show_rounds: int) -> list[str]:
    total = len(result.rounds)
    shown = result.round_rows(show_rounds)
    if not total:
        return ["", "No rounds: a single rank has nothing to exchange."]
    title = f"Rounds ({len(shown)} of {total}; all in --format json or csv) · {result.chunks}"
    rows = [dict(round=r["round"], phase=r["phase"], step=r["step"], transfers=_transfers_text(r["transfers"]),
                 bytes=number(r["bytes"]), time=number(r["time"]) if r["time"] is not None else "")
            for r in shown]
    cols = [("round", "round"), ("phase", "phase"), ("step", "step"), ("transfers", "src→dst chunk"), ("bytes", "bytes"), ("time", "time s")]
    return ["", f"### {title}" if fmt == "md" else title, ""] + ([table(rows, cols, fmt)] if rows else [])


def _transfers_text(transfers: list[dict]) -> str:
    parts = [f"{t['src']}→{t['dst']}" + (f" c{t['chunk']}" if isinstance(t["chunk"], int) else "") for t in transfers[:TRANSFERS_SHOWN]]
    more = len(transfers) - TRANSFERS_SHOWN
    return ", ".join(parts) + (f", … +{more}" if more > 0 else "") if parts else "(nothing to send)"


def _ranks_section(result: collective.CollectiveResult, fmt: str) -> list[str]:
    total = result.setup.ranks
    local = result.matrix is not None
    rows = [dict(rank=r["rank"], send=number(r["send_bytes"]), recv=number(r["recv_bytes"]), local=number(r["local_bytes"]) if local else "")
            for r in result.rank_rows(RANKS_SHOWN)]
    cols = [("rank", "rank"), ("send", "sent B"), ("recv", "received B")] + ([("local", "local B")] if local else [])
    title = f"Per rank ({len(rows)} of {total}; all in --format json)" if total > RANKS_SHOWN else "Per rank"
    return ["", f"### {title}" if fmt == "md" else title, "", table(rows, cols, fmt)]


def _crossover_section(result: collective.CollectiveResult, fmt: str) -> list[str]:
    cross = result.crossover
    if cross is None:
        return []
    head = f"Ring vs tree allreduce at {cross['ranks']} ranks, α = {number(cross['step_latency'])} s, β = {number(cross['eff_bandwidth'])} B/s"
    rows = [dict(size=number(r["msg_bytes"]), friendly=friendly(r["msg_bytes"], "B"), ring=number(r["ring_time"]), tree=number(r["tree_time"]),
                 faster=r["faster"], note=r["note"]) for r in cross["table"]]
    cols = [("size", "M B"), ("friendly", ""), ("ring", "ring s"), ("tree", "tree s"), ("faster", "faster"), ("note", "")]
    return ["", f"### {head}" if fmt == "md" else head, "", cross["summary"], "", table(rows, cols, fmt)]
