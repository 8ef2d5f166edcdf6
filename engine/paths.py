"""Where the shipped knowledge lives, without importing anything heavy.

In a source checkout (or an editable install) it is the repository folder holding
``engine/``; an installed wheel carries a copy under ``<prefix>/share/aiinfra``.
``$AIINFRA_ROOT`` overrides both.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def shipped_root() -> Path:
    env = os.environ.get("AIINFRA_ROOT")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent
    if (here / "formulas").is_dir():
        return here
    for prefix in (sys.prefix, sys.base_prefix):
        candidate = Path(prefix) / "share" / "aiinfra"
        if (candidate / "formulas").is_dir():
            return candidate
    return here
