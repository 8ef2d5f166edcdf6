"""``aiinfra calc list`` and ``aiinfra calc <name>``: calculators declared in knowledge/calculators/."""

from __future__ import annotations

import sys

from engine.cli.common import emit, parse_sets, root_of, scan_options
from engine.cli.render import TERMINAL, table, terminal_width, to_json
from engine.core.errors import InputError
from engine.core.humanize import friendly, number, value_range
from engine.numeric import compiled


def list_(args) -> int:
    from engine.numeric.calculators import load_records

    records = load_records(root_of(args))
    rows = [dict(id=cid, title=r["title"], title_zh=r["title_zh"], outputs=r["outputs"]) for cid, r in sorted(records.items())]
    if args.format == "json":
        emit(to_json(rows))
    else:
        emit(table(rows, [("id", "id"), ("title", "title"), ("title_zh", "title_zh"), ("outputs", "outputs")], args.format))
    return 0


FAST_FLAGS = {"--set": "sets", "--model": "model", "--device": "device", "--precision": "precision", "--format": "format", "--root": "root",
              "--system": "system", "--grid": "grid", "--weights": "weights", "--kv-cache": "kv_cache", "--sweep": "sweep", "--points": "points",
              "--plot": "plot", "--solve": "solve", "--where": "where"}


def fast_args(argv: list[str]):
    """``calc NAME [--set N=V]... [--model M] [--device D] [--precision P] [--format F] [--explain]
    [--sweep N=LO..HI [--points K] [--log] [--plot FILE]]`` without argparse.

    The common run and sweep are read directly (argparse would first need every calculator's
    record and help text: schema validation of every calculator file); anything else (help,
    list, an unknown option, a --points that is not an integer) returns None and the full
    parser takes over with its messages.
    """
    from types import SimpleNamespace

    if len(argv) < 2 or argv[0] != "calc" or argv[1].startswith("-") or argv[1] == "list":
        return None
    args = SimpleNamespace(verb="calc", action=argv[1], sets=[], model=None, device=None, system=None, grid=None, precision="bf16", format="text",
                           weights=None, kv_cache=None, root=None, explain=False, sweep=None, points=32, log=False, plot=None, solve=None,
                           where=[], numeric=False)
    pairs = scan_options(argv[2:], FAST_FLAGS, ("--explain", "--log", "--numeric"))
    if pairs is None or any(name is None for name, _ in pairs):
        return None
    for name, value in pairs:
        if name == "--explain":
            args.explain = True
        elif name == "--log":
            args.log = True
        elif name == "--numeric":
            args.numeric = True
        elif name == "--where":
            args.where.append(value)
        elif name == "--points":
            try:
                args.points = int(value)
            except ValueError:
                return None
        elif name == "--set":
            args.sets.append(value)
        else:
            setattr(args, FAST_FLAGS[name], value)
    if args.format not in ("text", "json", "md", "csv"):
        return None
    return args


def run(args) -> int:
    from engine.cli.common import one_record
    from engine.core.errors import KnowledgeError
    from engine.numeric.calculators import Calculator, cached_records

    root = root_of(args)
    try:
        records, problems = cached_records(root), []
    except KnowledgeError:  # another calculator is broken: this one may still run (check names the rest)
        from engine.numeric.calc_records import read_calculators

        records, problems = read_calculators(root)
    key = f"calc:{args.action.strip().lower()}"

    def lookup() -> dict:
        if key not in records:
            from engine.core.suggest import known

            names = sorted(r.split(":", 1)[1] for r in records)
            raise InputError("CALCULATOR", f"no calculator {args.action!r} ({known(key.split(':', 1)[1], names)})")
        return records[key]

    calc = Calculator.from_record(one_record(lookup, problems))
    sets = parse_sets(args.sets)
    try:
        return _calculate(args, calc, root, sets)
    except InputError as exc:
        raise _device_gap(_format_hint(exc, sets), args, root, calc.id) from None


