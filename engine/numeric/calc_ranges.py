"""Evaluating a planned chain: the point (refusing boundaries checked after every step), the
composed monotonicity, exact corners with plain floats, sampled ranges through the NumPy twins,
the one-at-a-time ranking and the --explain steps."""

from __future__ import annotations

import re

from engine.core.errors import EvaluationError, InputError
from engine.numeric.calc_conditions import _condition, _refused
from engine.numeric.calc_records import Calculator, Graph
from engine.numeric.evaluate import SAMPLES, _call


def _chain(order, module, values: dict, numpy: bool = False) -> dict:
    values = dict(values)
    for fid, key in order:
        meta = module.FORMULAS[fid]
        variant = meta["variants"][key]
        args = [values[n] for n in variant["inputs"]]
        if numpy:
            values[meta["output"]["symbol"]] = getattr(module, variant["np"])(*args)
        else:
            try:
                values[meta["output"]["symbol"]] = _call(fid, getattr(module, variant["fn"]), args)
            except EvaluationError as exc:  # name the values that led there, so the input can be fixed
                shown = ", ".join(f"{n}={v:g}" if isinstance(v, int | float) else f"{n}={v}" for n, v in zip(variant["inputs"], args, strict=True))
                raise InputError(f"{fid} {meta['output']['symbol']} = {variant['expr']}", f"{exc.message} ({shown})") from None
    return values


def _point(calc: Calculator, graph: Graph, order, module, values: dict, context: dict) -> dict:
    """The chain at the point values, checking the refusing failure boundaries after every step,
    so a chain with no answer is refused before a later formula divides by what it names.

    A boundary is checked when its last symbol gets a value, and again only when a step gives
    one of its symbols a new value: the others would answer as they did at the step before."""
    values = dict(values)
    pending = [(fb, set(_condition(fb["when"], graph.units)[0])) for fb in calc.failure_boundaries if fb.get("refuse")]
    checked: list = []
    changed: str | None = None
    for step in [None, *order]:
        if step is not None:
            values = _chain([step], module, values)
            changed = module.FORMULAS[step[0]]["output"]["symbol"]
        point = {**context, **values}
        ready = [(fb, used) for fb, used in pending if used <= point.keys() and (fb not in checked or changed in used)]
        if ready:
            _refused(calc, graph, point, boundaries=[fb for fb, _ in ready])
            checked += [fb for fb, _ in ready if fb not in checked]
    return values


_FLIP = {"increasing": "decreasing", "decreasing": "increasing"}


def _directions(order, module, ranged: list[str], bounds=None, constant=None) -> dict[str, dict[str, str | None]]:
    """symbol -> {ranged leaf it depends on: 'increasing' | 'decreasing' | None (unknown)}.

    Composition of the stored monotonicity: y = f(a, b, ...) is increasing in a leaf x when
    every argument that depends on x moves y the same way. A stored 'constant' for an
    argument that does depend on a ranged leaf is not trusted (it becomes unknown), so the
    range is sampled rather than possibly wrong. A formula's directions under its orderings
    (``mono_given``: a > b) are used only when ``bounds`` (symbol -> (low, high) or None)
    shows a above b over the whole box. ``constant(symbol, its directions)`` says whether a
    symbol monotone in every leaf has one value at its lowest and highest corners: it is then
    constant over the box (a TP group that stays 1), and what depends on it no longer sees
    two opposing paths to one leaf.
    """
    dirs: dict[str, dict[str, str | None]] = {n: {n: "increasing"} for n in ranged}
    # degree of homogeneity of each symbol in each positive ranged leaf (y(t x) = t^d y(x)); a
    # degree of 0 is constancy, which two opposing paths hide (qps in qps x L x B / (qps x E2E))
    scalable = {n for n in ranged if bounds is not None and (ends := bounds(n, True)) is not None and ends[0] > 0}
    degs: dict[str, dict[str, float | None]] = {n: {n: 1.0} for n in scalable}
    for fid, key in order:
        meta = module.FORMULAS[fid]
        variant = meta["variants"][key]
        mono = variant["mono"]
        if variant.get("given") and bounds is not None and all(_above(a, b, dirs, bounds) for a, b in variant["given"]):
            mono = variant["mono_given"]
        out: dict[str, str | None] = {}
        seen: dict[str, set] = {}
        for arg in variant["inputs"]:
            for leaf, d in dirs.get(arg, {}).items():
                m = mono.get(arg)
                if d is None or m not in ("increasing", "decreasing"):
                    composed = None
                else:
                    composed = d if m == "increasing" else _FLIP[d]
                seen.setdefault(leaf, set()).add(composed)
        for leaf, ds in seen.items():
            out[leaf] = ds.pop() if len(ds) == 1 else None
        symbol = meta["output"]["symbol"]
        shape = variant.get("shape")
        degrees = {}
        for leaf in list(out):
            if leaf not in scalable or shape is None:
                continue
            d = _degree(shape, {a: (degs.get(a, {}).get(leaf) if leaf in dirs.get(a, {}) else 0.0) for a in variant["inputs"]})
            if d is not None and abs(d) < 1e-12:
                del out[leaf]  # homogeneous of degree 0 in a positive leaf: it does not move with it
            else:
                degrees[leaf] = d
        degs[symbol] = degrees
        if constant is not None and out and None not in out.values() and constant(symbol, out):
            out = {}
        dirs[symbol] = out
    return dirs


