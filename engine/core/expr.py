"""The whitelisted-AST expression parser.

An expression string from a YAML file is parsed by Python's ``ast`` (which only parses;
nothing is evaluated) and every node is checked against a whitelist while it is turned
into a small tree of :class:`Node` objects. Allowed: numbers, declared symbols,
``+ - * / **`` (bounded exponents, no towers), comparisons, ``and``/``or``/``not`` inside
conditions, and the functions sqrt, log, exp, ceiling, floor, Min, Max, Abs and Piecewise
(whose last branch must be ``(value, True)``). Everything else is refused with an
:class:`~engine.core.errors.ExprError`. Nothing reaches eval, exec, sympify or parse_expr.

The tree is what the unit walker, the code generator and the SymPy builder read; this
module never imports sympy. Symbol names such as ``I``, ``E``, ``N``, ``S`` and ``beta``
are ordinary symbols.
"""

from __future__ import annotations

import ast
import math
import operator
import warnings
from fractions import Fraction

from engine.core import expr_limits
from engine.core.errors import ExprError
from engine.core.record import dataclass

MAX_LENGTH = 4000
MAX_DEPTH = 40
MAX_NODES = 2000
MAX_LITERAL = 10**30
MAX_EXPONENT = 64
MAX_DIGITS = 40

FUNCTIONS: dict[str, tuple[int, int]] = {  # name -> (min args, max args)
    "sqrt": (1, 1),
    "log": (1, 2),
    "exp": (1, 1),
    "ceiling": (1, 1),
    "floor": (1, 1),
    "Min": (2, 16),
    "Max": (2, 16),
    "Abs": (1, 1),
    "Piecewise": (1, 16),
}

_FRACTION_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


@dataclass(frozen=True, slots=True)
class Node:
    """One node of a parsed expression.

    kind: ``num`` (value: Fraction), ``sym`` (value: name), ``true``, ``bin`` (value: op,
    args: left, right), ``neg`` (args: x), ``call`` (value: function name), ``cmp``
    (value: op, args: left, right), ``and``/``or``/``not`` and ``piecewise`` (args:
    value0, cond0, value1, cond1, ..., default). ``src`` is the source text of the node.
    """

    kind: str
    value: object = None
    args: tuple[Node, ...] = ()
    src: str = ""

    def symbols(self) -> set[str]:
        found: set[str] = set()
        stack = [self]
        while stack:
            node = stack.pop()
            if node.kind == "sym":
                found.add(str(node.value))
            stack.extend(node.args)
        return found

    def walk(self):
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.args)


def parse(text: object, symbols: set[str] | frozenset[str]) -> Node:
    """Parse ``text`` allowing only the names in ``symbols``; raise ExprError otherwise."""
    if not isinstance(text, str):
        raise ExprError(f"expected an expression string, got {type(text).__name__}")
    if "\x00" in text:
        raise ExprError("contains a NUL byte")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"is {len(text)} characters long (at most {MAX_LENGTH})")
    if not text.strip():
        raise ExprError("is empty")
    if text.count("(") > MAX_DEPTH * 4:
        raise ExprError(f"nests too deeply (at most {MAX_DEPTH} levels)")
    try:
        with warnings.catch_warnings():  # e.g. "invalid decimal literal": the ExprError below says it once
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"is not a valid expression ({exc.msg})") from None
    except (ValueError, RecursionError, MemoryError, OverflowError):
        raise ExprError("cannot be parsed (too deep or too large)") from None
    builder = _Builder(text, frozenset(symbols))
    try:
        node = builder.build(tree.body, 0)
    except RecursionError:
        raise ExprError(f"nests too deeply (at most {MAX_DEPTH} levels)") from None
    expr_limits.check(node)
    return node


def parse_condition(text: object, symbols: set[str] | frozenset[str]) -> Node:
    """A failure-boundary condition (``x > 0``, joined with and/or/not) as ``Piecewise((1, cond), (0, True))``.

    The text must be one whole expression on its own, so wrapping it cannot change its shape."""
    if not isinstance(text, str):
        raise ExprError(f"expected a condition string, got {type(text).__name__}")
    parse_check = text.strip() or text  # parse() says why an empty or broken text is not an expression
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            tuple_given = isinstance(ast.parse(parse_check, mode="eval").body, ast.Tuple)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return parse(text, symbols)  # raises ExprError with parse()'s own message
    if tuple_given:
        raise ExprError(f"{text!r} is not one condition (expected e.g. x > 0, joined with and/or/not)")
    return parse(f"Piecewise((1, ({text.strip()})), (0, True))", symbols)


