"""The symbolic side: parsed expressions become SymPy objects through an explicit symbol table.

Only this module (and the modules that analyse formulas symbolically) import sympy; the
numeric path reads the compiled module instead. SymPy objects are built node by node from
:class:`engine.core.expr.Node`, never from strings, so ``I``, ``E``, ``N``, ``S`` and ``beta``
stay ordinary symbols.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from fractions import Fraction

import sympy as sp

from engine.core.errors import ExprError, KnowledgeError
from engine.core.expr import Node

_FUNCS = {
    "sqrt": sp.sqrt,
    "exp": sp.exp,
    "ceiling": sp.ceiling,
    "floor": sp.floor,
    "Abs": sp.Abs,
    "Min": sp.Min,
    "Max": sp.Max,
}
_CMP = {"<": sp.Lt, "<=": sp.Le, ">": sp.Gt, ">=": sp.Ge, "==": sp.Eq, "!=": sp.Ne}

# domain name -> SymPy assumptions
ASSUMPTIONS: dict[str, dict[str, bool]] = {
    "positive": {"positive": True},
    "nonnegative": {"nonnegative": True},
    "positive_integer": {"positive": True, "integer": True},
    "nonnegative_integer": {"nonnegative": True, "integer": True},
    "fraction": {"nonnegative": True},
    "positive_fraction": {"positive": True},
    "fraction_below_one": {"nonnegative": True},
    "ge_one": {"positive": True},
    "ge_two_integer": {"positive": True, "integer": True},
    "real": {"real": True},
    "categorical": {},
}


def make_symbols(domains: Mapping[str, str]) -> dict[str, sp.Symbol]:
    """One SymPy symbol per name, carrying the assumptions of its domain."""
    return {name: sp.Symbol(name, **ASSUMPTIONS.get(domain, {"real": True})) for name, domain in domains.items()}


def to_sympy(node: Node, table: Mapping[str, sp.Symbol]) -> sp.Expr:
    """The SymPy expression of ``node``; ExprError when SymPy finds it undefined or not real.

    The parser already refuses constant cases (``x/0``, ``sqrt(-1)``); this catches what
    only SymPy's own simplification reveals, such as ``1/(sqrt(x) - sqrt(x))``.
    """
    try:
        expr = _build(node, table)
    except (ArithmeticError, ValueError, TypeError, RecursionError) as exc:
        raise ExprError(f"cannot be built symbolically: {_first_line(exc)}") from None
    if expr.has(sp.zoo, sp.nan, sp.oo, sp.S.NegativeInfinity, sp.I) or getattr(expr, "is_extended_real", None) is False:
        raise ExprError(f"is undefined, infinite or not real: SymPy reduces {node.src!r} to {_short(sp.sstr(expr))}")
    return expr


def variant_to_sympy(formula, index: int, table: Mapping[str, sp.Symbol]) -> sp.Expr:
    """``to_sympy`` of one variant of a formula record; a refusal is a KnowledgeError at the record's file:line."""
    try:
        return to_sympy(formula.variants[index].tree, table)
    except ExprError as exc:
        path = f"variants[{index}].expr" if formula.selector else "expr"
        raise KnowledgeError([exc.located(formula.place, formula.id, path).problem()]) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return _short(text[0]) if text else type(exc).__name__


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _build(node: Node, table):
    kind = node.kind
    if kind == "num":
        value: Fraction = node.value
        return sp.Integer(value.numerator) if value.denominator == 1 else sp.Rational(value.numerator, value.denominator)
    if kind == "sym":
        return table[str(node.value)]
    if kind == "true":
        return sp.true
    args = [_build(a, table) for a in node.args]
    if kind == "bin":
        left, right = args
        op = node.value
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if op == "/":
            return left / right
        return left**right
    if kind == "neg":
        return -args[0]
    if kind == "call":
        if node.value == "log":
            return sp.log(*args)
        return _FUNCS[str(node.value)](*args)
    if kind == "cmp":
        return _CMP[str(node.value)](*args)
    if kind == "and":
        return sp.And(*args)
    if kind == "or":
        return sp.Or(*args)
    if kind == "not":
        return sp.Not(args[0])
    if kind == "piecewise":
        *pairs, default = args
        branches = [(pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)]
        return sp.Piecewise(*branches, (default, True))
    raise ValueError(f"unknown node kind {kind}")  # pragma: no cover


def latex(expr: sp.Expr, output: str | None = None) -> str:
    """LaTeX with each multi-letter name set upright as one word (``\\mathrm{kv\\_heads}``)."""
    names = {s: _tex_name(s.name) for s in expr.free_symbols if isinstance(s, sp.Symbol)}
    body = sp.latex(expr, symbol_names=names, mul_symbol="dot")
    return f"{_tex_name(output)} = {body}" if output else body


