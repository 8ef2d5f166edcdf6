"""Units and quantities: one table reads unit strings in YAML and values on the command line.

A unit is a scale and a dimension. Dimensions are products of powers of eight base
dimensions: bytes, FLOP, seconds, tokens, requests, joules, US dollars and grams of
CO2-equivalent. Watts are J/s, bits are 1/8 B, hours are 3600 s. ``GPU`` and ``%`` are
dimensionless (``GPU·h`` is a time, shown as GPU-hours).

Decimal prefixes k M G T P E are powers of 1000, binary Ki Mi Gi Ti Pi Ei powers of 1024;
small prefixes m u µ n apply to time and energy units only, so ``80mB`` is refused rather
than read as 0.08 bytes. This module never imports sympy.
"""

from __future__ import annotations

import math
import re
from collections import namedtuple

from engine.core.errors import UnitError

BASE = ("B", "FLOP", "s", "tokens", "requests", "J", "USD", "gCO2e")
_NDIM = len(BASE)

Dims = tuple[float, ...]  # exponents; halves are exact in binary floating point
DIMENSIONLESS: Dims = (0.0,) * _NDIM


def _dims(**powers: int) -> Dims:
    return tuple(float(powers.get(name, 0)) for name in ("B", "FLOP", "s", "tokens", "requests", "J", "USD", "g"))


class Unit:
    """A scale (the value in base units of one of this unit) and a dimension."""

    __slots__ = ("scale", "dims")

    def __init__(self, scale: float, dims: Dims):
        self.scale = scale
        self.dims = dims

    def __repr__(self) -> str:
        return f"Unit({self.scale!r}, {format_dims(self.dims)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unit) and self.scale == other.scale and self.dims == other.dims

    def __hash__(self) -> int:
        return hash((self.scale, self.dims))

    def __mul__(self, other: Unit) -> Unit:
        return Unit(self.scale * other.scale, tuple(a + b for a, b in zip(self.dims, other.dims, strict=True)))

    def __truediv__(self, other: Unit) -> Unit:
        return Unit(self.scale / other.scale, tuple(a - b for a, b in zip(self.dims, other.dims, strict=True)))

    def __pow__(self, n: float) -> Unit:
        n = float(n)
        return Unit(self.scale**n, tuple(a * n for a in self.dims))

    @property
    def dimensionless(self) -> bool:
        return self.dims == DIMENSIONLESS

    def same_dimension(self, other: Unit) -> bool:
        return self.dims == other.dims

    def same_as(self, other: Unit) -> bool:
        return self.dims == other.dims and math.isclose(self.scale, other.scale, rel_tol=1e-12)


ONE = Unit(1.0, DIMENSIONLESS)

_BIG = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}
_SMALL = {"m": 1e-3, "u": 1e-6, "µ": 1e-6, "μ": 1e-6, "n": 1e-9}

# prefix classes a unit accepts
_P_DATA = {**_BIG, **_BINARY}
_P_DEC = dict(_BIG)
_P_TIME = dict(_SMALL)
_P_ENERGY = {**_BIG, "m": 1e-3}

_J = _dims(J=1)
_S = _dims(s=1)

# name -> (Unit, allowed prefixes)
_TABLE: dict[str, tuple[Unit, dict[str, float]]] = {}


def _define(names: str, unit: Unit, prefixes: dict[str, float] | None = None) -> None:
    for name in names.split():
        _TABLE[name] = (unit, prefixes or {})


_define("1", ONE)
_define("%", Unit(0.01, DIMENSIONLESS))
_define("GPU GPUs gpu gpus", ONE)
_define("B byte bytes", Unit(1.0, _dims(B=1)), _P_DATA)
_define("b bit bits", Unit(0.125, _dims(B=1)), _P_DATA)
_define("bps", Unit(0.125, _dims(B=1, s=-1)), _P_DEC)
_define("FLOP FLOPs flop flops", Unit(1.0, _dims(FLOP=1)), _P_DEC)
_define("FLOPS", Unit(1.0, _dims(FLOP=1, s=-1)), _P_DEC)
_define("s sec second seconds", Unit(1.0, _S), _P_TIME)
_define("min minute minutes", Unit(60.0, _S))
_define("h hr hour hours", Unit(3600.0, _S))
_define("d day days", Unit(86400.0, _S))
_define("wk week weeks", Unit(7 * 86400.0, _S))
_define("yr year years", Unit(365 * 86400.0, _S))  # 8760 h, the year ch31's power formula uses
_define("Hz", Unit(1.0, _dims(s=-1)), _P_DEC)
_define("token tokens tok", Unit(1.0, _dims(tokens=1)), _P_DEC)
_define("request requests req", Unit(1.0, _dims(requests=1)), _P_DEC)
_define("J", Unit(1.0, _J), _P_ENERGY)
_define("W", Unit(1.0, _dims(J=1, s=-1)), _P_ENERGY)
_define("Wh", Unit(3600.0, _J), _P_ENERGY)
_define("USD", Unit(1.0, _dims(USD=1)), _P_DEC)
# Money is one dimension and is never converted: a calculation runs in the currency of its
# price inputs (engine.numeric.calculators relabels USD as CNY when the prices are given in CNY and
# refuses a mix). The formula records write that dimension as USD.
_define("CNY RMB", Unit(1.0, _dims(USD=1)), _P_DEC)
_define("gCO2e", Unit(1.0, _dims(g=1)), {"k": 1e3, "M": 1e6})
_define("tCO2e", Unit(1e6, _dims(g=1)))

