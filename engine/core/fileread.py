"""Reading a file someone else may have planted: regular files only, and at most a cap of bytes.

A FIFO would block ``open`` forever and ``/dev/zero`` never ends, so the path is stat-ed
before it is opened, opened without blocking, checked again on the open descriptor, and
read for at most ``cap + 1`` bytes.
"""

from __future__ import annotations

import os
import stat

MIB = 1024 * 1024
MAX_FILE_BYTES = 4 * MIB  # one knowledge file; the largest shipped, knowledge/chapters/infra.yaml, is 0.17 MiB


class FileRefused(Exception):
    """The file is not one we read; ``reason`` completes "<path> ..."."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _check(st: os.stat_result, cap: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = _kind(st.st_mode)
        raise FileRefused(f"is {kind}, not a regular file" if kind.startswith("a ") else "is not a regular file")
    if st.st_size > cap:
        raise FileRefused(_too_big(cap))


def _too_big(cap: int) -> str:
    return f"is larger than {cap // MIB} MiB, the most read from one file" if cap >= MIB else f"is larger than {cap} bytes, the most read from one file"


def read_regular(path, cap: int) -> bytes:
    """The bytes of ``path``; FileRefused when it is not a regular file or holds more than ``cap`` bytes.

    OSError (missing, unreadable) passes through for the caller to word.
    """
    _check(os.stat(path), cap)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    with open(fd, "rb", buffering=0) as fh:
        st = os.fstat(fd)
        _check(st, cap)  # the path may have been swapped between stat and open
        # ask for the size fstat gave plus one byte, not for the cap: a read of cap + 1 bytes
        # allocates that much (4 MiB) for every file, ten times the cost of the read itself
        chunks, total, want = [], 0, min(st.st_size, cap) + 1
        while total <= cap:
            chunk = fh.read(want)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            want = min(cap + 1 - total, 1 << 16)  # a file that grows (or reports no size) is read on in steps, to the cap
    if total > cap:  # a file that grew after fstat
        raise FileRefused(_too_big(cap))
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
