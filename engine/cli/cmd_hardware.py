"""``aiinfra hardware list``, ``aiinfra hardware show ID`` and ``aiinfra hardware audit``."""

from __future__ import annotations

from engine.cli.common import emit, root_of
from engine.cli.render import table, to_json
from engine.core.humanize import friendly, number
from engine.domain import hardware

LIST_COLUMNS = [("id", "id"), ("vendor", "vendor"), ("name", "name"), ("counted_as", "per"), ("memory", "memory"),
                ("bandwidth", "bandwidth"), ("bf16", "bf16 dense"), ("fp8", "fp8 dense"), ("tdp", "TDP")]
LIST_NUMBERS = [("memory_bytes", "memory_bytes"), ("bandwidth_Bps", "bandwidth_Bps"), ("bf16_flops", "bf16_flops"), ("fp8_flops", "fp8_flops"), ("tdp_w", "tdp_w")]
PEAK_COLUMNS = [("precision", "precision"), ("accumulator", "accumulator"), ("unit", "unit"), ("sparsity", "sparsity"),
                ("value", "value"), ("derivation", "derivation"), ("source", "source")]


def _devices_of(args):
    """The root's hardware folder alone, read and checked (a cached index once it loads cleanly)."""
    from engine.kb.folders import folder_view

    return folder_view(root_of(args), "hardware")


def list_(args) -> int:
    k = _devices_of(args)
    rows = [_list_row(d) for d in sorted(hardware.devices(k).values(), key=lambda d: (d.vendor, d.id))]
    columns = LIST_COLUMNS + (LIST_NUMBERS if args.format in ("json", "csv") else [])
    emit(table(rows, columns, args.format, droppable=("name", "vendor", "tdp", "counted_as", "fp8")))  # the id names the device; narrow terminals lose these first
    return 0


def _list_row(d: hardware.Device) -> dict:
    bf16, fp8 = d.headline("bf16"), d.headline("fp8")
    return dict(
        id=d.short_id, vendor=d.vendor, name=d.name, counted_as=d.counted_as["unit"], memory=d.memory_text,
        bandwidth=d.bandwidth_text, bf16=bf16.text if bf16 else "-", fp8=fp8.text if fp8 else "-",
        tdp=d.record["tdp"]["value"] if d.tdp_w else "-", memory_bytes=d.memory_bytes, bandwidth_Bps=d.bandwidth,
        bf16_flops=bf16.flops if bf16 else None, fp8_flops=fp8.flops if fp8 else None, tdp_w=d.tdp_w,
    )


def show(args) -> int:
    from engine.cli.common import one_record
    from engine.kb.folders import folder_view

    k = folder_view(root_of(args), "hardware", strict=False)
    d = one_record(lambda: hardware.find(k, args.id), getattr(k, "problems", []))
    if args.format == "json":
        emit(to_json(describe(d)))
    elif args.format == "csv":
        emit(table(_peak_rows(d), PEAK_COLUMNS + [("value_flops", "value_flops"), ("confidence", "confidence")], "csv"))
    else:
        emit(_document(d, md=args.format == "md"))
    return 0


def describe(d: hardware.Device) -> dict:
    """The record as stored, with every quantity also in canonical units."""
    out = dict(d.record)
    total = d.driver_total
    out["parsed"] = {
        "memory_bytes": d.memory_bytes, "driver_total_bytes": total.bytes if total else None,
        "driver_total_basis": total.basis if total else None,
        "bandwidth_Bps": d.bandwidth, "tdp_w": d.tdp_w,
        "peaks": [{"precision": p.precision, "accumulator": p.accumulator, "unit": p.unit, "sparsity": p.sparsity, "flops": p.flops}
                  for p in d.peaks],
    }
    return out


def _peak_rows(d: hardware.Device) -> list[dict]:
    return [dict(precision=p.precision, accumulator=p.accumulator, unit=p.unit, sparsity=p.sparsity, value=p.shown,
                 value_flops=p.flops, derivation=p.derivation, confidence=p.confidence, source=p.source)
            for p in d.peaks]


