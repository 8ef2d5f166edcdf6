"""Numeric evaluation of one formula from the compiled module; never imports sympy.

Inputs arrive as text (``--set name=VALUE``) or numbers in the declared unit. Ranges
propagate exactly when the formula is monotone in every ranged input (corners chosen by
the monotonicity the compiler recorded) and by sampling otherwise; the result says which.
"""

from __future__ import annotations

import math
import numbers
import re
from collections import namedtuple

from engine.core.errors import EvaluationError, InputError, UnitError
from engine.core.units import Quantity, parse_quantity

SAMPLES = 4096


# value/low/high in ``unit``; source is "given" or "default: <its source>"
InputValue = namedtuple("InputValue", "value unit low high source")
# method is "exact" (corners of a monotone formula) or "sampled"
OutputValue = namedtuple("OutputValue", "value unit low high method")


class FormulaResult:
    """The result of one formula evaluation; ``to_json`` gives the DESIGN.md contract."""

    def __init__(self, formula: str, name: str, variant: str, expr: str, inputs: dict, outputs: dict, assumptions: list[str], warnings: list[str] | None = None):
        self.formula, self.name, self.variant, self.expr = formula, name, variant, expr
        self.inputs: dict[str, InputValue] = inputs
        self.outputs: dict[str, OutputValue] = outputs
        self.assumptions = assumptions
        self.warnings = warnings if warnings is not None else []

    def to_json(self) -> dict:
        return {
            "formula": self.formula,
            "name": self.name,
            "variant": self.variant or None,
            "expr": self.expr,
            "inputs": {k: v._asdict() for k, v in self.inputs.items()},
            "outputs": {k: v._asdict() for k, v in self.outputs.items()},
            "formulas": [self.formula],
            "assumptions": self.assumptions,
            "warnings": self.warnings,
        }


def evaluate(meta: dict, module, given: dict[str, object]) -> FormulaResult:
    """Evaluate formula ``meta`` (an entry of the compiled FORMULAS) for ``given`` inputs."""
    fid = meta["id"]
    symbols = meta["symbols"]
    for name in given:
        if name not in symbols:
            expected = ", ".join(symbols) or "none"
            raise InputError(f"--set {name}", f"is not an input of {fid} (its inputs: {expected})")
    variant_key = _select_variant(meta, given)
    variant = meta["variants"][variant_key]
    inputs: dict[str, InputValue] = {}
    quantities: dict[str, Quantity] = {}
    if meta["selector"]:
        sel = meta["selector"]
        src = "given" if sel in given else f"default: {symbols[sel]['default_source']}"
        inputs[sel] = InputValue(variant_key, "", variant_key, variant_key, src)
    missing = []
    for name in variant["inputs"]:
        spec = symbols[name]
        if name in given:
            q = read_input(name, given[name], spec)
            source = "given"
        elif spec["default"] is not None:
            q = Quantity(*spec["default"])
            source = f"default: {spec['default_source']}"
        else:
            missing.append(name)
            continue
        check_domain(name, q, spec)
        quantities[name] = q
        inputs[name] = InputValue(q.value, spec["unit"], q.low, q.high, source)
    if missing:
        detail = "; ".join(f"{n} ({symbols[n]['unit']}, {symbols[n]['desc']})" for n in missing)
        raise InputError(f"--set {missing[0]}", f"{fid} needs a value for {detail}")
    output = compute(meta, module, variant_key, quantities)
    assumptions = list(meta["assumptions"]) + list(variant["assumptions"])
    outputs = {meta["output"]["symbol"]: output}
    if currency_of(given) == "CNY":
        inputs = {n: v._replace(unit=in_currency(v.unit, "CNY")) for n, v in inputs.items()}
        outputs = {n: v._replace(unit=in_currency(v.unit, "CNY")) for n, v in outputs.items()}
        assumptions.insert(0, MONEY_IN_CNY)
    return FormulaResult(fid, meta["name"], variant_key, variant["expr"], inputs, outputs, assumptions)


