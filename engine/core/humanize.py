"""Friendly numbers for text and Markdown output (JSON keeps canonical units)."""

from __future__ import annotations

import math


def number(x: float | str, digits: int = 4) -> str:
    """``147456``, ``0.4``, ``1.709e7``: exact integers below 1e7, else ``digits`` significant digits."""
    if isinstance(x, str):
        return x
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return str(x)
    if float(x).is_integer() and abs(x) < 1e7:
        return f"{int(x):,}".replace(",", "\u202f") if abs(x) >= 1e4 else str(int(x))
    if 1e-3 <= abs(x) < 1e6:
        return f"{x:.{digits}g}"
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


_BINARY = [("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)]
_DECIMAL = [("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)]
_TIME = [("yr", 365 * 86400), ("d", 86400), ("h", 3600), ("min", 60), ("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)]


def friendly(value: float, unit: str) -> str:
    """A second reading of ``value unit`` in a larger unit (``144 KiB``, ``197.8 d``), or ''."""
    if not isinstance(value, int | float) or not math.isfinite(value) or value == 0:
        return ""
    v = abs(value)
    if unit == "B":
        for name, size in _BINARY:
            if v >= size:
                dec_name, dec_size = _pick(v)
                return f"{value / size:.4g} {name} = {value / dec_size:.4g} {dec_name}B"
        return ""
    if unit == "s":
        for name, size in _TIME:
            if v >= size and name != "s":
                return f"{value / size:.4g} {name}"
            if v >= size:
                return ""
        return f"{value * 1e9:.4g} ns"
    for base in ("B/s", "FLOP/s", "W", "J", "FLOP", "tokens/s", "bit/s"):
        if unit == base:
            name, size = _pick(v)
            return f"{value / size:.4g} {name}{base}" if name and v / size < 1000 else ""
    return ""


def _pick(v: float) -> tuple[str, float]:
    for name, size in _DECIMAL:
        if v >= size:
            return name, size
    return "", 1.0


def value_range(v) -> str:
    """``v.value`` with its range, ``0.4 [0.35 .. 0.45]``, for anything with value/low/high."""
    if isinstance(v.value, str):
        return v.value
    if v.low != v.high:
        return f"{number(v.value)} [{number(v.low)} .. {number(v.high)}]"
    return number(v.value)
