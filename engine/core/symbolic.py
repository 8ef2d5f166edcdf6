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
from collections.abc import Mapping
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

log = logging.getLogger("aiinfra")


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


def monotonicity(expr: sp.Expr, symbol: sp.Symbol, seconds: float | None = None) -> str | None:
    """'increasing', 'decreasing' or 'constant' in ``symbol`` over the symbols' domains; None if unknown.

    ceiling and floor are non-decreasing, so they are replaced by their argument before
    differentiating; the derivative's sign comes from the symbols' assumptions. SymPy gets
    ``seconds`` (default MONOTONICITY_SECONDS); past that the answer is None (unknown, so
    callers sample) and one line says so on stderr.
    """
    budget = MONOTONICITY_SECONDS if seconds is None else seconds
    try:
        with time_budget(budget):
            return _monotonicity(expr, symbol)
    except _OutOfTime:
        log.warning("monotonicity of %s in %s could not be decided within %g s; treated as unknown", _short(sp.sstr(expr)), symbol, budget)
        return None


def _monotonicity(expr: sp.Expr, symbol: sp.Symbol) -> str | None:
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
        return _monotone_by_parts(smooth, symbol)
    try:
        derivative = sp.diff(smooth, symbol)
    except Exception:  # pragma: no cover - sympy edge cases
        return None
    return _sign(derivative)


def _sign(derivative: sp.Expr) -> str | None:
    if derivative.is_zero:
        return "constant"
    if derivative.is_nonnegative:
        return "increasing"
    if derivative.is_nonpositive:
        return "decreasing"
    simplified = sp.simplify(derivative)
    if simplified.is_nonnegative:
        return "increasing"
    if simplified.is_nonpositive:
        return "decreasing"
    return None


def _monotone_by_parts(expr: sp.Expr, symbol: sp.Symbol) -> str | None:
    """Min and Max of functions monotone the same way are monotone that way."""
    if isinstance(expr, sp.Min | sp.Max):
        directions = {_monotonicity(a, symbol) for a in expr.args} - {"constant"}
        return directions.pop() if len(directions) == 1 else (None if directions else "constant")
    if isinstance(expr, sp.Mul | sp.Add):
        # a positive constant factor or added constant keeps the direction of the rest
        varying = [a for a in expr.args if symbol in a.free_symbols]
        fixed = [a for a in expr.args if symbol not in a.free_symbols]
        if len(varying) == 1 and (isinstance(expr, sp.Add) or all(f.is_positive for f in fixed)):
            return _monotonicity(varying[0], symbol)
        if len(varying) == 1 and isinstance(expr, sp.Mul) and all(f.is_negative for f in fixed) and len(fixed) == 1:
            inner = _monotonicity(varying[0], symbol)
            return {"increasing": "decreasing", "decreasing": "increasing"}.get(inner or "", inner)
    return None
