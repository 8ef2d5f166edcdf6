"""engine.api keeps the compiled module per root in the process and still sees an edited formula file.

Expected values are hand arithmetic on tests/fixtures/roots/good/formulas/f.yaml:
F1 = 2 * layers * kv_heads * head_dim * kv_bytes, kv_bytes defaulting to 2 (BF16).
Qwen/Qwen3-8B config.json: 36 layers, 8 KV heads, head_dim 128.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from engine import api
from engine.core.errors import KnowledgeError
from engine.numeric import compiled

GOOD = Path(__file__).parent.parent / "fixtures" / "roots" / "good"
QWEN3_8B = {"layers": 36, "kv_heads": 8, "head_dim": 128}


@pytest.fixture
def root(tmp_path) -> Path:
    copy = tmp_path / "root"
    shutil.copytree(GOOD, copy)
    yield copy
    compiled.forget(copy)


def value(root: Path) -> float:
    return api.evaluate("F1", root=root, **QWEN3_8B).outputs["kv_bytes_per_token"].value


def edit_default(root: Path, old: str, new: str) -> None:
    f = root / "formulas" / "f.yaml"
    f.write_text(f.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def test_repeated_calls_reuse_the_module(root, monkeypatch):
    assert value(root) == 147456  # 2 * 36 * 8 * 128 * 2

    def no_reload(path):
        raise AssertionError("a fresh memo should not recompute the content key")

    monkeypatch.setattr(compiled, "content_hash", no_reload)
    monkeypatch.setattr(compiled, "FRESH_INTERVAL", 3600.0)
    assert [value(root) for _ in range(3)] == [147456] * 3


def test_an_edit_between_two_calls_is_seen(root):
    assert value(root) == 147456  # 2 * 36 * 8 * 128 * 2
    # same size: "default: 2," -> "default: 1,"; within RACY_NS of the edit the content decides
    edit_default(root, "default: 2,", "default: 1,")
    time.sleep(compiled.FRESH_INTERVAL * 2)
    assert value(root) == 73728  # 2 * 36 * 8 * 128 * 1


def test_an_edit_is_seen_by_stat_alone_once_files_are_old(root, monkeypatch):
    old = time.time() - 3600  # an hour old: past RACY_NS, so an unchanged stat is trusted
    f = root / "formulas" / "f.yaml"
    os.utime(f, (old, old))
    monkeypatch.setattr(compiled, "FRESH_INTERVAL", 0.0)
    assert value(root) == 147456  # 2 * 36 * 8 * 128 * 2
    edit_default(root, "default: 2,", "default: 4,")
    assert value(root) == 294912  # 2 * 36 * 8 * 128 * 4


def test_forget_makes_the_next_call_check_at_once(root, monkeypatch):
    monkeypatch.setattr(compiled, "FRESH_INTERVAL", 3600.0)
    assert value(root) == 147456  # 2 * 36 * 8 * 128 * 2
    edit_default(root, "default: 2,", "default: 1,")
    assert value(root) == 147456  # within the interval: the memo answers
    compiled.forget(root)
    assert value(root) == 73728  # 2 * 36 * 8 * 128 * 1


def test_a_removed_root_is_a_knowledge_error(root, monkeypatch):
    monkeypatch.setattr(compiled, "FRESH_INTERVAL", 0.0)
    assert value(root) == 147456  # 2 * 36 * 8 * 128 * 2
    shutil.rmtree(root)
    with pytest.raises(KnowledgeError, match="is not a folder"):
        value(root)


def test_results_match_the_unmemoised_path():
    from engine.core.paths import shipped_root
    from engine.numeric.evaluate import evaluate

    module = compiled.load(shipped_root())
    given = {"attention": "gqa", "layers": 36, "kv_heads": 8, "head_dim": 128, "kv_bytes": "2B"}
    assert api.evaluate("F8", **given).to_json() == evaluate(module.FORMULAS["F8"], module, given).to_json()
    # 2 * 36 * 8 * 128 * 2 = 147456 B per token, the README's Qwen3-8B example
    assert api.evaluate("f8", **given).outputs["kv_bytes_per_token"].value == 147456.0
