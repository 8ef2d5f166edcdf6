"""Form specifications: the JSON a page carries for its interactive form (read by aiinfra.js).

A field is one input: its name, meaning, declared unit, the unit choices offered beside it
(each with the factor to the declared unit, worked out by ``engine.core.units``), the domain,
categorical values and the value it starts with. The numbers a form computes come from
``aiinfra-formulas.js``; this module only describes the inputs.
"""

from __future__ import annotations

import html
import json

from engine.core.units import parse_unit

# Units offered beside a field, when they have the declared unit's dimension.
UNIT_CHOICES = (
    "B", "KiB", "MiB", "GiB", "TiB", "kB", "MB", "GB", "TB",
    "B/s", "GB/s", "TB/s", "GiB/s", "Gb/s",
    "FLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP",
    "FLOP/s", "TFLOP/s", "PFLOP/s",
    "s", "ms", "us", "min", "h", "d", "yr",
    "W", "kW", "MW", "J", "kWh", "MWh",
    "%",
)


def unit_choices(unit_text: str) -> list[list]:
    """[[label, factor to the declared unit], ...], the declared unit first."""
    if unit_text in ("", None):
        return []
    declared = parse_unit(unit_text)
    out = [[unit_text, 1]]
    for label in UNIT_CHOICES:
        if label == unit_text:
            continue
        unit = parse_unit(label)
        if unit.dims == declared.dims and not unit.same_as(declared):
            out.append([label, unit.scale / declared.scale])
    return out if len(out) > 1 else [[unit_text, 1]]


def field(name: str, spec: dict, initial=None, desc: str | None = None, optional: bool = False) -> dict:
    """One form field from a compiled symbol spec (``module.FORMULAS[...]['symbols'][name]``)."""
    default = spec.get("default")
    if spec.get("values"):
        return {"name": name, "desc": desc or spec["desc"], "values": list(spec["values"]),
                "initial": initial if initial is not None else default, "optional": optional}
    placeholder = ""
    if default is not None:
        from engine.core.humanize import number

        value = default[0] if isinstance(default, list) else default
        placeholder = f"default {number(value) if isinstance(value, int | float) else value}"
    units = unit_choices(spec["unit"])
    if spec["unit"] == "1" and not spec["domain"].endswith("fraction"):
        units = [["1", 1]]
    return {"name": name, "desc": desc or spec["desc"], "unit": spec["unit"], "domain": spec["domain"],
            "units": units, "initial": None if initial is None else _plain(initial),
            "placeholder": placeholder}


def _plain(x) -> str:
    """A number as the user would type it, exactly (repr keeps every digit Python has)."""
    if isinstance(x, str):
        return x
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e16 else repr(x)


def html_block(spec: dict, css_class: str = "aiinfra-form") -> str:
    """The element a page carries; aiinfra.js builds the form inside it."""
    data = html.escape(json.dumps(spec, ensure_ascii=False, separators=(",", ":")), quote=True)
    return f'<div class="{css_class}" data-aiinfra-form="{data}"><noscript>This form needs JavaScript (no network access).</noscript></div>'
