"""Progress notes for phases that run long without output (cold cache build, ``check``, ``site build``).

A short line per phase on stderr, and only when stderr is a terminal: pipes, logs, scripts and
tests see nothing, so stdout and the one-line error contract are unchanged.
"""

from __future__ import annotations

import sys


def note(message: str) -> None:
    """``aiinfra: building formula cache...`` on stderr when it is a terminal; nothing otherwise."""
    stream = sys.stderr
    try:
        if not stream.isatty():
            return
        stream.write(f"aiinfra: {message}\n")
        stream.flush()
    except (AttributeError, OSError, ValueError):  # a closed or replaced stream
        return