def _calculate(args, calc, root, sets: dict) -> int:
    from engine.domain import presets as preset_mod

    presets = preset_mod.precision_values(args.precision)  # kv_bytes follows --precision unless given
    if getattr(args, "model", None) or getattr(args, "device", None):
        presets.update(preset_mod.cached(root, args.model, args.device, args.precision, calc.id))
    if getattr(args, "system", None) or getattr(args, "grid", None):  # knowledge/systems, knowledge/carbon_intensity.yaml
        from engine.domain import systems

        presets.update(systems.preset_values(root, args.system, args.grid))
    from engine.cli import calc_defaults  # mfu/mbu by one rule, sp_degree with TP as plan (issue 28)

    presets.update(calc_defaults.presets(root, calc.id, getattr(args, "device", None), args.precision, sets, presets))
    formats = _storage_presets(args, root, sets, presets)
    if getattr(args, "solve", None) is not None or getattr(args, "where", None):
        return _solve(args, calc, root, sets, presets, formats)
    sweep_spec = getattr(args, "sweep", None)
    plot = getattr(args, "plot", None)
    if plot is not None and not sweep_spec:
        raise InputError("--plot", "draws a sweep; give --sweep NAME=LO..HI as well")
    if sweep_spec:
        if plot is not None:
            _plot_target(plot)  # a path that cannot be right is refused before any output
        name, low, high = _sweep_range(sweep_spec, calc, root)
        if name in sets:
            raise InputError("--sweep", f"{name} is also given with --set; give it once")
        sets[name] = repr(low)
        result = _run(calc, root, sets, presets)
        _formats_used(result, formats)
        from engine.numeric.calculators import sweep

        xs, ys = sweep(result, name, low, high, args.points, args.log)
        units = {n: v.unit for n, v in result.outputs.items()}
        x_unit = result.inputs[name].unit
        emit(_sweep_output(args.format, result.calculator, name, x_unit, xs, ys, units))
        if plot is not None:  # after the CSV, so a plot that fails to draw or write loses no numbers
            sys.stdout.flush()
            _plot(plot, name, x_unit, xs, ys, units, args.log, result)
        return 0
    result = _run(calc, root, sets, presets)
    _formats_used(result, formats)
    emit(render(result, args.format, explain=getattr(args, "explain", False)))
    return 0


def _solve(args, calc, root, sets: dict, presets: dict, formats: dict) -> int:
    """``calc ID --solve INPUT --where 'OUTPUT >= V' ...``: engine.numeric.calc_solve, rendered."""
    from engine.cli.solve_render import render_solution
    from engine.numeric import calc_solve
    from engine.numeric.calculators import graph_of

    if args.solve is None:
        raise InputError("--where", "states a condition for --solve; give --solve INPUT as well")
    for flag, given in (("--sweep", args.sweep), ("--plot", getattr(args, "plot", None)), ("--explain", args.explain or None)):
        if given:
            raise InputError(flag, "does not go with --solve")
    if args.format == "csv":
        raise InputError("--format", "--solve prints text, md or json (csv is for runs and sweeps)")
    from engine.core.errors import KnowledgeError
    from engine.numeric.calc_conditions import record_error

    module = compiled.load(root, strict=False)  # a formula refused elsewhere stops only the calculators that need it (#24)
    try:
        sol = calc_solve.solve(calc, module, sets, presets, args.solve.strip(), list(args.where), numeric=getattr(args, "numeric", False))
    except KnowledgeError as exc:  # a broken record (a refused formula its chain needs, an output no formula produces) at its file:line
        raise record_error(root, calc, exc) from None
    graph_of(module).warn_refused()  # the formulas refused elsewhere in the root: one warning
    for symbol, flag in formats.items():
        if symbol not in sol.inputs:
            raise InputError(flag, f"{sol.calculator} does not use {symbol} on the chain solved here")
    emit(render_solution(sol, args.format))
    return 0


