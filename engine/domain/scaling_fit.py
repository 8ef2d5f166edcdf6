"""Fitting the Chinchilla parametric loss (FX430) to published points, as Hoffmann et al. 2022
fitted it (Appendix D.2), with the points of largest training compute held out.

The estimator is Hoffmann et al.'s: minimise over (a, b, e, alpha, beta), with A, B, E =
exp(a), exp(b), exp(e),

    sum_i Huber_delta( LSE(a - alpha log N_i, b - beta log D_i, e) - log L_i ),  delta = 1e-3,

from a grid of initialisations, keeping the lowest objective. The grid is a 72-start subset
of theirs unless ``full_grid`` asks for all 4,500 starts (the same optimum on the shipped
points, about 60 times slower). The minimiser is BFGS, as Besiroglu et al.'s notebook runs it,
where Hoffmann et al. name L-BFGS (the limited-memory form of the same quasi-Newton method;
on five unknowns it gives the same optimum, and SciPy's L-BFGS-B spends most of its time in
BLAS threads on a loaded machine). The held-out losses are predicted by FX430 itself from the
compiled formulas.
"""

from __future__ import annotations

import itertools

from engine.core.errors import InputError
from engine.core.record import dataclass
from engine.domain.scaling_data import LAW_FORMULA, Law, Points

HUBER_DELTA = 1e-3  # Hoffmann et al. Appendix D.2
METHOD = "BFGS"  # see the module docstring
# Hoffmann et al. Appendix D.2's grid: alpha, beta in {0, 0.5, ..., 2}, e in {-1, -0.5, ..., 1}, a, b in {0, 5, ..., 25}
FULL_GRID = {"a": (0, 5, 10, 15, 20, 25), "b": (0, 5, 10, 15, 20, 25), "e": (-1, -0.5, 0, 0.5, 1),
             "alpha": (0, 0.5, 1, 1.5, 2), "beta": (0, 0.5, 1, 1.5, 2)}
SMALL_GRID = {"a": (0, 10, 20), "b": (0, 10, 20), "e": (-1, 0.5), "alpha": (0, 0.5), "beta": (0, 0.5)}


@dataclass(frozen=True, slots=True)
class HeldOut:
    """One held-out run: what was published and what the fitted law predicts for it."""

    params: float
    tokens: float
    flops: float
    loss: float
    predicted: float

    @property
    def error(self) -> float:
        """Relative error of the prediction, predicted / observed - 1."""
        return self.predicted / self.loss - 1


@dataclass(frozen=True, slots=True)
class Fit:
    law: Law
    objective: float  # the summed Huber loss at the optimum
    starts: int
    fitted_on: int
    excluded: int
    held_out: tuple  # HeldOut, largest training compute first


def split(points: Points, holdout: int) -> tuple[list[int], list[int]]:
    """(indices fitted, indices held out): the ``holdout`` points of largest training FLOPs are held out."""
    if holdout < 0:
        raise InputError("holdout", f"expected 0 or more points to hold out, got {holdout}")
    if len(points) - holdout < 6:
        raise InputError("holdout", f"holds out {holdout} of {len(points)} points, leaving fewer than 6 to fit five constants")
    order = sorted(range(len(points)), key=lambda i: -points.flops[i])
    return sorted(order[holdout:]), order[:holdout]


def fit(points: Points, module, holdout: int = 2, full_grid: bool = False) -> Fit:
    """Fit FX430 to ``points`` less the ``holdout`` of largest compute; predict those with FX430."""
    import numpy as np

    train, held = split(points, holdout)
    n = np.log(np.array([points.params[i] for i in train]))
    d = np.log(np.array([points.tokens[i] for i in train]))
    y = np.log(np.array([points.loss[i] for i in train]))
    best = _minimise(n, d, y, FULL_GRID if full_grid else SMALL_GRID)
    a, b, e, alpha, beta = (float(v) for v in best.x)
    law = Law(float(np.exp(e)), float(np.exp(a)), float(np.exp(b)), alpha, beta,
              source=f"fitted here to {len(train)} points of {points.source}")
    predicted = predict(module, law, [points.params[i] for i in held], [points.tokens[i] for i in held])
    rows = tuple(HeldOut(points.params[i], points.tokens[i], points.flops[i], points.loss[i], float(p)) for i, p in zip(held, predicted, strict=True))
    starts = len(list(itertools.product(*(FULL_GRID if full_grid else SMALL_GRID).values())))
    return Fit(law, float(best.fun), starts, len(train), points.excluded, rows)


def predict(module, law: Law, params, tokens):
    """FX430 for each (N, D), through the compiled formula's NumPy function."""
    import numpy as np

    meta = module.FORMULAS[LAW_FORMULA]
    variant = next(iter(meta["variants"].values()))
    given = {**law.given(), "params": np.asarray(params, dtype=float), "train_tokens": np.asarray(tokens, dtype=float)}
    for name in variant["inputs"]:
        if name not in given:  # fit_token_unit: its documented default
            given[name] = meta["symbols"][name]["default"][0]
    return np.asarray(getattr(module, variant["np"])(*(given[name] for name in variant["inputs"])), dtype=float) * np.ones(len(params))


def _minimise(n, d, y, grid: dict):
    from scipy.optimize import minimize

    best = None
    for start in itertools.product(*(grid[k] for k in ("a", "b", "e", "alpha", "beta"))):
        result = minimize(_objective, start, args=(n, d, y), jac=True, method=METHOD)
        if result.success and (best is None or result.fun < best.fun):
            best = result
    if best is None:
        raise InputError("law", "no start of the grid converged (the points cannot be fitted by FX430)")
    return best


def _objective(p, n, d, y):
    """Hoffmann et al.'s summed Huber loss of LSE(a - alpha·log N, b - beta·log D, e) - log L, and its gradient."""
    import numpy as np

    a, b, e, alpha, beta = p
    t1, t2 = a - alpha * n, b - beta * d
    top = np.maximum(np.maximum(t1, t2), e)
    w1, w2, w3 = np.exp(t1 - top), np.exp(t2 - top), np.exp(e - top)
    total = w1 + w2 + w3
    r = top + np.log(total) - y
    small = np.abs(r) <= HUBER_DELTA
    value = np.where(small, 0.5 * r * r, HUBER_DELTA * (np.abs(r) - 0.5 * HUBER_DELTA)).sum()
    g = np.clip(r, -HUBER_DELTA, HUBER_DELTA) / total  # d Huber / d r, times d r / d (term) over the sum
    grad = np.array([(g * w1).sum(), (g * w2).sum(), (g * w3).sum(), -(g * w1 * n).sum(), -(g * w2 * d).sum()])
    return float(value), grad

