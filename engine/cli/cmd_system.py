"""``aiinfra system list``, ``aiinfra system show ID`` and ``aiinfra system grids``: whole systems
(knowledge/systems/) and the grid carbon-intensity presets (knowledge/carbon_intensity.yaml).

Parsers are added by :func:`add_parsers` (engine.cli.main imports this module only to build them,
so the top of this module imports nothing heavy); each handler loads the folders it needs.
"""

from __future__ import annotations

LIST_COLUMNS = [("id", "id"), ("name", "name"), ("gpus", "gpus"), ("gpu_memory", "GPU memory"), ("max_power", "max power"),
                ("cpus", "CPUs"), ("system_memory", "memory"), ("compute_nics", "compute NICs"), ("storage_nics", "storage NICs"),
                ("nvlink_domain", "NVLink domain"), ("rack_units", "U")]
LIST_NUMBERS = [("max_power_w", "max_power_w"), ("gpu_power_w", "gpu_power_w"), ("gpu_memory_bytes", "gpu_memory_bytes"),
                ("system_memory_bytes", "system_memory_bytes"), ("compute_nic_Bps", "compute_nic_Bps"), ("storage_nic_Bps", "storage_nic_Bps")]
GRID_COLUMNS = [("id", "id"), ("region", "region"), ("year", "year"), ("value", "gCO2e/kWh"), ("kind", "kind"), ("used_for", "used for"),
                ("source", "source")]


def add_parsers(verbs, Parser, shared) -> None:
    system = verbs.add_parser("system", help="whole systems (DGX, HGX) and grid carbon presets",
                              description="Whole systems (knowledge/systems/*.yaml): GPUs and their device record, maximum power, CPUs, "
                                          "memory, NICs, NVLink domain, rack units, each with its source; and the location-based grid "
                                          "carbon-intensity presets of knowledge/carbon_intensity.yaml. calc power-tco takes both: --system ID, --grid ID.")
    sverbs = system.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    sverbs.required = True
    p = sverbs.add_parser("list", help="every system", description="List the systems: GPUs, GPU memory, max power, CPUs, memory, NICs, NVLink domain, rack units ('-' where no vendor figure was read).")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_system:list_")
    p = sverbs.add_parser("show", help="one system in full", description="Show a system: every figure with its source, the GPU device's TDP and what the rest of the box may draw.")
    p.add_argument("id", metavar="ID", help="system id, e.g. dgx-b200 or sys:dgx-b200")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_system:show")
    p = sverbs.add_parser("grids", help="grid carbon-intensity presets", description="List the location-based grid carbon-intensity presets (gCO2e/kWh), stated or implied by their source, for calc power-tco --grid ID.")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_system:grids")


# ---------------------------------------------------------------------- handlers


def _folders(args):
    from engine.cli.common import root_of
    from engine.kb.folders import folder_view

    root = root_of(args)
    return folder_view(root, "systems").systems, folder_view(root, "hardware").hardware


def _nics(record: dict, role: str) -> str:
    nics = [n for n in record.get("nics", ()) if n["role"] == role]
    return ", ".join(f"{n['count']}x{n['speed']}" + (f" ({n['ports_per_card']} ports each)" if n.get("ports_per_card", 1) > 1 else "")
                     for n in nics) or None


def _row(record: dict, hardware: dict) -> dict:
    from engine.domain import systems

    gpus = record["gpus"]
    numbers = systems.summary(record, hardware.get(gpus["device"]))
    cpus = record.get("cpus")
    return dict(
        id=record["id"].split(":", 1)[1], name=record["name"], gpus=f"{gpus['count']}x {gpus['device'].split(':', 1)[1]}",
        gpu_memory=gpus.get("total_memory"), max_power=record["max_power"]["value"] if record.get("max_power") else None,
        cpus=f"{cpus['count']}x {cpus['model'].split(',')[0]}" if cpus else None,
        system_memory=record["system_memory"]["capacity"] if record.get("system_memory") else None,
        compute_nics=_nics(record, "compute"), storage_nics=_nics(record, "storage"),
        nvlink_domain=record["nvlink"]["domain_gpus"] if record.get("nvlink") else None,
        rack_units=record["rack_units"]["value"] if record.get("rack_units") else None,
        **{name: numbers[name] for name, _ in LIST_NUMBERS},
    )


def list_(args) -> int:
    from engine.cli.common import emit
    from engine.cli.render import table

    found, hardware = _folders(args)
    rows = [_row(r, hardware) for _, r in sorted(found.items())]
    if args.format != "json":  # JSON keeps null for a figure no vendor document gave
        rows = [{key: "-" if value is None else value for key, value in row.items()} for row in rows]
    emit(table(rows, LIST_COLUMNS + (LIST_NUMBERS if args.format in ("json", "csv") else []), args.format,
               droppable=("rack_units", "storage_nics", "cpus", "system_memory", "compute_nics", "max_power")))  # narrow terminals lose these first
    return 0


