"""The numeric walk: node kinds, :class:`Runner` (one tree compiled), :class:`Walk` results."""

from __future__ import annotations

import itertools

from engine.core.errors import EvaluationError, ExprError, InputError, KnowledgeError, Problem
from engine.core.record import dataclass, field
from engine.numeric.calc_conditions import compile_conditions
from engine.numeric.calc_plan import _Missing
from engine.numeric.calc_ranges import _chain
from engine.numeric.calc_records import Graph
from engine.numeric.evaluate import InputValue
from engine.trees.records import Leaf, Node, Tree, load_one
from engine.trees.state import Prompt, _Back, _Recorder, _WalkState
from engine.trees.symbols import Symbols, parse_condition, pseudo_calculator

MAX_RANGE_CORNERS = 64


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


def _located(tree: Tree, names, exc):
    """The ExprError of the first condition of ``tree`` that does not compile, at its file:line, id and field."""
    for node in tree.nodes.values():
        for i, b in enumerate(node.branches):
            try:
                compile_conditions([b.when], names)
            except ExprError as mine:
                return mine.located(tree.where("nodes", node.id, "branches", i, "when"), tree.id, f"nodes.{node.id}.branches[{i}].when")
    for key, leaf in tree.leaves.items():
        if leaf.boundary:
            try:
                compile_conditions([leaf.boundary["when"]], names)
            except ExprError as mine:
                return mine.located(tree.where("leaves", key, "failure_boundary", "when"), tree.id, f"leaves.{key}.failure_boundary.when")
    return exc


