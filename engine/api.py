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

from engine.errors import InputError


def _root(root):
    from engine.paths import shipped_root

    return shipped_root() if root is None else root


def load(root=None):
    """The whole knowledge root (formulas, books, chapters, concepts, paths) as a Knowledge."""
    from engine.knowledge import Knowledge

    return Knowledge.load(_root(root))


def formulas(root=None) -> dict:
    """Metadata of every formula from the compiled module: id -> symbols, units, variants."""
    from engine import compiled

    return dict(compiled.load(_root(root)).FORMULAS)


def evaluate(formula_id: str, root=None, **inputs):
    """Evaluate one formula numerically (no sympy); returns an ``engine.evaluate.FormulaResult``."""
    from engine import compiled
    from engine.evaluate import evaluate as run

    module = compiled.load(_root(root))
    fid = formula_id.strip().upper()
    if fid not in module.FORMULAS:
        raise InputError("formula_id", f"no formula {formula_id!r} (known: {', '.join(module.FORMULAS)})")
    return run(module.FORMULAS[fid], module, inputs)


def solve(formula_id: str, target: str, root=None, eq=None, le=None, ge=None, **inputs):
    """Solve a formula for ``target`` symbolically; returns an ``engine.solve.Solution``."""
    from engine.solve import solve as run

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
    from engine import integrity
    from engine.knowledge import Knowledge

    return integrity.check(Knowledge.load(_root(root), strict=False))
