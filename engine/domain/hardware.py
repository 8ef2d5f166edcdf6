"""Hardware records: devices with precision-qualified peaks (``knowledge/hardware/*.yaml``).

``Knowledge.load`` checks each file against ``engine/kb/schemas/hardware.json`` and keeps the
plain dict; this module turns it into a frozen :class:`Device` whose quantity strings are
read by :mod:`engine.core.units` (``80GB`` = 8e10 B, ``32GiB`` = 2^35 B, ``3.35TB/s``,
``989.4TFLOPS``), checks the rules a schema cannot state (:func:`problems`), and picks the
one peak a calculation may use (:func:`select_peak`): never a sparse figure unless asked,
never another precision standing in (TF32 is not BF16), never a guess between
accumulators with different peaks.

Integer precisions count integer operations per second in FLOPS units (a vendor's TOPS).
"""

from __future__ import annotations

import math

from engine.core.errors import InputError, Problem, UnitError
from engine.core.record import dataclass, replace
from engine.domain import usable_memory
from engine.domain.usable_memory import DriverTotal

PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8", "int4")
ACCUMULATORS = ("fp64", "fp32", "fp16", "int32")
INTEGER = frozenset({"int8", "int4"})
# units that run matrix multiplications; a vector/CUDA-core peak of the same precision is a lower roof
MATRIX_UNITS = frozenset({"tensor_core", "matrix_core", "mxu", "mme", "cube", "tensor_engine"})
SPARSE_TO_DENSE = 2.0  # 2:4 structured sparsity skips half the multiplications
_SPARSE_TOLERANCE = 0.03  # vendors round the two figures separately (989.4 vs 1979; L40S 362.05 vs 733)

# The one explanation of a device's memory figures (``aiinfra hardware --help`` and the site's hardware page).
MEMORY_FIGURES = (
    "Three memory figures. Nominal: the vendor's capacity as the datasheet prints it (H100 SXM: 80GB), read "
    "literally in decimal units (80GB = 8e10 B); it is a product name more than a byte count. GiB: the same bytes "
    "in binary units (8e10 B = 74.51 GiB), the unit nvidia-smi, PyTorch and serving logs use. Driver-reported "
    "usable: the total the driver reports (torch.cuda.mem_get_info, deviceQuery; nvidia-smi prints about 0.5 GiB "
    "more, the part the driver keeps) where a cited log records it (H100 SXM: 79.18 GiB in vLLM's start-up log); "
    "the HBM stacks hold binary gigabytes, less what the driver and firmware reserve, so it can exceed the literal "
    "nominal figure. Where no log is recorded, an HBM device's usable total is derived, and labelled derived: the "
    "nominal number read as GiB x 0.99 (H200: 141 GB -> 139.59 GiB), the median share of the devices measured. "
    "--device fills the KV budget's gpu_memory_total (FX72) from the usable total and hbm_capacity (F7) from the "
    "nominal capacity."
)


@dataclass(frozen=True, slots=True)
class Peak:
    precision: str
    accumulator: str
    unit: str
    sparsity: str
    flops: float  # FLOP/s (integer ops/s for int8, int4)
    text: str
    source: str
    derivation: str = ""
    confidence: str = "exact"
    note: str = ""
    formats: tuple[str, ...] = ()  # block-scaled formats (FORMATS) the source states this peak for

    @property
    def sparse(self) -> bool:
        return self.sparsity != "dense"

    @property
    def shown(self) -> str:
        """The value as the vendor would write it: TOPS for integer precisions."""
        return self.text[:-5] + "OPS" if self.precision in INTEGER else self.text

    @property
    def label(self) -> str:
        acc = "accumulator unstated" if self.accumulator == "unstated" else f"{self.accumulator} accumulate"
        return f"{self.precision} {self.sparsity} ({acc}, {self.unit}) {self.shown}"


@dataclass(frozen=True, slots=True)
class Measured:
    kind: str  # mfu | kernel_compute | memory_bandwidth
    precision: str
    low: float
    high: float
    workload: str
    source: str
    note: str = ""

    @property
    def resource(self) -> str:
        return "memory" if self.kind == "memory_bandwidth" else "compute"


