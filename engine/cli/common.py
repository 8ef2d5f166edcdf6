"""Helpers shared by the command handlers: the root, ``--set`` pairs, atomic writes, output."""

from __future__ import annotations

import os
import sys

from engine.errors import InputError


def root_of(args) -> str:
    """The knowledge root: ``--root DIR`` or the shipped knowledge."""
    if getattr(args, "root", None):
        if not os.path.isdir(args.root):
            raise InputError("--root", f"{args.root!r} is not a folder (expected a folder with formulas/ and knowledge/)")
        return args.root
    from engine.paths import shipped_root

    return shipped_root()


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


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename."""
    import tempfile
    from pathlib import Path

    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError("--out", f"the folder {str(folder)!r} does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        publish(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def publish(tmp: str, target) -> None:
    """Give a finished temporary file the usual permissions (mkstemp makes it 0600) and rename it into place."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, target)


def emit(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