def _degree(shape, degrees: dict) -> float | None:
    """The degree of a compiled scaling shape (engine.core.symbolic.scaling_shape) given each
    argument's degree (0 when it does not depend on the leaf, None when unknown)."""
    kind = shape[0]
    if kind == "mono":
        _, powers, opaque = shape
        if any(degrees.get(a, 0.0) != 0.0 for a in opaque):
            return None
        total = 0.0
        for a, e in powers.items():
            k = degrees.get(a, 0.0)
            if k is None:
                return None
            total += e * k
        return total
    if kind == "all":
        found = [_degree(p, degrees) for p in shape[1]]
        if any(d is None for d in found) or max(found) - min(found) > 1e-12:
            return None
        return found[0]
    inner = _degree(shape[1], degrees)  # a step of a part: only a constant part stays homogeneous
    return 0.0 if inner is not None and abs(inner) < 1e-12 else None


def _above(a: str, b: str, dirs: dict, bounds) -> bool:
    """Whether a > b everywhere in the box: a's lowest value above b's highest."""
    ends_a, ends_b = bounds(a, bool(dirs.get(a))), bounds(b, bool(dirs.get(b)))
    return ends_a is not None and ends_b is not None and ends_a[0] > ends_b[1]


def _sampled(plan, module, ranged: list[str], names: list[str], point: dict):
    """Corners of the ranged inputs (up to 2^10) plus seeded uniform samples, through the NumPy twins."""
    import itertools

    import numpy as np

    corners = list(itertools.islice(itertools.product((0, 1), repeat=len(ranged)), 1024))
    rng = np.random.default_rng(0)
    count = len(corners) + SAMPLES
    values = {}
    for n, q in plan.quantities.items():
        if not q.is_range:
            values[n] = np.full(count, q.value)
            continue
        k = ranged.index(n)
        xs = np.concatenate([np.array([(q.low, q.high)[c[k]] for c in corners], dtype=float), rng.uniform(q.low, q.high, SAMPLES)])
        if plan.graph.spec(n)["domain"].endswith("integer"):
            xs = np.round(xs)
        values[n] = xs
    with np.errstate(all="ignore"):
        out = _chain(plan.order, module, values, numpy=True)
    lows, highs = {}, {}
    for n in names:
        v = np.asarray(out[n], dtype=float) * np.ones(count)
        v = v[np.isfinite(v)]
        if v.size == 0:
            raise EvaluationError(n, "no finite value over the given ranges")
        lows[n], highs[n] = float(min(v.min(), point[n])), float(max(v.max(), point[n]))
    return lows, highs


def _ranking(order, module, quantities: dict, ranged: list[str], outputs: dict, directions: dict, chain=None) -> dict[str, list[tuple[str, float]]]:
    """output -> [(ranged input, share of the output's range)], largest first.

    Each ranged input is swept alone from its low to its high end with the others at their
    point values; its share is its swing over the sum of all swings (a one-at-a-time
    "tornado" ranking, which is what the shares mean when inputs interact). ``chain`` (values ->
    the chain's values) lets run() share the corners it already evaluated.
    """
    if not ranged:
        return {}
    point = {n: q.value for n, q in quantities.items()}
    chain = chain or (lambda values: _chain(order, module, values))
    ends = {}
    for leaf in ranged:
        q = quantities[leaf]
        lo = chain({**point, leaf: q.low})
        hi = chain({**point, leaf: q.high})
        ends[leaf] = (lo, hi)
    out = {}
    for name, value in outputs.items():
        if value.low == value.high or name in quantities:
            continue
        swings = {leaf: abs(ends[leaf][1][name] - ends[leaf][0][name]) for leaf in ranged if leaf in directions.get(name, {})}
        total = sum(swings.values())
        if total > 0:
            out[name] = sorted(((leaf, s / total) for leaf, s in swings.items()), key=lambda t: -t[1])
    return out


def _step(module, fid: str, key: str, values: dict) -> dict:
    def number(x: float) -> str:  # full precision, so a reader can recompute by hand
        return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:.10g}"

    meta = module.FORMULAS[fid]
    variant = meta["variants"][key]
    expr = variant["expr"]
    substituted = re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*\b", lambda m: number(values[m.group(0)]) if m.group(0) in variant["inputs"] else m.group(0), expr)
    symbol = meta["output"]["symbol"]
    return {"id": fid, "name": meta["name"], "variant": key, "symbol": symbol, "expr": expr, "substituted": substituted,
            "value": values[symbol], "unit": meta["output"]["unit"]}