@dataclass(frozen=True, slots=True)
class Device:
    id: str
    name: str
    vendor: str
    form_factor: str
    counted_as: dict
    as_of: str
    memory_bytes: float
    memory_text: str
    memory_type: str
    bandwidth: float  # B/s
    bandwidth_text: str
    peaks: tuple[Peak, ...]
    interconnect: dict | None
    tdp_w: float | None
    measured: tuple[Measured, ...]
    sources: tuple[str, ...]
    notes: str
    record: dict

    @property
    def short_id(self) -> str:
        return self.id.split(":", 1)[1]

    def measured_bus_bandwidth(self, op: str = "allreduce") -> tuple[float, dict] | None:
        """(B/s, record) of the highest published busBw of ``op`` on this device, or None when none is recorded."""
        found = [(quantity(m["bus_bandwidth"], "B/s"), m) for m in self.record.get("measured_collectives", ()) if m["op"] == op]
        return max(found, key=lambda x: x[0]) if found else None

    @property
    def driver_total(self) -> DriverTotal | None:
        """The usable total serving engines budget from: measured where the record cites a log, else derived
        from the nominal capacity (:mod:`engine.domain.usable_memory`); None where neither applies (GDDR unmeasured)."""
        return usable_memory.of(self.record)

    def headline(self, precision: str) -> Peak | None:
        """The dense matrix-unit peak of ``precision`` (fp32 accumulate first), or None."""
        found = [p for p in self.peaks if p.precision == precision and not p.sparse and p.unit in MATRIX_UNITS]
        found.sort(key=lambda p: (p.accumulator != "fp32", -p.flops))
        return found[0] if found else None


@dataclass(frozen=True, slots=True)
class Selection:
    """The peak a calculation uses, with sentences on how it was chosen."""

    peak: Peak
    notes: tuple[str, ...] = ()


# ---------------------------------------------------------------------------- building


quantity = usable_memory.quantity  # a record's quantity string in a unit (B, B/s, FLOP/s, W); UnitError when unreadable


def build(record: dict) -> Device:
    """A Device from a schema-checked record; raises UnitError for an unreadable quantity."""
    mem = record["memory"]
    tdp = record.get("tdp")
    return Device(
        id=record["id"], name=record["name"], vendor=record["vendor"], form_factor=record["form_factor"],
        counted_as=dict(record["counted_as"]), as_of=record["as_of"],
        memory_bytes=quantity(mem["capacity"], "B"), memory_text=mem["capacity"], memory_type=mem["type"],
        bandwidth=quantity(mem["bandwidth"], "B/s"), bandwidth_text=mem["bandwidth"],
        peaks=tuple(_peak(p) for p in record["peaks"]),
        interconnect=dict(record["interconnect"]) if record.get("interconnect") else None,
        tdp_w=quantity(tdp["value"], "W") if tdp else None,
        measured=tuple(Measured(m["kind"], m.get("precision", ""), float(m["low"]), float(m["high"]), m["workload"], m["source"], m.get("note", ""))
                       for m in record.get("measured", ())),
        sources=tuple(record["sources"]), notes=record.get("notes", ""), record=record,
    )


def _peak(raw: dict) -> Peak:
    return Peak(raw["precision"], raw["accumulator"], raw["unit"], raw["sparsity"], quantity(raw["value"], "FLOP/s"), raw["value"],
                raw["source"], raw.get("derivation", ""), raw.get("confidence", "exact"), raw.get("note", ""), tuple(raw.get("formats", ())))


def devices(k) -> dict[str, Device]:
    """Every device of a loaded Knowledge that builds (see :func:`problems` for the rest)."""
    out = {}
    for ident, record in k.hardware.items():
        try:
            out[ident] = build(record)
        except UnitError:
            continue
    return out


# ---------------------------------------------------------------------------- checks


def problems(k) -> list[Problem]:
    """Rules over every hardware record that JSON Schema cannot state, as Problems."""
    out: list[Problem] = []
    for ident, record in sorted(k.hardware.items()):
        place = k.places.get(ident, "")
        out += [Problem(place, ident, path, message) for path, message in record_problems(record)]
    return sorted(out)


