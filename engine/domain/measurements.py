"""Published measurements as records (``knowledge/measurements/*.yaml``, issue 26).

One file holds the rows of one source table (``meas:<file>``): a document, one table or figure.
The file is the unit of the held-out split (engine.measure.calibrate leaves whole files out), so
two sources never share a file. Each row is merged with the file's ``defaults`` (``layout``,
``precision`` and ``workload`` key by key, a row's own value winning), then checked against
``#/$defs/record`` of ``engine/kb/schemas/measurement.json`` and against the knowledge: its model
and device name records that exist, its unit fits its metric.

Rows become frozen :class:`Measurement` records; nothing downstream reads the raw dicts.
Run ``python -m engine.domain.measurements FILE...`` to check files alone.
"""

from __future__ import annotations

from functools import lru_cache

from engine.core.errors import Problem
from engine.core.record import dataclass

MERGED = ("layout", "precision", "workload")
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
# metric -> (kind, the units it may be stated in, canonical unit, scale to canonical per unit)
METRICS = {
    "output_throughput_per_gpu": ("serve", {"tokens/s": 1.0}),
    "total_throughput_per_gpu": ("serve", {"tokens/s": 1.0}),
    "output_throughput": ("serve", {"tokens/s": 1.0}),
    "request_throughput": ("serve", {"requests/s": 1.0}),
    "ttft": ("serve", TIME_UNITS),
    "tpot": ("serve", TIME_UNITS),
    "itl": ("serve", TIME_UNITS),
    "e2e_latency": ("serve", TIME_UNITS),
    "step_time": ("train", TIME_UNITS),
    "tokens_per_gpu_per_s": ("train", {"tokens/s": 1.0}),
    "model_tflops_per_gpu": ("train", {"TFLOP/s": 1e12}),
    "mfu": ("train", {"1": 1.0}),
    "tflops": ("gemm", {"TFLOP/s": 1e12}),
    "bandwidth": ("hbm", {"GB/s": 1e9}),
    "bus_bandwidth": ("collective", {"GB/s": 1e9}),
    "algorithm_bandwidth": ("collective", {"GB/s": 1e9}),
    "time": ("collective", TIME_UNITS),
}
CANONICAL = {"tokens/s": "tokens/s", "requests/s": "requests/s", "s": "s", "ms": "s", "us": "s", "TFLOP/s": "FLOP/s", "GB/s": "B/s", "1": "1"}
NEEDS = {  # kind -> record fields and workload fields it cannot be evaluated without
    "serve": (("model", "gpus"), ("prompt", "output")),
    "train": (("model", "gpus"), ("seq",)),
    "gemm": ((), ("m", "n", "k")),
    "hbm": ((), ()),
    "collective": (("gpus",), ("op", "message_bytes")),
}


@dataclass(frozen=True, slots=True)
class Measurement:
    id: str  # meas:<file>/<row>
    source: str  # meas:<file>
    family: str  # the publisher's series (the file's family, else its id): the unit of the held-out split
    place: str  # file:line
    kind: str
    model: str | None
    device: str
    gpus: int
    layout: dict
    precision: dict
    workload: dict
    engine: str | None
    engine_version: str | None
    metric: str
    statistic: str
    value: float  # in the canonical unit (s, tokens/s, FLOP/s, B/s)
    unit: str  # canonical
    stated: str  # the value as the source states it, with its unit
    where: str
    assumed: tuple[dict, ...] = ()
    note: str = ""
    speculative: dict | None = None  # the run's speculative decoding or MTP (method, draft_tokens, acceptance), None without
    backend: str | None = None  # the engine's runtime where a release ships several (TensorRT-LLM's pytorch backend); None: its default

    def lay(self, name: str, default=1):
        return self.layout.get(name, default)


def merge(defaults: dict, row: dict) -> dict:
    out = {k: v for k, v in defaults.items()}
    for key, value in row.items():
        if key in MERGED and isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