# --weights and --kv-cache: a storage format by name (engine.domain.storage) for the bytes of one
# stored weight (bytes_param, F6) and of one cached K/V element (kv_bytes, F8); --precision stays
# the compute precision (the device's peak), a third choice (FX651).
STORAGE_FLAGS = (("weights", "--weights", "bytes_param"), ("kv_cache", "--kv-cache", "kv_bytes"))


# a format's name given to --set as if it were a number (--set kv_bytes=fp8): the option that takes it by name
NAMED_BY = {"kv_bytes": "--kv-cache", "kv_bytes_per_token": "--kv-cache", "kv_bytes_per_token_per_gpu": "--kv-cache",
            "kv_bytes_per_request": "--kv-cache", "bytes_param": "--weights", "weight_bytes": "--weights", "weight_bits": "--weights",
            "peak_flops": "--precision"}


def _format_hint(exc: InputError, sets: dict) -> InputError:
    """``--set kv_bytes: 'fp8' is not a number ...`` + ``(did you mean --kv-cache fp8?)`` when the value
    is a name the option takes (a storage format; for --precision a compute precision); else ``exc``."""
    from engine.domain import storage

    symbol = exc.field.removeprefix("--set ")
    flag = NAMED_BY.get(symbol) if exc.field.startswith("--set ") else None
    value = str(sets.get(symbol, "")).strip().lower()
    names = storage.COMPUTE_BITS if flag == "--precision" else storage.NAMES
    if flag is None or value.partition(":")[0] not in names or (flag == "--precision" and ":" in value):
        return exc
    return InputError(exc.field, f"{exc.message} (did you mean {flag} {value}?)")


# A value --device fills from its record (engine.domain.presets.device_values) and what the record then lacks: where
# the record states none (no TDP is published for Cloud TPUs, Trainium, Inferentia; GH200's module power is not a GPU
# TDP), a missing input is the device's limit, said as such, not a request for a value the record should hold (#28).
DEVICE_FILLS = {"gpu_tdp": ("no TDP", "W")}


def _device_gap(exc: InputError, args, root, calc_id: str) -> InputError:
    """``exc`` reworded where an input it asks for is one --device fills and the device's record states none."""
    device = getattr(args, "device", None)
    if not device or getattr(args, "system", None):
        return exc
    asked = [f.strip().removeprefix("--set ") for f in exc.field.split(",")] if exc.field.startswith("--set ") else []
    gaps = [s for s in asked if s in DEVICE_FILLS]
    if not gaps:
        return exc
    from engine.domain import presets as preset_mod

    try:
        filled = preset_mod.cached(root, None, device, args.precision, calc_id)
    except InputError:
        return exc
    gaps = [s for s in gaps if s not in filled]
    if not gaps:
        return exc
    name = device.strip().removeprefix("hw:")
    why = {s: f"{name} states {DEVICE_FILLS[s][0]} (aiinfra hardware show {name} says why)" for s in gaps}
    if len(asked) == 1:
        symbol = gaps[0]
        return InputError("--device", f"{why[symbol]}, and {calc_id} needs {symbol}: give --set {symbol}={DEVICE_FILLS[symbol][1]}"
                                      f" for the card you mean, or --system for a system record's")
    lines = exc.message.splitlines()
    for i, line in enumerate(lines):
        for symbol in gaps:
            if line.startswith(f"  --set {symbol} "):
                lines[i] = f"{line}; {why[symbol]}"
    exc.args = tuple("\n".join(lines) if a == exc.message else a for a in exc.args)  # MissingInputs prints its lines alone
    exc.message = "\n".join(lines)
    return exc


