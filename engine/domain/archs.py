"""Reference architectures: the book's seven tiers (ra-01..ra-07) declared as data, evaluated by the calculators.

A file ``knowledge/reference_architectures/ra-NN.yaml`` declares a tier's hardware pools (a
device id and node counts), network, workload and failure domain, and the calculator runs that
apply to it: training runs only where the tier trains, serving runs only where it serves. Each
run's inputs are filled in layers, each value keeping its source:

1. the tier's counts (``n_gpus`` = nodes × GPUs per node, and the node power when stated);
2. the pool's device (dense peak, memory, bandwidth, TDP) through ``engine.domain.presets``;
3. a model preset (shape and parameter counts) when the run names one;
4. the run's own cited inputs, which win over every fill.

A run whose calculator is not in ``knowledge/calculators/`` is shown as not available by ``arch show``
and reported as a problem by ``aiinfra check`` (a misspelt id would otherwise pass unnoticed). A run
may carry the number the book prints; the result says whether it agrees. A failure boundary
names a run output as evidence and, where the book states one, a threshold: it is then met or
not met; the boundary's ``upgrade`` names the tier to move to.

The records and the result objects live in ``engine.domain.arch_records`` and are importable
from here.
"""

from __future__ import annotations

import operator
from pathlib import Path

from engine.core.errors import AiinfraError, InputError, KnowledgeError, Problem
from engine.domain.arch_records import (  # noqa: F401  (public through this module)
    FOLDER,
    BoundaryOutcome,
    Report,
    RunOutcome,
    _read,
    cached_records,
    find,
    load_records,
    short,
)

DEFAULT_REL_TOL = 0.05  # the book prints two significant figures
OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


# ---------------------------------------------------------------------- evaluation


class _Context:
    """What a tier's runs read from a root, loaded once and only when needed.

    Calculator records, device facts and model presets go through the JSON caches beside the
    compiled formulas (``engine.numeric.compiled.json_cached``), keyed by the files they come from, so
    ``arch show`` does not re-validate every YAML file on each call.
    """

    def __init__(self, root, lenient: bool = False):
        self.root = root
        self._calculators = None
        self.unloaded = False  # True when the calculators or formulas do not load (their own rules report it)
        self.lenient = lenient  # arch show: a calculator file that does not load fails only the runs that name it
        self.calculator_problems: list[Problem] = []
        self._module = None
        self._devices: dict[tuple[str, str], dict] = {}

    @property
    def calculators(self) -> dict[str, dict]:
        if self._calculators is None:
            from engine.numeric.calculators import cached_records

            try:
                self._calculators = cached_records(self.root)
            except KnowledgeError:
                if not self.lenient:
                    raise
                from engine.numeric.calc_records import read_calculators

                self._calculators, self.calculator_problems = read_calculators(self.root)
        return self._calculators

    @property
    def module(self):
        if self._module is None:
            from engine.numeric import compiled

            self._module = compiled.load(self.root, strict=not self.lenient)  # arch show: refused formulas fail only the runs needing them
            if self.lenient:
                from engine.numeric.calculators import graph_of

                graph_of(self._module).warn_refused()
        return self._module

    def device(self, ident: str, precision: str = "bf16") -> dict:
        """id, name, TDP (value, text, source) and the preset values of one device."""
        if (ident, precision) not in self._devices:
            import zlib

            from engine.numeric import compiled

            key = compiled.files_key(self.root, ["knowledge/hardware"], ["engine/domain/archs.py", "engine/domain/presets.py", "engine/domain/hardware.py"])
            key += f"{zlib.crc32(f'{ident}|{precision}'.encode()):08x}"
            self._devices[(ident, precision)] = compiled.json_cached("arch_device", key, lambda: _device_facts(self.root, ident, precision))
        return self._devices[(ident, precision)]

    def model_values(self, ident: str) -> dict[str, tuple[object, str]]:
        from engine.domain import presets

        return presets.cached(self.root, ident, None)


