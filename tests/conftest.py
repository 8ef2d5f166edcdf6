"""Shared fixtures: every test session writes compiled formula modules to its own folder."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir(tmp_path_factory):
    """Point AIINFRA_CACHE_DIR at a fresh folder so no test reads or fills the user's cache."""
    previous = os.environ.get("AIINFRA_CACHE_DIR")
    os.environ["AIINFRA_CACHE_DIR"] = str(tmp_path_factory.mktemp("aiinfra-cache"))
    yield
    if previous is None:
        os.environ.pop("AIINFRA_CACHE_DIR", None)
    else:
        os.environ["AIINFRA_CACHE_DIR"] = previous


@pytest.fixture(scope="session", autouse=True)
def _no_columns():
    """Text tables fit $COLUMNS where it is set (engine.cli.render.terminal_width): the suite runs without it, so a
    shell that exports it changes no expected output; the tests of the fitting set it themselves."""
    previous = os.environ.pop("COLUMNS", None)
    # importing readline (pytest does) exports COLUMNS and LINES into the C environment that child processes inherit,
    # behind os.environ's back: remove them there too, or every subprocess test would see an 80-column terminal
    for name in ("COLUMNS", "LINES"):
        os.unsetenv(name)
    yield
    if previous is not None:
        os.environ["COLUMNS"] = previous


@pytest.fixture(scope="session")
def module():
    """The compiled formula module of the shipped knowledge (numeric only, no sympy at call time)."""
    from engine.core.paths import shipped_root
    from engine.numeric import compiled

    return compiled.load(shipped_root())
