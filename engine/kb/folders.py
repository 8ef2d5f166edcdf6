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


_WARNED: set[str] = set()  # warning lines this process printed (engine.cli.main clears it per command)


def warn_ignored(problems) -> None:
    """One line on stderr for the problems of records other than the one a command reads (``aiinfra check``
    lists every one): ``aiinfra: warning: N problems in other records ignored (first: ...)``; once per process
    (per command on the command line, where ``engine.cli.main`` clears the memory)."""
    import sys

    if not problems:
        return
    n = len(problems)
    line = (f"aiinfra: warning: {n} problem{'s' if n != 1 else ''} in other records ignored "
            f"(first: {problems[0]}; aiinfra check lists every one)\n")
    if line in _WARNED:
        return
    _WARNED.add(line)
    try:
        sys.stderr.write(line)
    except (AttributeError, OSError, ValueError):  # a closed or replaced stream
        pass


def find_one(root, folder: str, find, ignored: list | None = None):
    """``find(view)``: the one record a command reads from a single-record ``folder`` (a model, a device), the
    folder read leniently (#24): problems in its other files do not stop the command, they are one warning
    (:func:`warn_ignored`, or their text appended to ``ignored`` for a caller that caches the record and warns
    itself); when ``find`` refuses the id and the folder has problems, they are the answer (the record asked
    for may be the broken one): KnowledgeError, exit 1."""
    from engine.core.errors import InputError, KnowledgeError

    view = folder_view(root, folder, strict=False)
    problems = list(getattr(view, "problems", None) or [])
    try:
        found = find(view)
    except InputError:
        if problems:
            raise KnowledgeError(problems) from None
        raise
    if problems:
        if ignored is None:
            warn_ignored(problems)
        else:
            ignored.extend(str(p) for p in problems)
    return found