def _device_facts(root, ident: str, precision: str) -> dict:
    from engine.domain import hardware, presets
    from engine.kb.knowledge import load_single_folder

    dev = hardware.find(load_single_folder(root, "hardware"), ident, "hardware.device")
    tdp = dev.record.get("tdp") or {}
    return {"id": dev.id, "name": dev.name, "tdp_w": dev.tdp_w, "tdp_text": tdp.get("value", ""), "tdp_source": tdp.get("source", ""),
            "values": presets.device_values(dev, precision)}


def evaluate(root, text: str) -> Report:
    """Run every calculator run of the tier ``text`` and evaluate its failure boundaries."""
    record = find(cached_records(root), text)
    ctx = _Context(root, lenient=True)
    report = _evaluate(ctx, record)
    shown = {r.message for r in report.runs if r.status == "error"}
    others = [p for p in ctx.calculator_problems if not any(str(p) in m for m in shown)]
    if others:  # calculator files this tier does not run: one warning (#24); those it runs are its runs' errors
        from engine.kb.folders import warn_ignored

        warn_ignored(others)
    return report



def _evaluate(ctx: _Context, record: dict) -> Report:
    pools = [_pool_summary(ctx, record, p) for p in record["hardware"]["pools"]]
    runs = [_run(ctx, record, spec) for spec in record["runs"]]
    by_id = {r.id: r for r in runs}
    boundaries = [_boundary(record, fb, by_id) for fb in record["failure_boundaries"]]
    return Report(record, pools, runs, boundaries, _upgrade_path(record))


def _pool_summary(ctx: _Context, record: dict, pool: dict) -> dict:
    try:
        dev = ctx.device(pool["device"])
    except InputError as exc:  # the tier's own record is broken (check names it the same way): exit 1, not bad input (#24)
        index = record["hardware"]["pools"].index(pool)
        message = f"refers to {pool['device']}, which is not in knowledge/hardware" if exc.message.startswith("no device") else exc.message
        raise KnowledgeError([Problem(record.get("_place", ""), record["id"], f"hardware.pools[{index}].device", message)]) from None
    out = {"name": pool["name"], "device": pool["device"], "device_name": dev["name"], "nodes": pool["nodes"],
           "gpus_per_node": pool["gpus_per_node"], "gpus": pool["nodes"] * pool["gpus_per_node"], "source": pool["source"]}
    if pool.get("node_power"):
        out["node_power"] = pool["node_power"]
    if pool.get("note"):
        out["note"] = pool["note"]
    return out


def _pool(record: dict, name: str | None) -> dict:
    pools = record["hardware"]["pools"]
    if name is None:
        return pools[0]
    for p in pools:
        if p["name"] == name:
            return p
    raise InputError("pool", f"{short(record['id'])} has no hardware pool {name!r} (its pools: {', '.join(p['name'] for p in pools)})")


def count_values(record: dict, pool: dict, device: dict) -> dict[str, tuple[object, str]]:
    """symbol -> (value, source) for what the tier's counts decide."""
    where = f"{short(record['id'])} hardware pool {pool['name']}: {pool['nodes']} node(s) x {pool['gpus_per_node']} {short(pool['device'])} ({pool['source']})"
    total = pool["nodes"] * pool["gpus_per_node"]
    out: dict[str, tuple[object, str]] = {
        "n_gpus": (total, f"{where}: {pool['nodes']} x {pool['gpus_per_node']} = {total}"),
        "gpus_per_node": (pool["gpus_per_node"], where),
        "n_nodes": (pool["nodes"], where),
    }
    power = pool.get("node_power")
    if power:
        from engine.core.units import parse_quantity

        watts = parse_quantity(str(power["value"]), "W").value
        out["node_power"] = (watts, f"{where}: node power {power['value']} ({power['source']})")
        if device["tdp_w"]:
            gpus = pool["gpus_per_node"] * device["tdp_w"]
            tdp, tdp_source = device["tdp_text"], device["tdp_source"]
            out["node_overhead_power"] = (watts - gpus, f"node power {power['value']} minus {pool['gpus_per_node']} x {tdp} TDP "
                                                         f"= {watts - gpus:g} W ({power['source']}; {tdp_source})")
            out["host_overhead"] = (watts / gpus, f"node power {power['value']} / ({pool['gpus_per_node']} x {tdp} TDP) = {watts / gpus:.4g} "
                                                  f"({power['source']}; {tdp_source})")
    return out