def _tex_name(name: str) -> str:
    if len(name) == 1:
        return name
    return "\\mathrm{" + name.replace("_", "\\_") + "}"


# ------------------------------------------------------------------ monotonicity


MONOTONICITY_SECONDS = 5.0
MAX_FACTORED_POWER = 12  # integer powers above this are not factored (see _sign); the formula set uses at most 2

log = logging.getLogger("aiinfra")


timeouts = [0]  # monotonicity questions this process gave up on (engine.numeric.directions does not cache such answers)


class _OutOfTime(BaseException):
    """Raised by the SIGALRM handler; a BaseException so SymPy's ``except Exception`` cannot swallow it."""


@contextmanager
def time_budget(seconds: float):
    """Raise _OutOfTime in the block after ``seconds`` (POSIX main thread; elsewhere no limit).

    An outer timer (a test runner's) is put back when the block ends.
    """
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, expire)
    outer, _interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 1e-3))


# bounded domains: (lower end, whether the upper end is 1); the others are half-lines SymPy's
# sign assumptions already describe
_BOUNDED = {"fraction": (0, True), "fraction_below_one": (0, True), "positive_fraction": (0, True),
            "ge_one": (1, False), "ge_two_integer": (2, False)}


def _substitution(domains: Mapping[sp.Symbol, str]) -> tuple[dict, dict]:
    """(x -> u, x -> its expression in u) for the bounded symbols of ``domains``: each written as
    an increasing function of a fresh u >= 0, x = u/(1+u) on [0, 1) and x = lo + u on [lo, oo).
    SymPy's assumptions cannot say x <= 1 or x >= 1, but they can say u >= 0, so 1 - x = 1/(1+u)
    is seen positive and x - 1 = u nonnegative. The map is increasing, so a direction in u is the
    direction in x (the closed end x = 1 of ``fraction`` follows by continuity)."""
    fresh, subs = {}, {}
    for x, domain in domains.items():
        if domain not in _BOUNDED:
            continue
        low, unit = _BOUNDED[domain]
        positive = domain == "positive_fraction"
        u = sp.Dummy(f"u_{x.name}", positive=True) if positive else sp.Dummy(f"u_{x.name}", nonnegative=True, integer=bool(x.is_integer))
        subs[x] = u / (1 + u) if unit else low + u
        fresh[x] = u
    return fresh, subs


def monotonicity(expr: sp.Expr, symbol: sp.Symbol, seconds: float | None = None,
                 domains: Mapping[sp.Symbol, str] | None = None,
                 ordered: Sequence[tuple[sp.Symbol, sp.Symbol]] = ()) -> str | None:
    """'increasing', 'decreasing' or 'constant' in ``symbol`` over the symbols' domains; None if unknown.

    ``domains`` (symbol -> domain name) adds the upper and lower ends the assumptions cannot
    carry (see :func:`_substitution`). The direction is first composed from the expression's
    structure (sums, products of positive factors, powers, exp/log, ceiling/floor, Min/Max);
    failing that, ceiling and floor are replaced by their argument before differentiating and
    the derivative's sign comes from the symbols' assumptions. ``ordered`` pairs (a, b) say
    a > b: signs are then read with a = b + v, v > 0 (a sign is a property of each point, so
    this holds wherever a > b; callers use the answer only where it does). SymPy gets ``seconds`` (default
    MONOTONICITY_SECONDS); past that the answer is None (unknown, so callers sample) and one
    line says so on stderr.
    """
    budget = MONOTONICITY_SECONDS if seconds is None else seconds
    try:
        with time_budget(budget):
            # the other symbols' ends first: the structure is read in the symbol itself
            others = {s: d for s, d in (domains or {}).items() if s != symbol and s in expr.free_symbols}
            _, moved = _substitution(others)
            expr = expr.xreplace(moved) if moved else expr
            fresh, mine = _substitution({symbol: domains[symbol]} if domains and symbol in domains else {})
            structural = _structural(expr, symbol, {**mine, **_orderings(ordered, moved, mine)})
            if structural is not None:
                return structural
            # the derivative needs the symbol's own ends too
            own, target = (expr.xreplace(mine), fresh[symbol]) if fresh else (expr, symbol)
            return _monotonicity(own, target, _orderings(ordered, {**moved, **mine}, {}))
    except _OutOfTime:
        timeouts[0] += 1
        log.warning("monotonicity of %s in %s could not be decided within %g s; treated as unknown", _short(sp.sstr(expr)), symbol, budget)
        return None