@lru_cache(maxsize=1)
def _row_validator():
    import json
    from importlib import resources

    from jsonschema import Draft202012Validator

    schema = json.loads(resources.files("engine.kb.schemas").joinpath("measurement.json").read_text(encoding="utf-8"))
    return Draft202012Validator({"$ref": "#/$defs/record", "$defs": schema["$defs"]})


@lru_cache(maxsize=1)
def _row_is_valid():
    """``_row_validator().is_valid`` compiled (engine.kb.fastschema): a valid row needs no jsonschema."""
    from engine.kb.fastschema import Unsupported, compile_schema
    from engine.kb.schema import schema_of

    try:
        return compile_schema({"$ref": "#/$defs/record", "$defs": schema_of("measurement")["$defs"]})
    except Unsupported:
        return None


def build_file(data: dict, display: str, models: set[str] | None, devices: set[str] | None) -> tuple[list[Measurement], list[Problem]]:
    """The rows of one schema-checked measurement file, and what is wrong with them."""
    from engine.kb.yamlio import plain

    fast = _row_is_valid()
    source = str(data["id"])
    defaults = plain(data.get("defaults") or {})
    rows, problems, seen = [], [], {}
    items = data["records"]
    for i, raw in enumerate(items):
        line = items.mark_of(i)[0] if hasattr(items, "mark_of") else 0
        place = f"{display}:{line}" if line else display
        row = merge(defaults, plain(raw) if isinstance(raw, dict) else {})
        rid = f"{source}/{row.get('id', i)}"
        errors = [] if fast is not None and fast(row) else sorted(_row_validator().iter_errors(row), key=lambda e: list(e.absolute_path))
        if not isinstance(raw, dict) or errors:
            from engine.kb.schema import field_path, message

            why = message(errors[0]) if errors else "expected a mapping"
            path = field_path(list(errors[0].absolute_path)) if errors else ""
            problems.append(Problem(place, rid, path, why))
            continue
        if rid in seen:
            problems.append(Problem(place, rid, "id", f"defined twice in the file (first at {seen[rid]})"))
            continue
        seen[rid] = place
        rec, why = _build(row, rid, source, str(data.get("family") or source.split(":", 1)[1]), place, models, devices)
        if why:
            problems.append(Problem(place, rid, why[0], why[1]))
        else:
            rows.append(rec)
    return rows, problems


def _build(row: dict, rid: str, source: str, family: str, place: str, models, devices):
    kind, units = METRICS[row["metric"]]
    if kind != row["kind"]:
        return None, ("metric", f"{row['metric']!r} is a {kind} metric, not a {row['kind']} one")
    if row["unit"] not in units:
        return None, ("unit", f"{row['metric']} is stated in {', '.join(units)}, not {row['unit']!r}")
    fields, wfields = NEEDS[kind]
    for name in fields:
        if name not in row:
            return None, (name, f"a {kind} measurement needs {name}")
    for name in wfields:
        if name not in row.get("workload", {}):
            return None, (f"workload.{name}", f"a {kind} measurement needs workload.{name}")
    if models is not None and row.get("model") and f"model:{row['model']}" not in models:
        return None, ("model", f"no model record {row['model']!r} in knowledge/models/")
    if devices is not None and f"hw:{row['device']}" not in devices:
        return None, ("device", f"no device record {row['device']!r} in knowledge/hardware/")
    value = float(row["value"]) * units[row["unit"]]
    rec = Measurement(id=rid, source=source, family=family, place=place, kind=kind, model=row.get("model"), device=row["device"],
                      gpus=int(row.get("gpus", 1)), layout=dict(row.get("layout", {})), precision=dict(row.get("precision", {})),
                      workload=dict(row.get("workload", {})), engine=row.get("engine"), engine_version=row.get("engine_version"),
                      metric=row["metric"], statistic=row.get("statistic", "single"), value=value, unit=CANONICAL[row["unit"]],
                      stated=f"{row['value']:g} {row['unit']}", where=row["where"], assumed=tuple(row.get("assumed", ())),
                      note=row.get("note", ""), speculative=dict(row["speculative"]) if row.get("speculative") else None,
                      backend=row.get("backend"))
    return rec, None


