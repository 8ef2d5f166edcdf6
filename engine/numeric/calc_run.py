"""Running a calculator: plan, point, ranges, warnings and assumptions into a ``CalcResult``."""

from __future__ import annotations

from engine.core.errors import AiinfraError, InputError
from engine.numeric.calc_conditions import _boundaries, _refused
from engine.numeric.calc_plan import (
    MissingInputs,
    _fed_by,
    _is_number,
    _Missing,
    _Plan,
    _refuse,
    _refuse_dropped,
    _selector_defaults,
)
from engine.numeric.calc_ranges import _chain, _directions, _point, _ranking, _sampled, _step
from engine.numeric.calc_records import LEFT_OUT, CalcResult, Calculator, Graph, graph_of
from engine.numeric.evaluate import MONEY_IN_CNY, OutputValue, currency_of, in_currency

MAX_MISSING = 64  # a guard: planning again per missing input stops here


def run(calc: Calculator, module, given: dict[str, object], presets: dict[str, tuple[object, str]] | None = None) -> CalcResult:
    """Evaluate ``calc`` for ``given`` (symbol -> text or number in the symbol's unit).

    ``presets`` (symbol -> (value, source), from engine.domain.presets) fill symbols the user did not
    give and the chain can reach; each keeps its source. Every missing input is reported at once:
    one raises its ``_Missing`` (``--set NAME: ... needs a value for NAME ...``), several ``MissingInputs``.
    """
    graph = graph_of(module)
    broken = graph.unproduced_error(calc)
    if broken is not None:  # refused like any broken record, before any symbol is looked up
        raise broken
    currency = _currency(given)
    user = list(given)
    given, sources = with_presets(calc, graph, given, presets)
    try:
        plan, wanted, skipped, optional, upstream = _planned(calc, graph, given, sources)
    except _Missing as first:
        raise _every_missing(calc, graph, given, sources, first) from None
    wanted = [n for n in wanted if n not in skipped]
    unused = [n for n in given if n not in plan.used]
    # failure boundaries may name values the chain did not need (tp_size > kv_heads when params
    # came from a preset) and categorical choices that read as numbers (zero_stage > 0)
    context = {n: plan.quantities[n].value for n in unused if n in plan.quantities}
    context.update({k: float(v) for k, v in plan.selectors.items() if _is_number(v)})
    for name in unused:
        plan.inputs.pop(name, None)
        plan.quantities.pop(name, None)
    unused = [n for n in unused if n in user]  # a preset the chain does not need is not worth a warning
    _refuse_dropped(calc, graph, plan.order, unused, user)
    quantities = plan.quantities
    point = _point(calc, graph, plan.order, module, {n: q.value for n, q in quantities.items()}, context)
    ranged = [n for n, q in quantities.items() if q.is_range]
    def bounds(name: str, varies: bool):  # (low, high) over the box where known without evaluating it
        if name in quantities:
            return quantities[name].low, quantities[name].high
        return (point[name], point[name]) if not varies and name in point else None

    corners: dict = {}

    ends: dict = {}  # directions -> the chain at its lowest and highest corner

    def constant(name: str, deps: dict) -> bool:  # one value at the lowest and the highest corner
        signature = tuple(sorted(deps.items()))
        if signature not in ends:
            low_in, high_in = _corner_inputs(quantities, deps)
            try:
                ends[signature] = (_corner(plan.order, module, low_in, ranged, corners), _corner(plan.order, module, high_in, ranged, corners))
            except AiinfraError:
                ends[signature] = None
        pair = ends[signature]
        return pair is not None and pair[0][name] == pair[1][name]

    directions = _directions(plan.order, module, ranged, bounds, constant)
    outputs = _ranges(plan, module, graph, wanted, point, ranged, directions, corners)
    _refused(calc, graph, {**context, **point}, outputs, quantities)
    warnings = _boundaries(calc, graph, {**context, **point}, outputs, quantities)
    for name in skipped:
        if name in optional:
            continue  # optional outputs appear only when their inputs are given
        why = f"needs {plan.missing[name]}" if name in plan.missing else "upstream of a symbol given directly"
        warnings.append(f"not computed: {name} ({why}; the outputs above do not depend on it)")
    warnings += [calc.inputs[n]["when_missing"]["warning"] for n, v in plan.inputs.items() if v.source == LEFT_OUT]
    if unused:
        warnings.append(f"not used by this chain: {', '.join(unused)} (a symbol given directly, or a selector, made it unnecessary)")
    assumptions = list(calc.assumptions)
    for fid, key in plan.order:
        meta = module.FORMULAS[fid]
        for a in list(meta["assumptions"]) + list(meta["variants"][key]["assumptions"]):
            if a not in assumptions:
                assumptions.append(f"{fid}: {a}")
    order = list(plan.order)

    def steps() -> list[dict]:  # built when --explain asks for them
        done = [_step(module, fid, key, point) for fid, key in order]
        return [{**st, "unit": in_currency(st["unit"], "CNY")} for st in done] if currency == "CNY" else done

    if currency == "CNY":  # money stays in the currency of the price inputs; nothing is converted
        relabel = lambda unit: in_currency(unit, "CNY")  # noqa: E731
        plan.inputs = {n: v._replace(unit=relabel(v.unit)) for n, v in plan.inputs.items()}
        outputs = {n: v._replace(unit=relabel(v.unit)) for n, v in outputs.items()}
        assumptions.insert(0, MONEY_IN_CNY)
    if any(str(src).startswith("preset hw:") for src in sources.values()):
        for sym, what in (("mfu", "MFU"), ("mbu", "memory-bandwidth utilisation")):
            v = plan.inputs.get(sym)
            if v is not None and v.source.startswith("default"):
                warnings.append(f"no measured {what} band is recorded for this device and precision, so {sym} = {v.value:g} is "
                                f"the default ({'the pure roofline bound' if v.value == 1 else 'a planning value'}), not a measurement")
    money_defaults = [n for n, v in plan.inputs.items() if "USD" in v.unit or "CNY" in v.unit if v.source.startswith("default")]
    if money_defaults and currency:
        warnings.append(f"money inputs left at their defaults ({', '.join(money_defaults)}) are read in {currency}; check their sources say the same currency")
    warnings += _plausibility(plan, point, (presets or {}).get("max_position_embeddings"))
    result = CalcResult(calc, plan.inputs, outputs, [fid for fid, _ in plan.order], assumptions, warnings, steps)
    result.ranking = _ranking(plan.order, module, quantities, ranged, outputs, directions, lambda v: _corner(plan.order, module, v, ranged, corners))
    result._plan, result._module = plan, module
    return result




