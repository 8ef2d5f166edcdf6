"""What a parsed expression may ask of SymPy: defined, real, finite constants and a bounded degree.

The parser (engine.core.expr) calls :func:`check` on every tree it builds. Each symbol-free
subtree, and each sum or product whose symbols cancel (``x - x``, ``x/x``), is folded
to a float; a fold that divides by zero, takes the square root or logarithm of a
negative number, leaves float range or passes 1e300 is refused with an
:class:`~engine.core.errors.ExprError`, because SymPy would turn it into ``zoo``, ``nan`` or
``I`` (and ``Max(x/0, y)`` raises inside SymPy). The polynomial degree is capped so
that expanding or simplifying stays cheap. This module never imports sympy.
"""

from __future__ import annotations

import math
from fractions import Fraction

from engine.core.errors import ExprError

MAX_MAGNITUDE = 1e300
MAX_DEGREE = 128
MAX_TERMS = 64


def check(tree) -> None:
    """Raise ExprError for the first subtree whose constant value is undefined, not real or too large."""
    folder = _Folder()
    folder.fold(tree)
    deg = degree(tree, folder.memo)
    if deg > MAX_DEGREE:
        raise ExprError(f"has degree {deg:g} (at most {MAX_DEGREE}): a power or product that large is refused")


class _Folder:
    """Folds every node bottom-up; a node's fold is its float value, or None when it varies."""

    def __init__(self):
        self.memo: dict[int, float | None] = {}

    def fold(self, node) -> float | None:
        key = id(node)
        if key not in self.memo:
            self.memo[key] = self._fold(node)
        return self.memo[key]

    def _fold(self, node) -> float | None:
        values = [self.fold(a) for a in node.args]
        if node.kind in ("bin", "neg") and any(v is None for v in values):
            cancelled = _polynomial_constant(node)
            if cancelled is not None:
                return _finite(_to_float(cancelled), node)
        if node.kind == "num":
            return _finite(float(node.value), node)
        if node.kind in ("sym", "true", "cmp", "and", "or", "not", "piecewise"):
            return None
        if node.kind == "bin" and node.value == "/" and values[1] == 0:
            raise ExprError(f"{node.src!r} divides by zero")
        if node.kind == "call":
            _check_domain(node, values)
        if any(v is None for v in values):
            return None
        return _finite(_apply(node, values), node)


def _check_domain(node, values: list[float | None]) -> None:
    name = node.value
    arg = values[0]
    if name == "sqrt" and arg is not None and arg < 0:
        raise ExprError(f"{node.src!r} takes the square root of a negative number (the result is not real)")
    if name == "log" and arg is not None and arg <= 0:
        raise ExprError(f"{node.src!r} takes the logarithm of {'zero' if arg == 0 else 'a negative number'} (the result is not a real number)")
    if name == "log" and len(values) == 2 and values[1] is not None and (values[1] <= 0 or values[1] == 1):
        raise ExprError(f"{node.src!r} has a logarithm base that is not positive and different from 1")


def _apply(node, values: list[float]) -> float:
    try:
        return _OPS[node.kind if node.kind != "bin" and node.kind != "call" else str(node.value)](*values)
    except OverflowError:
        raise ExprError(f"{node.src!r} is too large (a constant must stay below 1e300 in magnitude)") from None
    except ZeroDivisionError:
        raise ExprError(f"{node.src!r} divides by zero") from None
    except ValueError:
        raise ExprError(f"{node.src!r} is not a real number") from None


def _pow(base: float, exponent: float) -> float:
    if base == 0 and exponent < 0:
        raise ZeroDivisionError
    if base < 0 and exponent != int(exponent):
        raise ValueError
    return float(base**exponent)


_OPS = {
    "neg": lambda x: -x,
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "**": _pow,
    "sqrt": math.sqrt,
    "log": lambda x, base=math.e: math.log(x) / math.log(base),
    "exp": math.exp,
    "ceiling": lambda x: float(math.ceil(x)),
    "floor": lambda x: float(math.floor(x)),
    "Abs": abs,
    "Min": lambda *xs: min(xs),
    "Max": lambda *xs: max(xs),
}


def _to_float(value: Fraction) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _finite(value: float, node) -> float:
    if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise ExprError(f"{node.src!r} is too large (a constant must stay below 1e300 in magnitude)")
    return value


