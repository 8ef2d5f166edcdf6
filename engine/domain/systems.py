"""System records: whole servers and racks (``knowledge/systems/*.yaml``) and grid carbon presets.

A system names the device record of its GPUs (``gpus.device: hw:h100-sxm``) and states, each with
the vendor document it was read in, the figures a datasheet gives for the whole box: maximum
power, power supplies, CPUs, system memory, NICs (compute vs storage), the NVLink domain, rack
units. Every figure but the GPU count and device is optional: one not read in a vendor document
is left out, never estimated. ``Knowledge.load`` checks each file against
``engine/kb/schemas/system.json`` and keeps the plain dict; this module reads its quantity
strings with :mod:`engine.core.units`, checks the rules a schema cannot state (:func:`problems`:
the device exists, GPUs x device TDP fit in the system power, the stated GPU memory is the
devices' sum, N of N+M supplies carry the maximum power) and turns a system or a grid preset
into calculator presets (:func:`preset_values`: ``--system``, ``--grid``).

Grid presets (``knowledge/carbon_intensity.yaml``) are location-based intensities in gCO2e/kWh
as a cited source states or implies them (``kind: implied`` carries the hand arithmetic).
"""

from __future__ import annotations

from engine.core.errors import InputError, Problem, UnitError

MEMORY_TOLERANCE = 0.005  # vendors round a system total (1,440GB) the same way as the per-GPU figure


def _quantity(text: str, unit: str) -> float:
    from engine.domain.hardware import quantity

    return quantity(text, unit)


def gpu_power_w(record: dict, device: dict) -> float | None:
    """GPUs x the device's TDP in W, or None when the device record states no TDP."""
    tdp = device.get("tdp")
    return record["gpus"]["count"] * _quantity(tdp["value"], "W") if tdp else None


def max_power_w(record: dict) -> float | None:
    power = record.get("max_power")
    return _quantity(power["value"], "W") if power else None


def summary(record: dict, device: dict | None) -> dict:
    """The record's quantities in canonical units (W, B, B/s) and what follows from them."""
    gpus = record["gpus"]
    out: dict = {"gpu_count": gpus["count"], "device": gpus["device"], "device_found": device is not None,
                 "max_power_w": max_power_w(record), "gpu_power_w": None, "non_gpu_power_w": None,
                 "gpu_memory_bytes": _quantity(gpus["total_memory"], "B") if gpus.get("total_memory") else None,
                 "system_memory_bytes": None, "compute_nic_Bps": None, "storage_nic_Bps": None}
    if device is not None:
        out["gpu_power_w"] = gpu_power_w(record, device)
    if out["gpu_power_w"] is not None and out["max_power_w"] is not None:
        out["non_gpu_power_w"] = out["max_power_w"] - out["gpu_power_w"]
    if record.get("system_memory"):
        out["system_memory_bytes"] = _quantity(record["system_memory"]["capacity"], "B")
    for role in ("compute", "storage"):
        nics = [n for n in record.get("nics", ()) if n["role"] == role]
        if nics:
            out[f"{role}_nic_Bps"] = sum(n["count"] * n.get("ports_per_card", 1) * _quantity(n["speed"], "B/s") for n in nics)
    return out


# ---------------------------------------------------------------------------- checks


def problems(k) -> list[Problem]:
    """Rules over every system record that JSON Schema cannot state, as Problems."""
    out: list[Problem] = []
    for ident, record in sorted(k.systems.items()):
        place = k.places.get(ident, "")
        out += [Problem(place, ident, path, message) for path, message in record_problems(record, k.hardware)]
    return sorted(out)


def record_problems(record: dict, hardware: dict) -> list[tuple[str, str]]:
    """(field path, sentence) for each rule one system record breaks."""
    device_id = record["gpus"]["device"]
    device = hardware.get(device_id)
    if device is None:
        return [("gpus.device", f"{device_id} is not a device of knowledge/hardware")]
    try:
        return _power(record, device) + _memory(record, device) + _supplies(record) + _readable(record)
    except UnitError as exc:
        return [("", f"has an unreadable quantity: {exc}")]


def _power(record: dict, device: dict) -> list[tuple[str, str]]:
    gpus, limit = gpu_power_w(record, device), max_power_w(record)
    if gpus is None or limit is None or gpus <= limit:
        return []
    return [("max_power.value", f"{record['max_power']['value']} is below the GPUs alone: {record['gpus']['count']} x "
                                f"{device['tdp']['value']} ({record['gpus']['device']} TDP) = {gpus / 1000:g} kW")]