def _orderings(ordered, moved: dict, ends: dict) -> dict:
    """a -> b + v (v > 0) for each ordered pair, b as it appears after ``moved``; a pair whose
    a has itself been reparametrised is skipped (its ends already say more than nothing)."""
    out = {}
    for a, b in ordered:
        if a in moved or a in ends or a in out:
            continue
        v = sp.Dummy(f"gap_{a.name}", positive=True)
        out[a] = moved.get(b, b) + v
    return out


def _monotonicity(expr: sp.Expr, symbol: sp.Symbol, checks: dict | None = None) -> str | None:
    if symbol not in expr.free_symbols:
        return "constant"
    steps = [a for a in expr.atoms(sp.ceiling, sp.floor) if symbol in a.free_symbols]
    if steps:
        # a step of a monotone argument is monotone the same way, but only if the symbol
        # appears nowhere else: ceiling(x/4)*4 - x is neither increasing nor decreasing
        outside = expr.subs({step: sp.Dummy() for step in steps})
        if symbol in outside.free_symbols:
            return None
    smooth = expr.replace(sp.ceiling, lambda a: a).replace(sp.floor, lambda a: a)
    if smooth.has(sp.Piecewise, sp.Abs, sp.Min, sp.Max):
        return _monotone_by_parts(smooth, symbol, checks)
    try:
        derivative = sp.diff(smooth, symbol)
    except Exception:  # pragma: no cover - sympy edge cases
        return None
    return _sign(derivative.xreplace(checks) if checks else derivative)


_FLIPPED = {"increasing": "decreasing", "decreasing": "increasing", "constant": "constant"}


def _same(directions) -> str | None:
    """One direction of several (constants aside); None when any is unknown or two disagree."""
    found = set()
    for d in directions:
        if d is None:
            return None
        found.add(d)
    found.discard("constant")
    return found.pop() if len(found) == 1 else ("constant" if not found else None)


def _structural(e: sp.Expr, x: sp.Symbol, ends: dict | None = None) -> str | None:
    """The direction of ``e`` in ``x`` composed from its parts, or None when the parts do not
    decide it (weak monotonicity: "increasing" means never decreasing). Sound by construction:
    a sum of functions moving one way moves that way; a product of positive factors that move
    one way (or stay constant) moves that way, a negative constant factor flips it; b**p with a
    constant exponent follows b (b > 0) or its flip (p < 0); exp, log, ceiling, floor, Min and
    Max are non-decreasing in their arguments. ``ends`` (x -> its increasing reparametrisation)
    lets the sign of a factor such as 1 - x be read over x's own domain."""
    if x not in e.free_symbols:
        return "constant"
    if e == x:
        return "increasing"
    if isinstance(e, sp.Add):
        return _same(_structural(a, x, ends) for a in e.args)
    if isinstance(e, sp.Mul):
        fixed = sp.Mul(*[a for a in e.args if x not in a.free_symbols])
        varying = [a for a in e.args if x in a.free_symbols]
        # a factor that is >= 0 (or <= 0) keeps (or flips) the direction weakly; several varying
        # factors must each be >= 0: f(y)g(y) - f(x)g(x) = f(y)(g(y) - g(x)) + g(x)(f(y) - f(x))
        sign = 1 if _nonnegative(fixed, ends) else (-1 if _nonnegative(-fixed, ends) else 0)
        if sign == 0 or (len(varying) > 1 and not all(_nonnegative(a, ends) for a in varying)):
            return None
        d = _same(_structural(a, x, ends) for a in varying)
        return d if d is None or sign > 0 else _FLIPPED[d]
    if isinstance(e, sp.Pow):
        base, power = e.args
        if x not in power.free_symbols:
            if not _positive(base, ends) or not (power.is_positive or power.is_negative):
                return None
            d = _structural(base, x, ends)
            return d if d is None or power.is_positive else _FLIPPED[d]
        if x not in base.free_symbols and _positive(base, ends):
            if (base - 1).is_positive:
                return _structural(power, x, ends)
            if (1 - base).is_positive:
                d = _structural(power, x, ends)
                return None if d is None else _FLIPPED[d]
        return None
    if isinstance(e, sp.log) and isinstance(e.args[0], sp.Mul):
        varying = [a for a in e.args[0].args if x in a.free_symbols]
        if all(_positive(a, ends) for a in varying):
            # log is real only where its argument is positive, so there the constant factor is
            # positive too, and log(c * g * h) = log(c) + log(g) + log(h)
            return _same(_structural(a, x, ends) for a in varying)
    if isinstance(e, sp.exp | sp.log | sp.ceiling | sp.floor) and len(e.args) == 1:
        return _structural(e.args[0], x, ends)
    if isinstance(e, sp.Min | sp.Max):
        return _same(_structural(a, x, ends) for a in e.args)
    if isinstance(e, sp.Piecewise) and len(e.args) == 2 and e.args[1].cond == sp.true:
        # an indicator: (c1 where lhs <= rhs, else c0) with numbers c1 > c0 rises with rhs - lhs
        (high, cond), (low, _) = e.args
        if high.is_number and low.is_number and isinstance(cond, sp.Le | sp.Lt | sp.Ge | sp.Gt) and high != low:
            gap = cond.rhs - cond.lhs if isinstance(cond, sp.Le | sp.Lt) else cond.lhs - cond.rhs
            d = _structural(gap, x, ends)
            return d if d is None or bool(high > low) else _FLIPPED[d]
    return None