# ---------------------------------------------------------------- cancelling symbols

Poly = dict[tuple, Fraction]  # monomial (sorted (atom, power) pairs) -> coefficient


def _polynomial_constant(node) -> Fraction | None:
    """The constant a sum/product reduces to once like terms cancel (``x - x``, ``x/x``); None otherwise."""
    poly = _poly(node)
    if poly is None or any(mono for mono in poly):
        return None
    return poly.get((), Fraction(0))


def _poly(node) -> Poly | None:
    kind = node.kind
    if kind == "num":
        return {(): node.value} if node.value else {}
    if kind == "neg":
        inner = _poly(node.args[0])
        return None if inner is None else {m: -c for m, c in inner.items()}
    if kind == "bin":
        return _poly_bin(node)
    if kind in ("true", "cmp", "and", "or", "not"):
        return None
    return {((node.src, 1),): Fraction(1)}  # a symbol, call or Piecewise is an opaque atom


def _poly_bin(node) -> Poly | None:
    op = node.value
    left = _poly(node.args[0])
    if op == "**":
        exponent = _poly(node.args[1])
        if left is None or exponent is None or any(exponent):
            return _atom(node)
        n = exponent.get((), Fraction(0))
        return _power(left, n) if n.denominator == 1 and abs(n) <= MAX_DEGREE else _atom(node)
    right = _poly(node.args[1])
    if left is None or right is None:
        return None
    if op == "+":
        return _add(left, right, 1)
    if op == "-":
        return _add(left, right, -1)
    if op == "*":
        return _mul(left, right)
    inverse = _power(right, Fraction(-1)) if len(right) == 1 else None
    return _mul(left, inverse) if inverse is not None else _mul(left, _atom_inverse(node.args[1]))


def _atom(node) -> Poly:
    return {((node.src, 1),): Fraction(1)}


def _atom_inverse(node) -> Poly:
    return {((node.src, -1),): Fraction(1)}


def _add(a: Poly, b: Poly, sign: int) -> Poly | None:
    out = dict(a)
    for mono, coef in b.items():
        out[mono] = out.get(mono, Fraction(0)) + sign * coef
        if not out[mono]:
            del out[mono]
    return out if len(out) <= MAX_TERMS else None


def _mul(a: Poly | None, b: Poly | None) -> Poly | None:
    if a is None or b is None or len(a) * len(b) > MAX_TERMS * MAX_TERMS:
        return None
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            mono = _mono_mul(ma, mb)
            out[mono] = out.get(mono, Fraction(0)) + ca * cb
            if not out[mono]:
                del out[mono]
    return out if len(out) <= MAX_TERMS else None


def _mono_mul(a: tuple, b: tuple) -> tuple:
    powers = dict(a)
    for atom, p in b:
        powers[atom] = powers.get(atom, 0) + p
    return tuple(sorted((k, v) for k, v in powers.items() if v))


def _power(poly: Poly, n: Fraction) -> Poly | None:
    if len(poly) == 1:
        ((mono, coef),) = poly.items()
        if abs(coef.numerator) > 10**30 or coef.denominator > 10**30:
            return None
        value = coef ** int(n)
        return {tuple((a, p * int(n)) for a, p in mono): value}
    if n < 0 or n > 8:
        return None
    out: Poly | None = {(): Fraction(1)}
    for _ in range(int(n)):
        out = _mul(out, poly)
    return out


# ---------------------------------------------------------------- degree


def degree(node, folds: dict[int, float | None]) -> float:
    """Polynomial degree in the symbols, counting a denominator's degree too (an upper bound).

    ``folds`` maps ``id(node)`` to the node's folded constant (None where it varies).
    """
    kind = node.kind
    if kind == "sym":
        return 1
    if kind in ("num", "true"):
        return 0
    if kind == "bin" and node.value == "**":
        exponent = folds.get(id(node.args[1]))
        n = 1.0 if exponent is None else abs(exponent)
        return degree(node.args[0], folds) * n + degree(node.args[1], folds)
    if kind == "bin" and node.value in "*/":
        return degree(node.args[0], folds) + degree(node.args[1], folds)
    return max((degree(a, folds) for a in node.args), default=0)
