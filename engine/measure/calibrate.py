"""Calibrated efficiencies, fitted with SciPy's least squares and scored with whole sources held out.

Each kind declares its parameters (start, lower, upper bound, and whether it is fitted per group: the
device generation, or the fabric for collectives). One least-squares problem per fit: residuals are
log(predicted / measured) for every record (so a 2x over- and under-prediction weigh the same), with a
soft-L1 loss against the odd outlier, plus a prior pulling each group's value toward the shared one
(``PRIOR`` per unit of log), so that a group seen in one source does not swing to fit it alone. A group
no training record has takes the shared value.

Held out: for every table (one file) the fit is redone without it and its rows are predicted by that fit
(leave one table out); nothing of a held-out table reaches its own prediction. Stricter, by family: the whole
series of a publisher's page (all releases of one performance table) is left out together.
"""

from __future__ import annotations

import numpy as np

from engine.core.record import dataclass
from engine.measure import kernels, replay, serve, train
from engine.measure.generations import generation, precision_class

PRIOR = 3.0
HELD_OUT_NFEV = 60  # a held-out fit starts from the fit on every table, a few steps away  # weight of log(group / shared) against one record's log residual


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    start: float
    low: float
    high: float
    by: str | None  # fitted per group of this grouping (a key of Kind.groupings), or one shared value (None)


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    terms: object  # (root, Measurement) -> dict of floats
    times: object  # (terms arrays, params arrays) -> {metric: array}
    params: tuple[Param, ...]
    groupings: dict  # grouping name -> (Measurement -> group name)
    replay: object = None  # a module with replayable(terms, metric, statistic) and value(terms, params, metric, statistic), or None


def _fabric(m) -> str:
    return kernels.fabric_of(m.workload)


def _transport(m) -> str:
    """The network a collective's hops across nodes cross (kernels.transport_of), for its network latency scale."""
    return kernels.transport_of(m.workload)


def _gen(m) -> str:
    return generation(m.device)


def _gen_precision(m) -> str:
    return f"{generation(m.device)}:{precision_class(m.precision.get('compute'))}"


def _engine(m) -> str:
    """The engine and its release series (vllm-0.7, sglang-0.5): a step's scheduling, sampling and launch overhead belongs to
    the release that ran it (vLLM's V1 engine replaced V0's scheduler as the default in 0.8.0; a release is rewritten,
    not tuned), so one engine's old and new releases are not forced to share one constant. A row whose version does not
    read as major.minor keeps the engine's name alone. A runtime a release ships beside its default (the record's
    backend: TensorRT-LLM 0.17's PyTorch preview beside its TensorRT engines) is a series of its own."""
    import re

    name = (m.engine or "unstated").lower()
    if getattr(m, "backend", None) and m.engine:
        name = f"{name}-{m.backend.lower()}"
    v = re.match(r"v?(\d+)\.(\d+)", (m.engine_version or "").strip())
    return f"{name}-{int(v.group(1))}.{int(v.group(2))}" if v and m.engine else name


def _engine_name(m) -> str:
    """The engine (and the runtime it ran, the record's backend) without its release: the host work per sequence in a
    step is the engine's language and design (vLLM's and SGLang's Python schedulers, TensorRT-LLM's C++ executor)."""
    name = (m.engine or "unstated").lower()
    return f"{name}-{m.backend.lower()}" if getattr(m, "backend", None) and m.engine else name


KINDS = {
    "serve": Kind("serve", serve.terms, serve.times, (
        Param("e_prefill", 0.5, 0.05, 1.0, "gen"), Param("e_decode", 0.5, 0.05, 1.0, "gen"), Param("e_hbm", 0.8, 0.2, 1.0, "gen"),
        Param("e_kv", 0.6, 0.1, 1.0, "gen"), Param("e_link", 0.7, 0.1, 1.0, None), Param("ar_latency", 5e-6, 1e-7, 1e-4, None), Param("overhead", 3e-3, 1e-5, 0.1, "engine"),
        Param("e_dequant", 0.7, 0.05, 1.0, None), Param("overhead_seq", 2e-5, 1e-7, 1e-3, "engine_name"),
        Param("overhead_layer", 1e-4, 1e-7, 2e-3, "engine_name"), Param("overhead_moe", 1e-4, 1e-7, 2e-3, "engine_name")),
        {"gen": _gen, "engine": _engine, "engine_name": _engine_name}, replay),
    "train": Kind("train", train.terms, train.times, (
        Param("e_train", 0.5, 0.05, 1.0, "gen"), Param("exposed", 0.5, 0.01, 1.0, None),
        Param("x_half", 64.0, 1.0, 1024.0, None), Param("kappa", 20.0, 1.0, 200.0, None)), {"gen": _gen_precision}),
    "gemm": Kind("gemm", kernels.gemm_terms, kernels.gemm_times, (
        Param("e_gemm", 0.7, 0.05, 1.0, "gen"), Param("launch", 5e-6, 1e-7, 1e-3, "gen"), Param("e_hbm", 0.8, 0.2, 1.0, None)), {"gen": _gen}),
    "hbm": Kind("hbm", kernels.hbm_terms, kernels.hbm_times, (Param("e_hbm", 0.85, 0.2, 1.0, "gen"),), {"gen": _gen}),
    "collective": Kind("collective", kernels.collective_terms, kernels.collective_times, (
        Param("lat_scale", 1.0, 0.1, 30.0, "gen"), Param("net_scale", 1.0, 0.1, 30.0, "transport"), Param("e_link", 0.8, 0.05, 3.0, "gen"),
        Param("e_inner", 0.8, 0.05, 1.0, None)), {"gen": _fabric, "transport": _transport}),
}


