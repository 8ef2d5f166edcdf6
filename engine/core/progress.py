"""Progress notes for phases that run long without output (cold cache build, ``check``, ``site build``).

A short line per phase on stderr, and only when stderr is a terminal: pipes, logs, scripts and
tests see nothing, so stdout and the one-line error contract are unchanged.
"""

from __future__ import annotations

import sys

_SAID: set[str] = set()  # the notes this process printed: a cold run builds several cached modules, one line says it


def note(message: str) -> None:
    """``aiinfra: building formula cache...`` on stderr when it is a terminal, once per process; nothing otherwise."""
    stream = sys.stderr
    try:
        if not stream.isatty() or message in _SAID:
            return
        _SAID.add(message)
        stream.write(f"aiinfra: {message}\n")
        stream.flush()
    except (AttributeError, OSError, ValueError):  # a closed or replaced stream
        return