def load(root, files=None) -> tuple[list[Measurement], list[Problem]]:
    """Every measurement row under ``root`` (or of ``files``), with the problems found."""
    from pathlib import Path

    from engine.kb import schema
    from engine.kb.yamlio import load_yaml

    root = Path(root)
    base = root / "knowledge" / "measurements"
    paths = [Path(f) for f in files] if files else (sorted(base.glob("*.yaml")) if base.is_dir() else [])
    models = {f"model:{p.stem}" for p in (root / "knowledge" / "models").glob("*.yaml")}
    devices = {f"hw:{p.stem}" for p in (root / "knowledge" / "hardware").glob("*.yaml")}
    out, problems = [], []
    salt = _salt(models, devices)
    for path in paths:
        display = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        cached = _cached(path, display, salt)
        if cached is not None:
            out += cached
            continue
        data, found = load_yaml(path, display)
        problems += found
        if found or data is None:
            continue
        if not isinstance(data, dict):
            problems.append(Problem(display, "", "", "expected one measurement table (a mapping)"))
            continue
        rid = str(data.get("id", path.stem))
        checked = schema.validate("measurement", data, display, rid)
        if checked:
            problems += checked
            continue
        if rid != f"meas:{path.stem}":
            problems.append(Problem(f"{display}:{data.line}" if hasattr(data, "line") else display, rid, "id", f"expected 'meas:{path.stem}' (the file's name)"))
            continue
        rows, found = build_file(data, display, models, devices)
        out += rows
        problems += found
        if not found:
            _keep(path, display, salt, rows)
    return out, problems


# A clean file's rows are kept in the user's private cache (engine.core.cache), keyed by the file's bytes, its display
# name, the schema, this module and the model and device ids it was checked against: the JSON-Schema check of ~3,000 rows
# costs seconds, and a file with problems is always read again so that they are reported.
def _salt(models, devices) -> str:
    import hashlib
    from importlib import resources
    from pathlib import Path

    h = hashlib.blake2b(digest_size=16)
    h.update(resources.files("engine.kb.schemas").joinpath("measurement.json").read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update("|".join(sorted(models or ())).encode() + b"#" + "|".join(sorted(devices or ())).encode())
    return h.hexdigest()


def _name(path, display: str, salt: str) -> str | None:
    import hashlib

    try:
        data = path.read_bytes()
    except OSError:
        return None
    return "meas-" + hashlib.blake2b(data + display.encode() + salt.encode(), digest_size=16).hexdigest() + ".json"


def _cached(path, display: str, salt: str):
    from engine.core import cache

    name = _name(path, display, salt)
    rows = cache.read_json(name) if name else None
    if not isinstance(rows, list):
        return None
    try:
        return [Measurement(**{**r, "assumed": tuple(r.get("assumed", ()))}) for r in rows]
    except TypeError:  # a row of another shape: rebuild
        return None


def _keep(path, display: str, salt: str, rows: list) -> None:
    from engine.core import cache
    from engine.core.record import fields

    name = _name(path, display, salt)
    if name:
        cache.write_json(name, [{f.name: getattr(r, f.name) for f in fields(r)} for r in rows])


def main(argv=None) -> int:
    import sys

    from engine.core.paths import shipped_root as default_root

    args = sys.argv[1:] if argv is None else argv
    rows, problems = load(default_root(), args or None)
    for p in problems:
        print(p, file=sys.stderr)
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r.kind] = kinds.get(r.kind, 0) + 1
    print(f"{len(rows)} rows ok ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}); {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
