"""Where the shipped knowledge lives, without importing anything heavy.

In a source checkout (or an editable install) it is the repository folder holding
``engine/``; an installed wheel carries a copy under ``<prefix>/share/aiinfra``.
``$AIINFRA_ROOT`` overrides both.
"""

from __future__ import annotations

import os
import sys

import engine


def shipped_root() -> str:
    """The folder of the shipped knowledge (a string: pathlib is kept off the fast path)."""
    env = os.environ.get("AIINFRA_ROOT")
    if env:
        return env
    here = os.path.dirname(os.path.dirname(os.path.abspath(engine.__file__)))
    if os.path.isdir(os.path.join(here, "formulas")):
        return here
    for prefix in (sys.prefix, sys.base_prefix):
        candidate = os.path.join(prefix, "share", "aiinfra")
        if os.path.isdir(os.path.join(candidate, "formulas")):
            return candidate
    return here