def _memory(record: dict, device: dict) -> list[tuple[str, str]]:
    stated = record["gpus"].get("total_memory")
    if not stated:
        return []
    total, each = _quantity(stated, "B"), _quantity(device["memory"]["capacity"], "B")
    expected = record["gpus"]["count"] * each
    if abs(total - expected) <= MEMORY_TOLERANCE * expected:
        return []
    return [("gpus.total_memory", f"{stated} is not {record['gpus']['count']} x {device['memory']['capacity']} "
                                  f"({record['gpus']['device']} memory) = {expected / 1e9:g}GB")]


def _supplies(record: dict) -> list[tuple[str, str]]:
    psu, limit = record.get("power_supplies"), max_power_w(record)
    if not psu or limit is None or not psu.get("redundancy"):
        return []
    carrying = int(psu["redundancy"].split("+")[0])
    if carrying + int(psu["redundancy"].split("+")[1]) != psu["count"]:
        return [("power_supplies.redundancy", f"{psu['redundancy']} does not add up to the {psu['count']} supplies")]
    if carrying * _quantity(psu["rating"], "W") < limit:
        return [("power_supplies", f"{carrying} x {psu['rating']} (the N of {psu['redundancy']}) is below max_power {record['max_power']['value']}")]
    return []


def _readable(record: dict) -> list[tuple[str, str]]:
    summary(record, None)  # raises UnitError for an unreadable quantity
    return []


# ---------------------------------------------------------------------------- lookups


def _ident(text: str, kind_name: str, field: str) -> str:
    from engine.core.ids import Kind, parse_user_id

    kind = Kind(kind_name)
    try:
        return str(parse_user_id(text.strip().lower(), kind))
    except ValueError:
        try:
            return str(parse_user_id(text, kind))
        except ValueError as exc:
            raise InputError(field, str(exc)) from None


def find(table: dict, text: str, kind_name: str = "sys", field: str = "ID", what: str = "system") -> dict:
    """The record named ``text`` (``dgx-h100`` or ``sys:dgx-h100``); InputError naming the known ones."""
    ident = _ident(text, kind_name, field)
    if ident not in table:
        from engine.core.suggest import known

        names = [i.split(":", 1)[1] for i in sorted(table)]
        raise InputError(field, f"no {what} {text!r} ({known(ident.split(':', 1)[1], names)})")
    return table[ident]


def load_grids(root) -> dict:
    """The grid presets of ``knowledge/carbon_intensity.yaml`` (id -> record); KnowledgeError when the file does not load."""
    from engine.kb.knowledge import load_record_list

    return load_record_list(root, "carbon_intensity.yaml").carbon_intensity


# ---------------------------------------------------------------------------- calculator presets


def system_values(record: dict, device: dict) -> dict[str, tuple[object, str]]:
    """symbol -> (value, source) that a system decides for calc:power-tco: the node's GPU count and,
    where the vendor states it, the node's maximum power (it_power_model=node_power)."""
    ident = record["id"]
    gpus = record["gpus"]
    out: dict[str, tuple[object, str]] = {
        "gpus_per_node": (gpus["count"], f"preset {ident}: {gpus['count']} x {gpus['device']} — {gpus['source']}")}
    tdp = device.get("tdp")
    if tdp:
        out["gpu_tdp"] = (_quantity(tdp["value"], "W"), f"preset {ident}: {gpus['device']} TDP {tdp['value']} — {tdp['source']}")
    power = record.get("max_power")
    if power:
        out["node_power"] = (_quantity(power["value"], "W"), f"preset {ident}: max system power {power['value']} — {power['source']}")
        out["it_power_model"] = ("node_power", f"preset {ident}: IT power = nodes x the vendor's max system power")
    return out


def grid_values(record: dict) -> dict[str, tuple[object, str]]:
    """carbon_intensity (gCO2e/kWh) from a grid preset, with its source."""
    how = f"{record['kind']}" + (f": {record['derivation']}" if record.get("derivation") else "")
    return {"carbon_intensity": (float(record["value"]), f"preset {record['id']}: {record['region']}, {record['value']:g} gCO2e/kWh "
                                                          f"location-based ({how}) — {record['source']}")}


def preset_values(root, system: str | None, grid: str | None) -> dict[str, tuple[object, str]]:
    """The presets of ``--system`` and ``--grid`` (InputError naming the flag for an unknown id)."""
    from engine.kb.folders import folder_view

    out: dict[str, tuple[object, str]] = {}
    if system:
        record = find(folder_view(root, "systems").systems, system, "sys", "--system")
        hardware = folder_view(root, "hardware").hardware
        device = hardware.get(record["gpus"]["device"])
        if device is None:
            raise InputError("--system", f"{record['id']} names {record['gpus']['device']}, which is not a device of knowledge/hardware")
        out.update(system_values(record, device))
    if grid:
        out.update(grid_values(find(load_grids(root), grid, "grid", "--grid", "grid preset")))
    return out
