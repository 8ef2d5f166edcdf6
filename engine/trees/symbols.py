"""The names a tree's conditions may use (:class:`Symbols`) and the tree seen as a calculator."""

from __future__ import annotations

from engine.numeric.calc_records import Calculator, Graph
from engine.trees.records import Tree


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
