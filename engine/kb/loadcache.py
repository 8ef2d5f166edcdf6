"""Per-file results of reading and schema-checking a root, cached by each file's bytes.

``Knowledge.load`` reads every YAML file with PyYAML and checks each record with jsonschema;
both are slow and neither depends on anything but the file (its bytes and the name it is
shown by) and the engine's own reader and schemas. :class:`FileCache` keeps, per file, the
marked YAML tree (values with their line and column), the reading problems and the schema
problems of each record in the order the loader asked for them, in one JSON file of the
private cache per root (``engine.core.cache``: digest-checked, private). A file whose bytes
changed misses and is read and checked again; the others replay, so a warm load gives the
same records and the same problems as a cold one without importing PyYAML or jsonschema.

The key of the whole file also covers the engine's reader and schemas (:func:`engine_salt`),
so an engine change rebuilds everything. A value the encoding cannot hold (a YAML date, say)
leaves that file uncached.
"""

from __future__ import annotations

import os
import zlib

from engine.core.errors import Problem

# the engine files whose code decides what a file reads as and which schema problems it has
_OWN = ("engine/kb/yamlio.py", "engine/kb/schema.py", "engine/kb/fastschema.py", "engine/kb/loadcache.py", "engine/core/fileread.py", "engine/core/errors.py")
_SCALARS = (str, int, float, bool, type(None))
# folders of knowledge/ whose files each hold one record -> the Knowledge attribute (see engine.kb.knowledge)
SINGLE_RECORD_ATTRIBUTES = {"models": "models", "hardware": "hardware", "operators": "operators", "calculators": "calculators",
                            "reference_architectures": "reference_architectures", "systems": "systems",
                            "failure_taxonomies": "failure_taxonomies", "scaling_laws": "scaling_laws", "labs": "labs"}
MAX_KEPT = 16  # cache files of this kind kept (one per root recently loaded)


class Unencodable(Exception):
    """A value the JSON encoding does not hold exactly (the file is then not cached)."""


def checksum(data: bytes, crc: int = 0, adler: int = 1) -> tuple[int, int]:
    return zlib.crc32(data, crc), zlib.adler32(data, adler)


def engine_salt() -> str:
    """A key over the engine's reader and schema files (by name and bytes)."""
    import engine

    here = os.path.dirname(os.path.abspath(engine.__file__))
    schemas = os.path.join(here, "kb", "schemas")
    names = list(_OWN) + sorted(f"engine/kb/schemas/{n}" for n in os.listdir(schemas) if n.endswith(".json"))
    crc, adler = 0, 1
    for name in names:
        with open(os.path.join(os.path.dirname(here), name), "rb") as fh:
            crc, adler = checksum(name.encode() + b"\0" + fh.read() + b"\0", crc, adler)
    return f"{crc:08x}{adler:08x}"


def file_key(path, display: str) -> str | None:
    """The key of one file: the name it is shown by and its bytes; None when it cannot be read
    as the loader reads it (the loader then reports why, uncached)."""
    from engine.core.fileread import read_regular
    from engine.kb.yamlio import MAX_BYTES

    try:
        data = read_regular(path, MAX_BYTES)
    except Exception:
        return None
    crc, adler = checksum(display.encode() + b"\0" + data)
    return f"{crc:08x}{adler:08x}{len(data):x}"


# ---------------------------------------------------------------------------- encoding


def encode(value):
    """A marked YAML tree as JSON: a mapping is ``["D", line, col, [key, value, line, col, ...]]``,
    a list ``["L", line, col, [items], [line, col, ...]]``; scalars stay themselves."""
    from engine.kb.yamlio import MarkedDict, MarkedList

    if isinstance(value, MarkedDict):
        flat: list = []
        for k, v in value.items():
            if not isinstance(k, _SCALARS):
                raise Unencodable(k)
            flat += [k, encode(v), *value.key_marks.get(k, (value.line, value.col))]
        return ["D", value.line, value.col, flat]
    if isinstance(value, MarkedList):
        marks = [n for m in value.item_marks for n in m]
        return ["L", value.line, value.col, [encode(v) for v in value], marks]
    if isinstance(value, _SCALARS):
        return value
    raise Unencodable(type(value).__name__)


