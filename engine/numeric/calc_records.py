"""Calculator records and what every stage of a run shares: the record (``Calculator``), its
loading (``load_records``, ``cached_records``), the formula graph (``Graph``) and the result
(``CalcResult``). See engine/numeric/calculators.py for how a calculator runs.
"""

from __future__ import annotations

import re
import sys
import weakref
from pathlib import Path

from engine.core.errors import KnowledgeError, Problem
from engine.core.record import dataclass, field
from engine.numeric.evaluate import InputValue, OutputValue

FOLDER = ("knowledge", "calculators")
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
    provenance: list[str] = field(default_factory=list)  # for maintainers (the names -> symbols): JSON only, never text

    @property
    def name(self) -> str:
        return self.id.split(":", 1)[1]

    @classmethod
    def from_record(cls, rec: dict) -> Calculator:
        return cls(
            rec["id"], rec["title"], rec["title_zh"], list(rec.get("sections", ())), list(rec.get("chapters", ())),
            {i["symbol"]: {k: v for k, v in i.items() if k != "symbol"} for i in rec["inputs"]},
            list(rec["outputs"]), list(rec.get("assumptions", ())), list(rec.get("failure_boundaries", ())), rec.get("notes", ""),
            list(rec.get("refuse", ())), list(rec.get("optional_outputs", ())), list(rec.get("provenance", ())),
        )


def load_records(root) -> dict[str, dict]:
    """The calculator records of ``root`` (only this folder: the CLI does not load the whole root)."""
    records, problems = read_calculators(root)
    if problems:
        raise KnowledgeError(problems)
    return records


def read_calculators(root) -> tuple[dict[str, dict], list]:
    """The calculator records of ``root`` that load, and the problems of those that do not (a command
    about one calculator goes on when another is broken; ``aiinfra check`` stays strict)."""
    from engine.kb.schema import read_records
    from engine.kb.yamlio import plain

    base = Path(root).joinpath(*FOLDER)
    files = [(p, "/".join(FOLDER + (p.name,))) for p in sorted(base.glob("*.yaml"))] if base.is_dir() else []
    good, problems = read_records(files, "calculator", "calculator")
    return {data["id"]: plain(data) for _, data in good}, sorted(problems)