def record_problems(record: dict) -> list[tuple[str, str]]:
    """(field path, sentence) for each broken rule of one schema-checked record."""
    out: list[tuple[str, str]] = []
    for path, text, unit in _quantities(record):
        try:
            quantity(text, unit)
        except UnitError as exc:
            out.append((path, f"{text!r} {exc.message}"))
    if out:
        return out
    device = build(record)
    out += _sparse_pairs(device)
    out += _duplicates(device)
    out += format_problems(device)
    out += usable_memory.problems(record)
    counted = device.counted_as
    if counted["per_package"] > 1 and not counted.get("package"):
        out.append(("counted_as.package", f"per_package is {counted['per_package']}; name the package the records share"))
    for name in ("interconnect", "host_link", "ici_link"):
        link = record.get(name) or {}
        if "per_direction" in link and "bidirectional" in link:
            one, both = quantity(link["per_direction"], "B/s"), quantity(link["bidirectional"], "B/s")
            if not math.isclose(both, 2 * one, rel_tol=_SPARSE_TOLERANCE):
                out.append((f"{name}.bidirectional", f"{link['bidirectional']} is not twice per_direction {link['per_direction']}"))
    stated = {p.precision for p in device.peaks}
    for i, m in enumerate(device.measured):
        if m.low > m.high:
            out.append((f"measured[{i}]", f"low {m.low:g} is above high {m.high:g}"))
        if m.precision and m.precision not in stated:
            out.append((f"measured[{i}].precision", f"{m.precision} has no peak record on this device to be a fraction of"))
    return out


def _quantities(record: dict):
    mem = record["memory"]
    yield "memory.capacity", mem["capacity"], "B"
    if mem.get("driver_total"):
        yield "memory.driver_total.value", mem["driver_total"]["value"], "B"
    yield "memory.bandwidth", mem["bandwidth"], "B/s"
    for i, p in enumerate(record["peaks"]):
        yield f"peaks[{i}].value", p["value"], "FLOP/s"
    for link in ("interconnect", "host_link", "ici_link"):
        for key in ("per_direction", "bidirectional", "unspecified_direction"):
            if key in record.get(link, {}):
                yield f"{link}.{key}", record[link][key], "B/s"
    if "tdp" in record:
        yield "tdp.value", record["tdp"]["value"], "W"
    for i, m in enumerate(record.get("measured_collectives", ())):
        yield f"measured_collectives[{i}].bus_bandwidth", m["bus_bandwidth"], "B/s"
        yield f"measured_collectives[{i}].message", m["message"], "B"


def _sparse_pairs(device: Device) -> list[tuple[str, str]]:
    out = []
    dense = {(p.precision, p.accumulator, p.unit): p for p in device.peaks if p.sparsity == "dense"}
    for i, p in enumerate(device.peaks):
        d = dense.get((p.precision, p.accumulator, p.unit))
        if p.sparsity == "sparse_2_4" and d is not None and not math.isclose(p.flops, SPARSE_TO_DENSE * d.flops, rel_tol=_SPARSE_TOLERANCE):
            out.append((f"peaks[{i}].value", f"2:4-sparse {p.text} is not twice the dense {d.text} of {p.precision} ({p.accumulator}, {p.unit}); check which figure is which"))
    return out


def _duplicates(device: Device) -> list[tuple[str, str]]:
    seen: dict[tuple, int] = {}
    out = []
    for i, p in enumerate(device.peaks):
        key = (p.precision, p.accumulator, p.unit, p.sparsity)
        if key in seen:
            out.append((f"peaks[{i}]", f"repeats peaks[{seen[key]}] ({p.precision}, {p.accumulator}, {p.unit}, {p.sparsity})"))
        seen.setdefault(key, i)
    return out


# ---------------------------------------------------------------------------- look-up


def _device_id(text: str) -> str:
    """``H100-SXM`` or ``hw:h100-sxm`` -> ``hw:h100-sxm`` (names are lower-case, typed in any case); ValueError otherwise."""
    from engine.core.ids import Kind, parse_user_id

    try:
        return str(parse_user_id(text.lower(), Kind.HW))
    except ValueError:
        return str(parse_user_id(text, Kind.HW))  # refused again, naming the text as typed


def find(k, text: str, field: str = "ID") -> Device:
    """The device named ``text`` (``h100-sxm`` or ``hw:h100-sxm``); InputError naming the known ones."""
    try:
        ident = _device_id(text)
    except ValueError as exc:
        raise InputError(field, str(exc)) from None
    if ident not in k.hardware:
        from engine.core.suggest import known

        raise InputError(field, f"no device {text!r} ({known(ident.split(':', 1)[1], [i.split(':', 1)[1] for i in sorted(k.hardware)])})")
    try:
        return build(k.hardware[ident])
    except UnitError as exc:  # reported by `aiinfra check` as well
        raise InputError(field, f"{ident} has an unreadable quantity: {exc}") from None