def _storage_presets(args, root, sets: dict, presets: dict) -> dict[str, str]:
    """Fill bytes_param / kv_bytes from --weights / --kv-cache (over --model, --device and --precision
    presets, never over --set); returns {symbol: flag} to check the calculator used them."""
    from engine.domain import storage

    used = {}
    for attr, flag, symbol in STORAGE_FLAGS:
        text = getattr(args, attr, None)
        if text is None:
            continue
        if symbol in sets:
            raise InputError(flag, f"sets {symbol}, which --set {symbol} also gives; give it once")
        fmt = storage.resolve(text, flag, root)
        if attr == "weights":
            storage.check_compute(fmt, args.precision)
            for stored in ("expert_storage", "bytes_param_expert"):  # every weight in the format given, the routed experts too
                presets.pop(stored, None)
        presets[symbol] = (fmt.bytes, fmt.source(flag))
        used[symbol] = flag
    return used


def _formats_used(result, formats: dict[str, str]) -> None:
    for symbol, flag in formats.items():
        if symbol not in result.inputs:
            raise InputError(flag, f"{result.calculator} does not use {symbol} here: it sizes no "
                                   f"{'weights' if symbol == 'bytes_param' else 'K/V cache'}, or a value it would set is given directly")


def _run(calc, root, sets: dict, presets):
    """engine.numeric.calculators.run; a failure boundary that does not parse names its file:line."""
    from engine.core.errors import ExprError, KnowledgeError
    from engine.numeric.calc_conditions import record_error
    from engine.numeric.calculators import Graph, condition_error, graph_of
    from engine.numeric.calculators import run as run_calc

    module = compiled.load(root, strict=False)  # a formula refused elsewhere stops only the calculators that need it (#24)
    try:
        result = run_calc(calc, module, sets, presets)
        graph_of(module).warn_refused()  # the formulas refused elsewhere in the root: one warning
        return result
    except ExprError as exc:
        raise condition_error(root, calc, Graph(module), exc) from None
    except KnowledgeError as exc:  # a broken record (an output no formula produces) at its file:line
        raise record_error(root, calc, exc) from None


def _sweep_range(text: str, calc, root) -> tuple[str, float, float]:
    """``batch=1..512`` -> ("batch", 1.0, 512.0) in the symbol's unit (units accepted: ``context_tokens=1k..128k``)."""
    from engine.core.errors import UnitError
    from engine.core.units import parse_quantity

    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier() or ".." not in value:
        raise InputError("--sweep", f"{text!r} is not NAME=LO..HI (e.g. --sweep decode_batch=1..512)")
    from engine.numeric.calculators import Graph

    graph = Graph(compiled.load(root, strict=False))
    if not graph.known(name):
        raise InputError("--sweep", f"{name} is not a formula symbol")
    unit = graph.spec(name)["unit"]
    try:
        q = parse_quantity(value.strip(), unit)
    except UnitError as exc:
        raise InputError("--sweep", f"{exc.text!r} {exc.message}") from None
    if not q.low < q.high:
        raise InputError("--sweep", f"the range {value!r} is empty (expected LO < HI)")
    return name, q.low, q.high


def _sweep_output(fmt: str, calculator: str, name: str, x_unit: str, xs, ys: dict, units: dict) -> str:
    """A sweep as CSV (text and csv), a Markdown table (md) or JSON (json): never CSV when JSON was asked for."""
    if fmt == "json":
        return to_json(_sweep_json(calculator, name, x_unit, xs, ys, units))
    if fmt == "md":
        heads = [_sweep_head(name, x_unit)] + [_sweep_head(n, units[n]) for n in ys]
        rows = [dict(zip(heads, [f"{x:.10g}"] + [f"{ys[n][i]:.10g}" for n in ys], strict=True)) for i, x in enumerate(xs)]
        return table(rows, [(h, h) for h in heads], "md")
    return _sweep_csv(name, x_unit, xs, ys, units)


