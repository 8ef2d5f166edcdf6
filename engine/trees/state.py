"""One walk's values and its prompts: the chain planner asking on a terminal, values on demand."""

from __future__ import annotations

from engine.core.errors import InputError
from engine.numeric.calc_plan import _Missing, _Plan
from engine.numeric.calc_ranges import _chain
from engine.numeric.evaluate import InputValue, check_domain, read_input
from engine.trees.symbols import Symbols

TYPE_CHECKING = False  # typing costs about 4 ms to import; only type checkers need it

if TYPE_CHECKING:
    from engine.trees.runner import Runner


BACK = object()  # what Prompt.ask returns for "back": ask the previous question again


class Prompt:
    """Interactive answers for missing inputs.

    ``ask`` returns the typed text, None for "keep the default / compute it / leave it unknown
    where the tree allows" (Enter or ``skip``), or :data:`BACK` for the previous question.
    """

    def ask(self, name: str, info: dict) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError

    def say(self, text: str) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class _Back(Exception):
    """Raised through a walk when the user asks for the previous question; the walk restarts."""


class _Recorder(Prompt):
    """Keeps the answers in order, so a walk restarted by ``back`` replays all but the last."""

    def __init__(self, prompt: Prompt):
        self.prompt = prompt
        self.history: list[tuple[str, object]] = []
        self.replay: list[tuple[str, object]] = []

    def rewind(self) -> None:
        self.replay, self.history = self.history, []

    def ask(self, name: str, info: dict):
        if self.replay and self.replay[0][0] == name:
            self.history.append(self.replay.pop(0))
            return self.history[-1][1]
        self.replay = []  # the walk went another way: ask from here on
        if self.history and self.history[-1][0] == name:
            self.history.pop()  # the last answer was refused: this one replaces it
        while True:
            raw = self.prompt.ask(name, info)
            if raw is not BACK:
                self.history.append((name, raw))
                return raw
            if self.history:
                self.history.pop()
                raise _Back
            self.prompt.say("this is the first question: nothing to go back to")

    def say(self, text: str) -> None:
        if not self.replay:
            self.prompt.say(text)


class MissingInputs(InputError):
    """Every input a walk without a terminal needs and lacks at the node it stopped at, one line each."""

    def __init__(self, tree_id: str, node: str, missing: list[InputError]):
        self.missing = missing
        first = missing[0]
        super().__init__(first.field, first.message)
        if len(missing) > 1:
            lines = [f"{tree_id} needs {len(missing)} inputs to decide node {node} (give each with --set NAME=VALUE or --answers FILE):"]
            for m in missing:
                name = m.field.removeprefix("--set ")
                lines.append(f"  --set {name} {m.message.removeprefix(f'{tree_id} needs a value for {name} ')}")
            self.field, self.message = ", ".join(m.field for m in missing), "\n".join(lines)
            self.args = ("\n".join(lines),)


_ABSENT = object()  # a leaf known to be missing: a stand-in while the rest of the chain is planned


