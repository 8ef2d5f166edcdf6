"""Helpers shared by the command handlers: the root, ``--set`` pairs, atomic writes, output."""

from __future__ import annotations

import os
import sys

from engine.core.errors import InputError

KNOWLEDGE_FOLDERS = ("formulas", "knowledge", "decision_trees")


def root_of(args) -> str:
    """The knowledge root: ``--root DIR`` (a folder holding formulas/, knowledge/ or decision_trees/) or the shipped knowledge."""
    root = getattr(args, "root", None)
    if root is None:
        from engine.core.paths import shipped_root

        return shipped_root()
    if not root:
        raise InputError("--root", "is empty (expected a folder with formulas/ and knowledge/)")
    if not os.path.isdir(root):
        raise InputError("--root", f"{root!r} is not a folder (expected a folder with formulas/ and knowledge/)")
    if not any(os.path.isdir(os.path.join(root, name)) for name in KNOWLEDGE_FOLDERS):
        raise InputError("--root", f"{root!r} holds none of formulas/, knowledge/, decision_trees/ (expected a knowledge root)")
    return root


def scan_options(argv: list[str], options, switches=()) -> list[tuple[str | None, str | None]] | None:
    """The fast paths' argument reader: ``--name value`` and ``--name=value`` for ``options``, bare
    ``switches`` (value None) and positional words (name None), in order. None for anything
    else (an unknown option, a missing value), so the full parser can answer with its message."""
    out: list[tuple[str | None, str | None]] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        name, eq, value = token.partition("=")
        if token in switches:
            out.append((token, None))
        elif name in options:
            if not eq:
                if i + 1 >= len(argv):
                    return None
                value, i = argv[i + 1], i + 1
            out.append((name, value))
        elif token.startswith("-"):
            return None
        else:
            out.append((None, token))
        i += 1
    return out


def parse_sets(pairs: list[str]) -> dict[str, str]:
    """``["a=1", "b=80GiB"]`` -> ``{"a": "1", "b": "80GiB"}``; a malformed or repeated pair is an InputError."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InputError("--set", f"{pair!r} is not NAME=VALUE (e.g. --set hbm=80GiB)")
        if not name.isidentifier():
            raise InputError("--set", f"{name!r} is not a symbol name (letters, digits and _)")
        if not value.strip():
            raise InputError(f"--set {name}", "has no value (expected e.g. 80GiB, 0.4 or 1..3h)")
        if name in out:
            raise InputError(f"--set {name}", "is given twice")
        out[name] = value.strip()
    return out


def write_atomic(path: str, text: str | bytes, option: str = "--out") -> None:
    """Write ``text`` (or bytes) to ``path`` through a temporary file in the same folder, then rename.

    Every way the write can fail (an empty path, a folder, a read-only folder, ``/proc``, a full
    disk, an existing FIFO, device or symbolic link) is an InputError naming ``option`` and the path."""
    import tempfile

    folder = writable_target(path, option)
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as exc:
        raise write_error(option, path, exc) from None
    try:
        with os.fdopen(fd, "wb") if isinstance(text, bytes) else os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        publish(tmp, path)
    except OSError as exc:
        raise write_error(option, path, exc) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def writable_target(path: str, option: str) -> str:
    """The folder a file ``path`` goes into, after the checks that need no write: not empty, not a folder, folder exists."""
    if not path:
        raise InputError(option, "is empty (expected a file path)")
    if path.endswith(os.sep) or os.path.isdir(path):
        raise InputError(option, f"{path!r} is a folder (expected a file path)")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise InputError(option, f"the folder {folder!r} does not exist")
    _regular_or_new(path, option)
    return folder


def _regular_or_new(path: str, option: str) -> None:
    """A write replaces only a regular file of its own: an existing FIFO, device or socket is refused (the
    rename would put a regular file in its place), and so is a symbolic link (never written through)."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise write_error(option, path, exc) from None
    if stat.S_ISLNK(mode):
        raise InputError(option, f"{path!r} is a symbolic link (expected a regular file or a new path; links are not written through)")
    if not stat.S_ISREG(mode):
        raise InputError(option, f"{path!r} exists and is not a regular file (expected a regular file or a new path)")


def write_error(option: str, path: str, exc: OSError) -> InputError:
    return InputError(option, f"cannot write {path!r} ({exc.strerror or exc or exc.__class__.__name__})")


def publish(tmp: str, target) -> None:
    """Give a finished temporary file the usual permissions (mkstemp makes it 0600) and rename it into place."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, target)


def one_quantity(option: str, text: str, unit: str, example: str = "") -> float:
    """One value (not a range) of ``text`` in ``unit``, units accepted as with --set; a UnitError or a range becomes an
    InputError naming ``option`` (``example``: a value to show in the range message, e.g. '1GB or 256MiB')."""
    from engine.core.errors import UnitError
    from engine.core.units import parse_quantity

    try:
        q = parse_quantity(text, unit)
    except UnitError as exc:
        raise InputError(option, f"{exc.text!r} {exc.message}") from None
    if q.is_range:
        raise InputError(option, f"{text!r} is a range; give one value " + (f"(e.g. {example})" if example else f"in {unit}"))
    return q.value


# set by engine.cli.main for a text report (--format text) of a verb whose output is prose and tables: emit then wraps
# its sentences at $COLUMNS (engine.cli.render.prose_text); JSON, CSV, Markdown, sweeps and protocol output never
WRAP = False


def emit(text: str) -> None:
    if WRAP:
        from engine.cli.render import prose_text

        text = prose_text(text)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def one_record(find, problems):
    """``find()``, the record a single-record command reads, from a root loaded leniently: problems in
    other records are one warning on stderr (``aiinfra check`` stays strict and lists them); when the
    record is not found and the root has problems, they are the answer (it may be the broken one)."""
    from engine.core.errors import KnowledgeError

    try:
        found = find()
    except InputError:
        if problems:
            raise KnowledgeError(problems) from None
        raise
    if problems:
        from engine.kb.folders import warn_ignored

        warn_ignored(problems)
    return found
