"""Code generation: a parsed expression becomes Python source (math or NumPy).

Used to write the compiled formula module (see ``engine.numeric.compiled``) so that numeric
evaluation imports neither sympy nor the YAML stack. ``ceiling``/``floor`` forgive
floating-point noise within 1e-9 relative of an integer (``ceiling(0.3/0.1)`` is 3).
"""

from __future__ import annotations

from engine.core.expr import Node

_MATH = {"sqrt": "_m.sqrt", "exp": "_m.exp", "ceiling": "_ceil", "floor": "_floor", "Abs": "abs", "Min": "min", "Max": "max"}
_NUMPY = {"sqrt": "_np.sqrt", "exp": "_np.exp", "ceiling": "_np_ceil", "floor": "_np_floor", "Abs": "_np.abs", "Min": "_np_min", "Max": "_np_max"}

PRELUDE = '''import math as _m

def _snap(x):
    r = round(x)
    return r if abs(x - r) <= 1e-9 * max(1.0, abs(x)) else x

def _ceil(x):
    return _m.ceil(_snap(x))

def _floor(x):
    return _m.floor(_snap(x))

def _log(x, base=None):
    return _m.log(x) if base is None else _m.log(x, base)

def _np_snap(x):
    import numpy as _np
    r = _np.round(x)
    return _np.where(_np.abs(x - r) <= 1e-9 * _np.maximum(1.0, _np.abs(x)), r, x)

def _np_ceil(x):
    import numpy as _np
    return _np.ceil(_np_snap(x))

def _np_floor(x):
    import numpy as _np
    return _np.floor(_np_snap(x))

def _np_min(*a):
    import numpy as _np
    out = a[0]
    for v in a[1:]:
        out = _np.minimum(out, v)
    return out

def _np_max(*a):
    import numpy as _np
    out = a[0]
    for v in a[1:]:
        out = _np.maximum(out, v)
    return out

def _np_log(x, base=None):
    import numpy as _np
    return _np.log(x) if base is None else _np.log(x) / _np.log(base)
'''


def to_python(node: Node, names: dict[str, str], numpy: bool = False) -> str:
    """Python source for ``node``; ``names`` maps symbol names to local variable names."""
    return _Printer(names, numpy).p(node)


class _Printer:
    def __init__(self, names: dict[str, str], numpy: bool):
        self.names = names
        self.numpy = numpy
        self.funcs = _NUMPY if numpy else _MATH

    def p(self, node: Node) -> str:
        return getattr(self, "_" + node.kind)(node)

    def _num(self, node: Node) -> str:
        value = node.value
        if value.denominator == 1:
            return f"{float(value.numerator)!r}"
        return f"({float(value)!r})"

    def _sym(self, node: Node) -> str:
        return self.names[str(node.value)]

    def _true(self, node: Node) -> str:
        return "True"

    def _bin(self, node: Node) -> str:
        left, right = (self.p(a) for a in node.args)
        return f"({left} {node.value} {right})"

    def _neg(self, node: Node) -> str:
        return f"(-{self.p(node.args[0])})"

    def _call(self, node: Node) -> str:
        args = ", ".join(self.p(a) for a in node.args)
        if node.value == "log":
            return f"{'_np_log' if self.numpy else '_log'}({args})"
        return f"{self.funcs[node.value]}({args})"

    def _cmp(self, node: Node) -> str:
        left, right = (self.p(a) for a in node.args)
        return f"({left} {node.value} {right})"

    def _and(self, node: Node) -> str:
        parts = [self.p(a) for a in node.args]
        if self.numpy:
            return "_np.logical_and.reduce([" + ", ".join(parts) + "])"
        return "(" + " and ".join(parts) + ")"

    def _or(self, node: Node) -> str:
        parts = [self.p(a) for a in node.args]
        if self.numpy:
            return "_np.logical_or.reduce([" + ", ".join(parts) + "])"
        return "(" + " or ".join(parts) + ")"

    def _not(self, node: Node) -> str:
        inner = self.p(node.args[0])
        return f"_np.logical_not({inner})" if self.numpy else f"(not {inner})"

    def _piecewise(self, node: Node) -> str:
        *pairs, default = node.args
        values = [self.p(v) for v in pairs[0::2]]
        conds = [self.p(c) for c in pairs[1::2]]
        if self.numpy:
            return f"_np.select([{', '.join(conds)}], [{', '.join(values)}], {self.p(default)})"
        out = self.p(default)
        for value, cond in reversed(list(zip(values, conds, strict=True))):
            out = f"({value} if {cond} else {out})"
        return out