def select_peak(device: Device, precision: str, accumulator: str | None = None, sparse: bool = False) -> Selection:
    """The one peak of ``precision`` a bound may use; InputError listing what exists otherwise.

    Dense unless ``sparse``; a matrix unit over a vector unit of the same precision; with
    several accumulators of different peaks, ``accumulator`` must choose.
    """
    if str(precision).strip().lower() in FORMATS:
        return select_format_peak(device, precision, accumulator, sparse)
    precision = _choice(precision, PRECISIONS, "--precision")
    if accumulator is not None:
        accumulator = _choice(accumulator, ACCUMULATORS, "--accumulator")
    same = [p for p in device.peaks if p.precision == precision]
    if not same:
        raise InputError("--precision", f"{device.id} has no {precision} peak; its peaks: {_labels(device.peaks)}")
    wanted = [p for p in same if p.sparse == sparse]
    if not wanted and sparse:
        raise InputError("--sparse", f"{device.id} has no structured-sparse {precision} peak; its {precision} peaks: {_labels(same)}")
    if not wanted:
        raise InputError("--sparse", f"{device.id} states only structured-sparse {precision} peaks ({_labels(same)}); pass --sparse to use one, knowing it holds only for sparse operands")
    notes = []
    matrix = [p for p in wanted if p.unit in MATRIX_UNITS]
    if matrix and len(matrix) < len(wanted):
        dropped = ", ".join(sorted({p.unit for p in wanted if p.unit not in MATRIX_UNITS}))
        notes.append(f"the {matrix[0].unit} peak is the roof; the {dropped} peak of {precision} is lower and not used")
        wanted = matrix
    if accumulator is not None:
        chosen = [p for p in wanted if p.accumulator == accumulator]
        if not chosen:
            raise InputError("--accumulator", f"{device.id} has no {precision} peak with {accumulator} accumulate; its {precision} peaks: {_labels(wanted)}")
        wanted = chosen
    if len({p.flops for p in wanted}) > 1:
        options = "|".join(sorted({p.accumulator for p in wanted}))
        raise InputError("--accumulator", f"{device.id} states different {precision} peaks by accumulator ({_labels(wanted)}); choose one with --accumulator {options}")
    if len(wanted) > 1:
        accs = " and ".join(sorted({p.accumulator for p in wanted}))
        notes.append(f"{accs} accumulate give the same {precision} peak")
    return Selection(wanted[0], tuple(notes))


def _choice(text: str, allowed: tuple[str, ...], field: str) -> str:
    value = str(text).strip().lower()
    if value not in allowed:
        raise InputError(field, f"{text!r} is not one of {', '.join(allowed)}")
    return value


def _labels(peaks) -> str:
    return "; ".join(p.label for p in peaks) or "none (the vendor states no peak for this device)"


# ---------------------------------------------------------------------------- block-scaled formats

# A block-scaled format runs on the matrix path of its element precision, but only where the
# vendor states it (a peak's ``formats``): NVFP4 on Blackwell, MXFP4/MXFP6 on CDNA4. A device
# whose fp4 peak names no format is not assumed to run either (formulas FX650, FX651).
FORMATS = {"nvfp4": "fp4", "mxfp4": "fp4", "mxfp6": "fp6", "mxfp8": "fp8"}


def device_formats(device: Device) -> tuple[str, ...]:
    """Every --precision value the device has a peak for: its precisions, then its stated block-scaled formats."""
    plain = [p for p in PRECISIONS if any(peak.precision == p for peak in device.peaks)]
    scaled = [f for f in FORMATS if any(f in peak.formats for peak in device.peaks)]
    return tuple(plain + scaled)


def select_format_peak(device: Device, fmt: str, accumulator: str | None = None, sparse: bool = False) -> Selection:
    """The peak of a block-scaled format: one of the peaks its record states the format for, chosen as :func:`select_peak` does."""
    fmt = str(fmt).strip().lower()
    covered = tuple(p for p in device.peaks if fmt in p.formats)
    if not covered:
        raise InputError("--precision", f"{device.id} has no {fmt} peak (no datasheet figure states {fmt} on it); "
                         f"its formats: {', '.join(device_formats(device))}")
    chosen = select_peak(replace(device, peaks=covered), FORMATS[fmt], accumulator, sparse)
    note = f"{fmt} runs on the {chosen.peak.precision} matrix path; the record states this peak for {', '.join(chosen.peak.formats)}"
    return Selection(chosen.peak, (note,) + chosen.notes)