class _TreePlan(_Plan):
    """The calculators' planner, asking for a leaf value interactively before using its default."""

    def __init__(self, calc, graph, given, prompt: Prompt | None, symbols: Symbols, sources: dict[str, str] | None = None):
        super().__init__(calc, graph, given, {n: (sources or {}).get(n, "user") for n in given})
        self.prompt, self.symbols = prompt, symbols
        self.offered: set[str] = set()
        self.optional = False  # True while evaluating a failure boundary: a skipped input may stay unknown

    def need(self, name: str, output: bool = False) -> None:
        inp = self.symbols.tree.inputs.get(name)
        if (self.prompt is not None and inp is not None and not inp.local and not inp.measured and name not in self.given
                and name not in self.computed and name not in self.offered and name in self.graph.producer):
            self.offered.add(name)
            computes = inp.produced_by or self.symbols.info(name)["default"] is None
            if computes and self._computable(name):
                return None
            self._offer(name)
        return super().need(name, output)

    def derivation_hint(self, name: str) -> bool:
        inp = self.symbols.tree.inputs.get(name)
        return not (inp is not None and inp.measured)

    def _computable(self, name: str) -> bool:
        """Whether the chain gives ``name`` from the values already there (given, presets, defaults); if so it is kept."""
        saved, prompt = self.snapshot(), self.prompt
        self.prompt = None
        try:
            super().need(name, output=True)
            return True
        except _Missing:
            self.restore(saved)
            return False
        finally:
            self.prompt = prompt

    def _offer(self, name: str) -> None:
        """On a terminal, a declared input a formula produces may be typed in; Enter computes it."""
        info = dict(self.symbols.info(name))
        if self.symbols.tree.inputs[name].produced_by or info["default"] is None:
            info["computed_by"] = self.graph.producer[name]
        while True:
            raw = self.prompt.ask(name, info)
            if raw is None:  # Enter: the default shown, or the formula computes it
                return
            try:
                check_domain(name, read_input(name, raw, info), info)
            except InputError as exc:
                self.prompt.say(str(exc))
                continue
            self.given[name] = raw
            return

    def leaf(self, name: str) -> None:
        if self.given.get(name) is _ABSENT:
            return self._stand_in(name)
        if self.prompt is None or name in self.given or name in self.offered:
            return super().leaf(name)
        while True:
            raw = self.prompt.ask(name, self.symbols.info(name))
            if raw is not None:
                self.given[name] = raw
            try:
                return super().leaf(name)
            except InputError as exc:
                self.given.pop(name, None)
                if raw is None and self.optional and isinstance(exc, _Missing):
                    raise  # skipped where the tree allows it: the boundary is left unevaluated
                self.prompt.say(exc.message if isinstance(exc, _Missing) else str(exc))

    def _stand_in(self, name: str) -> None:
        from engine.core.units import Quantity

        spec = self.graph.spec(name)
        if spec["values"]:
            self.selectors[name] = spec["values"][0]
        else:
            self.quantities[name] = Quantity(float("nan"), float("nan"), float("nan"))
        self.inputs[name] = InputValue(float("nan"), spec["unit"], float("nan"), float("nan"), "missing")