_CURRENCY = re.compile(r"(?<![A-Za-z])(USD|CNY|RMB)(?![A-Za-z])")
MONEY_IN_CNY = "Money is in CNY, the currency of the price inputs; nothing is converted (the formula records write money as USD)."


def currency_of(given: dict[str, object]) -> str:
    """The one currency the price inputs are written in ("" when none says); a mix is bad input."""
    seen: dict[str, str] = {}
    for name, raw in given.items():
        text = raw if isinstance(raw, str) else str(raw)
        if "USD" not in text and "CNY" not in text and "RMB" not in text:
            continue  # the cheap test first: most inputs name no currency
        for m in _CURRENCY.finditer(text):
            seen.setdefault("CNY" if m.group(1) == "RMB" else m.group(1), name)
    if len(seen) > 1:
        (a, na), (b, nb) = list(seen.items())[:2]
        raise InputError(f"--set {nb}", f"is in {b} but {na} is in {a}; give every price in one currency (nothing is converted)")
    return next(iter(seen), "")


def in_currency(unit: str, currency: str) -> str:
    """``unit`` with the records' USD written as ``currency`` (a label: nothing is converted)."""
    return re.sub(r"\bUSD\b", currency, unit)


def _select_variant(meta: dict, given: dict[str, object]) -> str:
    selector = meta["selector"]
    if not selector:
        return ""
    spec = meta["symbols"][selector]
    value = given.get(selector, spec["default"])
    if value is None:
        raise InputError(f"--set {selector}", f"{meta['id']} needs {selector}, one of {', '.join(spec['values'])}")
    value = str(value).strip()
    if value not in spec["values"]:
        raise InputError(f"--set {selector}", f"{value!r} is not one of {', '.join(spec['values'])}")
    return value


def read_input(name: str, raw: object, spec: dict) -> Quantity:
    if isinstance(raw, numbers.Real) and not isinstance(raw, bool):  # NumPy's numbers too
        try:
            value = float(raw)
        except OverflowError:  # an int past the largest float (10**400)
            unit = f" in {spec['unit']}" if spec["unit"] not in ("", "1") else ""
            raise InputError(f"--set {name}", f"expected a finite number{unit}, got an integer of {len(str(abs(int(raw))))} digits") from None
        if not math.isfinite(value):
            raise InputError(f"--set {name}", f"expected a finite number in {spec['unit']}")
        return Quantity.point(value)
    if not isinstance(raw, str):  # a list is never a (value, low, high) triple here: give a range as "lo..hi"
        unit = f" in {spec['unit']}" if spec["unit"] not in ("", "1") else ""
        raise InputError(f"--set {name}", f"expected a number{unit} or a string such as '80GiB', '1..3h' or '40±10%', got a {type(raw).__name__}")
    key = (str(raw), spec["unit"])
    q = _PARSED.get(key)
    if q is None:
        try:
            q = parse_quantity(*key)
        except UnitError as exc:
            raise InputError(f"--set {name}", f"{exc.text!r} {exc.message}") from None
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = q
    return q


# parse_quantity is a pure function of (text, unit) and a Quantity is immutable: the API
# evaluates the same "2B" or "35..45%" many times, and parsing it costs more than the formula
_PARSED: dict[tuple[str, str], Quantity] = {}
_PARSED_MAX = 4096


_DOMAIN_TEXT = {
    "positive": "a number > 0",
    "nonnegative": "a number >= 0",
    "positive_integer": "a whole number >= 1",
    "nonnegative_integer": "a whole number >= 0",
    "fraction": "a fraction from 0 to 1",
    "positive_fraction": "a fraction above 0 and at most 1",
    "fraction_below_one": "a fraction from 0 up to but not including 1",
    "ge_one": "a number >= 1",
    "ge_two_integer": "a whole number >= 2",
    "real": "a number",
}


