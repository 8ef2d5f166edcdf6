"""Calculators declared as data: ``knowledge/calculators/<name>.yaml`` run over the formula graph.

A calculator names formula symbols as inputs and outputs. Its formula chain is derived,
not written: from each output back through the formula that produces it, until a symbol is
given by the user, is a declared input, or has a default. A user may give an intermediate
symbol (``kv_bytes_per_token``) and the chain stops there. Categorical selectors (``attention``)
are inputs too and choose each formula's variant. Evaluation is topological and uses the
compiled formula functions (no sympy).

Ranges: an output's range is ``exact`` when the per-input monotonicity the compiler stored
composes along the chain to one known direction for every ranged input it depends on (the
corners are then evaluated through the chain); otherwise it is ``sampled`` (corners plus
seeded uniform samples through the NumPy twins).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from engine.core.errors import EvaluationError, InputError, KnowledgeError, Problem
from engine.core.units import Quantity
from engine.numeric.evaluate import (
    MONEY_IN_CNY,
    SAMPLES,
    InputValue,
    OutputValue,
    _call,
    check_domain,
    currency_of,
    in_currency,
    read_input,
)

FOLDER = ("knowledge", "calculators")
# CalcResult -> Markdown for notebooks; installed by engine.api (the text is the CLI's render)
MARKDOWN = None
LEFT_OUT = "left out: an optional term not derivable from the inputs (the calculator's when_missing)"
# Appendix B numbers F1..F22 and the extension range FX1..
FORMULA_NUMBER = re.compile(r"^(F([1-9]|1[0-9]|2[0-2])|FX[1-9][0-9]*)$")


@dataclass
class Calculator:
    id: str
    title: str
    title_zh: str
    sections: list[str]
    chapters: list[str]
    inputs: dict[str, dict]  # symbol -> {default, source, description}
    outputs: list[str]
    assumptions: list[str] = field(default_factory=list)
    failure_boundaries: list[dict] = field(default_factory=list)
    notes: str = ""
    refuse: list[dict] = field(default_factory=list)  # {when: {selector: value | [values]}, message}
    optional_outputs: list[str] = field(default_factory=list)  # computed only when their inputs are there

    @property
    def name(self) -> str:
        return self.id.split(":", 1)[1]

    @classmethod
    def from_record(cls, rec: dict) -> Calculator:
        return cls(
            rec["id"], rec["title"], rec["title_zh"], list(rec.get("sections", ())), list(rec.get("chapters", ())),
            {i["symbol"]: {k: v for k, v in i.items() if k != "symbol"} for i in rec["inputs"]},
            list(rec["outputs"]), list(rec.get("assumptions", ())), list(rec.get("failure_boundaries", ())), rec.get("notes", ""),
            list(rec.get("refuse", ())), list(rec.get("optional_outputs", ())),
        )


def load_records(root) -> dict[str, dict]:
    """The calculator records of ``root`` (only this folder: the CLI does not load the whole root)."""
    from engine.kb.schema import read_records
    from engine.kb.yamlio import plain

    base = Path(root).joinpath(*FOLDER)
    files = [(p, "/".join(FOLDER + (p.name,))) for p in sorted(base.glob("*.yaml"))] if base.is_dir() else []
    good, problems = read_records(files, "calculator", "calculator")
    if problems:
        raise KnowledgeError(problems)
    return {data["id"]: plain(data) for _, data in good}


def cached_records(root) -> dict[str, dict]:
    """``load_records(root)`` through a JSON cache keyed by the calculator files and schema."""
    from engine.numeric import compiled

    key = compiled.files_key(root, ["/".join(FOLDER), "formulas"], ["engine/kb/schemas/calculator.json", "engine/numeric/calculators.py", "engine/kb/yamlio.py", "engine/core/codegen.py"])

    return compiled.json_cached("calculators", key, lambda: load_records(root))  # data only, never code


# ---------------------------------------------------------------------- the formula graph


class Graph:
    """Symbols and producers of the compiled formula table (``module.FORMULAS``)."""

    def __init__(self, module):
        self.module = module
        self.formulas = module.FORMULAS
        self.producer: dict[str, str] = {}
        self.symbols: dict[str, dict] = {}  # name -> spec of its first consumer (units agree: a load rule)
        for fid, meta in self.formulas.items():
            self.producer.setdefault(meta["output"]["symbol"], fid)
            for name, spec in meta["symbols"].items():
                self.symbols.setdefault(name, spec)
        self.units = {n: s["unit"] for n, s in self.symbols.items()}
        for meta in self.formulas.values():
            self.units.setdefault(meta["output"]["symbol"], meta["output"]["unit"])

    def spec(self, name: str) -> dict:
        if name in self.symbols:
            return self.symbols[name]
        out = self.formulas[self.producer[name]]["output"]
        return {"desc": out["desc"], "unit": out["unit"], "domain": "real", "values": [], "default": None, "default_source": ""}

    def known(self, name: str) -> bool:
        return name in self.symbols or name in self.producer

    def default(self, name: str):
        spec = self.symbols.get(name)
        return None if spec is None else spec["default"]

    def upstream(self, names: list[str]) -> set[str]:
        """Every symbol the producers of ``names`` depend on, over all variants."""
        seen: set[str] = set()
        todo = list(names)
        while todo:
            fid = self.producer.get(todo.pop())
            if fid is None:
                continue
            meta = self.formulas[fid]
            for n in [meta["selector"]] * bool(meta["selector"]) + [i for v in meta["variants"].values() for i in v["inputs"]]:
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return seen

    def reach(self, calc: Calculator) -> tuple[list[str], set[str]]:
        """Formulas (all variants) and symbols a calculator can reach from its outputs."""
        fids: list[str] = []
        symbols: set[str] = set()
        every = list(calc.outputs) + list(calc.optional_outputs)
        todo = list(every)
        while todo:
            name = todo.pop()
            if name in symbols:
                continue
            symbols.add(name)
            is_output = name in every
            declared_default = calc.inputs.get(name, {}).get("default") is not None
            if name not in self.producer or (not is_output and (declared_default or self.default(name) is not None)):
                continue
            fid = self.producer[name]
            if fid in fids:
                continue
            fids.append(fid)
            meta = self.formulas[fid]
            if meta["selector"]:
                todo.append(meta["selector"])
            for variant in meta["variants"].values():
                todo += variant["inputs"]
        return fids, symbols


# ---------------------------------------------------------------------- results


class CalcResult:
    """One calculation; ``to_json`` is the DESIGN.md contract."""

    def __init__(self, calc: Calculator, inputs, outputs, formulas, assumptions, warnings, steps):
        self.calculator = calc.id
        self.title = calc.title
        self.inputs: dict[str, InputValue] = inputs
        self.outputs: dict[str, OutputValue] = outputs
        self.formulas: list[str] = formulas
        self.assumptions: list[str] = assumptions
        self.warnings: list[str] = warnings
        self.steps: list[dict] = steps  # for --explain: id, name, variant, symbol, expr, substituted, value, unit
        self.ranking: dict[str, list[tuple[str, float]]] = {}  # output -> [(ranged input, share)]

    def to_json(self) -> dict:
        return {
            "calculator": self.calculator,
            "inputs": {k: v._asdict() for k, v in self.inputs.items()},
            "outputs": {k: v._asdict() for k, v in self.outputs.items()},
            "formulas": list(self.formulas),
            "assumptions": list(self.assumptions),
            "warnings": list(self.warnings),
            "ranking": {k: [{"input": n, "share": share} for n, share in v] for k, v in self.ranking.items()},
        }

    def _repr_markdown_(self) -> str:
        # the text is the CLI's (engine.cli.cmd_calc.render); engine.api installs it: calculators never import upward
        return MARKDOWN(self) if MARKDOWN is not None else repr(self)


# ---------------------------------------------------------------------- running


def run(calc: Calculator, module, given: dict[str, object], presets: dict[str, tuple[object, str]] | None = None) -> CalcResult:
    """Evaluate ``calc`` for ``given`` (symbol -> text or number in the symbol's unit).

    ``presets`` (symbol -> (value, source), from engine.domain.presets) fill symbols the user did not
    give and the chain can reach; each keeps its source.
    """
    graph = Graph(module)
    fids, allowed = graph.reach(calc)
    for name in given:
        if name not in allowed:
            raise InputError(f"--set {name}", f"is not an input of {calc.id} (its inputs: {', '.join(calc.inputs)})")
    currency = _currency(given)
    user = list(given)
    sources = {n: "user" for n in given}
    given = dict(given)
    for name, (value, source) in (presets or {}).items():
        if name in allowed and name not in given and not _fed_by(graph, name, user):
            given[name], sources[name] = value, source
    plan = _Plan(calc, graph, given, sources)
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
    directions = _directions(plan.order, module, ranged)
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
            low_in = {n: q.value for n, q in quantities.items()}
            high_in = dict(low_in)
            for leaf, d in deps.items():
                q = quantities[leaf]
                low_in[leaf], high_in[leaf] = (q.low, q.high) if d == "increasing" else (q.high, q.low)
            lo = _chain(plan.order, module, low_in)[name]
            hi = _chain(plan.order, module, high_in)[name]
            outputs[name] = OutputValue(point[name], unit, min(lo, hi), max(lo, hi), "exact")
        else:
            sampled_needed.append(name)
    if sampled_needed:
        lows, highs = _sampled(plan, module, ranged, sampled_needed, point)
        for name in sampled_needed:
            outputs[name] = OutputValue(point[name], graph.units[name], lows[name], highs[name], "sampled")
    outputs = {n: outputs[n] for n in wanted}
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
    steps = [_step(module, fid, key, point) for fid, key in plan.order]
    if currency == "CNY":  # money stays in the currency of the price inputs; nothing is converted
        relabel = lambda unit: in_currency(unit, "CNY")  # noqa: E731
        plan.inputs = {n: v._replace(unit=relabel(v.unit)) for n, v in plan.inputs.items()}
        outputs = {n: v._replace(unit=relabel(v.unit)) for n, v in outputs.items()}
        steps = [{**st, "unit": relabel(st["unit"])} for st in steps]
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
    result.ranking = _ranking(plan.order, module, quantities, ranged, outputs, directions)
    result._plan, result._module = plan, module
    return result


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


def _ranking(order, module, quantities: dict, ranged: list[str], outputs: dict, directions: dict) -> dict[str, list[tuple[str, float]]]:
    """output -> [(ranged input, share of the output's range)], largest first.

    Each ranged input is swept alone from its low to its high end with the others at their
    point values; its share is its swing over the sum of all swings (a one-at-a-time
    "tornado" ranking, which is what the shares mean when inputs interact).
    """
    if not ranged:
        return {}
    point = {n: q.value for n, q in quantities.items()}
    ends = {}
    for leaf in ranged:
        q = quantities[leaf]
        lo = _chain(order, module, {**point, leaf: q.low})
        hi = _chain(order, module, {**point, leaf: q.high})
        ends[leaf] = (lo, hi)
    out = {}
    for name, value in outputs.items():
        if value.low == value.high or name in quantities:
            continue
        swings = {leaf: abs(ends[leaf][1][name] - ends[leaf][0][name]) for leaf in ranged if leaf in directions.get(name, {})}
        total = sum(swings.values())
        if total > 0:
            out[name] = sorted(((leaf, s / total) for leaf, s in swings.items()), key=lambda t: -t[1])
    return out


MAX_POINTS = 100_000  # a sweep's points are CSV rows: about 3 s of formatting at the cap


def sweep(result: CalcResult, name: str, low: float, high: float, points: int, log: bool = False):
    """Every output of ``result``'s chain over ``name`` from low to high (NumPy, vectorised; no sympy).

    Returns (xs, {output: array}). ``name`` must be a numeric input of the chain; the other
    inputs keep their point values and the selectors their choices.
    """
    import numpy as np

    plan, module = result._plan, result._module
    if name not in plan.quantities:
        numeric = ", ".join(n for n in plan.quantities) or "none"
        raise InputError("--sweep", f"{name} is not a numeric input of this chain (its numeric inputs: {numeric})")
    if not 2 <= points <= MAX_POINTS:
        raise InputError("--points", f"expected a whole number from 2 to {MAX_POINTS:,}, got {points}")
    if log and low <= 0:
        raise InputError("--sweep", f"a --log sweep needs a positive low end (got {low:g})")
    spec = plan.graph.spec(name)
    xs = np.geomspace(low, high, points) if log else np.linspace(low, high, points)
    if spec["domain"].endswith("integer"):
        xs = np.unique(np.round(xs))
    for end in (xs[0], xs[-1]):
        check_domain(name, Quantity.point(float(end)), spec)
    values = {n: q.value for n, q in plan.quantities.items()}
    values[name] = xs
    with np.errstate(all="ignore"):
        out = _chain(plan.order, module, values, numpy=True)
    ones = np.ones_like(xs, dtype=float)
    return xs, {n: np.asarray(out[n], dtype=float) * ones for n in result.outputs if n != name}


_currency = currency_of  # the price inputs' currency, shared with engine.numeric.evaluate


def _refuse_dropped(calc: Calculator, graph: Graph, order, unused: list[str], user: list[str]) -> None:
    """An input declared ``if_unused: refuse`` that the chain would drop (prefix_hit_rate with a total
    context_tokens, or with context_basis=peak) is bad input, never a warning."""
    for name in (n for n in unused if calc.inputs.get(n, {}).get("if_unused") == "refuse"):
        for cut in user:
            if cut in graph.producer and name in graph.upstream([cut]):
                raise InputError(f"--set {name}", f"is given together with {cut}, which it feeds ({graph.producer[cut]}), so a directly given "
                                                  f"{cut} would drop it; give {cut} with {name} already applied, or leave {cut} out to derive it")
        for fid, key in order:
            meta = graph.formulas[fid]
            takers = [v for v, variant in meta["variants"].items() if name in variant["inputs"]]
            if takers and key not in takers:
                raise InputError(f"--set {name}", f"is not used with {meta['selector']}={key} ({fid}); set {meta['selector']}={takers[0]} to apply it, or leave {name} out")
        raise InputError(f"--set {name}", "is not used by this chain; leave it out")


def _fed_by(graph: Graph, name: str, user: list[str]) -> bool:
    """Whether the user chose the variant of the formula producing ``name`` (kv_precision for kv_bytes):
    then the chain derives it, and a preset of ``name`` would silently drop what the user gave."""
    fid = graph.producer.get(name)
    return fid is not None and bool(graph.formulas[fid]["selector"]) and graph.formulas[fid]["selector"] in user


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _selector_defaults(calc: Calculator, graph: Graph) -> dict[str, str]:
    """The default value of every categorical input a refuse rule names."""
    out = {}
    for rule in calc.refuse:
        for key in rule["when"]:
            default = calc.inputs.get(key, {}).get("default")
            if default is None and graph.known(key):
                default = graph.default(key)
            if default is not None:
                out[key] = str(default)
    return out


def _refuse(calc: Calculator, selectors: dict[str, str]) -> None:
    """Combinations of categorical inputs that make no sense (``refuse`` in the YAML) are bad input."""
    for rule in calc.refuse:
        when = rule["when"]
        if all(k in selectors and selectors[k] in ([v] if isinstance(v, str) else v) for k, v in when.items()):
            shown = ", ".join(f"{k}={selectors[k]}" for k in when)
            raise InputError(f"--set {next(iter(when))}", f"{shown} is refused: {rule['message']}")


class _Missing(InputError):
    """A chain input without a value (given, declared default or formula default)."""


class _Plan:
    """Resolves symbols depth-first: leaves get values, produced symbols add their formula."""

    def __init__(self, calc: Calculator, graph: Graph, given: dict[str, object], sources: dict[str, str] | None = None):
        self.calc, self.graph, self.given = calc, graph, given
        self.sources = sources or {n: "user" for n in given}
        self.inputs: dict[str, InputValue] = {}
        self.quantities: dict[str, Quantity] = {}
        self.selectors: dict[str, str] = {}
        self.computed: set[str] = set()
        self.order: list[tuple[str, str]] = []
        self.active: list[str] = []
        self.missing: dict[str, str] = {}
        self.used: set[str] = set()

    def snapshot(self):
        return (dict(self.inputs), dict(self.quantities), dict(self.selectors), set(self.computed), list(self.order), set(self.used),
                list(self.active))

    def restore(self, saved) -> None:
        self.inputs, self.quantities, self.selectors, self.computed, self.order, self.used, active = saved
        self.active = list(active)

    def need(self, name: str, output: bool = False) -> None:
        if name in self.computed:
            return
        if name in self.inputs:
            self.used.add(name)
            return
        g = self.graph
        derivable = name in g.producer and name not in self.given
        derive = derivable and (output or (name not in self.calc.inputs and g.default(name) is None))
        if derivable and not derive and name in self.calc.inputs and self.calc.inputs[name].get("default") is None and g.default(name) is None:
            # a declared input that a formula can produce: derive it when its own inputs are there
            # (a --model preset gives params, so weight_bytes follows from F6), else ask for it
            saved = self.snapshot()
            try:
                self.need(name, output=True)
                return
            except _Missing as exc:
                self.restore(saved)
                inner = exc.field.removeprefix("--set ")
                try:
                    self.leaf(name)
                except _Missing as mine:
                    if self.left_out(name):
                        return
                    raise _Missing(mine.field, f"{mine.message}; or give {inner} to derive it ({g.producer[name]})") from None
                self.used.add(name)
                return
        if not derive:
            self.leaf(name)
            self.used.add(name)
            return
        fid = g.producer[name]
        if fid in self.active:  # the formula graph is acyclic (a load rule); kept as a guard
            raise EvaluationError(fid, "is part of a cycle of formulas")
        self.active.append(fid)
        meta = g.formulas[fid]
        key = ""
        if meta["selector"]:
            self.need(meta["selector"])
            key = self.selectors[meta["selector"]]
            if key not in meta["variants"]:
                raise InputError(f"--set {meta['selector']}", f"{key!r} is not a variant of {fid} (its variants: {', '.join(meta['variants'])})")
        for n in meta["variants"][key]["inputs"]:
            self.need(n)
        self.active.pop()
        self.order.append((fid, key))
        self.computed.add(name)

    def left_out(self, name: str) -> bool:
        """An optional term (the input's ``when_missing``): take its stand-in value; run() warns."""
        spec = self.calc.inputs[name].get("when_missing")
        if spec is None:
            return False
        value = float(spec["value"])
        self.quantities[name] = Quantity.point(value)
        self.inputs[name] = InputValue(value, self.graph.spec(name)["unit"], value, value, LEFT_OUT)
        self.used.add(name)
        return True

    def leaf(self, name: str) -> None:
        g = self.graph
        spec = g.spec(name)
        declared = self.calc.inputs.get(name, {})
        if name in self.given:
            raw, source = self.given[name], self.sources.get(name, "user")
        elif declared.get("default") is not None:
            raw, source = declared["default"], f"default: {declared['source']}"
        elif g.default(name) is not None:
            raw, source = g.default(name), f"default: {spec['default_source']}"
        else:
            desc = declared.get("description") or spec["desc"]
            unit = f"{spec['unit']}, " if spec["unit"] not in ("", "1") else ""
            raise _Missing(f"--set {name}", f"{self.calc.id} needs a value for {name} ({unit}{desc})")
        if spec["values"]:  # a categorical selector
            value = str(raw).strip()
            if value not in spec["values"]:
                raise InputError(f"--set {name}", f"{value!r} is not one of {', '.join(spec['values'])}")
            self.selectors[name] = value
            self.inputs[name] = InputValue(value, "", value, value, source)
            return
        q = Quantity(*raw) if isinstance(raw, list) else read_input(name, raw, spec)
        check_domain(name, q, spec)
        self.quantities[name] = q
        self.inputs[name] = InputValue(q.value, spec["unit"], q.low, q.high, source)


def _chain(order, module, values: dict, numpy: bool = False) -> dict:
    values = dict(values)
    for fid, key in order:
        meta = module.FORMULAS[fid]
        variant = meta["variants"][key]
        args = [values[n] for n in variant["inputs"]]
        if numpy:
            values[meta["output"]["symbol"]] = getattr(module, variant["np"])(*args)
        else:
            try:
                values[meta["output"]["symbol"]] = _call(fid, getattr(module, variant["fn"]), args)
            except EvaluationError as exc:  # name the values that led there, so the input can be fixed
                shown = ", ".join(f"{n}={v:g}" if isinstance(v, int | float) else f"{n}={v}" for n, v in zip(variant["inputs"], args, strict=True))
                raise InputError(f"{fid} {meta['output']['symbol']} = {variant['expr']}", f"{exc.message} ({shown})") from None
    return values


_FLIP = {"increasing": "decreasing", "decreasing": "increasing"}


def _directions(order, module, ranged: list[str]) -> dict[str, dict[str, str | None]]:
    """symbol -> {ranged leaf it depends on: 'increasing' | 'decreasing' | None (unknown)}.

    Composition of the stored monotonicity: y = f(a, b, ...) is increasing in a leaf x when
    every argument that depends on x moves y the same way. A stored 'constant' for an
    argument that does depend on a ranged leaf is not trusted (it becomes unknown), so the
    range is sampled rather than possibly wrong.
    """
    dirs: dict[str, dict[str, str | None]] = {n: {n: "increasing"} for n in ranged}
    for fid, key in order:
        meta = module.FORMULAS[fid]
        variant = meta["variants"][key]
        out: dict[str, str | None] = {}
        seen: dict[str, set] = {}
        for arg in variant["inputs"]:
            for leaf, d in dirs.get(arg, {}).items():
                m = variant["mono"].get(arg)
                if d is None or m not in ("increasing", "decreasing"):
                    composed = None
                else:
                    composed = d if m == "increasing" else _FLIP[d]
                seen.setdefault(leaf, set()).add(composed)
        for leaf, ds in seen.items():
            out[leaf] = ds.pop() if len(ds) == 1 else None
        dirs[meta["output"]["symbol"]] = out
    return dirs


def _sampled(plan: _Plan, module, ranged: list[str], names: list[str], point: dict):
    """Corners of the ranged inputs (up to 2^10) plus seeded uniform samples, through the NumPy twins."""
    import itertools

    import numpy as np

    corners = list(itertools.islice(itertools.product((0, 1), repeat=len(ranged)), 1024))
    rng = np.random.default_rng(0)
    count = len(corners) + SAMPLES
    values = {}
    for n, q in plan.quantities.items():
        if not q.is_range:
            values[n] = np.full(count, q.value)
            continue
        k = ranged.index(n)
        xs = np.concatenate([np.array([(q.low, q.high)[c[k]] for c in corners], dtype=float), rng.uniform(q.low, q.high, SAMPLES)])
        if plan.graph.spec(n)["domain"].endswith("integer"):
            xs = np.round(xs)
        values[n] = xs
    with np.errstate(all="ignore"):
        out = _chain(plan.order, module, values, numpy=True)
    lows, highs = {}, {}
    for n in names:
        v = np.asarray(out[n], dtype=float) * np.ones(count)
        v = v[np.isfinite(v)]
        if v.size == 0:
            raise EvaluationError(n, "no finite value over the given ranges")
        lows[n], highs[n] = float(min(v.min(), point[n])), float(max(v.max(), point[n]))
    return lows, highs


def condition_function(text: str, symbols):
    """A Python function of the condition's symbols (in sorted order), built from the whitelisted tree.

    The comparison is wrapped as ``Piecewise((1, cond), (0, True))`` because engine.core.expr allows
    comparisons only as Piecewise conditions. The source handed to exec is generated by
    engine.core.codegen from that checked tree only, as engine.numeric.compiled does for the formulas.
    """
    used, source = condition_source(text, symbols)
    return used, _exec_condition(source)


def condition_source(text: str, symbols) -> tuple[list[str], str]:
    """The symbols a condition uses and the Python source of ``_cond`` (generated from the checked tree)."""
    from engine.core import codegen
    from engine.core.expr import parse_condition

    tree = parse_condition(text, symbols)
    used = sorted(tree.symbols())
    names = {n: f"v_{n}" for n in used}
    return used, codegen.PRELUDE + f"\ndef _cond({', '.join(names[n] for n in used)}):\n    return {codegen.to_python(tree, names)}\n"


_CONDITIONS: dict[str, tuple] = {}


def _condition(text: str, symbols) -> tuple:
    """condition_function, memoised per process: conditions come from the parsed records, never a cache."""
    if text not in _CONDITIONS:
        _CONDITIONS[text] = condition_function(text, symbols)
    return _CONDITIONS[text]


def _exec_condition(source: str):
    namespace: dict = {}
    exec(compile(source, "<failure boundary>", "exec"), namespace)  # generated from a whitelisted tree only
    return namespace["_cond"]


def _boundaries(calc: Calculator, graph: Graph, point: dict, outputs: dict, quantities: dict) -> list[str]:
    warnings = []
    for fb in calc.failure_boundaries:
        used, fn = _condition(fb["when"], graph.units)
        if any(n not in point for n in used):
            continue  # a symbol of the condition is not on this chain
        if fn(*[point[n] for n in used]):
            warnings.append(f"{fb['message']} ({fb['when']})")
            continue
        ends = []
        for pick in ("low", "high"):
            ends.append([getattr(outputs[n], pick) if n in outputs else (getattr(quantities[n], pick) if n in quantities else point[n]) for n in used])
        if any(fn(*e) for e in ends):
            warnings.append(f"within the given ranges, possibly: {fb['message']} ({fb['when']})")
    return warnings


def _point(calc: Calculator, graph: Graph, order, module, values: dict, context: dict) -> dict:
    """The chain at the point values, checking the refusing failure boundaries after every step,
    so a chain with no answer is refused before a later formula divides by what it names."""
    values = dict(values)
    for step in order:
        _refused(calc, graph, {**context, **values})
        values = _chain([step], module, values)
    _refused(calc, graph, {**context, **values})
    return values


def _refused(calc: Calculator, graph: Graph, point: dict, outputs: dict | None = None, quantities: dict | None = None) -> None:
    """A failure boundary with ``refuse: <input>`` that holds (at the point or an end of the ranges) is bad input."""
    for fb in calc.failure_boundaries:
        if not fb.get("refuse"):
            continue
        used, fn = _condition(fb["when"], graph.units)
        if any(n not in point for n in used):
            continue
        ends = [[point[n] for n in used]]
        for pick in ("low", "high") if outputs is not None else ():
            ends.append([getattr(outputs[n], pick) if n in outputs else (getattr(quantities[n], pick) if n in quantities else point[n]) for n in used])
        if any(fn(*e) for e in ends):
            shown = ", ".join(f"{n} = {point[n]:g}" for n in used)
            raise InputError(f"--set {fb['refuse']}", f"{fb['message']} ({shown}{'' if fn(*ends[0]) else ' within the given ranges'})")


def _step(module, fid: str, key: str, values: dict) -> dict:
    def number(x: float) -> str:  # full precision, so a reader can recompute by hand
        return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:.10g}"

    meta = module.FORMULAS[fid]
    variant = meta["variants"][key]
    expr = variant["expr"]
    substituted = re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*\b", lambda m: number(values[m.group(0)]) if m.group(0) in variant["inputs"] else m.group(0), expr)
    symbol = meta["output"]["symbol"]
    return {"id": fid, "name": meta["name"], "variant": key, "symbol": symbol, "expr": expr, "substituted": substituted,
            "value": values[symbol], "unit": meta["output"]["unit"]}


# ---------------------------------------------------------------------- integrity


def problems(k) -> list[Problem]:
    """Integrity of every calculator of a loaded root (rule 8 of engine.check.integrity)."""
    if not k.calculators:
        return []
    from engine.core.errors import AiinfraError, ExprError, UnitError
    from engine.core.units import parse_quantity
    from engine.numeric import compiled

    try:
        module = compiled.for_knowledge(k)
    except AiinfraError as exc:  # pragma: no cover - reported by the formula rules
        return [Problem("", "", "", f"cannot compile the formulas: {exc}")]
    graph = Graph(module)
    out = []
    for cid, rec in sorted(k.calculators.items()):
        place = k.places.get(cid, "")
        calc = Calculator.from_record(rec)
        if place and Path(place.rsplit(":", 1)[0]).stem != calc.name:
            out.append(Problem(place, cid, "id", f"the file should be named {calc.name}.yaml"))
        for field_, names in (("outputs", calc.outputs), ("optional_outputs", calc.optional_outputs)):
            for j, name in enumerate(names):
                if name not in graph.producer:
                    out.append(Problem(place, cid, f"{field_}[{j}]", f"{name} is not produced by any formula"))
        for name, spec in calc.inputs.items():
            if not graph.known(name):
                out.append(Problem(place, cid, f"inputs.{name}", "is not a formula symbol"))
                continue
            default = spec.get("default")
            if default is None:
                continue
            sym = graph.spec(name)
            if sym["values"]:
                if str(default) not in sym["values"]:
                    out.append(Problem(place, cid, f"inputs.{name}.default", f"{default!r} is not one of {', '.join(sym['values'])}"))
                continue
            try:
                check_domain(name, parse_quantity(str(default), sym["unit"]), sym)
            except (UnitError, InputError) as exc:
                out.append(Problem(place, cid, f"inputs.{name}.default", str(exc)))
        fids, _ = graph.reach(calc)
        for fid in fids:
            if not FORMULA_NUMBER.match(fid):
                out.append(Problem(place, cid, "", f"reaches {fid}, which is neither an Appendix B number (F1..F22) nor in the extension range (FX..)"))
        for field_, table in (("sections", k.sections), ("chapters", k.chapters)):
            for j, ident in enumerate(getattr(calc, field_)):
                if ident not in table:
                    out.append(Problem(place, cid, f"{field_}[{j}]", f"refers to {ident}, which is not defined"))
        for j, fb in enumerate(calc.failure_boundaries):
            try:
                used, _ = condition_function(fb["when"], graph.units)
            except ExprError as exc:
                out.append(Problem(field_place(k.root, place.split(":", 1)[0], ["failure_boundaries", j, "when"]), cid, f"failure_boundaries[{j}].when", exc.reason))
            if fb.get("refuse") and not graph.known(fb["refuse"]):
                out.append(Problem(place, cid, f"failure_boundaries[{j}].refuse", f"{fb['refuse']} is not a formula symbol"))
        for j, ex in enumerate(rec.get("examples", ())):
            out += _example_problems(place, cid, j, calc, module, ex)
        for j, rule in enumerate(calc.refuse):
            for key, values in rule["when"].items():
                sym = graph.spec(key) if graph.known(key) else None
                if sym is None or not sym["values"]:
                    out.append(Problem(place, cid, f"refuse[{j}].when.{key}", "is not a categorical formula symbol"))
                    continue
                for v in [values] if isinstance(values, str) else values:
                    if v not in sym["values"]:
                        out.append(Problem(place, cid, f"refuse[{j}].when.{key}", f"{v!r} is not one of {', '.join(sym['values'])}"))
    return out


def field_place(root, display: str, path: list) -> str:
    """``file:line`` of one field of the record in ``display`` (a path under ``root``), read again with its marks."""
    from engine.kb.yamlio import load_yaml, mark_at

    data, problems = load_yaml(Path(root) / display, display)
    mark = None if problems else mark_at(data, path)
    return f"{display}:{mark[0]}" if mark else display


def condition_error(root, calc: Calculator, graph: Graph, exc):
    """The ExprError of a failure boundary that does not parse, located at the file:line of its ``when``."""
    from engine.core.errors import ExprError

    for j, fb in enumerate(calc.failure_boundaries):
        try:
            condition_source(fb["when"], graph.units)
        except ExprError as mine:
            display = _record_file(root, calc)
            return mine.located(field_place(root, display, ["failure_boundaries", j, "when"]), calc.id, f"failure_boundaries[{j}].when")
    return exc


def _record_file(root, calc: Calculator) -> str:
    """The file under ``root`` that defines ``calc`` (``<name>.yaml`` unless another file holds the id)."""
    from engine.kb.yamlio import load_yaml

    base = Path(root).joinpath(*FOLDER)
    named = base / f"{calc.name}.yaml"
    for path in [named] + [p for p in sorted(base.glob("*.yaml")) if p != named]:
        data, _ = load_yaml(path, path.name)
        if isinstance(data, dict) and data.get("id") == calc.id:
            return "/".join(FOLDER + (path.name,))
    return "/".join(FOLDER + (named.name,))


def _example_problems(place: str, cid: str, j: int, calc: Calculator, module, ex: dict) -> list[Problem]:
    """A worked example of a calculator: it runs, and every expected output matches within rel_tol."""
    import math

    from engine.core.errors import AiinfraError

    if any(n not in Graph(module).producer for n in calc.outputs):
        return []  # reported above: an output no formula produces
    try:
        result = run(calc, module, dict(ex["set"]))
    except AiinfraError as exc:
        return [Problem(place, cid, f"examples[{j}]", f"does not run: {exc}")]
    out = []
    tol = ex.get("rel_tol", 1e-6)
    for name, want in ex["expect"].items():
        got = result.outputs.get(name)
        if got is None:
            out.append(Problem(place, cid, f"examples[{j}].expect.{name}", "is not an output of this run"))
        elif not math.isclose(got.value, want, rel_tol=tol, abs_tol=0 if want else 1e-12):
            out.append(Problem(place, cid, f"examples[{j}].expect.{name}", f"expected {want:.10g}, the chain gives {got.value:.10g} (rel_tol {tol:g})"))
    return out
