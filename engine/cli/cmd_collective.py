"""``aiinfra collective ring|tree|all-to-all``: a collective's schedule, traffic and alpha-beta time.

Options are read here (quantities with units, the all-to-all routing file); the schedule
and its costs come from ``engine.domain.collective``; printing is this module's job. ``--format
json`` carries everything (all rounds), ``csv`` the rounds table (one row per transfer),
``text`` and ``md`` a summary, the first ``--show-rounds`` rounds, the ranks and the ring
vs tree crossover. With ``--model ID --tokens N --tp T`` (ring or tree allreduce) the message is
the model's TP all-reduce and a TP budget per forward pass follows (engine.domain.collective).
"""

from __future__ import annotations

from engine.cli.common import emit, root_of
from engine.cli.render import prose_around_tables, table, to_json
from engine.core.errors import InputError
from engine.core.humanize import friendly, number
from engine.domain import collective
from engine.numeric import compiled

TRANSFERS_SHOWN = 8
RANKS_SHOWN = 16


def run(args) -> int:
    root = root_of(args)
    module = compiled.load(root)
    model = model_of(args, root) if getattr(args, "model", None) else None
    if model is None:
        for option in ("tokens", "tp", "act_bytes"):
            if getattr(args, option, None) is not None:
                raise InputError(f"--{option.replace('_', '-')}", "applies with --model only (the TP all-reduce or MoE all-to-all of a model)")
    result = collective.run(setup_from(args, module, model), module)
    if model is not None:
        from engine.domain import collective_model

        attach = collective_model.with_ep_budget if args.action == "all-to-all" else collective_model.with_tp_budget
        attach(result, module, model, args.tokens, model["bytes_act"])
    emit(render(result, args.format, args.show_rounds))
    return 0


def model_of(args, root) -> dict:
    """--model with --tokens and --tp (ring/tree allreduce) or --ranks (all-to-all of a MoE model)."""
    from engine.domain import models

    ep = args.action == "all-to-all"
    drop = (("--bytes", args.bytes, "--tokens x top_k x hidden x --act-bytes"), ("--tp", args.tp, "--ranks is the EP group")) if ep else (
        ("--bytes", args.bytes, "--tokens x hidden x --act-bytes"), ("--ranks", args.ranks, "--tp"))
    for option, given, instead in drop:
        if given is not None:
            raise InputError(option, f"does not apply with --model here ({instead}); drop {option}")
    if args.op != ("alltoall" if ep else "allreduce"):
        raise InputError("--model", "sizes the Megatron TP all-reduce (`ring|tree --op allreduce --model ID --tokens N --tp T`) "
                                    "or the MoE all-to-all (`all-to-all --op alltoall --model ID --tokens N --ranks E`)")
    checks = [("--tokens", args.tokens, 1, "tokens in the batch, e.g. 8192"), ("--ranks" if ep else "--tp", args.ranks if ep else args.tp, 2, "the EP group size, e.g. 64" if ep else "the TP group size, e.g. 8")]
    for option, value, low, example in checks:
        if value is None:
            raise InputError(option, f"is needed with --model ({example})")
        if not low <= value <= (collective.MAX_RANKS if option != "--tokens" else value):
            top = f" to {collective.MAX_RANKS}" if option != "--tokens" else ""
            raise InputError(option, f"expected a whole number {'from ' + str(low) + top if top else '>= ' + str(low)}, got {value}" + (" (schedules list every transfer)" if top else ""))
    try:
        record = models.find_one(root, args.model, "--model")
    except InputError as exc:
        raise InputError("--model", exc.message) from None
    cfg, moe = record["config"], record["derived"].get("moe")
    if ep and not moe:
        raise InputError("--model", f"{record['id']} has no routed experts (a dense model); the MoE all-to-all needs a MoE model, e.g. deepseek-v3")
    src = record.get("source", {})
    where = f"{src.get('repo', record['id'])}@{str(src.get('revision', ''))[:8]}".rstrip("@")
    act = quantity("--act-bytes", args.act_bytes, "B") if args.act_bytes is not None else 2.0
    if act <= 0:
        raise InputError("--act-bytes", f"expected a number of bytes > 0, got {act:g}")
    out = {"id": record["id"], "hidden": cfg["hidden_size"], "layers": cfg["num_hidden_layers"], "bytes_act": act,
           "source": f"config hidden_size, num_hidden_layers ({where})"}
    if ep:
        out.update(top_k=moe["experts_per_token"], experts=moe["experts"], moe_layers=cfg["num_hidden_layers"] - moe.get("dense_first_layers", 0),
                   source=f"config hidden_size, num_hidden_layers, num_experts_per_tok, dense first layers ({where})")
    return out


