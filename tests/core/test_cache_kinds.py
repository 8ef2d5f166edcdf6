"""Issue #24 (Low): the code cache prunes formula and condition modules apart, and a relative
XDG_CACHE_HOME is ignored (the XDG rule), never used as a folder under the current directory."""

from __future__ import annotations

import os

from engine.core import cache
from engine.numeric import compiled


def test_condition_modules_are_named_and_pruned_apart_from_formula_modules(tmp_path, monkeypatch):
    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(tmp_path / "cache"))
    cache._state.clear()
    assert compiled._code_name("abc").startswith("formulas_abc_")
    assert compiled._code_name("conditions_def").startswith("conditions_def_")
    compiled._store_code("main", compile("X = 1", "<main>", "exec"))
    for i in range(40):  # more condition modules than the 32 kept: the formula module stays
        compiled._store_code(f"conditions_{i}", compile(f"X = {i}", "<cond>", "exec"))
    names = os.listdir(tmp_path / "cache")
    assert sum(n.startswith("conditions_") for n in names) == 32
    assert [n for n in names if n.startswith("formulas_")] == [compiled._code_name("main")]
    assert compiled._cached_code("main") is not None
    cache._state.clear()


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path):
    monkeypatch.delenv("AIINFRA_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert cache.location() == os.path.join(str(tmp_path), ".cache", "aiinfra")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.location() == os.path.join(str(tmp_path / "xdg"), "aiinfra")