def format_problems(device: Device) -> list[tuple[str, str]]:
    """A stated format must sit on a peak of its element precision (NVFP4 on fp4, MXFP8 on fp8)."""
    out = []
    for i, p in enumerate(device.peaks):
        for fmt in p.formats:
            if FORMATS.get(fmt) != p.precision:
                out.append((f"peaks[{i}].formats", f"{fmt} has {FORMATS.get(fmt, 'no known')} elements, not {p.precision}"))
    return out


# ---------------------------------------------------------------------------- audit

# The precisions a record is audited for: the dense matrix paths training and serving use.
# A missing one may mean the device has no such path (no FP8 on A100) rather than a gap;
# the audit lists what the record does not state, not what the chip lacks.
AUDIT_PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8")
# optional fields, in the order they are reported, with what each one is
AUDIT_FIELDS = (
    ("memory.driver_total", "measured driver-reported memory (an HBM record without one uses a derived total)"),
    ("interconnect", "scale-up link bandwidth"),
    ("host_link", "host link (PCIe) bandwidth"),
    ("tdp", "power (TDP/TBP)"),
    ("measured", "published achieved/peak ratios"),
    ("measured_collectives", "published measured collective bus bandwidth (nccl-tests busBw)"),
)
_URL = ("http://", "https://")
# How a structured-sparse peak relates to the dense one, per vendor as the shipped records state it
# (checked by _sparse_pairs for every sparse_2_4 figure, whatever the vendor).
SPARSE_RULES = {
    "NVIDIA": "2:4 structured sparsity: sparse_2_4 = 2 x dense for every precision the datasheet pairs (the '*' figures)",
    "AMD": "2:4 structured sparsity: sparse_2_4 = 2 x dense where the MI300/MI350 pages state a 'with structured sparsity' figure",
    "AWS": "several N:M patterns (4:16 up to 1:2): recorded as sparse_structured, not tied to 2 x dense",
    "Google": "no structured-sparse peak published for Cloud TPUs",
    "Intel": "no structured-sparse peak in the Gaudi records",
    "Huawei": "no structured-sparse peak in the Ascend records",
    "Apple": "no GPU peak of any kind published for the M-series (the records state memory and bandwidth only)",
}


@dataclass(frozen=True, slots=True)
class Audit:
    """What one device record does not state: one row of ``aiinfra hardware audit``."""

    id: str
    vendor: str
    peaks: tuple[str, ...]  # AUDIT_PRECISIONS with no dense peak
    sparse: tuple[str, ...]  # dense matrix precisions (fp64 aside) with no structured-sparse figure; not counted: many vendors publish none
    fields: tuple[str, ...]  # AUDIT_FIELDS paths absent
    sources: tuple[str, ...]  # "sources[i]: no URL" / "sources[i]: no year"

    @property
    def count(self) -> int:
        return len(self.peaks) + len(self.fields) + len(self.sources)


def audit(record: dict) -> Audit:
    """The fields a schema-checked hardware record lacks (:data:`AUDIT_PRECISIONS`, :data:`AUDIT_FIELDS`, sources)."""
    import re

    peaks = record["peaks"]
    dense = {p["precision"] for p in peaks if p["sparsity"] == "dense"}
    sparse = {p["precision"] for p in peaks if p["sparsity"] != "dense"}
    matrix = {p["precision"] for p in peaks if p["sparsity"] == "dense" and p["unit"] in MATRIX_UNITS}
    fields = [path for path, _ in AUDIT_FIELDS if not _present(record, path)]
    sources = []
    for i, text in enumerate(record["sources"]):
        if not any(u in text for u in _URL):
            sources.append(f"sources[{i}]: no URL")
        if not re.search(r"(19|20)[0-9]{2}", text):
            sources.append(f"sources[{i}]: no year")
    return Audit(record["id"].split(":", 1)[1], record["vendor"], tuple(p for p in AUDIT_PRECISIONS if p not in dense),
                 tuple(p for p in PRECISIONS if p in matrix and p not in sparse and p != "fp64"),
                 tuple(fields), tuple(sources))


def _present(record: dict, path: str) -> bool:
    node = record
    for key in path.split("."):
        if not isinstance(node, dict) or not node.get(key):
            return False
        node = node[key]
    return True