def setup_from(args, module, model: dict | None = None) -> collective.Setup:
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
    if model is not None and args.action == "all-to-all":
        from engine.domain import collective_model

        ranks, msg_bytes = args.ranks, collective_model.ep_send_bytes(args.tokens, model["top_k"], model["hidden"], model["bytes_act"])
    elif model is not None:
        from engine.domain import collective_model

        ranks, msg_bytes = args.tp, collective_model.tp_message_bytes(module, args.tokens, model["hidden"], model["bytes_act"])
    else:
        for option, given in (("--ranks", args.ranks), ("--bytes", args.bytes)):
            if given is None:
                raise InputError(option, "is needed (or --model ID with --tokens N and --tp T for a model's TP all-reduce)")
        ranks, msg_bytes = args.ranks, quantity("--bytes", args.bytes, "B")
    return collective.Setup(args.action, args.op, ranks, msg_bytes, bandwidth, latency, latency_source, routing, matrix)


def quantity(option: str, text: str, unit: str) -> float:
    """One value (not a range) of ``text`` in ``unit`` (engine.cli.common.one_quantity, with an example value)."""
    from engine.cli.common import one_quantity

    return one_quantity(option, text, unit, _EXAMPLES[unit])


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
    lines += _tp_section(result, fmt)
    lines += ["", "### Assumptions" if md else "Assumptions:"] + [f"- {a}" for a in result.assumptions]
    if result.warnings:
        lines += ["", "### Warnings" if md else "Warnings:"] + [f"- {w}" for w in result.warnings]
    return "\n".join(lines if md else prose_around_tables(lines))


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
    if fmt == "text":
        _fit_transfers(rows, cols)
    return ["", f"### {title}" if fmt == "md" else title, ""] + ([table(rows, cols, fmt)] if rows else [])


def _fit_transfers(rows: list[dict], cols) -> None:
    """On a terminal narrower than the rounds table, each round's transfer list keeps its first transfers and ends in
    '…' (every transfer stays in --format json and csv): the list reads as numbers, so the table would not cut it."""
    from engine.cli.render import display_width, terminal_width

    limit = terminal_width()
    if limit is None:
        return
    others = sum(max(display_width(str(r[k])) for r in rows + [dict(cols)]) + 2 for k, _ in cols if k != "transfers")
    room = max(limit - others, len("src→dst chunk"))
    for r in rows:
        text = r["transfers"]
        if display_width(text) > room:
            cut = text[: max(room - 1, 1)]
            r["transfers"] = (cut.rsplit(", ", 1)[0] if ", " in cut else cut) + "…"


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


def _tp_section(result: collective.CollectiveResult, fmt: str) -> list[str]:
    b = result.model_budget
    if b is None:
        return []
    ep = "ep" in b
    group = f"EP = {b['ep']}" if ep else f"TP = {b['tp']}"
    head = f"{'MoE all-to-all' if ep else 'TP'} budget of {b['model']} at {group}, {b['tokens']} tokens, {number(b['bytes_act'])} B per activation"
    named = ((("send buffer per dispatch", b["msg_bytes"]), ("bytes leaving a rank per phase", b["phase_bytes"]),
              ("all-to-alls per forward (2 x MoE layers)", b["alltoalls_per_forward"]), ("time per all-to-all", b["time_per_alltoall"]))
             if ep else (("message per all-reduce", b["msg_bytes"]), ("all-reduces per forward (2L)", b["allreduces_per_forward"]),
                         ("time per all-reduce", b["time_per_allreduce"])))
    named += ((("EP" if ep else "TP") + " time per forward", b["time_per_forward"]),)
    rows = [dict(name=name, value=number(o["value"]), unit=o["unit"], friendly=friendly(o["value"], o["unit"]), source=o["from"])
            for name, o in named if o is not None]
    shape = f"hidden {b['hidden']}, {b['layers']} layers" + (f" ({b['moe_layers']} MoE), top-{b['top_k']}" if ep else "")
    lines = (["", f"### {head}" if fmt == "md" else head, "", f"{shape}: {b['source']}", "",
              table(rows, [("name", ""), ("value", "value"), ("unit", "unit"), ("friendly", ""), ("source", "from")], fmt), ""])
    t = b.get("token_assignments")
    if t and t["received_per_rank"]:
        per_rank = f", {number(t['experts_per_rank'])} experts per rank of {t['experts']}" if t["experts_per_rank"] else ""
        lines += [f"token assignments: each rank sends {number(t['sent_per_rank'])} ({b['tokens']} tokens x top-{b['top_k']}{per_rank}); "
                  f"received per rank {number(min(t['received_per_rank']))} .. {number(max(t['received_per_rank']))} "
                  f"(max / mean {t['max_over_mean_received']:.3g}; the matrix in --format json)", ""]
    return lines + [f"- {a}" for a in b["assumptions"]]
