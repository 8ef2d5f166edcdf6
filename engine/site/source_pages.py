"""Source views: each YAML file of the root shown with line anchors.

"Edit this page" on a generated page points at the YAML that defines the thing. Offline the
target is this view (``source/formulas/kv_cache.yaml/#L5``); with ``AIINFRA_EDIT_BASE`` set
(for example a repository's edit URL) it points there instead.
"""

from __future__ import annotations

import html
from pathlib import Path

from engine.site.context import Page, source_page

FOLDERS = ("formulas", "knowledge", "decision_trees")


def files(root: str) -> list[str]:
    base = Path(root)
    out = []
    for folder in FOLDERS:
        if (base / folder).is_dir():
            out += sorted(p.relative_to(base).as_posix() for p in (base / folder).rglob("*.yaml"))
            out += sorted(p.relative_to(base).as_posix() for p in (base / folder).rglob("README.md"))
    return out


def pages(root: str, extra: dict[str, str] | None = None) -> list[Page]:
    """One page per YAML file (and README) of the root, plus ``extra`` (path -> text) such as hand pages."""
    out = []
    texts = {rel: (Path(root) / rel).read_text(encoding="utf-8") for rel in files(root)}
    texts.update(extra or {})
    for rel, text in sorted(texts.items()):
        out.append(page(rel, text))
    return out


def page(rel: str, text: str) -> Page:
    spans = "\n".join(f'<span class="aiinfra-line" id="L{i}">{html.escape(line)}</span>' for i, line in enumerate(text.splitlines(), 1))
    body = ["---", "search:", "  exclude: true", "---", "", f"# `{rel}`", "",
            "The file as this site was built from it. Line numbers are anchors (`#L42`).", "",
            f'<pre class="aiinfra-source"><code>{spans}</code></pre>', ""]
    return Page(source_page(rel), "\n".join(body), rel, rel, 1, search=False)