def cached_records(root) -> dict[str, dict]:
    """``load_records(root)`` through a JSON cache keyed by the calculator files and schema."""
    from engine.numeric import compiled

    key = compiled.files_key(root, ["/".join(FOLDER), "formulas"], ["engine/kb/schemas/calculator.json", "engine/numeric/calc_records.py", "engine/kb/yamlio.py", "engine/core/codegen.py"])

    return compiled.json_cached("calculators", key, lambda: load_records(root))  # data only, never code


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
        self._upstream: dict[tuple, frozenset] = {}  # the graph never changes: both walks are kept
        self._reach: dict[tuple, tuple] = {}
        # formulas the module was compiled without (engine.numeric.compiled.build_source): output symbol -> (id, problems)
        refused = getattr(module, "REFUSED", {})
        self.refused: dict[str, tuple[str, list[Problem]]] = {meta["symbol"]: (fid, [Problem(*p) for p in meta["problems"]]) for fid, meta in refused.items()}
        # symbols only refused formulas declare (no meaning without them): name -> the refused formula's output symbol
        self.orphans: dict[str, str] = {n: meta["symbol"] for meta in refused.values() for n in meta.get("symbols", ())
                                        if not self.known(n) and n not in self.refused}

    def spec(self, name: str) -> dict:
        if name in self.symbols:
            return self.symbols[name]
        out = self.formulas[self.producer[name]]["output"]
        return {"desc": out["desc"], "unit": out["unit"], "domain": "real", "values": [], "default": None, "default_source": ""}

    def unproduced(self, calc: Calculator) -> list[tuple[str, str]]:
        """(field path, symbol) of each output and optional output of ``calc`` that no formula produces."""
        fields = (("outputs", calc.outputs), ("optional_outputs", calc.optional_outputs))
        return [(f"{f}[{j}]", name) for f, names in fields for j, name in enumerate(names) if name not in self.producer]

    def unproduced_error(self, calc: Calculator, place: str = "", refused_first: bool = True) -> KnowledgeError | None:
        """The broken record a calculator with an output nobody produces is (None when every output has a producer);
        before (``refused_first``: a run) or after that rule (``aiinfra check``), the refused formulas its chain needs."""
        place = place or "/".join(FOLDER + (f"{calc.name}.yaml",))

        def unproduced() -> list[Problem]:
            return [Problem(place, calc.id, path, f"{name} is not produced by any formula") for path, name in self.unproduced(calc)]

        if refused_first:
            problems = self.needs_refused(calc, place) or unproduced()
        else:
            problems = unproduced() or self.needs_refused(calc, place)
        return KnowledgeError(problems) if problems else None

    def needs_refused(self, calc: Calculator, place: str) -> list[Problem]:
        """One problem per refused formula (left out of the compiled module) that ``calc`` needs: at the first output
        whose chain reaches it, else at an input only that formula declares; the formula's own problem is in the message."""
        if not self.refused:
            return []
        orphans = [(f"inputs[{i}]", n) for i, n in enumerate(calc.inputs) if n in self.orphans]
        if not orphans and not self.refused.keys() & self.reach(calc)[1]:
            return []
        out, named = [], set()
        fields = (("outputs", calc.outputs), ("optional_outputs", calc.optional_outputs))
        for path, name in ((f"{f}[{j}]", name) for f, names in fields for j, name in enumerate(names)):
            one = Calculator(calc.id, "", "", [], [], calc.inputs, [name])
            for symbol in sorted(self.refused.keys() & self.reach(one)[1] - named):
                named.add(symbol)
                out.append(Problem(place, calc.id, path, self.refused_text(name, symbol)))
        for path, name in orphans:
            if self.orphans[name] not in named:
                named.add(self.orphans[name])
                out.append(Problem(place, calc.id, path, self.refused_text(None, name)))
        return out

    def refused_text(self, name: str | None, symbol: str) -> str:
        """``NAME needs SYMBOL from FX5, which is refused: <FX5's first problem>`` (``needs SYMBOL ...`` without a name;
        ``SYMBOL is declared only by FX5, ...`` for a symbol only the refused formula declares)."""
        if symbol in self.orphans:
            fid, problems = self.refused[self.orphans[symbol]]
            return f"{symbol} is declared only by {fid}, which is refused: {problems[0]}"
        fid, problems = self.refused[symbol]
        head = f"{name} comes from {fid}" if name == symbol else f"{name + ' ' if name else ''}needs {symbol} from {fid}"
        return f"{head}, which is refused: {problems[0]}"

    def warn_refused(self) -> None:
        """The refused formulas a run did not need: one warning line on stderr (``aiinfra check`` lists them)."""
        if self.refused:
            from engine.kb.folders import warn_ignored

            warn_ignored(sorted(p for _, problems in self.refused.values() for p in problems))

    def known(self, name: str) -> bool:
        return name in self.symbols or name in self.producer

    def default(self, name: str):
        spec = self.symbols.get(name)
        return None if spec is None else spec["default"]

    def upstream(self, names: list[str]) -> set[str]:
        """Every symbol the producers of ``names`` depend on, over all variants."""
        key = tuple(names)
        if key not in self._upstream:
            self._upstream[key] = frozenset(self._walk_up(names))
        return set(self._upstream[key])

    def _walk_up(self, names: list[str]) -> set[str]:
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
        key = (tuple(calc.outputs), tuple(calc.optional_outputs), tuple((n, s.get("default") is not None) for n, s in calc.inputs.items()))
        if key not in self._reach:
            self._reach[key] = self._walk_reach(calc)
        fids, symbols = self._reach[key]
        return list(fids), set(symbols)

    def _walk_reach(self, calc: Calculator) -> tuple[list[str], set[str]]:
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


_GRAPHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def graph_of(module) -> Graph:
    """``Graph(module)``, built once per compiled module (a module's formula table never changes)."""
    graph = _GRAPHS.get(module)
    if graph is None:
        graph = _GRAPHS[module] = Graph(module)
    return graph


class CalcResult:
    """One calculation; ``to_json`` is the DESIGN.md contract."""

    def __init__(self, calc: Calculator, inputs, outputs, formulas, assumptions, warnings, steps):
        self.calculator = calc.id
        self.title = calc.title
        self.inputs: dict[str, InputValue] = inputs
        self.outputs: dict[str, OutputValue] = outputs
        self.formulas: list[str] = formulas
        self.assumptions: list[str] = assumptions
        self.provenance: list[str] = list(calc.provenance)
        self.warnings: list[str] = warnings
        # for --explain: id, name, variant, symbol, expr, substituted, value, unit; a callable is
        # called on first use (most runs never print the steps)
        self._steps = steps
        self.ranking: dict[str, list[tuple[str, float]]] = {}  # output -> [(ranged input, share)]

    @property
    def steps(self) -> list[dict]:
        if callable(self._steps):
            self._steps = self._steps()
        return self._steps

    @steps.setter
    def steps(self, value: list[dict]) -> None:
        self._steps = value

    def to_json(self) -> dict:
        return {
            "calculator": self.calculator,
            "inputs": {k: v._asdict() for k, v in self.inputs.items()},
            "outputs": {k: v._asdict() for k, v in self.outputs.items()},
            "formulas": list(self.formulas),
            "assumptions": list(self.assumptions),
            "provenance": list(self.provenance),
            "warnings": list(self.warnings),
            "ranking": {k: [{"input": n, "share": share} for n, share in v] for k, v in self.ranking.items()},
        }

    def _repr_markdown_(self) -> str:
        # the text is the CLI's (engine.cli.cmd_calc.render); engine.api installs it as
        # engine.numeric.calculators.MARKDOWN, read here without an import (calculators never import upward)
        hook = getattr(sys.modules.get("engine.numeric.calculators"), "MARKDOWN", None)
        return hook(self) if hook is not None else repr(self)