_PREFIX_ONLY = {**_BIG, **_BINARY}

KNOWN_UNITS = "B, bit, FLOP, FLOPS, s, min, h, d, yr, tokens, requests, W, J, Wh, USD, CNY, gCO2e, GPU, %, 1"


def lookup(atom: str) -> Unit:
    """One unit name, with an optional prefix (``GiB``, ``ms``, ``kWh``)."""
    if atom in _TABLE:
        return _TABLE[atom][0]
    for plen in (2, 1):
        prefix, rest = atom[:plen], atom[plen:]
        if rest in _TABLE:
            unit, allowed = _TABLE[rest]
            if prefix in allowed:
                return Unit(unit.scale * allowed[prefix], unit.dims)
    raise UnitError(atom, f"is not a known unit (expected {KNOWN_UNITS}, with prefixes k M G T P, Ki Mi Gi Ti, or m u n on times)")


_UNIT_TOKEN = re.compile(r"\s*(?:(?P<atom>[A-Za-z%µμ$][A-Za-z0-9µμ_]*|1(?![0-9.]))|(?P<op>\*\*|[*·/^()])|(?P<int>-?\d+))")


def parse_unit(text: str) -> Unit:
    """Parse ``B/s``, ``FLOP/(s*GPU)``, ``USD/kWh``, ``s^2``, ``GPU·h`` into a Unit."""
    if not isinstance(text, str) or not text.strip():
        raise UnitError(str(text), "is empty (expected a unit such as B, B/s, FLOP/s or 1)")
    if len(text) > 200:
        raise UnitError(text[:40] + "...", "is too long for a unit")
    tokens = _tokenize_unit(text)
    parser = _UnitParser(text, tokens)
    try:
        unit = parser.expr()
    except OverflowError:
        raise UnitError(text, "has a scale too large to represent") from None
    if parser.pos != len(tokens):
        raise UnitError(text, f"has an unexpected {tokens[parser.pos][1]!r}")
    if not (math.isfinite(unit.scale) and unit.scale > 0):
        raise UnitError(text, "has a scale too large or too small to represent")
    return unit


