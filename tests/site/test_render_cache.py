"""engine.site.render_cache (issue 24): a warm ``site build`` reads each page's converted HTML and search entries
from the private cache; a page whose Markdown changed is converted again, and the site equals a cold build's byte
for byte. Built from the small fixture root (tests/fixtures/site_root/, 29 pages): about a second a build, so not
marked slow (make test-fast keeps the check that no stale page is served)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent.parent / "fixtures" / "site_root"


@pytest.fixture
def root(tmp_path) -> Path:
    copy = tmp_path / "root"
    shutil.copytree(FIXTURE, copy)
    return copy


@pytest.fixture
def renders(monkeypatch) -> list[str]:
    """The source path of every page mkdocs really converts (the cache calls ``Page.render`` on a miss only)."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    from mkdocs.structure.pages import Page

    seen: list[str] = []
    original = Page.render

    def counting(page, config, files):
        seen.append(page.file.src_uri)
        return original(page, config, files)

    monkeypatch.setattr(Page, "render", counting)
    return seen


def _build(out: Path, root: Path, cache: Path, monkeypatch) -> dict[str, bytes]:
    from engine.site.build import build

    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(cache))
    result = build(str(out), root=str(root))
    assert result["warnings"] == []
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_warm_build_converts_only_the_changed_page_and_equals_a_cold_build(tmp_path, root, renders, monkeypatch):
    cache = tmp_path / "cache"
    cold = _build(tmp_path / "cold", root, cache, monkeypatch)
    converted = len(renders)
    assert converted > 20 and "formulas/F8.md" in renders
    assert len(list(cache.glob("site_render_*.json"))) == 1

    renders.clear()
    warm = _build(tmp_path / "warm", root, cache, monkeypatch)
    assert renders == []  # every page from the cache
    assert warm == cold  # byte for byte, search index included

    yaml_file = root / "formulas" / "kv.yaml"
    text = yaml_file.read_text(encoding="utf-8")
    assert text.count("K and V cached for every layer") == 1
    yaml_file.write_text(text.replace("K and V cached for every layer", "K and V cached in every layer (edited)"), encoding="utf-8")
    renders.clear()
    edited = _build(tmp_path / "edited", root, cache, monkeypatch)
    assert "formulas/F8.md" in renders and len(renders) < converted  # the changed pages only
    page = edited["formulas/F8/index.html"].decode()
    assert "K and V cached in every layer (edited)" in page and "K and V cached for every layer" not in page
    assert b"cached in every layer (edited)" in edited["search/search_index.json"]

    renders.clear()
    fresh = _build(tmp_path / "fresh", root, tmp_path / "empty-cache", monkeypatch)
    assert len(renders) == converted
    assert edited == fresh  # the warm build after the edit equals a cold build of the edited root


def test_a_damaged_cache_file_is_converted_again(tmp_path, root, renders, monkeypatch):
    cache = tmp_path / "cache"
    cold = _build(tmp_path / "cold", root, cache, monkeypatch)
    converted = len(renders)
    (stored,) = cache.glob("site_render_*.json")
    stored.write_bytes(stored.read_bytes()[:-50])  # its digest no longer matches: read as missing
    renders.clear()
    again = _build(tmp_path / "again", root, cache, monkeypatch)
    assert len(renders) == converted
    assert again == cold
