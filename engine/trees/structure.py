"""Tree integrity without sympy: references, symbols, units, reachability; :class:`Report`."""

from __future__ import annotations

from pathlib import Path

from engine.core.errors import ExprError, InputError, Problem, UnitError
from engine.core.record import dataclass, field
from engine.numeric.calc_records import Graph
from engine.numeric.evaluate import check_domain
from engine.trees.records import Node, Tree
from engine.trees.symbols import Symbols, parse_condition, pseudo_calculator

ALLOWED_NUMBERS = (0, 1)  # any other literal in a condition must be a named parameter


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
