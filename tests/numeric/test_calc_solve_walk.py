"""Every calculator's (numeric input, numeric output) pairs through ``--solve`` (issue #33's done-when).

Each calculator runs at its first worked example; every numeric input it declares is solved for a
condition on every numeric output the run prints (the bound 1% past the example's value, ``>=`` and
``<=`` in turn). The answer is a closed form, an exact interval, a numeric bracket labelled numeric,
or an InputError that names why: never any other exception. Where SymPy answers, the numeric bracket
on the compiled chain gives the same ends to 1e-9 relative; through floor/ceiling the compiled chain
takes an argument within 1e-9 relative of a whole number as that number (engine/core/codegen.py) and
SymPy may rewrite the argument first (ceiling(o/16 + 112) = ceiling(o/16) + 112); an input that is a small
share of the step's argument moves the end by that 1e-9 divided by its share, so there the ends agree to 1e-7.
"""

from __future__ import annotations

import math

import pytest

from engine import api
from engine.core.errors import InputError
from engine.numeric import calc_solve, compiled
from engine.numeric.calc_records import graph_of
from engine.numeric.calculators import run

HANDLES = api.calculators()
# the compiled snap is 1e-9 of the step's argument; an input that is a small part of that argument moves the end by
# (argument / input's share) x 1e-9 relative (engine_overhead_bytes, 4 GiB of a 57 GB K/V budget: 14 x 1e-9)
STEP_TOLERANCE = 1e-7
pytestmark = pytest.mark.slow  # SymPy over every (input, output) pair: left out by make test-fast


def _pairs(handle, module):
    graph = graph_of(module)
    given = {k: str(v) for k, v in handle.record["examples"][0]["set"].items()}
    base = run(handle.calc, module, given, {})
    outputs = [(n, v.value) for n, v in base.outputs.items() if not isinstance(v.value, str) and math.isfinite(v.value)]
    inputs = [n for n in handle.calc.inputs if graph.known(n) and not graph.spec(n)["values"]]
    for i, (x, (out, value)) in enumerate((x, o) for x in inputs for o in outputs):
        bound = value * 1.01 if value else 0.01
        yield x, {k: v for k, v in given.items() if k != x}, f"{out} {'>=' if i % 2 == 0 else '<='} {bound!r}"


def _ends(pieces):
    return [v for p in pieces for v in p[:2] if math.isfinite(v)]


def _same(p: float, q: float, tol: float) -> bool:
    """Equal to ``tol`` relative; or both at the domain's zero end, where the compiled ceiling(c/16) snaps a
    c below 1.6e-8 to 0 blocks and the chain has no value (a division by zero) while SymPy's set starts at 0."""
    return abs(p - q) <= tol * max(abs(p), abs(q)) or (min(p, q) == 0 and max(p, q) < 1e-6)


def _steps(module, formulas) -> bool:
    return any("floor(" in v["expr"] or "ceiling(" in v["expr"] for f in formulas for v in module.FORMULAS[f]["variants"].values())


@pytest.mark.parametrize("name", sorted(HANDLES))
def test_every_input_against_every_output(name):
    handle = HANDLES[name]
    module = compiled.memoised(handle.root)
    seen = {"closed_form": 0, "interval": 0, "numeric": 0, "refused": 0}
    disagreements = []
    for x, given, where in _pairs(handle, module):
        try:
            sol = calc_solve.solve(handle.calc, module, given, {}, x, [where])
        except InputError as exc:
            seen["refused"] += 1
            assert exc.field in ("--solve", "--where", f"--set {x}") or exc.field.startswith("--set "), (x, where, exc)
            assert x in exc.message or where.split()[0] in exc.message or "needs" in exc.message, (x, where, exc)
            continue
        for a in sol.answers:
            seen[a.method] += 1
            assert all(lo <= hi for lo, hi, _, _ in a.pieces), (x, where, a.pieces)
            if a.method == "numeric":
                assert any(n.startswith("numeric:") or "numeric:" in n for n in a.notes), (x, where, a.notes)
                continue
            numeric = calc_solve.solve(handle.calc, module, given, {}, x, [where], numeric=True).answers[0]
            tol = STEP_TOLERANCE if _steps(module, sol.formulas) else 1e-9
            mine, theirs = _ends(a.pieces), _ends(numeric.pieces)
            if len(mine) != len(theirs) or not all(_same(p, q, tol) for p, q in zip(mine, theirs, strict=False)):
                disagreements.append(f"{x} for {where}: SymPy {a.pieces} vs numeric {numeric.pieces}")
    assert disagreements == []
    assert sum(seen.values()) > 0
    print(name, seen)