def with_presets(calc: Calculator, graph: Graph, given: dict, presets: dict | None) -> tuple[dict, dict]:
    """(every value the plan may read, its source): the user's, checked to be inputs the calculator can
    reach, and the presets the chain can reach that the user did not give."""
    _, allowed = graph.reach(calc)
    for name in given:
        if name not in allowed:
            raise InputError(f"--set {name}", f"is not an input of {calc.id} (its inputs: {', '.join(calc.inputs)})")
    user = list(given)
    sources = {n: "user" for n in given}
    given = dict(given)
    for name, (value, source) in (presets or {}).items():
        if name in allowed and name not in given and not _fed_by(graph, name, user):
            given[name], sources[name] = value, source
    return given, sources


def _planned(calc: Calculator, graph: Graph, given: dict, sources: dict, placeholders=()):
    """The plan of every output that can be reached: (plan, wanted, skipped, optional, upstream)."""
    plan = _Plan(calc, graph, given, sources)
    plan.placeholders = set(placeholders)
    for name in given:  # every given value is read and checked first, so its error comes first
        plan.leaf(name)
    _refuse(calc, {**_selector_defaults(calc, graph), **plan.selectors})  # before a missing variant can hide it
    upstream = graph.upstream([n for n in given if n in graph.producer])
    optional = [n for n in calc.optional_outputs if n not in calc.outputs]
    wanted = list(calc.outputs) + optional
    skipped: list[str] = []
    # outputs no other output depends on are required; the others (and the optional ones, and
    # those upstream of a symbol given directly) only when the chain reaches them or their
    # inputs are there (flop_basis=hardware needs no train_flops)
    feeding = graph.upstream(list(calc.outputs))  # an optional output never makes a required one optional
    for name in wanted:  # in declared order, so the evaluation order reads like the output list
        if name not in feeding and name not in upstream and name not in optional:
            plan.need(name, output=True)
            continue
        saved = plan.snapshot()
        try:
            plan.need(name, output=True)
        except _Missing as exc:
            plan.restore(saved)
            skipped.append(name)
            if name not in upstream:
                plan.missing[name] = exc.field.removeprefix("--set ")
    return plan, wanted, skipped, optional, upstream