class _Builder:
    def __init__(self, text: str, symbols: frozenset[str]):
        self.text = text
        self.symbols = symbols
        self.count = 0

    def src(self, node: ast.AST) -> str:
        try:
            return ast.unparse(node)
        except Exception:  # pragma: no cover - unparse of a node we accepted
            return "?"

    def build(self, node: ast.AST, depth: int) -> Node:
        self.count += 1
        if depth > MAX_DEPTH:
            raise ExprError(f"nests too deeply (at most {MAX_DEPTH} levels)")
        if self.count > MAX_NODES:
            raise ExprError(f"is too large (at most {MAX_NODES} nodes)")
        handler = _HANDLERS.get(type(node))
        if handler is None:
            raise ExprError(f"{_describe(node)} is not allowed (expected numbers, declared symbols, + - * / **, comparisons and {', '.join(FUNCTIONS)})")
        return handler(self, node, depth + 1)

    # -- leaves
    def constant(self, node: ast.Constant, depth: int) -> Node:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ExprError(f"the constant {value!r} is not allowed (expected a number)")
        if abs(value) > MAX_LITERAL:
            raise ExprError(f"the number {_short(value)} is too large (at most {MAX_LITERAL:.0e})")
        if value != value or value in (float("inf"), float("-inf")):
            raise ExprError("the number is not finite")
        exact = Fraction(value) if isinstance(value, int) else Fraction(repr(value))
        return Node("num", exact, src=self.src(node))

    def name(self, node: ast.Name, depth: int) -> Node:
        ident = node.id
        if ident.startswith("__"):
            raise ExprError(f"the name {ident!r} is not allowed (dunder names are refused)")
        if ident not in self.symbols:
            if ident in FUNCTIONS:
                raise ExprError(f"the function {ident!r} must be called with arguments")
            raise ExprError(f"the name {ident!r} is not a declared symbol")
        return Node("sym", ident, src=ident)

    # -- operators
    def binop(self, node: ast.BinOp, depth: int) -> Node:
        op = _BIN.get(type(node.op))
        if op is None:
            raise ExprError(f"the operator {_OPNAMES.get(type(node.op), type(node.op).__name__)!r} is not allowed (expected + - * / **)")
        left = self.build(node.left, depth)
        right = self.build(node.right, depth)
        if op == "**":
            _check_exponent(right, self.src(node))
            _check_power_size(left, right, self.src(node))
        return Node("bin", op, (left, right), self.src(node))

    def unaryop(self, node: ast.UnaryOp, depth: int) -> Node:
        if isinstance(node.op, ast.USub):
            operand = self.build(node.operand, depth)
            if operand.kind == "num":
                return Node("num", -operand.value, src=self.src(node))
            return Node("neg", None, (operand,), self.src(node))
        if isinstance(node.op, ast.UAdd):
            return self.build(node.operand, depth)
        if isinstance(node.op, ast.Not):
            raise ExprError(f"'not' in {self.src(node)!r} is only allowed inside a Piecewise condition")
        raise ExprError(f"the unary operator in {self.src(node)!r} is not allowed")

    def compare(self, node: ast.Compare, depth: int) -> Node:
        raise ExprError(f"the comparison {self.src(node)!r} is only allowed as a Piecewise condition")

    def boolop(self, node: ast.BoolOp, depth: int) -> Node:
        raise ExprError("'and'/'or' are only allowed inside a Piecewise condition")

    # -- conditions (Piecewise only)
    def condition(self, node: ast.AST, depth: int, last: bool) -> Node:
        """A comparison, or comparisons joined by and/or/not; ``True`` only in the last pair."""
        self.count += 1
        if depth > MAX_DEPTH:
            raise ExprError(f"nests too deeply (at most {MAX_DEPTH} levels)")
        if isinstance(node, ast.Constant) and node.value is True:
            if not last:
                raise ExprError("Piecewise has a True condition before its last branch")
            return Node("true", True, src="True")
        if isinstance(node, ast.Compare):
            return self.comparison(node, depth + 1)
        if isinstance(node, ast.BoolOp):
            kind = "and" if isinstance(node.op, ast.And) else "or"
            return Node(kind, None, tuple(self.condition(v, depth + 1, False) for v in node.values), self.src(node))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return Node("not", None, (self.condition(node.operand, depth + 1, False),), self.src(node))
        raise ExprError(f"the condition {self.src(node)!r} is not a comparison (expected e.g. x > 0, joined with and/or/not)")

    def comparison(self, node: ast.Compare, depth: int) -> Node:
        parts: list[Node] = []
        left = self.build(node.left, depth)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            sym = _CMP.get(type(op))
            if sym is None:
                raise ExprError(f"the comparison {type(op).__name__} is not allowed (expected < <= > >= == !=)")
            right = self.build(comparator, depth)
            parts.append(Node("cmp", sym, (left, right), f"{left.src} {sym} {right.src}"))
            left = right
        return parts[0] if len(parts) == 1 else Node("and", None, tuple(parts), self.src(node))

    # -- calls
    def call(self, node: ast.Call, depth: int) -> Node:
        if not isinstance(node.func, ast.Name):
            raise ExprError(f"calling {self.src(node.func)!r} is not allowed (expected one of {', '.join(FUNCTIONS)})")
        fname = node.func.id
        if fname not in FUNCTIONS:
            raise ExprError(f"the function {fname!r} is not allowed (expected one of {', '.join(FUNCTIONS)})")
        if node.keywords:
            raise ExprError(f"{fname}() takes no keyword arguments")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ExprError(f"{fname}() takes no starred arguments")
        lo, hi = FUNCTIONS[fname]
        if not lo <= len(node.args) <= hi:
            raise ExprError(f"{fname}() takes {lo if lo == hi else f'{lo} to {hi}'} argument{'s' if hi > 1 else ''}, got {len(node.args)}")
        if fname == "Piecewise":
            return self.piecewise(node, depth)
        args = tuple(self.build(a, depth) for a in node.args)
        return Node("call", fname, args, self.src(node))

    def piecewise(self, node: ast.Call, depth: int) -> Node:
        flat: list[Node] = []
        for i, pair in enumerate(node.args):
            if not isinstance(pair, ast.Tuple) or len(pair.elts) != 2:
                raise ExprError(f"Piecewise argument {i + 1} must be a pair (value, condition)")
            value = self.build(pair.elts[0], depth)
            cond = self.condition(pair.elts[1], depth, last=i == len(node.args) - 1)
            flat += [value, cond]
        if flat[-1].kind != "true":
            raise ExprError("Piecewise needs a default branch: make the last pair (value, True)")
        args = tuple(flat[:-1])  # value0, cond0, ..., default
        return Node("piecewise", None, args, self.src(node))


