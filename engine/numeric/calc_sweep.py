"""A calculator's outputs over one numeric input (NumPy, vectorised through the compiled twins)."""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.units import Quantity
from engine.numeric.calc_ranges import _chain
from engine.numeric.calc_records import CalcResult
from engine.numeric.evaluate import check_domain

MAX_POINTS = 100_000  # a sweep's points are CSV rows: about 3 s of formatting at the cap
# units that count whole things: a sweep over them steps through whole values (issue 28: a context_tokens sweep
# printed 2333.333 tokens), as over a symbol whose domain is an integer
COUNTS = frozenset({"tokens", "tokens/requests", "requests", "GPU"})


def sweep(result: CalcResult, name: str, low: float, high: float, points: int, log: bool = False):
    """Every output of ``result``'s chain over ``name`` from low to high (NumPy, vectorised; no sympy).

    Returns (xs, {output: array}). ``name`` must be a numeric input of the chain; the other
    inputs keep their point values and the selectors their choices.
    """
    import numpy as np

    plan, module = result._plan, result._module
    if name not in plan.quantities:
        numeric = ", ".join(n for n in plan.quantities) or "none"
        raise InputError("--sweep", f"{name} is not a numeric input of this chain (its numeric inputs: {numeric})")
    if not 2 <= points <= MAX_POINTS:
        raise InputError("--points", f"expected a whole number from 2 to {MAX_POINTS:,}, got {points}")
    if log and low <= 0:
        raise InputError("--sweep", f"a --log sweep needs a positive low end (got {low:g})")
    spec = plan.graph.spec(name)
    xs = np.geomspace(low, high, points) if log else np.linspace(low, high, points)
    if spec["domain"].endswith("integer") or spec["unit"] in COUNTS:
        xs = np.unique(np.round(xs))
    for end in (xs[0], xs[-1]):
        check_domain(name, Quantity.point(float(end)), spec)
    values = {n: q.value for n, q in plan.quantities.items()}
    values[name] = xs
    with np.errstate(all="ignore"):
        out = _chain(plan.order, module, values, numpy=True)
    ones = np.ones_like(xs, dtype=float)
    return xs, {n: np.asarray(out[n], dtype=float) * ones for n in result.outputs if n != name}
