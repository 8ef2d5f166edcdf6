"""Formula records from YAML, and the formula graph.

``build_formula`` turns one schema-checked raw record into a :class:`Formula`, collecting
every problem (bad unit, refused expression, dimension mismatch, bad variant or example).
``FormulaSet`` indexes formulas by id and by symbol and builds the formula graph: each
output symbol is a node, each input symbol an edge into it (STYLE.md habit 4). Two
producers of one symbol, or one symbol with two units, are load errors naming both ids.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable

from engine.core.dimensions import dimension_of
from engine.core.errors import DimensionError, ExprError, Problem, UnitError
from engine.core.expr import parse
from engine.core.units import DIMENSIONLESS, Unit, format_dims, parse_quantity, parse_unit
from engine.kb.records import Example, Formula, OutputSpec, SymbolSpec, Variant

COUNT_UNITS = ("token", "tokens", "request", "requests")
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # fullmatch: no trailing newline, unlike re's $
_FORMULA_ID = re.compile(r"FX?[0-9]+")


def field_place(raw: dict, place: str, path: str) -> str:
    """``file:line`` of the field at ``path`` (``variants[1].expr``, ``symbols.x.unit``) in the record
    that starts at ``place``; the record's own line when the field's is not known."""
    from engine.kb.yamlio import mark_at

    steps: list[object] = []
    for part in path.split(".") if path else ():
        name, _, rest = part.partition("[")
        steps.append(name)
        steps += [int(i) for i in re.findall(r"(\d+)\]", "[" + rest)] if rest else []
    mark = mark_at(raw, steps) if steps else None
    return f"{place.rsplit(':', 1)[0]}:{mark[0]}" if mark and ":" in place else place


def build_formula(raw: dict, place: str) -> tuple[Formula | None, list[Problem]]:
    fid = str(raw.get("id", "-"))
    problems: list[Problem] = []

    def problem(path: str, message: str) -> None:
        problems.append(Problem(field_place(raw, place, path), fid, path, message))

    if not _FORMULA_ID.fullmatch(fid):
        problem("id", f"{fid!r} is not a formula id (expected F<n> or FX<n>)")
        return None, problems
    named = [(f"symbols.{name}", name) for name in raw["symbols"]] + [("output.symbol", raw["output"]["symbol"])]
    for path, name in named:
        if not _IDENTIFIER.fullmatch(name):
            problem(path, f"{name!r} is not a symbol name (expected a letter, then letters, digits or _)")
    if problems:
        return None, problems

    symbols: dict[str, SymbolSpec] = {}
    for name, spec in raw["symbols"].items():
        sym = _build_symbol(name, spec, problem)
        if sym is not None:
            symbols[name] = sym

    output = _build_output(raw["output"], problem)
    if output is not None and output.symbol in raw["symbols"]:
        problem(f"symbols.{output.symbol}", "the output symbol must not also be an input")

    selector = raw.get("selector", "")
    raw_variants = raw.get("variants") or [{"when": "", "expr": raw.get("expr", "")}]
    if selector:
        sel = symbols.get(selector)
        if sel is None or not sel.categorical:
            problem("selector", f"{selector!r} must be a categorical symbol declared under symbols")
        else:
            whens = [v["when"] for v in raw_variants]
            for i, when in enumerate(whens):
                if when not in sel.values:
                    problem(f"variants[{i}].when", f"{when!r} is not one of {selector}'s values ({', '.join(sel.values)})")
            for value in sel.values:
                if whens.count(value) != 1:
                    problem("variants", f"{selector}={value} needs exactly one variant, found {whens.count(value)}")

    numeric = {n: s for n, s in symbols.items() if not s.categorical}
    # names declared as numeric symbols, even those whose unit failed (no cascade of errors)
    declared = frozenset(n for n, spec in raw["symbols"].items() if spec.get("domain") != "categorical")
    units_ok = len(numeric) == len(declared)
    variants = []
    for i, rv in enumerate(raw_variants):
        path = f"variants[{i}].expr" if "variants" in raw else "expr"
        try:
            tree = parse(rv["expr"], declared)
        except ExprError as exc:
            problems.append(exc.located(field_place(raw, place, path), fid, path).problem())
            continue
        variants.append(
            Variant(str(rv["when"]), rv["expr"], tree, rv.get("name", ""), tuple(rv.get("assumptions", ())), rv.get("notes", ""))
        )
        if output is not None and units_ok:
            _check_dimensions(tree, numeric, output, path, problem)

    used = {s for v in variants for s in v.tree.symbols()} | ({selector} if selector else set())
    for name in symbols:
        if name not in used and len(variants) == len(raw_variants):
            problem(f"symbols.{name}", "is declared but no expression uses it")

    ordered = []
    for i, text in enumerate(raw.get("ordered", ())):
        pair = tuple(part.strip() for part in text.split(">"))
        bad = [n for n in pair if n not in numeric]
        if bad or pair[0] == pair[1]:
            problem(f"ordered[{i}]", f"{text!r} must order two different numeric inputs of this formula ({', '.join(bad) or pair[0]} is not one)")
        else:
            ordered.append(pair)
    examples = _build_examples(raw["examples"], problem)
    if problems or output is None:
        return None, problems
    formula = Formula(
        id=fid,
        name=raw["name"],
        name_zh=raw.get("name_zh", ""),
        section=raw["section"],
        defined_in=raw["defined_in"],
        also_in=tuple(raw.get("also_in", ())),
        output=output,
        symbols=symbols,
        variants=tuple(variants),
        selector=selector,
        examples=examples,
        assumptions=tuple(raw.get("assumptions", ())),
        metric=raw.get("metric", ""),
        notes=raw.get("notes", ""),
        sources=tuple(raw.get("sources", ())),
        place=place,
        ordered=tuple(ordered),
    )
    return formula, problems


def _build_examples(raw_examples: list, problem) -> tuple[Example, ...]:
    examples = []
    for i, e in enumerate(raw_examples):
        expect = _finite_float(e["expect"])
        if expect is None:
            problem(f"examples[{i}].expect", f"{_short_number(e['expect'])} is not a finite number below 1.8e308")
            continue
        examples.append(Example(dict(e["set"]), expect, e["source"], float(e.get("rel_tol", 1e-6)), e.get("note", "")))
    return tuple(examples)


def _finite_float(value) -> float | None:
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):
        return None
    return number if math.isfinite(number) else None


def _short_number(value) -> str:
    """The number as text without tripping Python's 4,300-digit limit on int -> str."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"a {value.bit_length()}-bit integer"
    return repr(value)