class Runner:
    """One tree compiled for walking: conditions as Python functions, the chain planner ready."""

    def __init__(self, tree: Tree, module, calc_records: dict[str, dict] | None = None):
        self.tree, self.module = tree, module
        self.graph = Graph(module)
        self.calc = pseudo_calculator(tree, calc_records)
        self.symbols = Symbols(tree, self.graph, self.calc.inputs)
        names = self.symbols.names()
        texts = [b.when for node in tree.nodes.values() for b in node.branches]
        texts += [leaf.boundary["when"] for leaf in tree.leaves.values() if leaf.boundary]
        self._refused(texts)
        try:
            compiled_conds = compile_conditions(texts, names)  # one cached module, not one parse per condition
        except ExprError as exc:
            raise _located(tree, names, exc) from None
        self.conds = {}
        for node in tree.nodes.values():
            for i, b in enumerate(node.branches):
                self.conds[(node.id, i)] = compiled_conds[b.when]
        self.boundaries = {k: compiled_conds[leaf.boundary["when"]] for k, leaf in tree.leaves.items() if leaf.boundary}
        self.allowed = self._allowed()

    def _refused(self, texts: list[str]) -> None:
        """A tree whose conditions or inputs need a formula the module was compiled without is a broken record
        (#24: naming that formula's problem); a tree that needs none warns about them once and walks."""
        graph = self.graph
        if not graph.refused:
            return
        import re

        words = {w for text in texts for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)}
        words |= {n.input for n in self.tree.nodes.values() if n.kind == "ask"} | set(self.tree.inputs) | set(self.tree.parameters)
        words |= graph.upstream(sorted(words))
        # one problem per refused formula: the output the tree needs, else a symbol only that formula declares
        needed = {s: s for s in sorted(graph.refused.keys() & words)}
        for name in sorted(graph.orphans.keys() & words):
            needed.setdefault(graph.orphans[name], name)
        if needed:
            raise KnowledgeError([Problem(self.tree.where(), self.tree.id, "", graph.refused_text(None, s)) for s in needed.values()])
        graph.warn_refused()

    def _allowed(self) -> set[str]:
        """Names --set may give: inputs, parameters, and every symbol the conditions' chains reach."""
        used = {n for used, _ in list(self.conds.values()) + list(self.boundaries.values()) for n in used}
        used |= {n.input for n in self.tree.nodes.values() if n.kind == "ask"}
        return used | self.graph.upstream(sorted(used)) | set(self.tree.inputs) | set(self.tree.parameters)

    def walk(self, given: dict[str, object] | None = None, prompt: Prompt | None = None,
             presets: dict[str, tuple[object, str]] | None = None) -> Walk:
        """``presets`` (symbol -> (value, source), engine.domain.presets) fill inputs the user did not give.

        On a ``prompt``, answering ``back`` restarts the walk with every earlier answer replayed
        but the last, so that question is asked again. Without one, every input missing at the
        node the walk cannot decide is reported at once (:class:`MissingInputs`).
        """
        if prompt is None:
            return self._walk(dict(given or {}), None, presets)
        recorder = prompt if isinstance(prompt, _Recorder) else _Recorder(prompt)
        while True:
            try:
                return self._walk(dict(given or {}), recorder, presets)
            except _Back:
                recorder.rewind()

    def _walk(self, given: dict[str, object], prompt: Prompt | None, presets) -> Walk:
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
            state.require(node.id, sorted(KINDS[node.kind].symbols(node, self.conds)))
            try:
                steps.append(KINDS[node.kind].step(state, node))
            except _Missing as exc:
                raise self._hint(exc, given) from None
            current = steps[-1].to
            if len(steps) > len(self.tree.nodes):
                raise EvaluationError(self.tree.id, "the walk loops (run aiinfra tree check)")
        leaf = self.tree.leaves.get(current)
        if leaf is None:  # `aiinfra tree check` reports it too; a walk that reaches it stops here with the place
            path = ("start",) if not steps else ()
            raise KnowledgeError([Problem(self.tree.where(*path), self.tree.id, path[0] if path else f"nodes.{steps[-1].node}",
                                          f"leads to {current!r}, which is neither a node nor a leaf of the tree")])
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

        self._numpy_conds()
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

    def routes_to(self, leaf: str, answers: dict[str, str]) -> list[list[tuple[str, int | None]]]:
        """Every root-to-leaf route to ``leaf`` under the categorical ``answers`` (an unanswered ask
        follows all its options): each a list of (test node, branch index, None for ``otherwise``).
        A leaf's region is the union over its routes of each route's edges holding together (the
        tree's regions as ``aiinfra tree check`` proves them: no gaps, no overlaps)."""
        out: list[list[tuple[str, int | None]]] = []

        def go(at: str, path: list) -> None:
            if at in self.tree.leaves:
                if at == leaf:
                    out.append(path)
                return
            node = self.tree.nodes[at]
            if node.kind == "ask":
                for option, target in node.options:
                    if answers.get(node.input, option) == option:
                        go(target, path)
                return
            for i, b in enumerate(node.branches):
                go(b.to, [*path, (node.id, i)])
            if node.otherwise:
                go(node.otherwise, [*path, (node.id, None)])

        go(self.tree.start, [])
        return out

    def edge_symbols(self, edge: tuple[str, int | None]) -> set[str]:
        """The numeric symbols deciding one edge (its branch and every earlier branch of the node)."""
        node = self.tree.nodes[edge[0]]
        last = len(node.branches) - 1 if edge[1] is None else edge[1]
        return {n for i in range(last + 1) for n in self.conds[(node.id, i)][0]}

    def edge_holds(self, edge: tuple[str, int | None], columns: dict[str, object]):
        """Whether a walk takes ``edge`` at each point: its branch holds and no earlier one does (the
        first true branch wins), or none holds for ``otherwise``. ``columns`` are NumPy arrays in the
        symbols' declared units, one per name of :meth:`edge_symbols`."""
        import numpy as np

        self._numpy_conds()
        node = self.tree.nodes[edge[0]]
        count = max(np.size(v) for v in columns.values())
        base = {}
        for n in self.edge_symbols(edge):  # a tree parameter not in the columns keeps its declared value
            value = columns[n] if n in columns or self.symbols.info(n)["kind"] != "parameter" else self.symbols.info(n)["default"]
            base[n] = np.asarray(value, dtype=float) * self.symbols.scale(n) * np.ones(count)
        earlier = np.zeros(count, dtype=bool)
        last = len(node.branches) if edge[1] is None else edge[1]
        for i in range(last):
            used, fn = self._np_conds[(node.id, i)]
            earlier |= np.asarray(fn(*[base[n] for n in used]), dtype=bool)
        if edge[1] is None:
            return ~earlier
        used, fn = self._np_conds[(node.id, edge[1])]
        return ~earlier & np.asarray(fn(*[base[n] for n in used]), dtype=bool)

    def _numpy_conds(self) -> None:
        if not hasattr(self, "_np_conds"):
            names = self.symbols.names()
            self._np_conds = {k: _numpy_condition(b.when, names) for k, b in
                              ((key, self.tree.nodes[key[0]].branches[key[1]]) for key in self.conds)}

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
        state.plan.optional = True  # on a terminal, a skipped input here may stay unknown
        try:
            base = [state.number(n) for n in used]
        except InputError as exc:  # a symbol only the boundary needs has no value: report, do not fail
            out["note"] = f"not evaluated: {exc.message}"
            return out
        finally:
            state.plan.optional = False
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


def runner(root, ident: str, module=None) -> Runner:
    """A Runner for tree ``ident`` of ``root`` (formulas compiled and cached as for calculators)."""
    from engine.numeric import compiled

    tree = load_one(root, ident)
    calc_records = None
    if any(i.produced_by.startswith("calc:") for i in tree.inputs.values()):
        from engine.numeric.calculators import load_records

        calc_records = load_records(root)
    # lenient: a formula refused elsewhere in the root stops only the trees that need it (Runner._refused, #24)
    return Runner(tree, module if module is not None else compiled.load(root, strict=False), calc_records)