def _document(d: hardware.Device, md: bool) -> str:
    fmt = "md" if md else "text"
    title = f"{d.id} · {d.name} ({d.vendor}, {d.form_factor})"
    out = [f"# {title}" if md else title, ""]
    counted = d.counted_as
    per = f"; {counted['per_package']} per {counted['package']}" if counted["per_package"] > 1 else ""
    out.append(f"Counted as: one {counted['unit']}{per}. {counted['note']}")
    out.append(f"As of: {d.as_of}")
    mem = d.record["memory"]
    out.append(f"Memory: {d.memory_text} {d.memory_type} nominal ({number(d.memory_bytes)} B = {friendly(d.memory_bytes, 'B')}), "
               f"bandwidth {d.bandwidth_text}" + (f"; {mem['derivation']}" if mem.get("derivation") else "") + f" [{mem['source']}]")
    total = d.driver_total
    if total:
        out.append(f"Usable ({total.label}): {total.text} ({number(total.bytes)} B = {friendly(total.bytes, 'B')}), "
                   f"what serving engines budget from [{total.source}]")
    else:
        out.append(f"Usable: no measured driver total, and the derivation covers HBM only (this is {d.memory_type}); "
                   "give gpu_memory_total with --set")
    if d.interconnect:
        out.append("Interconnect: " + _link(d.interconnect))
    if d.record.get("ici_link"):
        ici = d.record["ici_link"]
        out.append(f"ICI link (one link, one axis): {ici['per_direction']} per direction, {ici['bidirectional']} both directions; "
                   f"{ici['topology']} [{ici['source']}]")
    if d.record.get("host_link"):
        out.append("Host link: " + _link(d.record["host_link"]))
    if d.tdp_w:
        tdp = d.record["tdp"]
        out.append(f"TDP: {tdp['value']}" + (f" ({tdp['note']})" if tdp.get("note") else "") + f" [{tdp['source']}]")
    out += ["", "## Peaks" if md else "Peaks:", table(_peak_rows(d), PEAK_COLUMNS, fmt, droppable=("unit",))]
    if d.measured:
        rows = [dict(kind=m.kind, precision=m.precision, ratio=_ratio(m.low, m.high), workload=m.workload, source=m.source) for m in d.measured]
        out += ["", "## Measured (achieved / peak)" if md else "Measured (achieved / peak):",
                table(rows, [(c, c) for c in ("kind", "precision", "ratio", "workload", "source")], fmt)]
    if d.record.get("measured_collectives"):
        rows = [dict(m, library=m.get("library", "")) for m in d.record["measured_collectives"]]
        out += ["", "## Measured collectives (nccl-tests busBw)" if md else "Measured collectives (nccl-tests busBw):",
                table(rows, [(c, c.replace("_", " ")) for c in ("op", "algorithm", "ranks", "message", "bus_bandwidth", "library", "system", "source")], fmt,
                      droppable=("library", "algorithm"))]
    out += ["", "## Sources" if md else "Sources:"] + [f"- {s}" for s in d.sources]
    if d.notes:
        out += ["", f"Notes: {d.notes}"]
    return "\n".join(out)


def _link(link: dict) -> str:
    parts = [f"{link[k]} {label}" for k, label in (("per_direction", "per direction"), ("bidirectional", "both directions"),
                                                 ("unspecified_direction", "(direction not stated)")) if k in link]
    text = f"{link['name']}: " + ", ".join(parts)
    if link.get("links"):
        text += f" ({link['links']})"
    if link.get("derivation"):
        text += f"; {link['derivation']}"
    return text + f" [{link['source']}]"


def _ratio(low: float, high: float) -> str:
    return f"{low:.0%}" if low == high else f"{low:.0%}-{high:.0%}"


AUDIT_COLUMNS = [("id", "id"), ("vendor", "vendor"), ("missing", "missing"), ("peaks", "no dense peak"), ("fields", "absent fields"),
                 ("sources", "source gaps"), ("sparse", "no sparse figure")]


def audit(args) -> int:
    """One row per device: the precisions, optional fields and source details its record does not state."""
    k = _devices_of(args)
    found = [hardware.audit(record) for record in k.hardware.values()]
    rows = [dict(id=a.id, vendor=a.vendor, missing=a.count, peaks=list(a.peaks), fields=list(a.fields), sources=list(a.sources),
                 sparse=list(a.sparse)) for a in sorted(found, key=lambda a: (a.vendor, a.id))]
    if args.format == "json":
        emit(to_json({"audited_precisions": list(hardware.AUDIT_PRECISIONS), "audited_fields": dict(hardware.AUDIT_FIELDS),
                         "sparse_rules": hardware.SPARSE_RULES, "devices": rows}))
        return 0
    text = table(rows, AUDIT_COLUMNS, args.format, droppable=("vendor", "sparse", "sources"))  # narrow terminals lose these first
    if args.format in ("text", "md"):
        text += ("\n\n" "missing counts dense peaks, fields and source gaps; an absent precision may be one the chip has no path for "
                 "(no FP8 on A100). Precisions audited: " + ", ".join(hardware.AUDIT_PRECISIONS) + ". Fields: "
                 + "; ".join(f"{path} ({what})" for path, what in hardware.AUDIT_FIELDS) + ".\n\nStructured sparsity by vendor: "
                 + "; ".join(f"{vendor}: {rule}" for vendor, rule in hardware.SPARSE_RULES.items()) + ".")
    emit(text)
    return 0
