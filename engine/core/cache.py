"""The user's private cache: where it lives, which files in it are trusted, and their digests.

The compiled formula and template modules are code, so the cache is a trust boundary:

- it lives only under the user's own folder: ``$AIINFRA_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/aiinfra`` (an absolute path; a relative one is ignored, as the XDG rule says),
  else ``~/.cache/aiinfra``; never a shared temporary folder;
- the folder is created 0700; a folder not owned by the user, or writable by group or
  others, is not used at all (the run goes on uncached, in memory);
- a file is read only when it is a regular file (no symlink), owned by the user and not
  writable by group or others;
- every file starts with a header line holding the BLAKE2b digest of the rest; a file whose
  content does not match is deleted and rebuilt by the caller (a truncated, edited or
  garbage file repairs itself).

Nothing here raises on a cache problem: a file that cannot be trusted reads as missing, and
a file that cannot be written is skipped.
"""

from __future__ import annotations

import os
import stat
import sys

MAGIC = b"aiinfra-cache 1 "
_DIGEST_SIZE = 20
_state: dict[str, str | None] = {}
repaired: list[str] = []  # names of cache files discarded because their content was not theirs


def location() -> str:
    """The configured cache folder (it may not exist yet)."""
    env = os.environ.get("AIINFRA_CACHE_DIR")
    if env:
        return env
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(xdg):  # the XDG rule: a relative path is invalid and ignored, never a folder under the cwd
        xdg = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "aiinfra")


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else -1


def _private(st) -> bool:
    """Owned by this user and writable by nobody else."""
    owner = _uid()
    return (owner == -1 or st.st_uid == owner) and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def folder(create: bool = True) -> str | None:
    """The cache folder when it is private (created 0700 on first use), else None."""
    path = location()
    if path in _state and (_state[path] is not None or not create):
        return _state[path]
    try:
        if create and not os.path.lexists(path):
            os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return _remember(path, None, create)
    if not stat.S_ISDIR(st.st_mode) or not _private(st):
        _warn_once(path)
        return _remember(path, None, True)
    return _remember(path, path, True)


def _remember(path: str, value: str | None, final: bool) -> str | None:
    if final:
        _state[path] = value
    return value


def _warn_once(path: str) -> None:
    key = "warned:" + path
    if key not in _state:
        _state[key] = path
        sys.stderr.write(f"aiinfra: warning: cache folder {path} is not a folder owned by you and closed to others; running uncached\n")


def _digest(payload: bytes) -> bytes:
    from _blake2 import blake2b  # hashlib would load OpenSSL: more than a whole evaluation costs

    return blake2b(payload, digest_size=_DIGEST_SIZE).hexdigest().encode()


def read(name: str) -> bytes | None:
    """The payload of cache file ``name`` when it is trusted and intact; None otherwise."""
    base = folder(create=False)
    if base is None:
        return None
    path = os.path.join(base, name)
    data = _read_private(path)
    if data is None:
        return None
    head, sep, payload = data.partition(b"\n")
    if sep and head.startswith(MAGIC) and head[len(MAGIC):] == _digest(payload):
        return payload
    discard(name)
    return None


def _read_private(path: str) -> bytes | None:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _private(st):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def discard(name: str) -> None:
    """Delete cache file ``name`` (its content did not match its digest, or did not parse)."""
    base = folder(create=False)
    repaired.append(name)
    if base is None:
        return
    try:
        os.unlink(os.path.join(base, name))
    except OSError:
        pass


def write(name: str, payload: bytes) -> bool:
    """Write ``payload`` as cache file ``name`` atomically (0600, digest header); False when skipped."""
    base = folder()
    if base is None:
        return False
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(dir=base, prefix=".tmp_", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(MAGIC + _digest(payload) + b"\n" + payload)
            os.replace(tmp, os.path.join(base, name))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    return True


def prune(prefix: str, suffix: str, keep: int) -> None:
    """Keep the ``keep`` most recent cache files named ``prefix*suffix``."""
    base = folder(create=False)
    if base is None:
        return
    try:
        names = [n for n in os.listdir(base) if n.startswith(prefix) and n.endswith(suffix)]
        paths = sorted((os.path.join(base, n) for n in names), key=os.path.getmtime, reverse=True)
    except OSError:
        return
    for old in paths[keep:]:
        try:
            os.unlink(old)
        except OSError:
            pass


def read_json(name: str):
    """A cached JSON value, or None (a file that does not parse is discarded)."""
    import json

    payload = read(name)
    if payload is None:
        return None
    try:
        return json.loads(payload)
    except ValueError:
        discard(name)
        return None


def write_json(name: str, value) -> bool:
    import json

    return write(name, json.dumps(value, ensure_ascii=False).encode())
