"""``aiinfra calc list`` and ``aiinfra calc <name>``: calculators declared in knowledge/calculators/."""

from __future__ import annotations

from engine import compiled
from engine.cli.common import emit, parse_sets, publish, root_of, scan_options
from engine.cli.render import table, to_json
from engine.errors import InputError
from engine.humanize import friendly, number, value_range


def list_(args) -> int:
    from engine.calculators import load_records

    records = load_records(root_of(args))
    rows = [dict(id=cid, title=r["title"], title_zh=r["title_zh"], outputs=r["outputs"]) for cid, r in sorted(records.items())]
    if args.format == "json":
        emit(to_json(rows))
    else:
        emit(table(rows, [("id", "id"), ("title", "title"), ("title_zh", "title_zh"), ("outputs", "outputs")], args.format))
    return 0


FAST_FLAGS = {"--set": "sets", "--model": "model", "--device": "device", "--precision": "precision", "--format": "format", "--root": "root"}


def fast_args(argv: list[str]):
    """``calc NAME [--set N=V]... [--model M] [--device D] [--precision P] [--format F] [--explain]`` without argparse.

    The common run is read directly (argparse would first need every calculator's record and
    help text); anything else (help, sweeps, list, an unknown option) returns None and the
    full parser takes over with its messages.
    """
    from types import SimpleNamespace

    if len(argv) < 2 or argv[0] != "calc" or argv[1].startswith("-") or argv[1] == "list":
        return None
    args = SimpleNamespace(verb="calc", action=argv[1], sets=[], model=None, device=None, precision="bf16", format="text",
                           root=None, explain=False, sweep=None, points=32, log=False, plot=None)
    pairs = scan_options(argv[2:], FAST_FLAGS, ("--explain",))
    if pairs is None or any(name is None for name, _ in pairs):
        return None
    for name, value in pairs:
        if name == "--explain":
            args.explain = True
        elif name == "--set":
            args.sets.append(value)
        else:
            setattr(args, FAST_FLAGS[name], value)
    if args.format not in ("text", "json", "md", "csv"):
        return None
    return args


def run(args) -> int:
    from engine.calculators import Calculator, cached_records
    from engine.calculators import run as run_calc

    root = root_of(args)
    records = cached_records(root)
    key = f"calc:{args.action}"
    if key not in records:
        known = ", ".join(sorted(r.split(":", 1)[1] for r in records)) or "none"
        raise InputError("CALCULATOR", f"no calculator {args.action!r} (known: {known})")
    calc = Calculator.from_record(records[key])
    sets = parse_sets(args.sets)
    presets = None
    if getattr(args, "model", None) or getattr(args, "device", None):
        from engine import presets as preset_mod

        presets = preset_mod.cached(root, args.model, args.device, args.precision)
    sweep_spec = getattr(args, "sweep", None)
    if getattr(args, "plot", None) and not sweep_spec:
        raise InputError("--plot", "draws a sweep; give --sweep NAME=LO..HI as well")
    if sweep_spec:
        name, low, high = _sweep_range(sweep_spec, calc, root)
        if name in sets:
            raise InputError("--sweep", f"{name} is also given with --set; give it once")
        sets[name] = repr(low)
        result = run_calc(calc, compiled.load(root), sets, presets)
        from engine.calculators import sweep

        xs, ys = sweep(result, name, low, high, args.points, args.log)
        units = {n: v.unit for n, v in result.outputs.items()}
        x_unit = result.inputs[name].unit
        if args.plot:
            _plot(args.plot, name, x_unit, xs, ys, units, args.log, result)
        emit(_sweep_csv(name, x_unit, xs, ys, units))
        return 0
    result = run_calc(calc, compiled.load(root), sets, presets)
    emit(render(result, args.format, explain=getattr(args, "explain", False)))
    return 0


def _sweep_range(text: str, calc, root) -> tuple[str, float, float]:
    """``batch=1..512`` -> ("batch", 1.0, 512.0) in the symbol's unit (units accepted: ``context_tokens=1k..128k``)."""
    from engine.errors import UnitError
    from engine.units import parse_quantity

    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier() or ".." not in value:
        raise InputError("--sweep", f"{text!r} is not NAME=LO..HI (e.g. --sweep decode_batch=1..512)")
    from engine.calculators import Graph

    graph = Graph(compiled.load(root))
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


def _sweep_csv(name: str, x_unit: str, xs, ys: dict, units: dict) -> str:
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = lambda n, u: f"{n} [{u}]" if u not in ("", "1") else n  # noqa: E731
    w.writerow([head(name, x_unit)] + [head(n, units[n]) for n in ys])
    for i, x in enumerate(xs):
        w.writerow([f"{x:.10g}"] + [f"{ys[n][i]:.10g}" for n in ys])
    return buf.getvalue()


def _plot(path: str, name: str, x_unit: str, xs, ys: dict, units: dict, log: bool, result) -> None:
    """One panel per output over the swept input, written atomically (matplotlib imported only here)."""
    import os
    import tempfile
    from pathlib import Path

    import numpy as np

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--plot", "needs matplotlib (pip install 'aiinfra[plot]' or pip install matplotlib)") from None
    target = Path(path)
    suffix = target.suffix.lower().lstrip(".")
    if suffix not in ("svg", "png", "pdf"):
        raise InputError("--plot", f"{path!r} should end in .svg, .png or .pdf")
    if not (target.parent if str(target.parent) else Path(".")).is_dir():
        raise InputError("--plot", f"the folder {str(target.parent)!r} does not exist")
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
    fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=f".{target.name}.", suffix=f".{suffix}")
    os.close(fd)
    try:
        fig.savefig(tmp, format=suffix)
        publish(tmp, target)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)


def help_text(record: dict, module) -> str:
    """The inputs of a calculator with units, defaults and descriptions (for ``--help``)."""
    from engine.calculators import Calculator, Graph

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
    lines.append("outputs: " + ", ".join(calc.outputs))
    lines.append("Any intermediate symbol of the chain may be given with --set; the chain then stops there.")
    return "\n".join(lines)


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
    rows = [dict(name=n, value=value_range(v), unit=v.unit, source=v.source) for n, v in result.inputs.items()]
    lines += [table(rows, [("name", "input"), ("value", "value"), ("unit", "unit"), ("source", "source")], "md" if md else "text"), ""]
    rows = [dict(name=n, value=value_range(v), unit=v.unit, friendly=friendly(v.value, v.unit), method=v.method) for n, v in result.outputs.items()]
    lines += [table(rows, [("name", "output"), ("value", "value"), ("unit", "unit"), ("friendly", ""), ("method", "range")], "md" if md else "text"), ""]
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

