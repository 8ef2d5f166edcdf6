"""The Python API: the same operations as the CLI, returning result objects.

    >>> from engine import api
    >>> r = api.evaluate("F8", attention="gqa", layers=36, kv_heads=8, head_dim=128, kv_bytes="2B")
    >>> r.outputs["kv_bytes_per_token"].value
    147456.0

Inputs are numbers in the symbol's declared unit or strings with a unit or a range
(``"80GiB"``, ``"35..45%"``), exactly as ``--set`` takes them. ``root`` selects another
knowledge folder; the default is the shipped one.
"""

from __future__ import annotations

from engine.core.errors import InputError

_SHIPPED: list = []  # the shipped root, found once


def _root(root):
    """``root`` checked (a folder path), or the shipped root; a wrong type is an InputError, a missing folder
    the KnowledgeError ``formulas`` raises for it."""
    import os

    if root is not None:
        if not isinstance(root, str | os.PathLike):
            raise InputError("root", f"expected a folder path (str or os.PathLike), got a {type(root).__name__}")
        if not os.path.isdir(root):
            from engine.core.errors import KnowledgeError, Problem

            raise KnowledgeError([Problem(os.fspath(root), "", "", "is not a folder (expected a knowledge root with formulas/ and knowledge/)")])
        return root
    if not _SHIPPED:
        from engine.core.paths import shipped_root

        _SHIPPED.append(shipped_root())
    return _SHIPPED[0]


def _text(value, field: str) -> str:
    """An id or a name given to the API: a string, or an InputError naming ``field``."""
    if not isinstance(value, str):
        raise InputError(field, f"expected a string, got {value!r}" if value is None or isinstance(value, int | float) else f"expected a string, got a {type(value).__name__}")
    return value


def _optional_text(value, field: str) -> str | None:
    return None if value is None else _text(value, field)


def load(root=None):
    """The whole knowledge root (formulas, books, chapters, concepts, paths) as a Knowledge."""
    from engine.kb import knowledge

    knowledge.CALCULATOR_HANDLE = calculator  # kb.calculator(...) (kb does not import the API)
    return knowledge.Knowledge.load(_root(root))


def formulas(root=None) -> dict:
    """Metadata of every formula from the compiled module: id -> symbols, units, variants."""
    from engine.numeric import compiled

    return dict(compiled.memoised(_root(root)).FORMULAS)


def evaluate(formula_id: str, root=None, **inputs):
    """Evaluate one formula numerically (no sympy); returns an ``engine.numeric.evaluate.FormulaResult``.

    The compiled module is kept per root in this process (``compiled.memoised``): an edited
    formula file is seen by calls starting 10 ms after the edit.
    """
    from engine.numeric import compiled
    from engine.numeric.evaluate import evaluate as run

    _text(formula_id, "formula_id")
    module = compiled.memoised(_root(root))
    meta = module.FORMULAS.get(formula_id) or module.FORMULAS.get(formula_id.strip().upper())
    if meta is None:
        raise InputError("formula_id", f"no formula {formula_id!r} (known: {', '.join(module.FORMULAS)})")
    return run(meta, module, inputs)


def solve(formula_id: str, target: str, root=None, eq=None, le=None, ge=None, **inputs):
    """Solve a formula for ``target`` symbolically; returns an ``engine.numeric.solve.Solution``."""
    from engine.numeric.solve import solve as run

    _text(formula_id, "formula_id")
    _text(target, "target")
    relations = [(name, value) for name, value in (("eq", eq), ("le", le), ("ge", ge)) if value is not None]
    if len(relations) > 1:
        raise InputError("eq/le/ge", "give at most one of them")
    relation, bound = relations[0] if relations else ("eq", None)
    k = load(root)
    fid = formula_id.strip().upper()
    if fid not in k.formulas:
        raise InputError("formula_id", f"no formula {formula_id!r}")
    return run(k.formulas.get(fid), target, {n: str(v) for n, v in inputs.items()}, relation, None if bound is None else str(bound))


def check(root=None) -> list:
    """Every integrity problem of a root (an empty list when it is clean)."""
    from engine.check import integrity
    from engine.kb.knowledge import Knowledge

    return integrity.check(Knowledge.load(_root(root), strict=False))


def _markdown(result) -> str:
    from engine.cli.cmd_calc import render

    return render(result, "md", explain=False)