@dataclass(frozen=True, slots=True)
class Table:
    """One kind's mapped records as arrays: terms, the measured values, their metrics, groups and sources."""

    kind: Kind
    rows: tuple  # Measurement
    terms: dict  # name -> np.ndarray
    measured: np.ndarray
    groups: tuple[dict, ...]  # per row: grouping name -> its group
    sources: tuple[str, ...]  # each row's table (its file), the unit the issue holds out
    families: tuple[str, ...]  # each row's publisher family (the releases of one page), the stricter unit


def table(kind: Kind, rows: list, terms: list[dict]) -> Table:
    keys = [k for k, v in terms[0].items() if isinstance(v, int | float) and not isinstance(v, bool)] if terms else []
    t = {k: np.array([float(x[k]) for x in terms]) for k in keys}
    return Table(kind, tuple(rows), t, np.array([r.value for r in rows]), tuple({k: f(r) for k, f in kind.groupings.items()} for r in rows), tuple(r.source for r in rows), tuple(r.family for r in rows))


def _layout(kind: Kind, groups: list[dict]) -> list[tuple[str, str]]:
    """The fitted vector's slots: (param, 'shared') for every parameter, (param, group) for each group of its grouping."""
    out = [(p.name, "shared") for p in kind.params]
    out += [(p.name, g) for p in kind.params if p.by for g in sorted({row[p.by] for row in groups})]
    return out


def values_for(kind: Kind, fitted: dict, groups) -> dict[str, np.ndarray]:
    """Per-record parameter arrays from a fit ({param: {group or 'shared': value}}). A group the fit has not seen takes
    its nearest kin (an engine release series: the same engine's nearest fitted release), else the shared value."""
    out = {}
    for p in kind.params:
        by = fitted.get(p.name) or {"shared": p.start}  # a calibration older than the parameter: its documented start
        out[p.name] = np.array([by.get(g[p.by], by[_kin(g[p.by], by)]) if p.by else by["shared"] for g in groups])
    return out


def _release(group: str):
    """(engine, (major, minor)) of an engine release series such as 'vllm-0.11', else None."""
    import re

    m = re.fullmatch(r"(.+)-(\d+)\.(\d+)", group)
    return (m.group(1), (int(m.group(2)), int(m.group(3)))) if m else None


def _kin(group: str, fitted: dict) -> str:
    """The fitted group standing in for an unseen one: an engine release takes the same engine's nearest fitted release
    (a release inherits its predecessor's scheduler more than it resembles other engines), then the engine's unversioned
    group; anything else the shared value."""
    me = _release(str(group))
    if me is None:
        return "shared"
    same = [(abs(v[0] - me[1][0]) * 1000 + abs(v[1] - me[1][1]), g) for g in fitted if (r := _release(g)) and r[0] == me[0] for v in (r[1],)]
    if same:
        return min(same)[1]
    return me[0] if me[0] in fitted else "shared"


def replayed(tab: Table) -> np.ndarray:
    """Which rows the kind replays in its simulation (none for a kind without one)."""
    rp = tab.kind.replay
    if rp is None:
        return np.zeros(len(tab.rows), dtype=bool)
    return np.array([rp.replayable({k: v[i] for k, v in tab.terms.items()}, m.metric, m.statistic) for i, m in enumerate(tab.rows)], dtype=bool)


def predict(tab: Table, fitted: dict, mask=None, replay: bool = True) -> np.ndarray:
    """Each row's prediction under ``fitted``: the closed form, or for a row the kind replays (``replay``), the
    simulation of its stated run."""
    idx = np.arange(len(tab.rows)) if mask is None else np.flatnonzero(mask)
    t = {k: v[idx] for k, v in tab.terms.items()}
    groups = [tab.groups[i] for i in idx]
    values = values_for(tab.kind, fitted, groups)
    out = tab.kind.times(t, values)
    pred = np.array([out[tab.rows[i].metric][j] for j, i in enumerate(idx)])
    if replay and tab.kind.replay is not None:
        rep = replayed(tab)
        for j, i in enumerate(idx):
            if rep[i]:
                m = tab.rows[i]
                pred[j] = tab.kind.replay.value({k: float(v[j]) for k, v in t.items()}, {k: float(v[j]) for k, v in values.items()}, m.metric, m.statistic)
    return pred