_DOMAIN_OK = {
    "positive": lambda x: x > 0,
    "nonnegative": lambda x: x >= 0,
    "positive_integer": lambda x: x >= 1 and float(x).is_integer(),
    "nonnegative_integer": lambda x: x >= 0 and float(x).is_integer(),
    "fraction": lambda x: 0 <= x <= 1,
    "positive_fraction": lambda x: 0 < x <= 1,
    "fraction_below_one": lambda x: 0 <= x < 1,
    "ge_one": lambda x: x >= 1,
    "ge_two_integer": lambda x: x >= 2 and float(x).is_integer(),
    "real": lambda x: True,
}


def check_domain(name: str, q: Quantity, spec: dict) -> None:
    domain = spec["domain"]
    ok = _DOMAIN_OK[domain]
    if q.low == q.high == q.value:
        ends = (q.value,)  # a point: one check
    else:
        ends = (q.low, q.high) if domain.endswith("integer") else (q.low, q.value, q.high)
    for x in ends:
        if not ok(x):
            unit = "" if spec["unit"] in ("1", "") else f" {spec['unit']}"
            raise InputError(f"--set {name}", f"expected {_DOMAIN_TEXT[domain]}{unit}, got {x:g}")


def compute(meta: dict, module, variant_key: str, quantities: dict[str, Quantity]) -> OutputValue:
    variant = meta["variants"][variant_key]
    fn = getattr(module, variant["fn"])
    names = variant["inputs"]
    point = _call(meta["id"], fn, [quantities[n].value for n in names])
    unit = meta["output"]["unit"]
    ranged = [n for n in names if quantities[n].is_range]
    if not ranged:
        return OutputValue(point, unit, point, point, "exact")
    mono = variant["mono"]
    if all(mono.get(n) for n in ranged):
        lo_args, hi_args = [], []
        for n in names:
            q = quantities[n]
            direction = mono.get(n) if n in ranged else "constant"
            lo_args.append(q.high if direction == "decreasing" else (q.low if direction == "increasing" else q.value))
            hi_args.append(q.low if direction == "decreasing" else (q.high if direction == "increasing" else q.value))
        low, high = _call(meta["id"], fn, lo_args), _call(meta["id"], fn, hi_args)
        return OutputValue(point, unit, min(low, high), max(low, high), "exact")
    return _sampled(meta, module, variant, quantities, point, unit)


def _sampled(meta, module, variant, quantities, point, unit) -> OutputValue:
    """Corners of the ranged inputs (up to 2^10) plus seeded uniform samples inside them."""
    import itertools
    import random

    import numpy as np

    names = variant["inputs"]
    ranged = [n for n in names if quantities[n].is_range]
    corners = list(itertools.islice(itertools.product((0, 1), repeat=len(ranged)), 1024))
    rng = random.Random(0)
    count = len(corners) + SAMPLES
    columns = []
    for n in names:
        q = quantities[n]
        if not q.is_range:
            columns.append(np.full(count, q.value))
            continue
        k = ranged.index(n)
        xs = [(q.low, q.high)[c[k]] for c in corners] + [rng.uniform(q.low, q.high) for _ in range(SAMPLES)]
        if meta["symbols"][n]["domain"].endswith("integer"):
            xs = [round(x) for x in xs]
        columns.append(np.array(xs, dtype=float))
    fn = getattr(module, variant["np"])
    with np.errstate(all="ignore"):
        values = np.asarray(fn(*columns), dtype=float) * np.ones(count)
    values = values[np.isfinite(values)]
    if values.size == 0:
        raise EvaluationError(meta["id"], "no finite value over the given ranges")
    return OutputValue(point, unit, float(min(values.min(), point)), float(max(values.max(), point)), "sampled")


def _call(fid: str, fn, args: list[float]) -> float:
    try:
        value = float(fn(*args))
    except ZeroDivisionError:
        raise EvaluationError(fid, "division by zero for these inputs") from None
    except (ValueError, OverflowError) as exc:
        raise EvaluationError(fid, f"cannot be evaluated for these inputs ({exc})") from None
    except TypeError:  # a complex result, e.g. a fractional power of a negative number
        raise EvaluationError(fid, "the result is not a real number for these inputs") from None
    if not math.isfinite(value):
        raise EvaluationError(fid, "the result is not finite for these inputs")
    return value
