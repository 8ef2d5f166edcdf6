"""Fixtures shared by the model-record tests of this folder."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def k():
    """The shipped knowledge base, loaded and checked."""
    from engine.kb.knowledge import Knowledge

    return Knowledge.load(ROOT)


@pytest.fixture(scope="module")
def dev(k):
    """The shipped device records, by id."""
    from engine.domain import hardware

    return hardware.devices(k)


@pytest.fixture(scope="module")
def run():
    """``run(record, tokens, **kw)``: the forward ledger of a record with the shipped templates and formulas."""
    from engine.core.paths import shipped_root
    from engine.domain import ledger
    from engine.numeric import compiled

    catalog = ledger.load_root(shipped_root())
    formulas = compiled.load(shipped_root())
    return lambda rec, tokens, **kw: ledger.forward_record(rec, catalog.templates, tokens, formulas=formulas, **kw)