def _tokenize_unit(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _UNIT_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise UnitError(text, f"has an unexpected character {text[pos]!r}")
        kind = m.lastgroup or ""
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    return tokens


class _UnitParser:
    def __init__(self, text: str, tokens: list[tuple[str, str]]):
        self.text, self.tokens, self.pos, self.depth = text, tokens, 0, 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("", "")

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        self.pos += 1
        return tok

    def expr(self) -> Unit:
        unit = self.power()
        while True:
            kind, val = self.peek()
            if val in ("*", "·"):
                self.take()
                unit = unit * self.power()
            elif val == "/":
                self.take()
                unit = unit / self.power()
            elif kind == "atom" or val == "(":  # juxtaposition: "GPU h"
                unit = unit * self.power()
            else:
                return unit

    def power(self) -> Unit:
        unit = self.atom()
        if self.peek()[1] in ("^", "**"):
            self.take()
            kind, val = self.take()
            if kind != "int" or abs(int(val)) > 4:
                raise UnitError(self.text, "has an exponent that is not an integer from -4 to 4")
            unit = unit ** int(val)
        return unit

    def atom(self) -> Unit:
        kind, val = self.take()
        if kind == "atom":
            return lookup(val)
        if val == "(":
            self.depth += 1
            if self.depth > 8:
                raise UnitError(self.text, "nests parentheses too deeply")
            unit = self.expr()
            if self.take()[1] != ")":
                raise UnitError(self.text, "is missing ')'")
            self.depth -= 1
            return unit
        if kind == "int" and val == "1":
            return ONE
        raise UnitError(self.text, f"has {val or 'nothing'!r} where a unit name was expected")


def format_dims(dims: Dims) -> str:
    """Canonical name of a dimension in base units: ``B/s``, ``FLOP/(s·tokens)``."""
    num, den = [], []
    for name, power in zip(BASE, dims, strict=True):
        if power == 0:
            continue
        target = num if power > 0 else den
        p = abs(power)
        target.append(name if p == 1 else f"{name}^{p:g}")
    top = "·".join(num) or "1"
    if not den:
        return top
    bottom = den[0] if len(den) == 1 else "(" + "·".join(den) + ")"
    return f"{top}/{bottom}"


# ---------------------------------------------------------------- quantities on the command line


class Quantity(namedtuple("Quantity", "value low high")):
    """A value with optional uncertainty, all in one declared unit. Point: low == high == value."""

    __slots__ = ()

    @classmethod
    def point(cls, value: float) -> Quantity:
        return cls(value, value, value)

    @property
    def is_range(self) -> bool:
        return self.low != self.high


_NUMBER = r"[+-]?(?:\d+(?:_\d+)*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_NUM_UNIT = re.compile(rf"\s*(?P<num>{_NUMBER})\s*(?P<unit>[^\s].*?)?\s*")
_MAX_TEXT = 200


def parse_quantity(text: str, unit_text: str) -> Quantity:
    """Parse a ``--set`` value into the declared unit ``unit_text``.

    Accepts ``80GiB``, ``3.35TB/s``, ``2us``, ``128k`` (a bare prefix scales the declared
    unit), ranges ``lo..hi`` (``1h..3h`` or ``1..3h``), ``v±p%``, ``v+-p%`` and ``v±d``.
    """
    target = parse_unit(unit_text)
    if not isinstance(text, str):
        text = str(text)
    if "\x00" in text or len(text) > _MAX_TEXT:
        raise UnitError(text[:40], "is not a readable quantity")
    body = text.strip()
    if ".." in body:
        lo_text, _, hi_text = body.partition("..")
        hi_num, hi_unit = _split(hi_text, text)
        lo_num, lo_unit = _split(lo_text, text)
        lo = _convert(lo_num, lo_unit or hi_unit, target, unit_text, text)
        hi = _convert(hi_num, hi_unit, target, unit_text, text)
        if lo > hi:
            raise UnitError(text, f"has its low end {lo:g} above its high end {hi:g} ({unit_text})")
        return _checked(Quantity(lo / 2 + hi / 2, lo, hi), text)
    for sep in ("±", "+-", "+/-"):
        if sep in body:
            centre_text, _, spread_text = body.partition(sep)
            c_num, c_unit = _split(centre_text, text)
            centre = _convert(c_num, c_unit, target, unit_text, text)
            s_num, s_unit = _split(spread_text, text)
            if s_unit == "%":
                spread = abs(centre) * s_num / 100
            else:
                spread = _convert(s_num, s_unit or c_unit, target, unit_text, text)
            if spread < 0:
                raise UnitError(text, f"has a negative spread after {sep}")
            return _checked(Quantity(centre, centre - spread, centre + spread), text)
    num, unit = _split(body, text)
    return _checked(Quantity.point(_convert(num, unit, target, unit_text, text)), text)


def _checked(q: Quantity, whole: str) -> Quantity:
    if not all(math.isfinite(x) for x in (q.value, q.low, q.high)):
        raise UnitError(whole, "is out of range")
    return q


def _split(part: str, whole: str) -> tuple[float, str]:
    m = _NUM_UNIT.fullmatch(part)
    if not m:
        raise UnitError(whole, "is not a number with an optional unit (expected e.g. 80GiB, 3.35TB/s, 1h..3h, 40±10%)")
    num = float(m.group("num").replace("_", ""))
    if not math.isfinite(num):
        raise UnitError(whole, "is not a finite number")
    return num, (m.group("unit") or "").strip()


def _convert(num: float, unit: str, target: Unit, target_text: str, whole: str) -> float:
    if not unit:
        return num
    if unit in _PREFIX_ONLY:
        return _finite(num * _PREFIX_ONLY[unit], whole)
    given = parse_unit(unit)
    if not given.same_dimension(target) and _per_count(given, target):
        return _finite(num * given.scale / target.scale, whole)  # 100KiB for B/tokens: obviously 100 KiB per token
    if not given.same_dimension(target):
        raise UnitError(
            whole,
            f"has unit {unit} ({format_dims(given.dims)}), expected a quantity in {target_text} ({format_dims(target.dims)})",
        )
    return _finite(num * given.scale / target.scale, whole)


def _per_count(given: Unit, target: Unit) -> bool:
    """Whether ``target`` is ``given`` per one count (a token or a request): a user who types ``--le 100KiB`` for a
    quantity in B/tokens, or ``80GB`` for B/requests, means it per token or per request (issue 28). Only counts,
    never time: 100 tokens is not 100 tokens/s."""
    for count in ("tokens", "requests"):
        c = parse_unit(count)
        if all(abs(g - c_ - t) < 1e-12 for g, c_, t in zip(given.dims, c.dims, target.dims, strict=True)) and c.scale == 1:
            return True
    return False


def _finite(value: float, whole: str) -> float:
    if not math.isfinite(value):
        raise UnitError(whole, "is out of range")
    return value