def _build_symbol(name: str, spec: dict, problem) -> SymbolSpec | None:
    domain = spec["domain"]
    if domain == "categorical":
        values = tuple(str(v) for v in spec["values"])
        default = spec.get("default")
        if default is not None and str(default) not in values:
            problem(f"symbols.{name}.default", f"{default!r} is not one of {', '.join(values)}")
            return None
        return SymbolSpec(name, spec["desc"], domain, "", None, values, None if default is None else str(default), spec.get("default_source", ""))
    unit_text = spec["unit"]
    try:
        unit = parse_unit(unit_text)
    except UnitError as exc:
        problem(f"symbols.{name}.unit", f"{exc.text!r} {exc.message}")
        return None
    default = None
    if "default" in spec:
        if _finite_float(spec["default"]) is None and isinstance(spec["default"], int | float):
            problem(f"symbols.{name}.default", f"{_short_number(spec['default'])} is not a finite number below 1.8e308")
            return None
        try:
            default = parse_quantity(str(spec["default"]), unit_text)
        except UnitError as exc:
            problem(f"symbols.{name}.default", f"{exc.text!r} {exc.message}")
            return None
        if "default_source" not in spec:
            problem(f"symbols.{name}.default_source", "a default value needs its source")
    return SymbolSpec(name, spec["desc"], domain, unit_text, unit, (), default, spec.get("default_source", ""))


def _build_output(spec: dict, problem) -> OutputSpec | None:
    try:
        unit = parse_unit(spec["unit"])
    except UnitError as exc:
        problem("output.unit", f"{exc.text!r} {exc.message}")
        return None
    per = spec.get("per", "")
    if per and per not in COUNT_UNITS:
        problem("output.per", f"{per!r} is not a count unit (expected one of {', '.join(COUNT_UNITS)})")
        return None
    return OutputSpec(spec["symbol"], spec["desc"], spec["unit"], unit, per)


