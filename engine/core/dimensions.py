"""The dimension walker: checks that an expression is dimensionally consistent.

Add and Sub need equal dimensions (a literal 0 fits any), Mul and Div combine, a power
multiplies by a numeric exponent (a symbolic exponent needs a dimensionless base),
sqrt halves, exp and log need a dimensionless argument, ceiling/floor/Abs keep theirs,
Min/Max/Piecewise branches and both sides of a comparison must agree. Scales are not
checked here: evaluation runs in base units.
"""

from __future__ import annotations

from engine.core.errors import DimensionError
from engine.core.expr import Node, constant_value
from engine.core.units import DIMENSIONLESS, Dims, format_dims

_ZERO = "zero"  # marker: a literal 0 adopts any dimension


def dimension_of(node: Node, dims: dict[str, Dims]) -> Dims:
    """Dimension of ``node`` given each symbol's dimension; raise DimensionError if inconsistent."""
    result = _walk(node, dims)
    return DIMENSIONLESS if result == _ZERO else result


def _walk(node: Node, dims: dict[str, Dims]):
    return _RULES[node.kind](node, dims)


def _num(node: Node, dims):
    return _ZERO if node.value == 0 else DIMENSIONLESS


def _sym(node: Node, dims):
    return dims[str(node.value)]


def _same(nodes: tuple[Node, ...], dims, what: str):
    found = _ZERO
    first: Node | None = None
    for n in nodes:
        d = _walk(n, dims)
        if d == _ZERO:
            continue
        if found == _ZERO:
            found, first = d, n
        elif d != found:
            raise DimensionError(
                f"{what}: the term {n.src!r} is in {format_dims(d)} but {first.src!r} is in {format_dims(found)}"
            )
    return found


def _mul(a, b, sign: int):
    if a == _ZERO or b == _ZERO:
        return _ZERO if sign > 0 or a == _ZERO else a
    return tuple(x + sign * y for x, y in zip(a, b, strict=True))


def _bin(node: Node, dims):
    left, right = node.args
    op = node.value
    if op in "+-":
        return _same(node.args, dims, f"in {node.src!r}")
    if op == "*":
        return _mul(_walk(left, dims), _walk(right, dims), 1)
    if op == "/":
        return _mul(_walk(left, dims), _walk(right, dims), -1)
    return _pow(node, dims)


def _pow(node: Node, dims):
    base, exponent = node.args
    exp_dims = _walk(exponent, dims)
    if exp_dims not in (_ZERO, DIMENSIONLESS):
        raise DimensionError(f"in {node.src!r}: the exponent {exponent.src!r} must be dimensionless, it is in {format_dims(exp_dims)}")
    b = _walk(base, dims)
    if b in (_ZERO, DIMENSIONLESS):
        return b
    if exponent.kind == "num" or (exponent.kind == "neg" and exponent.args[0].kind == "num"):
        power = exponent.value if exponent.kind == "num" else -exponent.args[0].value
        return tuple(x * float(power) for x in b)
    power = constant_value(exponent)  # symbol-free exponents such as 1/2
    if power is None:
        raise DimensionError(
            f"in {node.src!r}: the base {base.src!r} is in {format_dims(b)}, so the exponent must be a number"
        )
    return tuple(x * float(power) for x in b)


def _neg(node: Node, dims):
    return _walk(node.args[0], dims)


def _call(node: Node, dims):
    fname = node.value
    if fname in ("Min", "Max"):
        return _same(node.args, dims, f"in {node.src!r}")
    if fname in ("ceiling", "floor", "Abs"):
        return _walk(node.args[0], dims)
    if fname == "sqrt":
        d = _walk(node.args[0], dims)
        return d if d == _ZERO else tuple(x / 2 for x in d)
    for arg in node.args:  # exp, log
        d = _walk(arg, dims)
        if d not in (_ZERO, DIMENSIONLESS):
            raise DimensionError(f"in {node.src!r}: the argument {arg.src!r} of {fname} must be dimensionless, it is in {format_dims(d)}")
    return DIMENSIONLESS


def _cmp(node: Node, dims):
    _same(node.args, dims, f"in the comparison {node.src!r}")
    return DIMENSIONLESS


def _logic(node: Node, dims):
    for arg in node.args:
        _walk(arg, dims)
    return DIMENSIONLESS


def _piecewise(node: Node, dims):
    values = node.args[0::2]
    for cond in node.args[1::2]:
        _walk(cond, dims)
    return _same(values, dims, f"in the branches of {node.src!r}")


_RULES = {
    "num": _num,
    "sym": _sym,
    "true": lambda node, dims: DIMENSIONLESS,
    "bin": _bin,
    "neg": _neg,
    "call": _call,
    "cmp": _cmp,
    "and": _logic,
    "or": _logic,
    "not": _logic,
    "piecewise": _piecewise,
}