def _every_missing(calc: Calculator, graph: Graph, given: dict, sources: dict, first: _Missing) -> InputError:
    """``first`` alone, or every missing input: plan again with each one found stood in for, until none is left."""
    found = [first]
    while len(found) < MAX_MISSING:
        try:
            _planned(calc, graph, given, sources, {m.field.removeprefix("--set ") for m in found})
        except _Missing as exc:
            if any(m.field == exc.field for m in found):
                break  # pragma: no cover - a stood-in input is never missing again; kept as a guard
            found.append(exc)
            continue
        except InputError:
            pass  # a refusal of the stood-in values: the missing ones found so far are the answer
        break
    return first if len(found) == 1 else MissingInputs(calc.id, found)


def _ranges(plan: _Plan, module, graph: Graph, wanted: list[str], point: dict, ranged: list[str], directions: dict, corners: dict) -> dict:
    """Each wanted output with its range: exact corners (plain floats) where the directions are known, else sampled."""
    quantities = plan.quantities
    outputs: dict[str, OutputValue] = {}
    sampled_needed = []
    for name in wanted:
        unit = graph.units[name]
        if name in quantities:  # given directly by the user
            q = quantities[name]
            outputs[name] = OutputValue(q.value, unit, q.low, q.high, "exact")
            continue
        deps = directions.get(name, {})
        if not deps:
            outputs[name] = OutputValue(point[name], unit, point[name], point[name], "exact")
        elif all(d is not None for d in deps.values()):
            low_in, high_in = _corner_inputs(quantities, deps)
            lo = _corner(plan.order, module, low_in, ranged, corners)[name]
            hi = _corner(plan.order, module, high_in, ranged, corners)[name]
            outputs[name] = OutputValue(point[name], unit, min(lo, hi), max(lo, hi), "exact")
        else:
            sampled_needed.append(name)
    if sampled_needed:
        lows, highs = _sampled(plan, module, ranged, sampled_needed, point)
        for name in sampled_needed:
            outputs[name] = OutputValue(point[name], graph.units[name], lows[name], highs[name], "sampled")
    return {n: outputs[n] for n in wanted}


def _corner_inputs(quantities: dict, deps: dict) -> tuple[dict, dict]:
    """The inputs at the corner where an output monotone in ``deps`` is lowest, and where it is highest."""
    low_in = {n: q.value for n, q in quantities.items()}
    high_in = dict(low_in)
    for leaf, d in deps.items():
        q = quantities[leaf]
        low_in[leaf], high_in[leaf] = (q.low, q.high) if d == "increasing" else (q.high, q.low)
    return low_in, high_in


def _corner(order, module, values: dict, ranged: list[str], corners: dict) -> dict:
    """The chain at one corner of the ranged inputs, evaluated once per run (outputs and the ranking share it)."""
    key = tuple(values[n] for n in ranged)
    if key not in corners:
        corners[key] = _chain(order, module, values)
    return corners[key]

CONTEXT_SYMBOLS = ("context_tokens", "seq_len")  # tokens one sequence holds, to compare with the model's trained context


PREFILL_SYMBOLS = {"prefill_time", "prefill_gpu_load"}  # the chain runs inference prefill at the given MFU


def _plausibility(plan: _Plan, point: dict, limit: tuple[object, str] | None) -> list[str]:
    """Warnings for values that run but are implausible: a context beyond the model's, a training MFU on prefill."""
    out = []
    for name in CONTEXT_SYMBOLS if limit else ():
        q = plan.quantities.get(name)
        value = q.high if q is not None else point.get(name)
        if value is not None and value > float(limit[0]):
            out.append(f"{name} = {value:g} tokens is beyond the model's max_position_embeddings = {float(limit[0]):g} "
                       f"({limit[1]}); beyond it the model needs RoPE scaling (e.g. YaRN) or degrades")
    mfu = plan.inputs.get("mfu")
    if mfu is not None and mfu.source.startswith("preset hw:") and ": measured MFU " in mfu.source and PREFILL_SYMBOLS & plan.computed:
        workload = mfu.source.split(" (", 1)[-1].rsplit(") — ", 1)[0]
        out.append(f"mfu = {mfu.value:g} comes from the device's band measured on training ({workload}) and is applied here to "
                   "inference prefill, whose MFU can differ; give --set mfu from an inference measurement")
    return out


_currency = currency_of  # the price inputs' currency, shared with engine.numeric.evaluate
