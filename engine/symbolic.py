"""The symbolic side: parsed expressions become SymPy objects through an explicit symbol table.

Only this module (and the modules that analyse formulas symbolically) import sympy; the
numeric path reads the compiled module instead. SymPy objects are built node by node from
:class:`engine.expr.Node`, never from strings, so ``I``, ``E``, ``N``, ``S`` and ``beta``
stay ordinary symbols.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

import sympy as sp

from engine.expr import Node

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
    "real": {"real": True},
    "categorical": {},
}


def make_symbols(domains: Mapping[str, str]) -> dict[str, sp.Symbol]:
    """One SymPy symbol per name, carrying the assumptions of its domain."""
    return {name: sp.Symbol(name, **ASSUMPTIONS.get(domain, {"real": True})) for name, domain in domains.items()}


def to_sympy(node: Node, table: Mapping[str, sp.Symbol]) -> sp.Expr:
    return _build(node, table)


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


def monotonicity(expr: sp.Expr, symbol: sp.Symbol) -> str | None:
    """'increasing', 'decreasing' or 'constant' in ``symbol`` over the symbols' domains; None if unknown.

    ceiling and floor are non-decreasing, so they are replaced by their argument before
    differentiating; the derivative's sign comes from the symbols' assumptions.
    """
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
        directions = {monotonicity(a, symbol) for a in expr.args} - {"constant"}
        return directions.pop() if len(directions) == 1 else (None if directions else "constant")
    if isinstance(expr, sp.Mul | sp.Add):
        # a positive constant factor or added constant keeps the direction of the rest
        varying = [a for a in expr.args if symbol in a.free_symbols]
        fixed = [a for a in expr.args if symbol not in a.free_symbols]
        if len(varying) == 1 and (isinstance(expr, sp.Add) or all(f.is_positive for f in fixed)):
            return monotonicity(varying[0], symbol)
        if len(varying) == 1 and isinstance(expr, sp.Mul) and all(f.is_negative for f in fixed) and len(fixed) == 1:
            inner = monotonicity(varying[0], symbol)
            return {"increasing": "decreasing", "decreasing": "increasing"}.get(inner or "", inner)
    return None
