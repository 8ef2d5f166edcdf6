"""``aiinfra check`` over failure taxonomy records: counts that do not add up are problems, a
printed share off its count / total (Llama 3 Table 5's Faulty GPU 30.1% for 148 / 419 = 35.3%) is not."""

from __future__ import annotations

from pathlib import Path

from engine.check import integrity
from engine.kb.knowledge import Knowledge

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "knowledge" / "failure_taxonomies" / "llama3-405b-pretraining.yaml"


def _root(tmp_path, text: str) -> Knowledge:
    folder = tmp_path / "knowledge" / "failure_taxonomies"
    folder.mkdir(parents=True)
    (folder / "t.yaml").write_text(text, encoding="utf-8")
    return Knowledge.load(tmp_path, strict=False)


def test_shipped_taxonomy_passes_despite_the_misprint(tmp_path):
    k = _root(tmp_path, SHIPPED.read_text(encoding="utf-8"))
    assert "ft:llama3-405b" in k.failure_taxonomies
    assert [p for p in integrity.check(k) if p.id == "ft:llama3-405b"] == []


def test_counts_off_the_total_fail(tmp_path):
    text = SHIPPED.read_text(encoding="utf-8").replace("  total: 466", "  total: 467")   # 47 + 419 = 466 rows, not 467
    found = [p for p in integrity.check(_root(tmp_path, text)) if p.id == "ft:llama3-405b"]
    messages = sorted(p.message for p in found)
    assert messages == ["planned 47 + unexpected 419 is not total 467", "the categories' counts add up to 466, not interruptions.total 467"]