def _positive(e: sp.Expr, ends: dict | None) -> bool:
    return bool(e.is_positive or (ends and e.xreplace(ends).is_positive))


def _nonnegative(e: sp.Expr, ends: dict | None) -> bool:
    return bool(e.is_nonnegative or (ends and e.xreplace(ends).is_nonnegative))


def _sign(derivative: sp.Expr) -> str | None:
    if derivative.is_zero:
        return "constant"
    if derivative.is_nonnegative:
        return "increasing"
    if derivative.is_nonpositive:
        return "decreasing"
    # one fraction, factored: the sign of each factor is then read from the assumptions (found
    # every direction sp.simplify found on the formula set, in half the time). Factoring a high
    # power expands it into integers so large that one C-level gcd outlasts the time budget (a
    # signal cannot interrupt it), so such derivatives stay unknown and are sampled.
    if max((abs(int(p.exp)) for p in derivative.atoms(sp.Pow) if p.exp.is_Integer), default=0) > MAX_FACTORED_POWER:
        return None
    simplified = sp.factor(sp.together(derivative))
    if simplified.is_nonnegative:
        return "increasing"
    if simplified.is_nonpositive:
        return "decreasing"
    return None


def _monotone_by_parts(expr: sp.Expr, symbol: sp.Symbol, checks: dict | None = None) -> str | None:
    """Min and Max of functions monotone the same way are monotone that way."""
    if isinstance(expr, sp.Min | sp.Max):
        directions = {_monotonicity(a, symbol, checks) for a in expr.args} - {"constant"}
        return directions.pop() if len(directions) == 1 else (None if directions else "constant")
    if isinstance(expr, sp.Mul | sp.Add):
        # a positive constant factor or added constant keeps the direction of the rest
        varying = [a for a in expr.args if symbol in a.free_symbols]
        fixed = [a for a in expr.args if symbol not in a.free_symbols]
        if len(varying) == 1 and (isinstance(expr, sp.Add) or all(_positive(f, checks) for f in fixed)):
            return _monotonicity(varying[0], symbol, checks)
        if len(varying) == 1 and isinstance(expr, sp.Mul) and all(f.is_negative or (checks and f.xreplace(checks).is_negative) for f in fixed) and len(fixed) == 1:
            inner = _monotonicity(varying[0], symbol, checks)
            return {"increasing": "decreasing", "decreasing": "increasing"}.get(inner or "", inner)
    return None


# ------------------------------------------------------------------ homogeneity (scaling shapes)


def scaling_shape(expr: sp.Expr):
    """How ``expr`` scales when its arguments scale, as plain data for the compiled module, or
    None when it does not: ``["mono", {name: exponent}, [names inside other factors]]`` for
    c * prod(a**e) * g(...), ``["all", [shapes]]`` for a sum, Min or Max (homogeneous of one
    degree when every part is), ``["step", shape]`` for ceiling/floor/Abs of a part (of degree 0
    only). :func:`engine.numeric.calc_ranges` evaluates it with each argument's degree in a
    ranged input: a degree of 0 means the output does not move with that input at all (qps
    cancels in qps x tokens x batch / (qps x latency))."""
    if isinstance(expr, sp.Min | sp.Max | sp.Add):
        parts = [scaling_shape(a) for a in expr.args]
        return None if any(p is None for p in parts) else ["all", parts]
    if isinstance(expr, sp.ceiling | sp.floor | sp.Abs):
        inner = scaling_shape(expr.args[0])
        return None if inner is None else ["step", inner]
    if isinstance(expr, sp.Piecewise):
        return None
    powers: dict[str, float] = {}
    opaque: set[str] = set()
    for factor in sp.Mul.make_args(expr):
        base, power = factor.as_base_exp()
        if isinstance(base, sp.Symbol) and power.is_number:
            powers[base.name] = powers.get(base.name, 0.0) + float(power)
        elif not factor.free_symbols:
            continue
        else:
            opaque |= {str(x) for x in factor.free_symbols}
    return ["mono", powers, sorted(opaque)]
