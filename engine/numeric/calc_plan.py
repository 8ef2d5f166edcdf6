"""The plan of a calculator run: which formulas (and variants) give the outputs from what is
given, resolved depth-first by ``_Plan``; the categorical refusals checked on the way."""

from __future__ import annotations

from engine.core.errors import EvaluationError, InputError
from engine.core.units import Quantity
from engine.numeric.calc_records import LEFT_OUT, Calculator, Graph
from engine.numeric.evaluate import InputValue, check_domain, read_input


class _Missing(InputError):
    """A chain input without a value (given, declared default or formula default)."""


class MissingInputs(InputError):
    """Every input a calculator run lacks, one line each, as engine.trees.state.MissingInputs words a walk's
    (a run with one missing input raises that ``_Missing``, whose one-line text stays as it was)."""

    def __init__(self, calc_id: str, missing: list[_Missing]):
        self.missing = missing
        lines = [f"{calc_id} needs {len(missing)} inputs (give each with --set NAME=VALUE):"]
        for m in missing:
            name = m.field.removeprefix("--set ")
            lines.append(f"  --set {name} {m.message.removeprefix(f'{calc_id} needs a value for {name} ')}")
        super().__init__(", ".join(m.field for m in missing), "\n".join(lines))
        self.args = ("\n".join(lines),)


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
        self.placeholders: set[str] = set()  # missing inputs stood in for while every missing one is collected

    def derivation_hint(self, name: str) -> bool:
        """Whether a missing ``name`` that a formula produces names that formula's input as a way to derive it."""
        return True

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
                    if not self.derivation_hint(name):
                        raise
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

    def _stand_in(self, name: str, spec: dict) -> None:
        """A value for a missing input, only so planning can go on and find the next missing one (never evaluated)."""
        if spec["values"]:
            self.selectors[name] = spec["values"][0]
            self.inputs[name] = InputValue(spec["values"][0], "", spec["values"][0], spec["values"][0], "missing")
            return
        self.quantities[name] = Quantity.point(1.0)
        self.inputs[name] = InputValue(1.0, spec["unit"], 1.0, 1.0, "missing")

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
        elif name in self.placeholders:
            self._stand_in(name, spec)
            return
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
        # a preset's range travels as [value, low, high] (engine.domain.presets); a user's list is read, and refused, as input
        q = Quantity(*raw) if isinstance(raw, list) and source != "user" else read_input(name, raw, spec)
        check_domain(name, q, spec)
        self.quantities[name] = q
        self.inputs[name] = InputValue(q.value, spec["unit"], q.low, q.high, source)


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
