"""Storage formats by name: the bytes one stored weight or cached K/V value takes.

Weight, KV-cache and compute precision are three separate choices (FX651): W4A16KV8 stores
4-bit weights, multiplies at 16 bits and caches 8-bit K and V. This module sizes the first
two from a format's name; the third picks the device's peak (engine.domain.hardware) and is
checked against the weights here (a product runs at the wider of its weights and activations).

Plain formats count their element bits (FX19, plain: BF16 2 B, FP8 1 B, INT4 0.5 B); block-scaled
and group-quantised ones add their shared scales (FX650: NVFP4 4 + 8/16 bits = 0.5625 B, MXFP4
4 + 8/32 = 0.53125 B, INT4 with an FP16 scale per group of 128: 4 + 16/128 = 4.125 bits).
Numeric only: the compiled formulas, never sympy.
"""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.record import dataclass

# element bits of the plain formats (book Appendix B table B.4)
PLAIN_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "fp6": 6, "fp4": 4, "int4": 4}
# element bits of the block-scaled and group-quantised formats (FX650's first term)
SCALED_BITS = {"nvfp4": 4, "mxfp4": 4, "mxfp6": 6, "mxfp8": 8, "int4_group": 4, "int8_group": 8}
NAMES = (*PLAIN_BITS, *SCALED_BITS)
HELP = ("a storage format: " + ", ".join(PLAIN_BITS) + " (element bits only, FX19) or " + ", ".join(SCALED_BITS)
        + " (scales included, FX650; int4_group:64 sets the group size, default 128)")
# the matrix path a --precision name runs on, in bits (a block-scaled format runs on its element path)
COMPUTE_BITS = {"fp64": 64, "fp32": 32, "tf32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "fp6": 6, "fp4": 4, "int4": 4,
                "nvfp4": 4, "mxfp4": 4, "mxfp6": 6, "mxfp8": 8}


@dataclass(frozen=True, slots=True)
class Storage:
    """One format as stored: its name, bytes per value (scales included), element bits and the formula that gave them."""

    name: str
    bytes: float
    element_bits: int
    formula: str
    group_size: int | None = None

    def source(self, flag: str) -> str:
        """Where the bytes came from, for a preset's or a result's note."""
        how = {"FX19": f"{self.element_bits} bits", "FX650": _scaled_text(self)}[self.formula]
        return f"{flag} {self.name}: {self.bytes:g} B per value ({self.formula}: {how})"


def _scaled_text(s: Storage) -> str:
    if s.name.endswith("_group"):
        return f"{s.element_bits} bits + a 16-bit scale per group of {s.group_size}"
    per = 16 if s.name == "nvfp4" else 32
    return f"{s.element_bits} bits + an 8-bit scale per {per}"


def resolve(text, field: str, root=None) -> Storage:
    """``nvfp4`` -> Storage("nvfp4", 0.5625, 4, "FX650"); ``int4_group:64`` sets the group size.

    Anything else is an InputError naming ``field`` and the known formats.
    """
    from engine.domain.model_count import formula_module

    raw = str(text).strip().lower()
    name, sep, group_text = raw.partition(":")
    if name not in NAMES:
        raise InputError(field, f"{text!r} is not a known storage format (expected {', '.join(NAMES)})")
    ev = _Formula(formula_module(root))
    if name in PLAIN_BITS:
        if sep:
            raise InputError(field, f"{text!r}: only the group-quantised formats (int4_group, int8_group) take a :GROUP size")
        return Storage(name, ev("FX19", weight_quant="plain", weight_bits=PLAIN_BITS[name]), PLAIN_BITS[name], "FX19")
    group = None
    if sep:
        if not name.endswith("_group"):
            raise InputError(field, f"{text!r}: {name}'s block size is fixed by the format; only int4_group and int8_group take a :GROUP size")
        if not group_text.isdigit() or int(group_text) < 1:
            raise InputError(field, f"{text!r}: the group size after ':' must be a whole number >= 1")
        group = int(group_text)
    given = {"storage_format": name}
    if name.endswith("_group"):
        group = group or int(_default(ev, "quant_group_size"))
        given["quant_group_size"] = group
    return Storage(name, ev("FX650", **given), SCALED_BITS[name], "FX650", group)


class _Formula:
    """One output of a formula record from the compiled module (a byte count need not be whole)."""

    def __init__(self, module):
        self.module = module

    def __call__(self, fid: str, **given) -> float:
        from engine.numeric.evaluate import evaluate

        (value,) = (o.value for o in evaluate(self.module.FORMULAS[fid], self.module, given).outputs.values())
        return float(value)


def _default(ev, symbol: str):
    d = ev.module.FORMULAS["FX650"]["symbols"][symbol]["default"]
    return d[0] if isinstance(d, list) else d


def check_compute(weights: Storage, precision: str, field: str = "--precision") -> None:
    """Refuse a compute precision narrower than the stored weights (FX651: a product runs at the
    wider of its two operands), and a block-scaled compute format the weights are not stored in."""
    precision = str(precision).strip().lower()
    bits = COMPUTE_BITS.get(precision)
    if bits is None:
        return  # an unknown precision is refused by the device lookup, with the device's list
    if weights.element_bits > bits:
        raise InputError(field, f"{precision} matrix products need weights of at most {bits} bits, and --weights {weights.name} stores "
                                f"{weights.element_bits} (FX651: a product runs at the wider of its weights and activations); "
                                f"store narrower weights or compute at {_widest(weights.element_bits)}")
    if precision in SCALED_BITS and weights.name != precision:
        raise InputError(field, f"{precision} products read weights stored as {precision}, not {weights.name}; give --weights {precision}")


def _widest(bits: int) -> str:
    return {32: "fp32", 16: "bf16", 8: "fp8", 6: "fp6", 4: "fp4"}.get(bits, "bf16")