def show(args) -> int:
    from engine.cli.common import emit
    from engine.cli.render import to_json
    from engine.core.errors import InputError
    from engine.domain import systems

    found, hardware = _folders(args)
    if args.format == "csv":
        raise InputError("--format", "system show prints one record: text, json or md (csv is for system list and system grids)")
    record = systems.find(found, args.id)
    device = hardware.get(record["gpus"]["device"])
    if args.format == "json":
        emit(to_json({**record, "parsed": systems.summary(record, device)}))
    else:
        emit(_document(record, device, systems.summary(record, device), md=args.format == "md"))
    return 0


def _document(record: dict, device: dict | None, numbers: dict, md: bool) -> str:
    title = f"{record['id']} · {record['name']} ({record['vendor']})"
    out = [f"# {title}" if md else title, "", f"As of: {record['as_of']}"]
    gpus = record["gpus"]
    line = f"GPUs: {gpus['count']} x {gpus['device']}" + (f", {gpus['total_memory']} GPU memory" if gpus.get("total_memory") else "")
    if device is None:
        line += " (no such device record: `aiinfra check` reports it)"
    elif device.get("tdp"):
        line += f"; {gpus['count']} x {device['tdp']['value']} TDP = {numbers['gpu_power_w'] / 1000:g} kW"
    out.append(f"{line} [{gpus['source']}]")
    power = record.get("max_power")
    if power:
        rest = f"; the rest of the system may draw {numbers['non_gpu_power_w'] / 1000:g} kW" if numbers["non_gpu_power_w"] is not None else ""
        out.append(f"Max system power: {power['value']}{rest} [{power['source']}]")
    else:
        out.append("Max system power: not recorded (no vendor figure read); give node_power to calc power-tco with --set")
    out += _optional_lines(record)
    out += ["", "## Sources" if md else "Sources:"] + [f"- {s}" for s in record["sources"]]
    if record.get("notes"):
        out += ["", f"Notes: {record['notes']}"]
    return "\n".join(out)


def _optional_lines(record: dict) -> list[str]:
    out = []
    if psu := record.get("power_supplies"):
        out.append(f"Power supplies: {psu['count']} x {psu['rating']}" + (f", {psu['redundancy']} redundancy" if psu.get("redundancy") else "") + f" [{psu['source']}]")
    if cpus := record.get("cpus"):
        cores = f", {cpus['cores_per_cpu']} cores each" if cpus.get("cores_per_cpu") else (f", {cpus['cores_total']} cores total" if cpus.get("cores_total") else "")
        out.append(f"CPUs: {cpus['count']} x {cpus['model']}{cores} [{cpus['source']}]")
    if mem := record.get("system_memory"):
        out.append(f"System memory: {mem['capacity']}" + (f" {mem['type']}" if mem.get("type") else "") + (f" ({mem['note']})" if mem.get("note") else "") + f" [{mem['source']}]")
    for nic in record.get("nics", ()):
        ports = nic.get("ports_per_card", 1)
        out.append(f"NICs ({nic['role']}): {nic['count']} x {nic['model']}, {ports} port{'s' if ports > 1 else ''} of up to {nic['speed']}"
                   + (f"; {nic['note']}" if nic.get("note") else "") + f" [{nic['source']}]")
    if link := record.get("nvlink"):
        parts = [f"{link['domain_gpus']} GPUs in one domain"] + ([f"{link['switches']} NVSwitch chips"] if link.get("switches") else []) \
            + ([link["generation"]] if link.get("generation") else []) + ([f"{link['aggregate_bandwidth']} aggregate"] if link.get("aggregate_bandwidth") else [])
        out.append("NVLink: " + ", ".join(parts) + f" [{link['source']}]")
    if units := record.get("rack_units"):
        out.append(f"Rack units: {units['value']}U [{units['source']}]")
    return out


def grids(args) -> int:
    from engine.cli.common import emit, root_of
    from engine.cli.render import table
    from engine.domain import systems

    rows = [dict(r, year=r.get("year"), used_for=r.get("used_for")) for _, r in sorted(systems.load_grids(root_of(args)).items())]
    for row in rows:
        row["id"] = row["id"].split(":", 1)[1]
    columns = GRID_COLUMNS + ([("derivation", "derivation")] if args.format in ("json", "csv") else [])
    text = table(rows, columns, args.format)
    if args.format in ("text", "md"):
        implied = [f"{r['id']}: {r['derivation']}" for r in rows if r.get("derivation")]
        text += "\n\nlocation-based, gCO2e per kWh; implied = the source's emissions / its energy:\n" + "\n".join(implied) if implied else ""
    emit(text)
    return 0