def _check_dimensions(tree, symbols: dict[str, SymbolSpec], output: OutputSpec, path: str, problem) -> None:
    dims = {n: s.unit.dims for n, s in symbols.items() if s.unit is not None}
    try:
        got = dimension_of(tree, dims)
    except DimensionError as exc:
        problem(path, exc.message)
        return
    expected = output.unit.dims
    if output.per:
        expected = (output.unit * parse_unit(output.per)).dims
    if got != expected:
        per = f" (× {output.per}, as output.per says)" if output.per else ""
        problem(path, f"the expression is in {format_dims(got)} but the output {output.symbol} is declared in {output.unit_text} ({format_dims(output.unit.dims)}){per}")


def expected_base_dims(output: OutputSpec):
    return (output.unit * parse_unit(output.per)).dims if output.per else output.unit.dims


class FormulaSet:
    """Formulas by id, symbols by name, and the formula graph."""

    def __init__(self, formulas: Iterable[Formula]):
        self.by_id: dict[str, Formula] = {}
        for f in formulas:
            self.by_id[f.id] = f
        self.producers: dict[str, list[str]] = defaultdict(list)
        self.consumers: dict[str, list[str]] = defaultdict(list)
        for f in self.by_id.values():
            self.producers[f.output.symbol].append(f.id)
            for name in f.inputs:
                self.consumers[name].append(f.id)

    def __iter__(self):
        return iter(sorted(self.by_id.values(), key=formula_sort_key))

    def __len__(self) -> int:
        return len(self.by_id)

    def __contains__(self, fid: str) -> bool:
        return fid in self.by_id

    def get(self, fid: str) -> Formula:
        return self.by_id[fid]

    def problems(self) -> list[Problem]:
        """Symbol rules: one producer per symbol, one unit per symbol, no cycles."""
        out: list[Problem] = []
        for symbol, fids in self.producers.items():
            if len(fids) > 1:
                first, *rest = sorted(fids, key=_id_key)
                for other in rest:
                    f = self.by_id[other]
                    out.append(Problem(f.place, other, "output.symbol", f"{symbol!r} is also produced by {first}; one symbol has one producer (make them variants of one formula)"))
        units: dict[str, tuple[str, Unit, str]] = {}
        for f in self:
            declared = [(f.output.symbol, f.output.unit, f.output.unit_text, "output.unit")]
            declared += [(n, s.unit, s.unit_text, f"symbols.{n}.unit") for n, s in f.symbols.items() if s.unit is not None]
            for name, unit, text, path in declared:
                if name not in units:
                    units[name] = (f.id, unit, text)
                    continue
                first_id, first_unit, first_text = units[name]
                if not unit.same_as(first_unit):
                    out.append(Problem(f.place, f.id, path, f"symbol {name!r} is in {text} here but in {first_text} in {first_id}; one symbol has one unit"))
        out += self._cycle_problems()
        return out

    def _cycle_problems(self) -> list[Problem]:
        import networkx as nx

        graph = self.graph()
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            return []
        names = [u for u, _v in cycle] + [cycle[0][0]]
        fid = graph.edges[cycle[0]]["formula"]
        return [Problem(self.by_id[fid].place, fid, "", "the formula graph has a cycle: " + " --> ".join(names))]

    def graph(self):
        """DiGraph over symbol names: an edge input --> output per formula (attribute ``formula``)."""
        import networkx as nx

        g = nx.DiGraph()
        for f in self:
            g.add_node(f.output.symbol, kind="output", unit=f.output.unit_text)
            for name in f.inputs:
                if name not in g:
                    g.add_node(name, kind="input", unit=f.symbols[name].unit_text)
                g.add_edge(name, f.output.symbol, formula=f.id)
        return g

    def used_by(self, fid: str) -> list[str]:
        """Formulas that take this formula's output as an input."""
        return sorted(self.consumers.get(self.by_id[fid].output.symbol, []), key=_id_key)


def _id_key(fid: str) -> tuple[int, int]:
    return (1, int(fid[2:])) if fid.startswith("FX") else (0, int(fid[1:]))


def formula_sort_key(f: Formula) -> tuple[int, int]:
    return _id_key(f.id)


__all__ = ["FormulaSet", "build_formula", "formula_sort_key", "DIMENSIONLESS"]