def _sweep_json(calculator: str, name: str, x_unit: str, xs, ys: dict, units: dict) -> dict:
    """``{"calculator", "x": {"name", "unit", "values"}, "outputs": {name: {"unit", "values"}}}``; NaN becomes null."""
    import math

    values = lambda seq: [float(v) if math.isfinite(v) else None for v in seq]  # noqa: E731
    return {"calculator": calculator, "x": {"name": name, "unit": x_unit, "values": values(xs)},
            "outputs": {n: {"unit": units[n], "values": values(ys[n])} for n in ys}}


def _sweep_head(name: str, unit: str) -> str:
    return f"{name} [{unit}]" if unit not in ("", "1") else name


def _sweep_csv(name: str, x_unit: str, xs, ys: dict, units: dict) -> str:
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([_sweep_head(name, x_unit)] + [_sweep_head(n, units[n]) for n in ys])
    # column by column from plain floats (a NumPy scalar formats several times slower); a number
    # never needs CSV quoting, so the rows are joined directly
    columns = [[format(v, ".10g") for v in column.tolist()] for column in (xs, *ys.values())]
    buf.write("".join(",".join(row) + "\n" for row in zip(*columns, strict=True)))
    return buf.getvalue()


def _plot(path: str, name: str, x_unit: str, xs, ys: dict, units: dict, log: bool, result) -> None:
    """One panel per output over the swept input, written atomically (matplotlib imported only here)."""
    import io

    import numpy as np

    from engine.cli.common import write_atomic

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--plot", "needs matplotlib (pip install 'aiinfra[plot]' or pip install matplotlib); the CSV above is complete") from None
    _, suffix = _plot_target(path)
    names = [n for n in ys if np.nanmax(ys[n]) != np.nanmin(ys[n])] or list(ys)  # constant outputs stay in the CSV only
    fig, axes = plt.subplots(len(names), 1, sharex=True, figsize=(7, 2.2 * len(names) + 0.8), squeeze=False)
    for ax, n in zip(axes[:, 0], names, strict=True):
        ax.plot(xs, ys[n], lw=1.6)
        ax.set_ylabel(f"{n}\n[{units[n]}]" if units[n] not in ("", "1") else n, fontsize=8)
        ax.grid(True, alpha=0.3)
        if log:
            ax.set_xscale("log")
    axes[-1, 0].set_xlabel(f"{name} [{x_unit}]" if x_unit not in ("", "1") else name)
    fig.suptitle(f"{result.calculator}: {result.title}", fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()  # drawn in memory: a backend that fails mid-write (PDF on a full disk) never sees the file
    try:
        fig.savefig(buf, format=suffix)
    finally:
        plt.close(fig)
    write_atomic(path, buf.getvalue(), "--plot")


def _plot_target(path: str) -> tuple[str, str]:
    """The folder and format of a ``--plot`` path (svg, png or pdf), checked without writing."""
    import os

    from engine.cli.common import writable_target

    folder = writable_target(path, "--plot")
    suffix = os.path.splitext(path)[1].lower().lstrip(".")
    if suffix not in ("svg", "png", "pdf"):
        raise InputError("--plot", f"{path!r} should end in .svg, .png or .pdf")
    return folder, suffix


def help_text(record: dict, module) -> str:
    """The inputs of a calculator with units, defaults and descriptions (for ``--help``)."""
    from engine.numeric.calculators import Calculator, Graph

    calc = Calculator.from_record(record)
    graph = Graph(module)
    lines = ["inputs (--set NAME=VALUE; a bare number is in the unit shown):"]
    for name, spec in calc.inputs.items():
        sym = graph.spec(name) if graph.known(name) else {"unit": "?", "desc": "", "values": [], "default": None, "default_source": ""}
        unit = "one of " + "|".join(sym["values"]) if sym["values"] else sym["unit"]
        default = spec.get("default")
        source = spec.get("source", "")
        if default is None and sym["default"] is not None:
            default = sym["default"] if isinstance(sym["default"], str) else number(sym["default"][0])
            source = sym["default_source"]
        lines.append(f"  {name} [{unit}]" + (f" default {default}" if default is not None else " (required unless derivable)"))
        lines.append(f"      {spec.get('description') or sym['desc']}" + (f" (default from: {source})" if default is not None else ""))
    lines.append("outputs (a capacity figure says whether it is per GPU, per replica or for the whole fleet):")
    for name in list(calc.outputs) + [n for n in calc.optional_outputs if n not in calc.outputs]:
        sym = graph.formulas[graph.producer[name]]["output"] if name in graph.producer else {"unit": "?", "desc": ""}
        optional = " (optional: when its inputs are given)" if name not in calc.outputs else ""
        lines.append(f"  {name} [{sym['unit']}]{optional}: {sym['desc']}")
    lines.append("Any intermediate symbol of the chain may be given with --set; the chain then stops there.")
    from engine.cli.render import prose

    return prose("\n".join(lines))  # wrapped at $COLUMNS / the terminal's width, whole on a pipe


def render(result, fmt: str, explain: bool = False) -> str:
    if fmt == "json":
        data = result.to_json()
        if explain:
            data["explain"] = result.steps
        return to_json(data)
    if fmt == "csv":
        rows = [dict(kind="input", name=n, value=v.value, unit=v.unit, low=v.low, high=v.high, note=v.source) for n, v in result.inputs.items()]
        rows += [dict(kind="output", name=n, value=v.value, unit=v.unit, low=v.low, high=v.high, note=v.method) for n, v in result.outputs.items()]
        return table(rows, [(k, k) for k in ("kind", "name", "value", "unit", "low", "high", "note")], "csv")
    md = fmt == "md"
    lines = [f"## {result.calculator} · {result.title}" if md else f"{result.calculator} · {result.title}", ""]
    from engine.cli.calc_defaults import verdict

    if verdict(result):  # a result that does not fit says so first
        lines[1:1] = [verdict(result), ""]
    rows = [dict(name=n, value=value_range(v), unit=v.unit, source=v.source) for n, v in result.inputs.items()]
    heads = [("name", "input"), ("value", "value"), ("unit", "unit"), ("source", "source")]
    shown = table(rows, heads, "md" if md else "text", None if explain else TERMINAL)
    lines += [shown, ""]
    if not md and not explain and shown != table(rows, heads, "text", None):  # sources cut to the terminal's width
        lines[-1:] = [f"(sources shortened to fit {terminal_width()} columns: --explain or json prints them whole)", ""]
    rows = [dict(name=n, value=value_range(v), unit=v.unit, friendly=friendly(v.value, v.unit), method=v.method) for n, v in result.outputs.items()]
    lines += [table(rows, [("name", "output"), ("value", "value"), ("unit", "unit"), ("friendly", ""), ("method", "range")], "md" if md else "text",
                    droppable=("method",)), ""]  # exact/sampled goes first on a narrow terminal
    lines.append("Formulas: " + " -> ".join(result.formulas))
    if result.ranking:
        lines += ["", "### What drives each range" if md else "What drives each range (share of the output's swing, one input at a time):"]
        for out, ranks in result.ranking.items():
            lines.append(f"{'- ' if md else '  '}{out}: " + ", ".join(f"{n} {share:.0%}" for n, share in ranks))
    if explain:
        lines += ["", "### Chain" if md else "Chain:"]
        for s in result.steps:
            variant = f" ({s['variant']})" if s["variant"] else ""
            lines.append(f"{'- ' if md else '  '}{s['id']} {s['name']}{variant}")
            lines.append(f"    {s['symbol']} = {s['expr']}")
            lines.append(f"      = {s['substituted']}")
            lines.append(f"      = {s['value']:.10g} {s['unit']}")
    if result.assumptions:
        lines += ["", "### Assumptions" if md else "Assumptions:"] + [f"- {a}" for a in result.assumptions]
    if result.warnings:
        lines += ["", "### Warnings" if md else "Warnings:"] + [f"- {w}" for w in result.warnings]
    return "\n".join(lines)

