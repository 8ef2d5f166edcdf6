"""``folder_view``: one single-record folder's records for a command that needs nothing else.

Kept apart from ``engine.kb.index`` so that the index stays below the loader (``engine.kb.knowledge``
reads and writes the index; this module uses both)."""

from __future__ import annotations


def folder_view(root, folder: str, strict: bool = True):
    """An object whose attribute for ``folder`` (``hardware``, ``models``, ...) holds its records:
    from the cached index without importing the loader, else ``load_single_folder``'s Knowledge (with
    ``strict=False``, the records that load and ``problems`` for the rest)."""
    from types import SimpleNamespace

    from engine.kb.index import read
    from engine.kb.loadcache import SINGLE_RECORD_ATTRIBUTES

    records = read(root, folder)[1]
    if records is not None:
        return SimpleNamespace(root=root, **{SINGLE_RECORD_ATTRIBUTES[folder]: records})
    from engine.kb.knowledge import load_single_folder

    return load_single_folder(root, folder, strict)