def _presets(ctx: _Context, record: dict, spec: dict) -> dict[str, tuple[object, str]]:
    pool = _pool(record, spec.get("pool"))
    fill = spec.get("fill", ["counts", "device"])
    out: dict[str, tuple[object, str]] = {}
    if fill:
        device = ctx.device(pool["device"], spec.get("precision", "bf16"))
        if "counts" in fill:
            out.update(count_values(record, pool, device))
        if "device" in fill:
            out.update({k: tuple(v) for k, v in device["values"].items()})
    if spec.get("model"):
        out.update(ctx.model_values(spec["model"]))
    for name, cited in spec.get("inputs", {}).items():
        out[name] = (cited["value"], cited["source"])
    return out


def _run(ctx: _Context, record: dict, spec: dict) -> RunOutcome:
    from engine.numeric.calculators import Calculator
    from engine.numeric.calculators import run as run_calc

    cid = spec["calculator"]
    outcome = RunOutcome(spec["id"], cid, spec["label"], "ok", note=spec.get("note", ""))
    if cid not in ctx.calculators:
        broken = [p for p in ctx.calculator_problems if p.place.startswith(f"knowledge/calculators/{cid.split(':', 1)[-1]}.yaml")]
        if broken:  # its file does not load
            outcome.status, outcome.message = "error", "; ".join(map(str, broken))
        else:
            outcome.status, outcome.message = "not available", f"{cid} is not in knowledge/calculators/ yet"
        return outcome
    try:
        calc = Calculator.from_record(ctx.calculators[cid])
        outcome.result = run_calc(calc, ctx.module, {}, presets=_presets(ctx, record, spec))
    except AiinfraError as exc:  # a broken calculator record is named by its problems, one line
        outcome.status, outcome.message = "error", "; ".join(map(str, getattr(exc, "problems", ()))) or str(exc)
        return outcome
    if spec.get("book"):
        outcome.book = _compare(outcome.result, spec["book"])
    return outcome


def _compare(result, book: dict) -> dict:
    """The book's printed number beside ours, in the output's unit."""
    from engine.core.units import parse_quantity

    name = book["output"]
    out = {"output": name, "printed": book.get("printed", str(book["value"])), "source": book["source"]}
    if book.get("erratum"):
        out["erratum"] = book["erratum"]
    got = result.outputs.get(name)
    if got is None:
        out["agrees"] = None
        out["message"] = f"the run did not compute {name}"
        return out
    value = parse_quantity(str(book["value"]), got.unit).value
    ratio = got.value / value if value else float("inf")
    tol = book.get("rel_tol", DEFAULT_REL_TOL)
    out.update(value=value, unit=got.unit, ours=got.value, ratio=ratio, rel_tol=tol, agrees=abs(ratio - 1) <= tol)
    return out


def _boundary(record: dict, fb: dict, runs: dict[str, RunOutcome]) -> BoundaryOutcome:
    out = BoundaryOutcome(fb["id"], fb["condition"], fb.get("condition_zh", ""), "stated", fb["direction"],
                          fb.get("upgrade", ""), fb.get("beyond", ""), source=fb["source"])
    ev = fb.get("evidence")
    if ev is None:
        return out
    run = runs.get(ev["run"])
    got = run.result.outputs.get(ev["output"]) if run is not None and run.status == "ok" else None
    if got is None:
        why = run.message if run is not None and run.message else f"{ev['run']} did not compute {ev['output']}"
        out.status, out.evidence = "not available", {"run": ev["run"], "output": ev["output"], "message": why}
        return out
    out.evidence = {"run": ev["run"], "output": ev["output"], "value": got.value, "unit": got.unit}
    th = fb.get("threshold")
    if th is None:
        return out
    from engine.core.humanize import number
    from engine.core.units import parse_quantity

    limit = parse_quantity(str(th["value"]), got.unit).value
    text = th["value"] if isinstance(th["value"], str) else number(th["value"])
    out.threshold = {"op": th["op"], "value": limit, "unit": got.unit, "text": text, "source": th["source"]}
    out.status = "met" if OPS[th["op"]](got.value, limit) else "not met"
    return out