class _WalkState:
    """Values of one walk: parameters, tree-local inputs and the formula chain, evaluated on demand."""

    def __init__(self, runner: Runner, given: dict[str, object], prompt: Prompt | None, sources: dict[str, str] | None = None):
        self.runner, self.tree, self.prompt = runner, runner.tree, prompt
        symbols = runner.symbols
        self.symbols = symbols
        formula_given = {n: v for n, v in given.items() if symbols.info(n)["kind"] == "formula"}
        formula_given.update({n: v for n, (v, _) in self.tree.fixed.items()})
        self.local_given = {n: v for n, v in given.items() if symbols.info(n)["kind"] != "formula"}
        self.plan = _TreePlan(runner.calc, runner.graph, formula_given, prompt, symbols, sources)
        self.values: dict[str, float] = {}  # formula symbols in their declared unit (chain values)
        self.done = 0  # steps of plan.order already evaluated
        self.shown: dict[str, object] = {}  # name -> value in its declared unit (or the categorical value)
        self.base: dict[str, float] = {}
        self.local: dict[str, InputValue] = {}
        self.ranges: dict[str, object] = {}

    def require(self, node: str, names) -> None:
        """Without a prompt, plan every value ``names`` need; all that are missing are reported at once."""
        if self.prompt is not None:
            return
        missing: list[InputError] = []
        for name in names:
            info = self.symbols.info(name)
            if info["kind"] == "formula":
                self._plan(name, missing)
            elif info["kind"] == "local" and name not in self.local_given and info["default"] is None:
                missing.append(self._missing_local(name, info))
        if missing:
            raise MissingInputs(self.tree.id, node, missing)

    def _plan(self, name: str, missing: list[InputError]) -> None:
        plan = self.plan
        while True:
            saved = plan.snapshot()
            try:
                return plan.need(name, output=self.symbols.produced(name))
            except _Missing as exc:
                plan.restore(saved)
                leaf = exc.field.removeprefix("--set ")
                if plan.given.get(leaf) is _ABSENT:  # a guard: a stand-in is never asked for twice
                    raise
                missing.append(self.runner._hint(exc, plan.given))
                plan.given[leaf] = _ABSENT

    def _missing_local(self, name: str, info: dict) -> InputError:
        unit = f"{info['unit']}, " if info["unit"] not in ("", "1") else ""
        kind = f"one of {', '.join(info['values'])}; " if info["values"] else ""
        return InputError(f"--set {name}", f"{self.tree.id} needs a value for {name} ({kind}{unit}{info['desc']})")

    def read(self, name: str) -> None:
        info = self.symbols.info(name)
        if info["values"]:
            self.categorical(name)
        else:
            self.number(name)

    def categorical(self, name: str) -> str:
        if name in self.shown:
            return self.shown[name]
        info = self.symbols.info(name)
        if info["kind"] == "formula":
            self.plan.need(name)
            value = self.plan.selectors[name]
        else:
            raw, source = self._local_raw(name, info)
            value = str(raw).strip()
            if value not in info["values"]:
                raise InputError(f"--set {name}", f"{value!r} is not one of {', '.join(info['values'])}")
            self.local[name] = InputValue(value, "", value, value, source)
        self.shown[name] = value
        return value

    def number(self, name: str) -> float:
        """Value of ``name`` in base units (what conditions compare)."""
        if name in self.base:
            return self.base[name]
        info = self.symbols.info(name)
        if info["values"]:
            raise InputError(f"--set {name}", "is categorical and cannot be compared as a number")
        if info["kind"] == "parameter":
            value = float(self.local_given[name]) if name in self.local_given and _is_number(self.local_given[name]) else None
            if value is None and name in self.local_given:
                value = read_input(name, self.local_given[name], info).value
            source = "user" if name in self.local_given else f"parameter: {info['source']}"
            value = info["default"] if value is None else value
            self.local[name] = InputValue(value, info["unit"], value, value, source)
        elif info["kind"] == "local":
            raw, source = self._local_raw(name, info)
            q = read_input(name, raw, info)
            check_domain(name, q, info)
            if q.is_range:
                self.ranges[name] = q
            value = q.value
            self.local[name] = InputValue(value, info["unit"], q.low, q.high, source)
        else:
            value = self._formula(name)
        self.shown[name] = value
        self.base[name] = value * self.symbols.scale(name)
        return self.base[name]

    def _formula(self, name: str) -> float:
        plan = self.plan
        plan.need(name, output=self.symbols.produced(name))
        for leaf, q in plan.quantities.items():
            if leaf not in self.values:
                self.values[leaf] = q.value
                if q.is_range:
                    self.ranges[leaf] = q
        if self.done < len(plan.order):
            self.values = _chain(plan.order[self.done:], self.runner.module, self.values)
            self.done = len(plan.order)
        return self.values[name]

    def _local_raw(self, name: str, info: dict) -> tuple[object, str]:
        if name in self.local_given:
            return self.local_given[name], "user"
        if self.prompt is not None:
            return self._ask_local(name, info)
        if info["default"] is not None:
            return info["default"], f"default: {info['source']}"
        raise self._missing_local(name, info)

    def _ask_local(self, name: str, info: dict) -> tuple[object, str]:
        while True:
            raw = self.prompt.ask(name, info)
            if raw is None and info["default"] is not None:
                return info["default"], f"default: {info['source']}"
            if raw is None and self.plan.optional:
                raise self._missing_local(name, info)  # skipped where the tree allows: left unknown
            if raw is None:
                self.prompt.say(f"{name} has no default; a value is needed")
                continue
            try:
                if info["values"]:
                    if str(raw).strip() not in info["values"]:
                        raise InputError(f"--set {name}", f"{raw!r} is not one of {', '.join(info['values'])}")
                else:
                    check_domain(name, read_input(name, raw, info), info)
                self.local_given[name] = raw
                return raw, "user"
            except InputError as exc:
                self.prompt.say(str(exc))

    def answers(self) -> dict[str, object]:
        """Every value given or typed at a prompt in this walk (the tree's fixed values excepted)."""
        out = {n: v for n, v in self.plan.given.items() if n not in self.tree.fixed}
        return {**out, **self.local_given}

    def inputs(self) -> dict[str, InputValue]:
        out = dict(self.local)
        for name, v in self.plan.inputs.items():
            if name in self.tree.fixed:
                v = v._replace(source=f"fixed by the tree: {self.tree.fixed[name][1]}")
            out[name] = v
        return out


def _is_number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)