class CalculatorHandle:
    """One declared calculator, ready to run: ``calculator("kv-concurrency").run(context_tokens=8192, ...)``.

    ``run`` takes formula symbols as keyword arguments (numbers in the symbol's unit, or
    strings with a unit or a range, as ``--set`` takes them) plus ``model=`` and ``device=``
    presets, and returns an ``engine.numeric.calculators.CalcResult`` (``.outputs``, ``.to_json()``,
    ``_repr_markdown_`` for notebooks). ``sweep`` returns (xs, {output: array}).
    """

    def __init__(self, record: dict, root):
        from engine.numeric import calculators
        from engine.numeric.calculators import Calculator

        calculators.MARKDOWN = _markdown
        self.record = record
        self.root = root
        self.calc = Calculator.from_record(record)
        self.id = self.calc.id
        self.title = self.calc.title
        self.inputs = list(self.calc.inputs)
        self.outputs = list(self.calc.outputs)

    def __repr__(self) -> str:
        return f"<calculator {self.id}: {self.title}>"

    def run(self, model: str | None = None, device: str | None = None, precision: str = "bf16", **inputs):
        from engine.domain import presets
        from engine.numeric import compiled
        from engine.numeric.calculators import run

        model, device = _optional_text(model, "model"), _optional_text(device, "device")
        found = presets.precision_values(_text(precision, "precision"))  # kv_bytes follows the precision unless given
        if model or device:
            found.update(presets.load(self.root, model, device, precision, self.id))
        from engine.numeric.calculators import graph_of

        module = compiled.memoised(self.root, strict=False)  # refused only when its chain needs a refused formula (#24)
        result = run(self.calc, module, inputs, found)
        graph_of(module).warn_refused()
        return result

    def solve(self, target: str, where, model: str | None = None, device: str | None = None, precision: str = "bf16", numeric: bool = False,
              **inputs):
        """Solve the input ``target`` for ``where`` (``"OUTPUT >= V"`` or a list of them) through the whole chain, as
        ``aiinfra calc ID --solve TARGET --where ...`` does; returns an ``engine.numeric.calc_solve.CalcSolution``
        (``.interval``, ``.value``, ``.binding``, ``.answers[i].closed_form``, ``.to_json()``, the CLI's JSON)."""
        from engine.domain import presets
        from engine.numeric import calc_solve, compiled

        _text(target, "target")
        wheres = [where] if isinstance(where, str) else list(where) if isinstance(where, list | tuple) else None
        if not wheres or not all(isinstance(w, str) for w in wheres):
            raise InputError("where", f"expected 'OUTPUT >= V' or a list of such strings, got {where!r}")
        model, device = _optional_text(model, "model"), _optional_text(device, "device")
        found = presets.precision_values(_text(precision, "precision"))
        if model or device:
            found.update(presets.load(self.root, model, device, precision, self.id))
        from engine.numeric.calculators import graph_of

        module = compiled.memoised(self.root, strict=False)  # refused only when its chain needs a refused formula (#24)
        solution = calc_solve.solve(self.calc, module, inputs, found, target.strip(), wheres, numeric=bool(numeric))
        graph_of(module).warn_refused()
        return solution

    def sweep(self, name: str, low: float, high: float, points: int = 32, log: bool = False, model=None, device=None, precision="bf16", **inputs):
        from engine.numeric.calculators import sweep

        _text(name, "name")
        if name in inputs:
            raise InputError(name, "is swept; do not also give it as an input")
        low, high = _end(low, "low"), _end(high, "high")
        if not low < high:
            raise InputError("high", f"the range {low:g}..{high:g} is empty (expected low < high)")
        if not isinstance(points, int) or isinstance(points, bool):
            raise InputError("points", f"expected a whole number from 2 to 100,000, got {points!r}")
        result = self.run(model=model, device=device, precision=precision, **{**inputs, name: low})
        return sweep(result, name, low, high, points, log)


def _end(value, field: str) -> float:
    """One end of a sweep: a finite number in the swept symbol's unit."""
    import math
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(field, f"expected a number in the swept symbol's unit, got a {type(value).__name__}")
    try:
        out = float(value)
    except OverflowError:
        out = math.inf
    if not math.isfinite(out):
        raise InputError(field, f"expected a finite number, got {value if out != out else 'an infinite or too large one'}")
    return out


def calculators(root=None) -> dict[str, CalculatorHandle]:
    """Every declared calculator (name -> handle)."""
    from engine.numeric.calculators import load_records

    root = _root(root)
    return {cid.split(":", 1)[1]: CalculatorHandle(rec, root) for cid, rec in sorted(load_records(root).items())}


def calculator(name: str, root=None) -> CalculatorHandle:
    """The calculator ``name`` (``kv-concurrency`` or ``calc:kv-concurrency``); InputError naming the known ones."""
    _text(name, "name")
    found = calculators(root)
    key = name.strip().removeprefix("calc:")
    if key not in found:
        raise InputError("calculator", f"no calculator {name!r} (known: {', '.join(found) or 'none'})")
    return found[key]


def lab(number, root=None):
    """The book's lab ``number`` (``4``, ``"lab:4"``) and the expectation computed from its inputs:
    ``(record, engine.domain.labs.Expectation)``; InputError naming the known labs."""
    from engine.domain import labs
    from engine.kb.folders import folder_view
    from engine.numeric import compiled

    root = _root(root)
    record = labs.find(folder_view(root, "labs").labs, str(number))
    return record, labs.expectation(record, compiled.memoised(root))
