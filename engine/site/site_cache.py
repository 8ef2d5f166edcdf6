"""The generated pages of a site build, cached by a content hash of everything they are made from.

``generate(root, hand)`` derives every page from the knowledge root each time (loading and
checking the records, running calculators and tree walks, validating the measurements): most of
a warm ``site build`` that changes nothing. :func:`generated` keys the whole result by a digest of
what it reads: every file of the root's formulas/, knowledge/ and decision_trees/ folders (YAML and
README, by path and bytes), the hand-written pages given, and the engine's own Python source (any
code change regenerates). A hit is read from the user's private cache (engine.core.cache: a file
that is not the user's own or whose digest does not match is discarded), a miss is generated and
written. Only data is stored: page paths, texts, titles, sources and lines, the navigation and the
generated scripts.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import engine

PREFIX = "site_pages_"
VERSION = "1"
FOLDERS = ("formulas", "knowledge", "decision_trees")


def key(root, hand: dict[str, str] | None = None) -> str:
    """CRC-32 and Adler-32 over the inputs (path and bytes of each), in a fixed order."""
    crc, adler = zlib.crc32(VERSION.encode()), zlib.adler32(VERSION.encode())
    count = 0

    def add(name: str, data: bytes) -> None:
        nonlocal crc, adler, count
        chunk = name.encode() + b"\0" + data + b"\0"
        crc, adler, count = zlib.crc32(chunk, crc), zlib.adler32(chunk, adler), count + 1

    base = Path(root)
    for folder in FOLDERS:
        for path in sorted((base / folder).rglob("*")) if (base / folder).is_dir() else ():
            if path.suffix in (".yaml", ".md") and path.is_file():
                add(path.relative_to(base).as_posix(), path.read_bytes())
    engine_dir = Path(os.path.dirname(os.path.abspath(engine.__file__)))
    for path in sorted(engine_dir.rglob("*.py")):
        add("engine/" + path.relative_to(engine_dir).as_posix(), path.read_bytes())
    for name, text in sorted((hand or {}).items()):
        add("hand:" + name, text.encode())
    return f"{crc:08x}{adler:08x}{count:05x}"


def generated(root, hand: dict[str, str] | None = None):
    """``engine.site.generate.generate(root, hand)``, from the private cache when its inputs are unchanged."""
    from engine.core import cache
    from engine.site.generate import generate

    name = f"{PREFIX}{key(root, hand)}.json"
    stored = cache.read_json(name)
    if stored is not None:
        try:
            return _site(stored)
        except (KeyError, TypeError, ValueError):
            cache.discard(name)
    site = generate(root, hand)
    if cache.write_json(name, _plain(site)):
        cache.prune(PREFIX, ".json", keep=4)
    return site


def _plain(site) -> dict:
    return {"pages": [[p.path, p.text, p.title, p.source, p.line, p.search] for p in site.pages], "nav": site.nav, "generated": site.generated}


def _site(stored: dict):
    from engine.site.context import Page
    from engine.site.generate import Site

    pages = [Page(path, text, title, source, int(line), bool(search)) for path, text, title, source, line, search in stored["pages"]]
    if not isinstance(stored["nav"], list) or not isinstance(stored["generated"], dict):
        raise TypeError("not a stored site")
    return Site(pages, stored["nav"], dict(stored["generated"]))
