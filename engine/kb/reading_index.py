"""A cached index of the books: books, chapters, sections, concepts, reading paths, action words, goal words.

``path show`` and ``path for`` need the records ``load_books`` builds from ``knowledge/`` (less
its single-record folders), nothing else. The index stores those records, already read,
checked and built, as one JSON file in the private cache (``engine.core.cache``:
digest-checked, private), named by a content key of the files it comes from and of the
engine's reader, schemas, loader and record classes; any edit names another file. A root
with a problem is never indexed. Containers read from YAML come back as plain dicts and
lists (the line marks are for ``aiinfra check``, which never reads this index).
"""

from __future__ import annotations

import os

from engine.kb.loadcache import checksum, engine_salt

TABLES = ("books", "chapters", "sections", "concepts", "paths", "actions", "goal_words")
_OWN = ("engine/kb/knowledge.py", "engine/kb/records.py", "engine/kb/reading_index.py", "engine/core/ids.py")


def key(root, files) -> str | None:
    """A key over ``files`` (relative name and bytes) and the engine; None when one cannot be read."""
    import engine
    from engine.core.fileread import read_regular
    from engine.kb.yamlio import MAX_BYTES

    here = os.path.dirname(os.path.dirname(os.path.abspath(engine.__file__)))
    crc, adler = checksum(engine_salt().encode())
    named = [(own, os.path.join(here, own)) for own in _OWN] + [(os.path.relpath(p, os.fspath(root)), os.fspath(p)) for p in files]
    for name, path in named:
        try:
            data = read_regular(path, MAX_BYTES)
        except Exception:
            return None
        crc, adler = checksum(name.encode() + b"\0" + data + b"\0", crc, adler)
    return f"{crc:08x}{adler:08x}{len(named):04x}"


# ---------------------------------------------------------------------------- encoding


def encode(value):
    """Records as JSON: a record ``{"c": class, "f": [fields]}``, a tuple ``{"t": [...]}``, a
    mapping ``{"m": [[key, value], ...]}``, a list a list, a scalar itself."""
    from engine.core.record import fields, is_dataclass

    if is_dataclass(value):
        return {"c": type(value).__name__, "f": [encode(getattr(value, f.name)) for f in fields(value)]}
    if isinstance(value, tuple):
        return {"t": [encode(v) for v in value]}
    if isinstance(value, dict):
        return {"m": [[k, encode(v)] for k, v in value.items()]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    return value


def decode(value):
    """The inverse of :func:`encode`."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "t" in value:
        return tuple(decode(v) for v in value["t"])
    if "m" in value:
        return {k: decode(v) for k, v in value["m"]}
    from engine.kb import records

    return getattr(records, value["c"])(*(decode(v) for v in value["f"]))


def _exact(value) -> bool:
    """True when JSON gives ``value`` back as written (scalar mapping keys, no NaN)."""
    import json

    try:
        return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False)) == value
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------------------- the cache


def _name(ident: str) -> str:
    return f"kbbooks_{ident}.json"


def read(ident: str | None) -> dict | None:
    """{table: {id: record}, "places": {...}} from the cache, or None."""
    from engine.core import cache

    if ident is None:
        return None
    stored = cache.read_json(_name(ident))
    if not isinstance(stored, dict) or any(t not in stored for t in TABLES) or "places" not in stored:
        return None
    try:
        out = {t: {k: decode(v) for k, v in stored[t].items()} for t in TABLES}
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    out["places"] = stored["places"]
    return out


def write(ident: str | None, k) -> None:
    """Store the tables of a Knowledge that loaded cleanly, unless JSON would not give them back."""
    from engine.core import cache

    if ident is None:
        return
    value = {t: {i: encode(r) for i, r in getattr(k, t).items()} for t in TABLES}
    value["places"] = dict(k.places)
    if _exact(value) and cache.write_json(_name(ident), value):
        cache.prune("kbbooks_", ".json", keep=8)
