"""A cached index of one single-record folder (``knowledge/hardware``, ``knowledge/models``, ...).

``hardware show``, ``model show`` and the presets need one folder's records, already read and
schema-checked. The index stores them (id -> plain record) as one JSON file
in the private cache (``engine.core.cache``: digest-checked, private), named by a content key
of the folder's files (path and bytes) and of the engine's reader and schemas; editing,
adding or removing a file, or changing the engine, names another file. A folder with a
problem is never indexed: the loader reports it every time.
"""

from __future__ import annotations

import json
import os

from engine.kb.loadcache import checksum, engine_salt


def folder_files(root, folder: str) -> list[str]:
    """The YAML files of ``knowledge/<folder>`` under ``root``, sorted as the loader reads them."""
    from pathlib import Path

    base = Path(root) / "knowledge" / folder
    return [os.fspath(p) for p in sorted(base.rglob("*.yaml"))] if base.is_dir() else []


def folder_key(root, folder: str) -> str | None:
    """A key over the folder's files (relative name and bytes) and the engine's reader; None when a file cannot be read."""
    from engine.core.fileread import read_regular
    from engine.kb.yamlio import MAX_BYTES

    crc, adler = checksum(engine_salt().encode() + b"\0" + folder.encode())
    files = folder_files(root, folder)
    for path in files:
        try:
            data = read_regular(path, MAX_BYTES)
        except Exception:
            return None
        crc, adler = checksum(os.path.relpath(path, os.fspath(root)).encode() + b"\0" + data + b"\0", crc, adler)
    return f"{crc:08x}{adler:08x}{len(files):04x}"


def _name(folder: str, key: str) -> str:
    return f"kbindex_{folder}_{key}.json"


def read(root, folder: str) -> tuple[str | None, dict | None]:
    """(key, the records) when the folder's index is cached, else (key, None)."""
    from engine.core import cache

    key = folder_key(root, folder)
    if key is None:
        return None, None
    value = cache.read_json(_name(folder, key))
    ok = isinstance(value, dict) and isinstance(value.get("records"), dict)
    return key, value["records"] if ok else None


def write(folder: str, key: str | None, records: dict) -> None:
    """Store a folder's checked records, unless JSON would not give them back exactly (a non-string key, say)."""
    from engine.core import cache

    value = {"records": records}
    if key is None or json.loads(json.dumps(value, ensure_ascii=False)) != value:
        return
    if cache.write_json(_name(folder, key), value):
        cache.prune(f"kbindex_{folder}_", ".json", keep=8)