def _upgrade_path(record: dict) -> list[dict]:
    """Targets in the order the boundaries name them, each with the boundaries that lead there."""
    out: dict[str, dict] = {}
    for fb in record["failure_boundaries"]:
        key = fb.get("upgrade") or f"out:{fb['id']}"
        entry = out.setdefault(key, {"to": fb.get("upgrade", ""), "direction": fb["direction"], "when": []})
        if fb.get("beyond"):
            entry["beyond"] = fb["beyond"]
        entry["when"].append(fb["id"])
    return list(out.values())


# ---------------------------------------------------------------------- integrity


def problems(source) -> list[Problem]:
    """Every problem of the reference architectures of a root (a path) or of a loaded Knowledge.

    Schema; file name = id; devices, models, tiers and chapters/sections resolve; runs name
    calculators, pools and outputs that exist, their inputs reach the calculator's chain and
    are used by it; available runs evaluate; evidence names a run and an output of it; a
    threshold reads in the evidence's unit; training runs only on tiers that train, serving
    runs only on tiers that serve.
    """
    loaded = hasattr(source, "chapters")  # a Knowledge (a Path has a .root too: "/")
    root = source.root if loaded else source
    records, out = _read(root)
    if loaded and hasattr(source, "reference_architectures"):
        out = []  # Knowledge.load has reported the YAML and schema problems of these files already
    if not records:
        return out
    k = source if loaded else _knowledge(root)
    ctx = _Context(root)
    try:
        _ = ctx.calculators, ctx.module
    except KnowledgeError:  # reported by the formula and calculator rules; runs cannot be checked now
        ctx._calculators, ctx.unloaded = {}, True
    for _rid, rec in sorted(records.items()):
        out += _record_problems(ctx, k, records, rec)
    return sorted(out)


def _knowledge(root):
    from engine.kb.knowledge import Knowledge

    return Knowledge.load(root, strict=False)


# calculators that apply only to tiers that train / that serve
TRAINING_ONLY = {"calc:training-duration", "calc:training-memory", "calc:checkpoint-window"}
SERVING_ONLY = {"calc:inference-capacity", "calc:serving-fleet"}


def _record_problems(ctx: _Context, k, records: dict, rec: dict) -> list[Problem]:
    place, rid = rec["_place"], rec["id"]
    out: list[Problem] = []

    def bad(path: str, message: str) -> None:
        out.append(Problem(place, rid, path, message))

    if Path(place.rsplit(":", 1)[0]).stem != short(rid):
        bad("id", f"the file should be named {short(rid)}.yaml")
    for field_, table in (("chapters", k.chapters), ("sections", k.sections)):
        for j, ident in enumerate(rec.get(field_, ())):
            if ident not in table:
                bad(f"{field_}[{j}]", f"refers to {ident}, which is not defined")
    names = [p["name"] for p in rec["hardware"]["pools"]]
    for j, pool in enumerate(rec["hardware"]["pools"]):
        if pool["device"] not in k.hardware:
            bad(f"hardware.pools[{j}].device", f"refers to {pool['device']}, which is not in knowledge/hardware")
        if names.count(pool["name"]) > 1:
            bad(f"hardware.pools[{j}].name", f"{pool['name']!r} is used by more than one pool")
    for j, item in enumerate(rec["workload"]):
        if item.get("model") and item["model"] not in k.models:
            bad(f"workload[{j}].model", f"refers to {item['model']}, which is not in knowledge/models")
    runs = {}
    for j, spec in enumerate(rec["runs"]):
        if spec["id"] in runs:
            bad(f"runs[{j}].id", f"{spec['id']!r} is used by more than one run")
        runs[spec["id"]] = spec
        out += [Problem(place, rid, f"runs[{j}]" + (f".{p}" if p else ""), m) for p, m in _run_problems(ctx, k, rec, spec, names)]
    outcomes = {}
    for j, fb in enumerate(rec["failure_boundaries"]):
        path = f"failure_boundaries[{j}]"
        if fb.get("upgrade") and fb["upgrade"] not in records:
            bad(f"{path}.upgrade", f"refers to {fb['upgrade']}, which is not in knowledge/reference_architectures")
        if fb.get("upgrade") == rid:
            bad(f"{path}.upgrade", "points back at its own tier")
        if (fb["direction"] == "out") == bool(fb.get("upgrade")):
            bad(f"{path}.direction", "out (beyond the seven tiers) goes with no upgrade; up and down name the tier to move to")
        ev = fb.get("evidence")
        if ev is None:
            continue
        if ev["run"] not in runs:
            bad(f"{path}.evidence.run", f"refers to run {ev['run']!r}, which this tier does not declare")
            continue
        spec = runs[ev["run"]]
        calc = ctx.calculators.get(spec["calculator"])
        if calc is None:
            continue  # the run's own problem names the missing calculator
        if ev["output"] not in calc["outputs"]:
            bad(f"{path}.evidence.output", f"{ev['output']} is not an output of {spec['calculator']} (its outputs: {', '.join(calc['outputs'])})")
            continue
        if fb.get("threshold"):
            outcome = outcomes.get(ev["run"]) or _run(ctx, rec, spec)
            outcomes[ev["run"]] = outcome
            got = outcome.result.outputs.get(ev["output"]) if outcome.status == "ok" else None
            if got is not None:
                msg = _quantity_problem(fb["threshold"]["value"], got.unit)
                if msg:
                    bad(f"{path}.threshold.value", msg)
    return out