_HANDLERS = {
    ast.Constant: _Builder.constant,
    ast.Name: _Builder.name,
    ast.BinOp: _Builder.binop,
    ast.UnaryOp: _Builder.unaryop,
    ast.Compare: _Builder.compare,
    ast.BoolOp: _Builder.boolop,
    ast.Call: _Builder.call,
}

_OPNAMES = {ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}

_DESCRIPTIONS = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscripting",
    ast.Lambda: "lambda",
    ast.IfExp: "a conditional expression (use Piecewise)",
    ast.ListComp: "a comprehension",
    ast.GeneratorExp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.List: "a list",
    ast.Tuple: "a tuple",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.JoinedStr: "an f-string",
    ast.NamedExpr: "an assignment expression",
    ast.Starred: "a starred expression",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.Slice: "a slice",
}


def _describe(node: ast.AST) -> str:
    return _DESCRIPTIONS.get(type(node), type(node).__name__)


def _short(value: object) -> str:
    if isinstance(value, int) and value.bit_length() > 14000:  # about 4,214 digits; str() refuses past 4,300
        return f"of {value.bit_length()} bits"
    text = str(value)
    return text if len(text) <= 24 else text[:20] + "..."


def _check_exponent(exponent: Node, src: str) -> None:
    if any((n.kind == "bin" and n.value == "**") or (n.kind == "call" and n.value == "exp") for n in exponent.walk()):
        raise ExprError(f"the exponent in {src!r} is itself a power (exponent towers are refused)")
    if not exponent.symbols():
        value = constant_value(exponent)
        if value is None or abs(value) > MAX_EXPONENT:
            raise ExprError(f"the exponent in {src!r} is too large (at most {MAX_EXPONENT} in magnitude)")


def _check_power_size(base: Node, exponent: Node, src: str) -> None:
    """A symbol-free power must stay below 1e300: ``((10**30)**100)**100`` would stall SymPy."""
    if base.symbols() or exponent.symbols():
        return
    left, right = _float_value(base), _float_value(exponent)
    if left is None or right is None:
        return  # undefined or not arithmetic: engine.core.expr_limits names the reason
    try:
        value = left**right
    except ZeroDivisionError:
        return
    except OverflowError:
        value = math.inf
    if isinstance(value, float) and abs(value) > 1e300:
        raise ExprError(f"the power {src!r} is too large (a constant power must stay below 1e300)")


def _float_value(node: Node) -> float | None:
    """Float value of a symbol-free arithmetic subtree; None when it overflows or is not arithmetic."""
    try:
        if node.kind == "num":
            return float(node.value)
        if node.kind == "neg":
            inner = _float_value(node.args[0])
            return None if inner is None else -inner
        if node.kind == "bin":
            left, right = (_float_value(a) for a in node.args)
            if left is None or right is None:
                return None
            value = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow}[node.value](left, right)
            return float(value) if isinstance(value, int | float) else None
    except (OverflowError, ZeroDivisionError, ValueError):
        return None
    return None


def constant_value(node: Node) -> Fraction | None:
    """Exact value of a symbol-free exponent built from + - * /; None for anything else."""
    if node.kind == "num":
        return node.value
    if node.kind == "neg":
        inner = constant_value(node.args[0])
        return None if inner is None else -inner
    if node.kind == "bin" and node.value in "+-*/":
        left, right = (constant_value(a) for a in node.args)
        if left is None or right is None or (node.value == "/" and right == 0):
            return None
        if max(abs(left.numerator), abs(right.numerator), left.denominator, right.denominator) > MAX_LITERAL:
            return None
        return _FRACTION_OPS[node.value](left, right)
    return None
