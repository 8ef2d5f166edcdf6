"""Reference-architecture records (``knowledge/reference_architectures/ra-NN.yaml``) and the result objects of a tier's evaluation."""

from __future__ import annotations

from pathlib import Path

from engine.core.errors import InputError, KnowledgeError, Problem
from engine.core.record import dataclass, field

FOLDER = ("knowledge", "reference_architectures")


# ---------------------------------------------------------------------- records


def load_records(root) -> dict[str, dict]:
    """The reference-architecture records of ``root`` (only this folder), schema-checked."""
    records, problems = _read(root)
    if problems:
        raise KnowledgeError(problems)
    return records


def _read(root) -> tuple[dict[str, dict], list[Problem]]:
    from engine.kb.schema import read_records
    from engine.kb.yamlio import plain

    base = Path(root).joinpath(*FOLDER)
    files = [(p, "/".join(FOLDER + (p.name,))) for p in sorted(base.glob("*.yaml"))] if base.is_dir() else []
    good, problems = read_records(files, "reference_architecture", "reference architecture")
    out: dict[str, dict] = {}
    for display, data in good:
        rid = str(data["id"])
        if rid in out:
            problems.append(Problem(f"{display}:{data.line}", rid, "id", f"is defined twice (first in {out[rid]['_place']})"))
            continue
        record = plain(data)
        record["_place"] = f"{display}:{data.line}"
        out[rid] = record
    return out, problems


def short(ident: str) -> str:
    return ident.split(":", 1)[1]


def find(records: dict[str, dict], text: str) -> dict:
    """The record for ``ra-01``, ``arch:ra-01`` or ``01``; an unknown id is an InputError naming the known ones."""
    ident = text.strip().lower()
    if ident.isdigit():
        ident = f"ra-{int(ident):02d}"
    ident = ident if ident.startswith("arch:") else f"arch:{ident}"
    if ident not in records:
        known = ", ".join(short(r) for r in sorted(records)) or "none"
        raise InputError("ID", f"no reference architecture {text!r} (known: {known})")
    return records[ident]


def cached_records(root) -> dict[str, dict]:
    """``load_records(root)`` through a JSON cache keyed by the tier files and the schema."""
    from engine.numeric import compiled

    key = compiled.files_key(root, ["/".join(FOLDER)], ["engine/kb/schemas/reference_architecture.json", "engine/domain/arch_records.py", "engine/kb/yamlio.py"])
    return compiled.json_cached("archs", key, lambda: load_records(root))


# ---------------------------------------------------------------------- results


@dataclass
class RunOutcome:
    id: str
    calculator: str
    label: str
    status: str  # ok | not available | error
    message: str = ""
    result: object = None  # engine.numeric.calculators.CalcResult when ok
    book: dict | None = None  # printed, value, unit, ours, ratio, agrees, source, erratum
    note: str = ""

    def to_json(self) -> dict:
        out = {"id": self.id, "calculator": self.calculator, "label": self.label, "status": self.status}
        for key in ("message", "note"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.result is not None:
            out["result"] = self.result.to_json()
        if self.book is not None:
            out["book"] = self.book
        return out


@dataclass
class BoundaryOutcome:
    id: str
    condition: str
    condition_zh: str
    status: str  # met | not met | stated (no threshold in the book) | not available
    direction: str
    upgrade: str = ""
    beyond: str = ""
    evidence: dict | None = None  # run, output, value, unit
    threshold: dict | None = None  # op, value (in the evidence unit), text, source
    source: str = ""

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "")}


@dataclass
class Report:
    record: dict
    pools: list[dict]
    runs: list[RunOutcome]
    boundaries: list[BoundaryOutcome]
    upgrade_path: list[dict] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.record["id"]

    def to_json(self) -> dict:
        rec = {k: v for k, v in self.record.items() if not k.startswith("_") and k not in ("runs", "failure_boundaries")}
        rec["pools"] = self.pools
        rec.pop("hardware", None)
        rec["hardware_why"] = self.record["hardware"].get("why", "")
        rec["runs"] = [r.to_json() for r in self.runs]
        rec["failure_boundaries"] = [b.to_json() for b in self.boundaries]
        rec["upgrade_path"] = self.upgrade_path
        return rec
