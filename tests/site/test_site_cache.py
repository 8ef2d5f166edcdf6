"""engine.site.site_cache (issue 24): a warm ``site build`` reads the generated pages from the private
cache instead of deriving every page again; any change of what they are made from regenerates them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.site import site_cache

FIXTURE = Path(__file__).parent.parent / "fixtures" / "site_root"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def root(tmp_path) -> Path:
    copy = tmp_path / "root"
    shutil.copytree(FIXTURE, copy)
    return copy


def test_a_second_build_reads_the_same_pages_from_the_cache(cache, root, monkeypatch):
    from engine.site import generate as generate_module

    hand = {"index.md": "# Home\n"}
    first = site_cache.generated(str(root), hand)
    assert len(list(cache.glob(f"{site_cache.PREFIX}*.json"))) == 1

    def refuse(*a, **k):
        raise AssertionError("generated again")

    monkeypatch.setattr(generate_module, "generate", refuse)
    again = site_cache.generated(str(root), hand)
    assert [(p.path, p.text, p.title, p.source, p.line, p.search) for p in again.pages] == \
           [(p.path, p.text, p.title, p.source, p.line, p.search) for p in first.pages]
    assert again.nav == first.nav and again.generated == first.generated


def test_the_key_follows_every_input(root):
    before = site_cache.key(str(root), {"index.md": "# Home\n"})
    assert site_cache.key(str(root), {"index.md": "# Home!\n"}) != before  # a hand-written page
    yaml_file = next(root.joinpath("formulas").glob("*.yaml"))
    yaml_file.write_text(yaml_file.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    after_yaml = site_cache.key(str(root), {"index.md": "# Home\n"})
    assert after_yaml != before  # a record file
    (root / "knowledge").mkdir(exist_ok=True)
    (root / "knowledge" / "README.md").write_text("notes\n", encoding="utf-8")
    assert site_cache.key(str(root), {"index.md": "# Home\n"}) != after_yaml  # a README has a source page


def test_a_damaged_entry_is_regenerated(cache, root):
    site_cache.generated(str(root))
    (entry,) = cache.glob(f"{site_cache.PREFIX}*.json")
    entry.write_bytes(entry.read_bytes()[:-20])  # its digest no longer matches: read as missing, deleted
    site = site_cache.generated(str(root))
    assert site.pages and len(list(cache.glob(f"{site_cache.PREFIX}*.json"))) == 1