def _run_problems(ctx: _Context, k, rec: dict, spec: dict, pools: list[str]) -> list[tuple[str, str]]:
    from engine.numeric.calculators import Calculator, Graph

    out = []
    cid = spec["calculator"]
    if cid in TRAINING_ONLY and not rec["trains"]:
        out.append(("calculator", f"{cid} applies only to tiers that train ({short(rec['id'])} has trains: false)"))
    if cid in SERVING_ONLY and not rec["serves"]:
        out.append(("calculator", f"{cid} applies only to tiers that serve ({short(rec['id'])} has serves: false)"))
    if spec.get("pool") and spec["pool"] not in pools:
        out.append(("pool", f"{spec['pool']!r} is not a hardware pool of this tier (its pools: {', '.join(pools)})"))
        return out
    if spec.get("model") and spec["model"] not in k.models:
        out.append(("model", f"refers to {spec['model']}, which is not in knowledge/models"))
        return out
    if ctx.unloaded:
        return out  # the calculators do not load: their own problems say why
    if cid not in ctx.calculators:  # `arch show` runs the rest and shows this run as not available
        return out + [("calculator", f"refers to {cid}, which is not in knowledge/calculators")]
    calc = Calculator.from_record(ctx.calculators[cid])
    _, allowed = Graph(ctx.module).reach(calc)
    for name in spec.get("inputs", {}):
        if name not in allowed:
            out.append((f"inputs.{name}", f"is not an input of {cid} (its inputs: {', '.join(calc.inputs)})"))
    if spec.get("book") and spec["book"]["output"] not in calc.outputs:
        out.append(("book.output", f"{spec['book']['output']} is not an output of {cid} (its outputs: {', '.join(calc.outputs)})"))
    if out:
        return out
    outcome = _run(ctx, rec, spec)
    if outcome.status == "error":
        return [("", f"{cid} fails: {outcome.message}")]
    used = outcome.result.inputs
    for name in spec.get("inputs", {}):
        if name not in used:
            out.append((f"inputs.{name}", f"is not used by the chain of {cid} (another input or a selector makes it unnecessary)"))
    if spec.get("book"):
        msg = _quantity_problem(spec["book"]["value"], outcome.result.outputs[spec["book"]["output"]].unit)
        if msg:
            out.append(("book.value", msg))
    return out


def _quantity_problem(value, unit: str) -> str:
    from engine.core.errors import UnitError
    from engine.core.units import parse_quantity

    try:
        parse_quantity(str(value), unit)
    except UnitError as exc:
        return str(exc)
    return ""
