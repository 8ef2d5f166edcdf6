"""Calibrated efficiencies, fitted with SciPy's least squares and scored with whole sources held out.

Each kind declares its parameters (start, lower, upper bound, and whether it is fitted per group: the
device generation, or the fabric for collectives). One least-squares problem per fit: residuals are
log(predicted / measured) for every record (so a 2x over- and under-prediction weigh the same), with a
soft-L1 loss against the odd outlier, plus a prior pulling each group's value toward the shared one
(``PRIOR`` per unit of log), so that a group seen in one source does not swing to fit it alone. A group
no training record has takes the shared value.

Held out: for every source (one file, one published table) the fit is redone without it and its rows
are predicted by that fit (leave-one-source-out); nothing of a held-out table reaches its own prediction.
"""

from __future__ import annotations

import numpy as np

from engine.core.record import dataclass
from engine.measure import kernels, serve, train
from engine.measure.generations import generation, precision_class

PRIOR = 3.0  # weight of log(group / shared) against one record's log residual


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    start: float
    low: float
    high: float
    grouped: bool


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    terms: object  # (root, Measurement) -> dict of floats
    times: object  # (terms arrays, params arrays) -> {metric: array}
    params: tuple[Param, ...]
    group: object  # Measurement -> group name


def _fabric(m) -> str:
    return kernels._fabric_of(m.workload)


def _gen(m) -> str:
    return generation(m.device)


def _gen_precision(m) -> str:
    return f"{generation(m.device)}:{precision_class(m.precision.get('compute'))}"


KINDS = {
    "serve": Kind("serve", serve.terms, serve.times, (
        Param("e_prefill", 0.5, 0.05, 1.0, True), Param("e_decode", 0.5, 0.05, 1.0, True), Param("e_hbm", 0.8, 0.2, 1.0, True),
        Param("e_link", 0.7, 0.1, 1.0, False), Param("ar_latency", 5e-6, 1e-7, 1e-4, False), Param("overhead", 3e-3, 1e-5, 0.1, False)), _gen),
    "train": Kind("train", train.terms, train.times, (
        Param("e_train", 0.5, 0.05, 1.0, True), Param("exposed", 0.5, 0.01, 1.0, False),
        Param("x_half", 64.0, 1.0, 1024.0, False), Param("kappa", 20.0, 1.0, 200.0, False)), _gen_precision),
    "gemm": Kind("gemm", kernels.gemm_terms, kernels.gemm_times, (
        Param("e_gemm", 0.7, 0.05, 1.0, True), Param("launch", 5e-6, 1e-7, 1e-3, True), Param("e_hbm", 0.8, 0.2, 1.0, False)), _gen),
    "hbm": Kind("hbm", kernels.hbm_terms, kernels.hbm_times, (Param("e_hbm", 0.85, 0.2, 1.0, True),), _gen),
    "collective": Kind("collective", kernels.collective_terms, kernels.collective_times, (
        Param("latency", 5e-6, 1e-8, 1e-3, True), Param("e_link", 0.8, 0.05, 3.0, True)), _fabric),
}


@dataclass(frozen=True, slots=True)
class Table:
    """One kind's mapped records as arrays: terms, the measured values, their metrics, groups and sources."""

    kind: Kind
    rows: tuple  # Measurement
    terms: dict  # name -> np.ndarray
    measured: np.ndarray
    groups: tuple[str, ...]
    sources: tuple[str, ...]  # each row's family, the unit held out


def table(kind: Kind, rows: list, terms: list[dict]) -> Table:
    keys = [k for k, v in terms[0].items() if isinstance(v, int | float) and not isinstance(v, bool)] if terms else []
    t = {k: np.array([float(x[k]) for x in terms]) for k in keys}
    return Table(kind, tuple(rows), t, np.array([r.value for r in rows]), tuple(kind.group(r) for r in rows), tuple(r.family for r in rows))


def _layout(kind: Kind, groups: list[str]) -> list[tuple[str, str]]:
    """The fitted vector's slots: (param, 'shared') for every parameter, (param, group) for grouped ones."""
    out = [(p.name, "shared") for p in kind.params]
    out += [(p.name, g) for p in kind.params if p.grouped for g in groups]
    return out


def values_for(kind: Kind, fitted: dict, groups) -> dict[str, np.ndarray]:
    """Per-record parameter arrays from a fit ({param: {group or 'shared': value}})."""
    out = {}
    for p in kind.params:
        by = fitted[p.name]
        out[p.name] = np.array([by.get(g, by["shared"]) if p.grouped else by["shared"] for g in groups])
    return out


def predict(tab: Table, fitted: dict, mask=None) -> np.ndarray:
    idx = np.arange(len(tab.rows)) if mask is None else np.flatnonzero(mask)
    t = {k: v[idx] for k, v in tab.terms.items()}
    groups = [tab.groups[i] for i in idx]
    out = tab.kind.times(t, values_for(tab.kind, fitted, groups))
    return np.array([out[tab.rows[i].metric][j] for j, i in enumerate(idx)])


def fit(tab: Table, mask=None, start: dict | None = None) -> dict:
    """Least-squares fit on the rows of ``mask`` (all when None): {param: {'shared': v, group: v, ...}}."""
    from scipy.optimize import least_squares

    kind = tab.kind
    idx = np.arange(len(tab.rows)) if mask is None else np.flatnonzero(mask)
    if len(idx) == 0:
        return {p.name: {"shared": p.start} for p in kind.params}
    groups = sorted({tab.groups[i] for i in idx})
    slots = _layout(kind, groups)
    params = {p.name: p for p in kind.params}
    lo = np.log([params[n].low for n, _ in slots])
    hi = np.log([params[n].high for n, _ in slots])
    first = [(start or {}).get(n, {}).get(g, (start or {}).get(n, {}).get("shared", params[n].start)) for n, g in slots]
    x0 = np.clip(np.log(first), lo + 1e-9, hi - 1e-9)
    t = {k: v[idx] for k, v in tab.terms.items()}
    rec_groups = [tab.groups[i] for i in idx]
    metrics = [tab.rows[i].metric for i in idx]
    measured = tab.measured[idx]
    shared_at = {n: i for i, (n, g) in enumerate(slots) if g == "shared"}
    prior_pairs = [(i, shared_at[n]) for i, (n, g) in enumerate(slots) if g != "shared"]
    by_metric = {mname: np.array([j for j, x in enumerate(metrics) if x == mname]) for mname in set(metrics)}

    def unpack(x) -> dict:
        out: dict = {}
        for (n, g), v in zip(slots, np.exp(x), strict=True):
            out.setdefault(n, {})[g] = float(v)
        return out

    def residuals(x):
        fitted = unpack(x)
        out = kind.times(t, values_for(kind, fitted, rec_groups))
        pred = np.empty(len(idx))
        for mname, js in by_metric.items():
            pred[js] = out[mname][js]
        r = np.log(np.maximum(pred, 1e-30) / measured)
        prior = np.array([PRIOR * (x[i] - x[j]) for i, j in prior_pairs])
        return np.concatenate([r, prior])

    sol = least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.3, max_nfev=200)
    return unpack(sol.x)


def held_out(tab: Table, start: dict | None = None) -> np.ndarray:
    """Each row predicted by the fit on every other source (leave one source out), each fit started from ``start``."""
    pred = np.empty(len(tab.rows))
    sources = np.array(tab.sources)
    for src in sorted(set(tab.sources)):
        out = sources == src
        fitted = fit(tab, ~out, start)
        pred[out] = predict(tab, fitted, out)
    return pred