def refine(tab: Table, fitted: dict, rounds: int = 2) -> tuple[dict, np.ndarray]:
    """Fit through the simulation: each replayed row's closed form is scaled by the ratio simulation / closed form at
    the current fit, the fit is redone with those factors held, and again (``rounds`` times). Returns the fit and the
    factors (1 for rows the kind does not replay), which held-out fits reuse for their training rows."""
    factors = np.ones(len(tab.rows))
    if tab.kind.replay is None or not replayed(tab).any():
        return fitted, factors
    for _ in range(rounds):
        factors = predict(tab, fitted) / predict(tab, fitted, replay=False)
        fitted = fit(tab, start=fitted, factors=factors)
    return fitted, factors


def fit(tab: Table, mask=None, start: dict | None = None, max_nfev: int = 200, factors=None) -> dict:
    """Least-squares fit on the rows of ``mask`` (all when None): {param: {'shared': v, group: v, ...}}."""
    from scipy.optimize import least_squares

    kind = tab.kind
    idx = np.arange(len(tab.rows)) if mask is None else np.flatnonzero(mask)
    if len(idx) == 0:
        return {p.name: {"shared": p.start} for p in kind.params}
    slots = _layout(kind, [tab.groups[i] for i in idx])
    params = {p.name: p for p in kind.params}
    lo = np.log([params[n].low for n, _ in slots])
    hi = np.log([params[n].high for n, _ in slots])
    first = [(start or {}).get(n, {}).get(g, (start or {}).get(n, {}).get("shared", params[n].start)) for n, g in slots]
    x0 = np.clip(np.log(first), lo + 1e-9, hi - 1e-9)
    t = {k: v[idx] for k, v in tab.terms.items()}
    rec_groups = [tab.groups[i] for i in idx]
    metrics = [tab.rows[i].metric for i in idx]
    measured = tab.measured[idx]
    scale = np.ones(len(idx)) if factors is None else np.asarray(factors)[idx]  # refine's simulation / closed-form ratios
    shared_at = {n: i for i, (n, g) in enumerate(slots) if g == "shared"}
    prior_pairs = [(i, shared_at[n]) for i, (n, g) in enumerate(slots) if g != "shared"]
    pi, pj = np.array([i for i, _ in prior_pairs], dtype=int), np.array([j for _, j in prior_pairs], dtype=int)
    at = {(n, g): i for i, (n, g) in enumerate(slots)}
    # for every parameter, the slot each row reads (its group's, else the shared one)
    slot_of = {p.name: np.array([at.get((p.name, g[p.by]), shared_at[p.name]) if p.by else shared_at[p.name] for g in rec_groups], dtype=int)
               for p in kind.params}
    by_metric = {mname: np.array([j for j, x in enumerate(metrics) if x == mname]) for mname in set(metrics)}

    def unpack(x) -> dict:
        out: dict = {}
        for (n, g), v in zip(slots, np.exp(x), strict=True):
            out.setdefault(n, {})[g] = float(v)
        return out

    def residuals(x):
        v = np.exp(x)
        out = kind.times(t, {name: v[ix] for name, ix in slot_of.items()})
        pred = np.empty(len(idx))
        for mname, js in by_metric.items():
            pred[js] = out[mname][js]
        pred *= scale
        r = np.log(np.maximum(pred, 1e-30) / measured)
        return np.concatenate([r, PRIOR * (x[pi] - x[pj])])

    sol = least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.3, max_nfev=max_nfev, x_scale="jac", tr_solver="lsmr")
    return unpack(sol.x)


def held_out(tab: Table, start: dict | None = None, by: str = "table", factors=None) -> np.ndarray:
    """Each row predicted by the fit without its table (``by='table'``: every other file) or without its publisher
    family (``by='family'``: every other page series), each fit started from ``start`` (with refine's ``factors``
    on its training rows); the held-out rows are predicted as ``predict`` does (replayed where the kind replays)."""
    pred = np.empty(len(tab.rows))
    sources = np.array(tab.sources if by == "table" else tab.families)
    for src in sorted(set(sources.tolist())):
        out = sources == src
        fitted = fit(tab, ~out, start, max_nfev=HELD_OUT_NFEV, factors=factors)
        pred[out] = predict(tab, fitted, out)
    return pred