def decode(value):
    """The inverse of :func:`encode`."""
    from engine.kb.yamlio import MarkedDict, MarkedList

    if not isinstance(value, list):
        return value
    if value[0] == "D":
        out = MarkedDict()
        out.line, out.col, flat = value[1], value[2], value[3]
        out.key_marks = {}
        for i in range(0, len(flat), 4):
            out[flat[i]] = decode(flat[i + 1])
            out.key_marks[flat[i]] = (flat[i + 2], flat[i + 3])
        return out
    items = MarkedList(decode(v) for v in value[3])
    items.line, items.col = value[1], value[2]
    marks = value[4]
    items.item_marks = [(marks[i], marks[i + 1]) for i in range(0, len(marks), 2)]
    return items


# ---------------------------------------------------------------------------- the cache


class FileCache:
    """``load_yaml`` and ``validate`` for one loader run, answered from the cache where a file is unchanged."""

    def __init__(self, root, tag: str = ""):
        from engine.core import cache

        where = os.path.abspath(os.fspath(root)).encode()
        crc, adler = checksum(where)
        # ``tag`` keeps one loader's files (the trees, say) apart from the knowledge loader's,
        # so each saves its whole set without dropping the other's entries
        self.prefix = f"kb{tag}files_"
        self.name = f"{self.prefix}{crc:08x}{adler:08x}.json"
        self.salt = engine_salt()
        stored = cache.read_json(self.name)
        self.old: dict = stored["files"] if isinstance(stored, dict) and stored.get("salt") == self.salt else {}
        self.new: dict = {}
        self.changed = False
        self.checks: list | None = None  # the current file's schema results (recorded or replayed)
        self.replay = False
        self.at = 0

    def load_yaml(self, path, display: str):
        """(data, problems) of one file, as ``engine.kb.yamlio.load_yaml`` gives them."""
        key = file_key(path, display)
        hit = self._replayed(key) if key else None
        if hit is not None:
            return hit
        from engine.kb.yamlio import load_yaml

        data, problems = load_yaml(path, display)
        self.checks, self.replay, self.at = [], False, 0
        try:
            entry = {"data": encode(data), "problems": [list(p) for p in problems], "checks": self.checks}
        except (Unencodable, RecursionError):
            return data, problems
        if key:
            self.new[key], self.changed = entry, True
        return data, problems

    def _replayed(self, key: str):
        entry = self.old.get(key)
        if entry is None:
            return None
        try:
            data, problems = decode(entry["data"]), [Problem(*p) for p in entry["problems"]]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
        self.new[key] = entry
        self.checks, self.replay, self.at = entry["checks"], True, 0
        return data, problems

    def validate(self, kind: str, raw, display: str, rid: str) -> list[Problem]:
        """``engine.kb.schema.validate``, replayed for an unchanged file (in the order first asked)."""
        if self.replay and self.checks is not None and self.at < len(self.checks):
            step = self.checks[self.at]
            self.at += 1
            if step[0] == kind and step[1] == rid:
                return [Problem(*p) for p in step[2]]
        from engine.kb.schema import validate

        found = validate(kind, raw, display, rid)
        if not self.replay and self.checks is not None:
            self.checks.append([kind, rid, [list(p) for p in found]])
        return found

    def save(self, whole: bool = True) -> None:
        """Write the entries of this run when anything was read afresh (or, after a ``whole``
        load, a file went away); a partial load keeps the other files' entries."""
        from engine.core import cache

        files = self.new if whole else {**self.old, **self.new}
        if self.changed or set(files) != set(self.old):
            if cache.write_json(self.name, {"salt": self.salt, "files": files}):
                cache.prune(self.prefix, ".json", keep=MAX_KEPT)
