"""Decision trees as data: ``decision_trees/<name>.yaml`` walked numerically, never with sympy.

A tree declares inputs (formula symbols, or tree-local symbols with a unit and domain, or
categorical values), named parameters (thresholds with a source), nodes and leaves. Node
kinds come from a table (:data:`KINDS`): ``ask`` picks the next node by a categorical
input; ``test`` takes the first branch whose condition holds (or ``otherwise``).
Conditions are parsed by engine.core.expr and evaluated in base units. A condition symbol that
a formula produces is computed through the formula chain with the calculators' planner
(:class:`engine.numeric.calculators._Plan`), so a user may give an intermediate symbol and the
chain stops there, exactly as for ``aiinfra calc``.

The symbolic half (regions, boundaries, gap/overlap proofs) lives in
``engine.trees.regions`` and is imported only when asked for. :func:`problems` is the
integrity rule ``aiinfra check`` runs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from engine.core.errors import (
    EvaluationError,
    ExprError,
    InputError,
    KnowledgeError,
    Problem,
    UnitError,
)
from engine.numeric.calculators import (
    Calculator,
    Graph,
    _chain,
    _Missing,
    _Plan,
    condition_function,
)
from engine.numeric.evaluate import InputValue, check_domain, read_input

FOLDER = "decision_trees"
ALLOWED_NUMBERS = (0, 1)  # any other literal in a condition must be a named parameter
MAX_RANGE_CORNERS = 64


# ---------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class Input:
    symbol: str
    default: object = None
    source: str = ""
    description: str = ""
    unit: str | None = None  # tree-local numeric symbols
    domain: str | None = None
    values: tuple[str, ...] = ()  # tree-local categorical symbols
    produced_by: str = ""  # F../FX.. or calc:<name>

    @property
    def local(self) -> bool:
        return self.unit is not None or bool(self.values)


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str
    value: float
    unit: str
    source: str
    description: str


@dataclass(frozen=True, slots=True)
class Branch:
    when: str
    to: str
    label: str = ""


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    kind: str
    question: str
    question_zh: str = ""
    input: str = ""  # ask
    options: tuple[tuple[str, str], ...] = ()  # ask: (value, target)
    branches: tuple[Branch, ...] = ()  # test
    otherwise: str = ""  # test


@dataclass(frozen=True, slots=True)
class Leaf:
    id: str
    recommendation: str
    rationale: str
    read: tuple[str, ...]
    formulas: tuple[str, ...]
    recommendation_zh: str = ""
    severity: str = ""
    boundary: dict | None = None  # {when, message, severity}


@dataclass
class Tree:
    id: str
    title: str
    title_zh: str
    chapters: tuple[str, ...]
    sections: tuple[str, ...]
    decision: str
    inputs: dict[str, Input]
    parameters: dict[str, Parameter]
    fixed: dict[str, tuple[object, str]]
    start: str
    nodes: dict[str, Node]
    leaves: dict[str, Leaf]
    decision_zh: str = ""
    notes: str = ""
    display: str = ""  # decision_trees/<file>.yaml
    raw: object = None  # the marked YAML, for line numbers

    @property
    def name(self) -> str:
        return self.id.split(":", 1)[1]

    @classmethod
    def from_record(cls, raw: dict, display: str = "") -> Tree:
        inputs = {}
        for spec in raw["inputs"]:
            inputs[spec["symbol"]] = Input(spec["symbol"], spec.get("default"), spec.get("source", ""), spec.get("description", ""),
                                           spec.get("unit"), spec.get("domain"), tuple(spec.get("values", ())), spec.get("from", ""))
        params = {p["name"]: Parameter(p["name"], float(p["value"]), p["unit"], p["source"], p["description"]) for p in raw.get("parameters", ())}
        fixed = {f["symbol"]: (f["value"], f["reason"]) for f in raw.get("fixed", ())}
        nodes = {k: _node(k, v) for k, v in raw["nodes"].items()}
        leaves = {k: Leaf(k, v["recommendation"], v["rationale"], tuple(v["read"]), tuple(v["formulas"]), v.get("recommendation_zh", ""),
                          v.get("severity", ""), dict(v["failure_boundary"]) if v.get("failure_boundary") else None)
                  for k, v in raw["leaves"].items()}
        return cls(raw["id"], raw["title"], raw["title_zh"], tuple(raw["chapters"]), tuple(raw.get("sections", ())), raw["decision"],
                   inputs, params, fixed, raw["start"], nodes, leaves, raw.get("decision_zh", ""), raw.get("notes", ""), display, raw)

    def where(self, *path) -> str:
        """``decision_trees/x.yaml:LINE`` of the value at ``path`` (the record's line when unknown)."""
        from engine.kb.yamlio import mark_at

        mark = mark_at(self.raw, list(path)) if self.raw is not None else None
        return f"{self.display}:{mark[0]}" if mark else self.display

    def targets(self, node: Node) -> list[str]:
        return KINDS[node.kind].targets(node)


def _node(key: str, v: dict) -> Node:
    if v["kind"] == "ask":
        return Node(key, "ask", v["question"], v.get("question_zh", ""), v["input"], tuple((str(o), t) for o, t in v["options"].items()))
    branches = tuple(Branch(b["when"], b["to"], b.get("label", "")) for b in v["branches"])
    return Node(key, "test", v["question"], v.get("question_zh", ""), branches=branches, otherwise=v.get("otherwise", ""))


# ---------------------------------------------------------------------- loading


def tree_files(root) -> list[Path]:
    base = Path(root) / FOLDER
    return sorted(base.glob("*.yaml")) if base.is_dir() else []


def load(root) -> tuple[dict[str, Tree], list[Problem]]:
    """Every tree of ``root`` that passes its schema, and the problems of those that do not."""
    from engine.kb.schema import read_records

    good, problems = read_records([(p, f"{FOLDER}/{p.name}") for p in tree_files(root)], "tree", "decision-tree")
    trees: dict[str, Tree] = {}
    for display, data in good:
        tree = Tree.from_record(data, display)
        if tree.id in trees:
            problems.append(Problem(display, tree.id, "id", f"is defined twice (first in {trees[tree.id].display})"))
            continue
        trees[tree.id] = tree
    return trees, problems


def load_trees(root) -> dict[str, Tree]:
    """The trees of ``root``; KnowledgeError (exit 1) when a file does not load."""
    trees, problems = load(root)
    if problems:
        raise KnowledgeError(problems)
    return trees


def find(trees: dict[str, Tree], text: str) -> Tree:
    """A tree by ``tree:name`` or bare ``name``; InputError naming the known ones otherwise."""
    from engine.core.suggest import known

    key = text.strip().lower()
    key = key if key.startswith("tree:") else f"tree:{key}"
    if key not in trees:
        names = [t.split(":", 1)[1] for t in sorted(trees)]
        raise InputError("ID", f"{text!r} is not a decision tree ({known(key.split(':', 1)[1], names)})")
    return trees[key]


# ---------------------------------------------------------------------- symbols


def parse_condition(text: str, names):
    """The condition's parsed tree (engine.core.expr allows comparisons only inside Piecewise)."""
    from engine.core.expr import parse

    return parse(f"Piecewise((1, {text}), (0, True))", frozenset(names)).args[1]


class Symbols:
    """Every name a tree's conditions may use: parameters, tree-local inputs, formula symbols.

    ``info(name)`` gives kind (parameter | local | formula), unit, scale (declared unit in
    base units), domain, values (categorical), description and the default with its source.
    """

    def __init__(self, tree: Tree, graph: Graph, calc_defaults: dict[str, dict] | None = None):
        from engine.core.units import parse_unit

        self.tree, self.graph = tree, graph
        self._unit = parse_unit
        self._info: dict[str, dict] = {}
        self._scales: dict[str, float] = {}
        for p in tree.parameters.values():
            self._info[p.name] = dict(kind="parameter", unit=p.unit, domain="real", values=[], desc=p.description, default=p.value, source=p.source)
        for inp in tree.inputs.values():
            if inp.local:
                self._info[inp.symbol] = dict(kind="local", unit=inp.unit or "", domain=inp.domain or "categorical", values=list(inp.values),
                                              desc=inp.description, default=inp.default, source=inp.source)
        self.calc_defaults = calc_defaults or {}

    def names(self) -> set[str]:
        return set(self._info) | set(self.graph.units)

    def known(self, name: str) -> bool:
        return name in self._info or self.graph.known(name)

    def info(self, name: str) -> dict:
        if name in self._info:
            return self._info[name]
        spec = self.graph.spec(name)
        inp = self.tree.inputs.get(name)
        declared = self.calc_defaults.get(name, {})
        default, source = spec["default"], spec["default_source"]
        if declared.get("default") is not None:
            default, source = declared["default"], declared.get("source", "")
        if inp is not None and inp.default is not None:
            default, source = inp.default, inp.source
        desc = (inp.description if inp is not None and inp.description else "") or declared.get("description") or spec["desc"]
        out = dict(kind="formula", unit=self.graph.units.get(name, spec["unit"]), domain=spec["domain"], values=list(spec["values"]),
                   desc=desc, default=default, source=source)
        self._info[name] = out
        return out

    def scale(self, name: str) -> float:
        if name not in self._scales:
            unit = self.info(name)["unit"]
            self._scales[name] = 1.0 if unit in ("", "1") else self._unit(unit).scale
        return self._scales[name]

    def dims(self, name: str):
        unit = self.info(name)["unit"]
        from engine.core.units import DIMENSIONLESS

        return DIMENSIONLESS if unit in ("", "1") else self._unit(unit).dims

    def categorical(self, name: str) -> bool:
        return bool(self.info(name)["values"])

    def produced(self, name: str) -> bool:
        """Computed through the chain unless given: a formula output the tree does not declare as a plain input."""
        cached = self._info.get(name)
        if (cached is not None and cached["kind"] != "formula") or name not in self.graph.producer:
            return False
        inp = self.tree.inputs.get(name)
        return inp is None or bool(inp.produced_by)


def pseudo_calculator(tree: Tree, calc_records: dict[str, dict] | None = None) -> Calculator:
    """The tree seen by the calculators' planner: its formula-symbol inputs with their defaults."""
    inputs: dict[str, dict] = {}
    for rid in sorted({i.produced_by for i in tree.inputs.values() if i.produced_by.startswith("calc:")}):
        rec = (calc_records or {}).get(rid)
        if rec is not None:
            for spec in rec["inputs"]:
                inputs[spec["symbol"]] = {k: v for k, v in spec.items() if k != "symbol"}
    for inp in tree.inputs.values():
        if inp.local or inp.produced_by:
            continue
        entry = dict(inputs.get(inp.symbol, {}))
        if inp.default is not None:
            entry.update(default=inp.default, source=inp.source)
        if inp.description:
            entry["description"] = inp.description
        inputs[inp.symbol] = entry
    return Calculator(tree.id, tree.title, tree.title_zh, list(tree.sections), list(tree.chapters), inputs, [])


# ---------------------------------------------------------------------- node kinds


class _Ask:
    """A categorical question: the input's value picks the next node."""

    @staticmethod
    def targets(node: Node) -> list[str]:
        return [t for _, t in node.options]

    @staticmethod
    def symbols(node: Node, conds) -> set[str]:
        return {node.input}

    @staticmethod
    def step(walk: _WalkState, node: Node) -> Step:
        value = walk.categorical(node.input)
        for option, target in node.options:
            if option == value:
                return Step(node.id, "ask", node.question, node.input, value, None, "", {node.input: (value, "")}, target)
        raise EvaluationError(walk.tree.id, f"node {node.id}: the answer {node.input}={value} has no branch (run aiinfra tree check)")


class _Test:
    """Guarded branches: the first whose condition holds, else ``otherwise``."""

    @staticmethod
    def targets(node: Node) -> list[str]:
        return [b.to for b in node.branches] + ([node.otherwise] if node.otherwise else [])

    @staticmethod
    def symbols(node: Node, conds) -> set[str]:
        return {n for i in range(len(node.branches)) for n in conds[(node.id, i)][0]}

    @staticmethod
    def step(walk: _WalkState, node: Node) -> Step:
        runner = walk.runner
        names = sorted(_Test.symbols(node, runner.conds))
        base = {n: walk.number(n) for n in names}
        shown = {n: (walk.shown[n], runner.symbols.info(n)["unit"]) for n in names}
        for i, branch in enumerate(node.branches):
            used, fn = runner.conds[(node.id, i)]
            if fn(*[base[n] for n in used]):
                return Step(node.id, "test", node.question, "", "", i, branch.when, shown, branch.to, branch.label)
        if node.otherwise:
            return Step(node.id, "test", node.question, "", "", None, "otherwise", shown, node.otherwise, "none of the branches holds")
        point = ", ".join(f"{n}={walk.shown[n]:.6g}" for n in names)
        raise EvaluationError(walk.tree.id, f"node {node.id}: no branch holds at {point} (a gap; run aiinfra tree check)")


KINDS = {"ask": _Ask, "test": _Test}


# ---------------------------------------------------------------------- numeric walk


@dataclass
class Step:
    node: str
    kind: str
    question: str
    input: str  # ask: the categorical input
    answer: str  # ask: its value
    branch: int | None  # test: index of the branch taken (None: otherwise)
    condition: str  # test: the condition that held
    values: dict[str, tuple[object, str]]  # symbol -> (value in its unit, unit)
    to: str
    label: str = ""

    def to_json(self) -> dict:
        out = {"node": self.node, "kind": self.kind, "question": self.question, "to": self.to}
        if self.kind == "ask":
            out.update(input=self.input, answer=self.answer)
        else:
            out.update(branch=self.branch, condition=self.condition, label=self.label)
        out["values"] = {n: {"value": v, "unit": u} for n, (v, u) in self.values.items()}
        return out


@dataclass
class Walk:
    tree: Tree
    steps: list[Step]
    leaf: Leaf
    inputs: dict[str, InputValue]
    boundary: dict | None = None  # {when, message, severity, met: bool | None, values}
    warnings: list[str] = field(default_factory=list)

    @property
    def defaults_used(self) -> list[str]:
        return [n for n, v in self.inputs.items() if str(v.source).startswith("default")]

    def to_json(self) -> dict:
        leaf = self.leaf
        return {
            "tree": self.tree.id,
            "title": self.tree.title,
            "decision": self.tree.decision,
            "path": [s.to_json() for s in self.steps],
            "leaf": {"id": leaf.id, "recommendation": leaf.recommendation, "recommendation_zh": leaf.recommendation_zh, "rationale": leaf.rationale,
                     "read": list(leaf.read), "formulas": list(leaf.formulas), "severity": leaf.severity or None},
            "failure_boundary": self.boundary,
            "inputs": {k: v._asdict() for k, v in self.inputs.items()},
            "defaults_used": self.defaults_used,
            "warnings": list(self.warnings),
        }


class Prompt:
    """Interactive answers for missing inputs (``ask`` returns the typed text, or None for the default)."""

    def ask(self, name: str, info: dict) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError

    def say(self, text: str) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class _TreePlan(_Plan):
    """The calculators' planner, asking for a leaf value interactively before using its default."""

    def __init__(self, calc, graph, given, prompt: Prompt | None, symbols: Symbols, sources: dict[str, str] | None = None):
        super().__init__(calc, graph, given, {n: (sources or {}).get(n, "user") for n in given})
        self.prompt, self.symbols = prompt, symbols
        self.offered: set[str] = set()

    def need(self, name: str, output: bool = False) -> None:
        inp = self.symbols.tree.inputs.get(name)
        if (self.prompt is not None and inp is not None and not inp.local and name not in self.given
                and name not in self.computed and name not in self.offered and name in self.graph.producer):
            self.offered.add(name)
            self._offer(name)
        return super().need(name, output)

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
                self.prompt.say(exc.message if isinstance(exc, _Missing) else str(exc))


class Runner:
    """One tree compiled for walking: conditions as Python functions, the chain planner ready."""

    def __init__(self, tree: Tree, module, calc_records: dict[str, dict] | None = None):
        self.tree, self.module = tree, module
        self.graph = Graph(module)
        self.calc = pseudo_calculator(tree, calc_records)
        self.symbols = Symbols(tree, self.graph, self.calc.inputs)
        names = self.symbols.names()
        self.conds = {}
        for node in tree.nodes.values():
            for i, b in enumerate(node.branches):
                self.conds[(node.id, i)] = condition_function(b.when, names)
        self.boundaries = {k: condition_function(leaf.boundary["when"], names) for k, leaf in tree.leaves.items() if leaf.boundary}
        self.allowed = self._allowed()

    def _allowed(self) -> set[str]:
        """Names --set may give: inputs, parameters, and every symbol the conditions' chains reach."""
        used = {n for used, _ in list(self.conds.values()) + list(self.boundaries.values()) for n in used}
        used |= {n.input for n in self.tree.nodes.values() if n.kind == "ask"}
        return used | self.graph.upstream(sorted(used)) | set(self.tree.inputs) | set(self.tree.parameters)

    def walk(self, given: dict[str, object] | None = None, prompt: Prompt | None = None,
             presets: dict[str, tuple[object, str]] | None = None) -> Walk:
        """``presets`` (symbol -> (value, source), engine.domain.presets) fill inputs the user did not give."""
        given = dict(given or {})
        for name in given:
            if name in self.tree.fixed:
                raise InputError(f"--set {name}", f"is fixed by {self.tree.id} ({self.tree.fixed[name][1]})")
            if name not in self.allowed:
                raise InputError(f"--set {name}", f"is not an input of {self.tree.id} (its inputs: {', '.join(self.tree.inputs)})")
        sources = {}
        for name, (value, source) in (presets or {}).items():
            if name in self.allowed and name not in given and name not in self.tree.fixed:
                given[name], sources[name] = value, source
        state = _WalkState(self, given, prompt, sources)
        for name in given:  # every given value is read first, so its error comes first
            state.read(name)
        steps = []
        current = self.tree.start
        while current in self.tree.nodes:
            node = self.tree.nodes[current]
            try:
                steps.append(KINDS[node.kind].step(state, node))
            except _Missing as exc:
                raise self._hint(exc, given) from None
            current = steps[-1].to
            if len(steps) > len(self.tree.nodes):
                raise EvaluationError(self.tree.id, "the walk loops (run aiinfra tree check)")
        leaf = self.tree.leaves[current]
        boundary = self._boundary(state, leaf)  # first: it may read inputs the path did not (they belong in the report)
        walk = Walk(self.tree, steps, leaf, state.inputs())
        walk.boundary = boundary
        ranged = {n: q for n, q in state.ranges.items()}
        if ranged:  # the corners are walked without a prompt, so they get every answer typed here
            walk.warnings += self._range_warnings({**given, **state.answers()}, ranged, leaf)
        return walk

    def walk_many(self, given: dict[str, object], columns: dict[str, object]) -> list[str]:
        """The leaf of each of many points at once (sweeps, benchmarks).

        ``columns`` maps numeric inputs to sequences of numbers in their declared units; the
        other inputs come from ``given`` or defaults, as in :meth:`walk`. The chain is planned
        once for every condition's symbols (so each must have a value), then formulas and
        conditions run as NumPy twins over all points. Categorical inputs cannot vary here.
        """
        import numpy as np

        lengths = {len(v) for v in columns.values()}
        if len(lengths) != 1:
            raise InputError("columns", "every column needs the same number of points")
        count = lengths.pop()
        for name in columns:
            if name not in self.allowed or self.symbols.categorical(name):
                raise InputError(f"--set {name}", f"is not a numeric input of {self.tree.id}")
        point = dict(given)
        point.update({k: float(v[0]) for k, v in columns.items()})
        state = _WalkState(self, point, None)
        answers: dict[str, str] = {}
        tests: set[str] = set()
        todo, seen = [self.tree.start], set()
        while todo:  # the nodes these answers can reach: an ask follows its one answer
            node = self.tree.nodes.get(todo.pop())
            if node is None or node.id in seen:
                continue
            seen.add(node.id)
            if node.kind == "ask":
                answers[node.input] = state.categorical(node.input)
                todo.append(dict(node.options)[answers[node.input]])
            else:
                tests.add(node.id)
                todo += self.tree.targets(node)
        numeric = sorted({n for (node, _), (used, _) in self.conds.items() if node in tests for n in used})
        for n in numeric:
            state.number(n)
        plan = state.plan
        values = {leaf: np.full(count, q.value) for leaf, q in plan.quantities.items()}
        values.update({k: np.asarray(v, dtype=float) for k, v in columns.items() if k in values})
        with np.errstate(all="ignore"):
            chain = _chain(plan.order, self.module, values, numpy=True)
        base = {}
        for n in numeric:
            raw = np.asarray(columns[n], dtype=float) if n in columns else (chain[n] if n in chain else np.full(count, state.shown[n]))
            base[n] = raw * self.symbols.scale(n) * np.ones(count)
        return self._route(count, base, answers)

    def _route(self, count: int, base: dict, answers: dict) -> list[str]:
        import numpy as np

        if not hasattr(self, "_np_conds"):
            names = self.symbols.names()
            self._np_conds = {k: _numpy_condition(b.when, names) for k, b in
                              ((key, self.tree.nodes[key[0]].branches[key[1]]) for key in self.conds)}
        keys = list(self.tree.nodes) + list(self.tree.leaves)
        code = {k: i for i, k in enumerate(keys)}
        at = np.full(count, code[self.tree.start])
        for _ in range(len(self.tree.nodes)):
            for node in self.tree.nodes.values():
                mask = at == code[node.id]
                if not mask.any():
                    continue
                if node.kind == "ask":
                    at[mask] = code[dict(node.options)[answers[node.input]]]
                    continue
                nxt = np.full(count, -1)
                for i, b in reversed(list(enumerate(node.branches))):  # first true branch wins
                    used, fn = self._np_conds[(node.id, i)]
                    held = np.asarray(fn(*[base[n] for n in used]), dtype=bool) * np.ones(count, dtype=bool)
                    nxt = np.where(held, code[b.to], nxt)
                if node.otherwise:
                    nxt = np.where(nxt < 0, code[node.otherwise], nxt)
                if (nxt[mask] < 0).any():
                    raise EvaluationError(self.tree.id, f"node {node.id}: no branch holds for some points (a gap; run aiinfra tree check)")
                at[mask] = nxt[mask]
        return [keys[i] for i in at]

    def _hint(self, exc: _Missing, given: dict) -> InputError:
        """A missing chain input, with the declared produced inputs that would make it unnecessary."""
        name = exc.field.removeprefix("--set ")
        shortcuts = [i.symbol for i in self.tree.inputs.values() if i.produced_by and i.symbol not in given
                     and i.symbol in self.graph.producer and name in self.graph.upstream([i.symbol])]
        if not shortcuts:
            return exc
        return InputError(exc.field, f"{exc.message}; or give {' or '.join(shortcuts)} directly")

    def _boundary(self, state: _WalkState, leaf: Leaf) -> dict | None:
        if not leaf.boundary:
            return None
        used, fn = self.boundaries[leaf.id]
        out = dict(when=leaf.boundary["when"], message=leaf.boundary["message"], severity=leaf.boundary.get("severity"), met=None, values={})
        try:
            base = [state.number(n) for n in used]
        except InputError as exc:  # a symbol only the boundary needs has no value: report, do not fail
            out["note"] = f"not evaluated: {exc.message}"
            return out
        out["met"] = bool(fn(*base))
        out["values"] = {n: {"value": state.shown[n], "unit": self.symbols.info(n)["unit"]} for n in used}
        return out

    def _range_warnings(self, given: dict, ranged: dict, leaf: Leaf) -> list[str]:
        """Walk again at the corners of the ranged inputs; say where the leaf differs."""
        names = sorted(ranged)
        out = []
        for corner in itertools.islice(itertools.product((0, 1), repeat=len(names)), MAX_RANGE_CORNERS):
            point = dict(given)
            for n, c in zip(names, corner, strict=True):
                point[n] = (ranged[n].low, ranged[n].high)[c]
            other = self.walk(point).leaf
            if other.id != leaf.id:
                at = ", ".join(f"{n}={point[n]:.6g}" for n in names)
                out.append(f"within the given ranges the recommendation changes: at {at} it is {other.id} ({other.recommendation})")
        return out


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
            while True:
                raw = self.prompt.ask(name, info)
                if raw is None and info["default"] is not None:
                    return info["default"], f"default: {info['source']}"
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
        if info["default"] is not None:
            return info["default"], f"default: {info['source']}"
        unit = f"{info['unit']}, " if info["unit"] not in ("", "1") else ""
        kind = f"one of {', '.join(info['values'])}; " if info["values"] else ""
        raise InputError(f"--set {name}", f"{self.tree.id} needs a value for {name} ({kind}{unit}{info['desc']})")

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


def _numpy_condition(text: str, names):
    """The NumPy twin of engine.numeric.calculators.condition_function: arrays in, a boolean array out."""
    from engine.core import codegen

    cond = parse_condition(text, names)
    used = sorted(cond.symbols())
    local = {n: f"v_{n}" for n in used}
    source = codegen.PRELUDE + "\nimport numpy as _np\n\n" + f"def _cond({', '.join(local[n] for n in used)}):\n    return {codegen.to_python(cond, local, numpy=True)}\n"
    namespace: dict = {}
    exec(compile(source, "<tree condition>", "exec"), namespace)  # generated from a whitelisted tree only
    return used, namespace["_cond"]


def _is_number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def runner(root, ident: str, module=None) -> Runner:
    """A Runner for tree ``ident`` of ``root`` (formulas compiled and cached as for calculators)."""
    from engine.numeric import compiled

    trees = load_trees(root)
    tree = find(trees, ident)
    calc_records = None
    if any(i.produced_by.startswith("calc:") for i in tree.inputs.values()):
        from engine.numeric.calculators import load_records

        calc_records = load_records(root)
    return Runner(tree, module if module is not None else compiled.load(root), calc_records)


# ---------------------------------------------------------------------- integrity (structure)


def structure_problems(tree: Tree, graph: Graph, knowledge=None, calc_records: dict | None = None) -> list[Problem]:
    """Everything about one tree that needs no sympy: references, symbols, units, reachability."""
    out: list[Problem] = []

    def add(path: tuple, message: str, field_: str | None = None) -> None:
        out.append(Problem(tree.where(*path), tree.id, field_ if field_ is not None else _field(path), message))

    if Path(tree.display).stem != tree.name:
        add(("id",), f"the file should be named {tree.name}.yaml")
    calc = pseudo_calculator(tree, calc_records)
    symbols = Symbols(tree, graph, calc.inputs)
    _symbol_problems(tree, graph, symbols, calc_records, add)
    _graph_problems(tree, add)
    names = symbols.names()
    used: set[str] = set()
    for node in tree.nodes.values():
        if node.kind == "ask":
            used.add(node.input)
            _ask_problems(tree, node, symbols, add)
        for i, b in enumerate(node.branches):
            used |= _condition_problems(tree, b.when, ("nodes", node.id, "branches", i, "when"), symbols, names, add)
    for leaf in tree.leaves.values():
        if leaf.boundary:
            used |= _condition_problems(tree, leaf.boundary["when"], ("leaves", leaf.id, "failure_boundary", "when"), symbols, names, add)
        for j, fid in enumerate(leaf.formulas):
            if graph.formulas and fid not in graph.formulas:  # a root without formulas/ cannot resolve them
                add(("leaves", leaf.id, "formulas", j), f"refers to {fid}, which is not a formula")
        if knowledge is not None and knowledge.chapters:  # a root without knowledge/ cannot resolve them
            for j, ident in enumerate(leaf.read):
                if ident not in knowledge.chapters and ident not in knowledge.sections:
                    add(("leaves", leaf.id, "read", j), f"refers to {ident}, which is not a chapter or section")
    if knowledge is not None and knowledge.chapters:
        for key, table in (("chapters", knowledge.chapters), ("sections", knowledge.sections)):
            for j, ident in enumerate(getattr(tree, key)):
                if ident not in table:
                    add((key, j), f"refers to {ident}, which is not defined")
    reach = used | graph.upstream(sorted(u for u in used if graph.known(u)))
    for j, inp in enumerate(tree.inputs.values()):
        if inp.symbol not in reach:
            add(("inputs", j), f"unused: no condition, ask or failure boundary uses {inp.symbol}, nor any formula they reach", f"inputs.{inp.symbol}")
    for name in tree.parameters:
        if name not in used:
            add(("parameters",), f"unused: no condition uses the parameter {name}", f"parameters.{name}")
    return out


def _field(path: tuple) -> str:
    from engine.kb.schema import field_path

    return field_path(list(path))


def _symbol_problems(tree: Tree, graph: Graph, symbols: Symbols, calc_records, add) -> None:
    from engine.core.units import parse_quantity, parse_unit

    for j, inp in enumerate(tree.inputs.values()):
        at = ("inputs", j)
        if inp.local and graph.known(inp.symbol):
            add(at, f"{inp.symbol} is a formula symbol ({graph.units.get(inp.symbol, '')}); drop unit/domain/values and use the formula's meaning")
            continue
        if inp.symbol in tree.parameters:
            add(at, f"{inp.symbol} is also a parameter")
        if not inp.local and not graph.known(inp.symbol):
            add(at, f"{inp.symbol} is not a formula symbol (a tree-local input needs unit and domain, or values)")
            continue
        if inp.produced_by and inp.produced_by.startswith("calc:"):
            rec = (calc_records or {}).get(inp.produced_by)
            if rec is None:
                add(at + ("from",), f"refers to {inp.produced_by}, which is not a calculator")
            elif inp.symbol not in rec["outputs"]:
                add(at + ("from",), f"{inp.produced_by} does not output {inp.symbol} (its outputs: {', '.join(rec['outputs'])})")
        elif inp.produced_by and graph.producer.get(inp.symbol) != inp.produced_by:
            add(at + ("from",), f"{inp.symbol} is produced by {graph.producer.get(inp.symbol, 'no formula')}, not {inp.produced_by}")
        if inp.unit is not None:
            try:
                parse_unit(inp.unit)
            except UnitError as exc:
                add(at + ("unit",), str(exc))
                continue
        if inp.default is not None:
            info = symbols.info(inp.symbol)
            if info["values"]:
                if str(inp.default) not in info["values"]:
                    add(at + ("default",), f"{inp.default!r} is not one of {', '.join(info['values'])}")
            else:
                try:
                    check_domain(inp.symbol, parse_quantity(str(inp.default), info["unit"]), info)
                except (UnitError, InputError) as exc:
                    add(at + ("default",), str(exc))
    for name, p in tree.parameters.items():
        if graph.known(name):
            add(("parameters",), f"{name} is a formula symbol; name the threshold differently", f"parameters.{name}")
        try:
            parse_unit(p.unit)
        except UnitError as exc:
            add(("parameters",), str(exc), f"parameters.{name}.unit")
    for j, (name, (value, _)) in enumerate(tree.fixed.items()):
        if not graph.known(name) or name in graph.producer and name not in graph.symbols:
            add(("fixed", j), f"{name} is not an input symbol of any formula")
            continue
        spec = graph.spec(name)
        if spec["values"] and str(value) not in spec["values"]:
            add(("fixed", j, "value"), f"{value!r} is not one of {', '.join(spec['values'])}")
        elif not spec["values"]:
            try:
                check_domain(name, parse_quantity(str(value), spec["unit"]), spec)
            except (UnitError, InputError) as exc:
                add(("fixed", j, "value"), str(exc))


def _graph_problems(tree: Tree, add) -> None:
    both = set(tree.nodes) & set(tree.leaves)
    for key in sorted(both):
        add(("leaves", key), f"{key} is both a node and a leaf")
    if tree.start not in tree.nodes and tree.start not in tree.leaves:
        add(("start",), f"refers to {tree.start}, which is neither a node nor a leaf")
        return
    for node in tree.nodes.values():
        for t in tree.targets(node):
            if t not in tree.nodes and t not in tree.leaves:
                add(("nodes", node.id), f"leads to {t}, which is neither a node nor a leaf")
    seen, stack, order = {tree.start}, [tree.start], []
    while stack:
        key = stack.pop()
        order.append(key)
        if key in tree.nodes:
            for t in tree.targets(tree.nodes[key]):
                if t not in seen and (t in tree.nodes or t in tree.leaves):
                    seen.add(t)
                    stack.append(t)
    for key in tree.nodes:
        if key not in seen:
            add(("nodes", key), "unreachable: no path from start leads to this node")
    for key in tree.leaves:
        if key not in seen:
            add(("leaves", key), "unreachable: no node leads to this leaf")
    cycle = _cycle(tree)
    if cycle:
        add(("nodes", cycle[0]), "the nodes form a cycle: " + " --> ".join(cycle))


def _cycle(tree: Tree) -> list[str]:
    state: dict[str, int] = {}

    def visit(key: str, path: list[str]) -> list[str]:
        state[key] = 1
        for t in tree.targets(tree.nodes[key]) if key in tree.nodes else []:
            if t not in tree.nodes:
                continue
            if state.get(t) == 1:
                return path[path.index(t):] + [t] if t in path else [key, t]
            if t not in state:
                found = visit(t, path + [t])
                if found:
                    return found
        state[key] = 2
        return []

    for key in tree.nodes:
        if key not in state:
            found = visit(key, [key])
            if found:
                return found
    return []


def _ask_problems(tree: Tree, node: Node, symbols: Symbols, add) -> None:
    at = ("nodes", node.id)
    if not symbols.known(node.input):
        add(at + ("input",), f"{node.input} is not an input of the tree nor a formula symbol")
        return
    if node.input not in tree.inputs:
        add(at + ("input",), f"{node.input} is not declared in inputs")
    values = symbols.info(node.input)["values"]
    if not values:
        add(at + ("input",), f"{node.input} is not categorical (an ask node needs values to choose among)")
        return
    options = [o for o, _ in node.options]
    for o in options:
        if o not in values:
            add(at + ("options", o), f"{o!r} is not a value of {node.input} (its values: {', '.join(values)})")
    for v in values:
        if v not in options:
            add(at + ("options",), f"the value {v!r} of {node.input} has no branch")


def _condition_problems(tree: Tree, text: str, at: tuple, symbols: Symbols, names: set[str], add) -> set[str]:
    from engine.core.dimensions import dimension_of
    from engine.core.errors import DimensionError

    try:
        cond = parse_condition(text, names)
    except ExprError as exc:
        add(at, exc.reason)
        return set()
    used = cond.symbols()
    for n in sorted(used):
        info = symbols.info(n)
        if info["values"]:
            add(at, f"{n} is categorical; branch on it with an ask node")
            return used
        if info["kind"] == "formula" and n not in tree.inputs and n not in symbols.graph.producer:
            add(at, f"{n} is neither declared in inputs nor produced by a formula")
    for node in cond.walk():
        if node.kind == "num" and node.value not in ALLOWED_NUMBERS:
            add(at, f"the bare number {node.src or node.value} in a condition: name it in parameters with a source")
    try:
        dimension_of(cond, {n: symbols.dims(n) for n in used})
    except DimensionError as exc:
        add(at, exc.message)
    return used


# ---------------------------------------------------------------------- integrity (all)


@dataclass
class Report:
    """What ``tree check`` prints: problems (exit 1) and notes (neither proven nor refuted)."""

    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    proofs: dict[str, list[dict]] = field(default_factory=dict)  # tree -> [{node, what, method, result}]
    regions: dict[str, dict] = field(default_factory=dict)  # tree -> leaf -> [conjunction text]

    def to_json(self) -> dict:
        return {"problems": [list(p) for p in self.problems], "notes": [list(p) for p in self.notes], "proofs": self.proofs, "regions": self.regions}

    @classmethod
    def from_json(cls, data: dict) -> Report:
        return cls([Problem(*p) for p in data["problems"]], [Problem(*p) for p in data["notes"]], data["proofs"], data["regions"])
