"""mkdocs hooks (``hooks:`` in mkdocs.yml): generated pages and assets join the hand-written ones.

- ``on_config``: generate every page from the knowledge root (``engine.site.generate``; the
  result cached by a digest of its inputs, ``engine.site.site_cache``) and append the generated
  sections to the navigation;
- ``on_files``: add the generated pages, the generated formula script, and the static files
  (KaTeX and Mermaid from node_modules, installed from the lockfile when missing);
- ``on_pre_page``: convert the page's Markdown, and index it for search, through
  ``engine.site.render_cache`` (a page whose inputs are unchanged is read from the private cache);
- ``on_page_context``: point "edit this page" at the YAML that defines the page;
- ``on_post_page``: leave Mermaid's script out of pages without a diagram;
- ``on_post_build``: store this build's converted pages and search entries for the next one.

Nothing generated is written into the repository: mkdocs reads the pages from memory and
writes only the built site. The knowledge root is ``$AIINFRA_ROOT`` or the shipped one.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re

_STATE: dict = {}


def on_config(config, **kwargs):
    from engine.core.paths import shipped_root
    from engine.site import assets
    from engine.site.site_cache import generated

    root = os.environ.get("AIINFRA_ROOT") or shipped_root()
    docs = config["docs_dir"]
    hand = {}
    for name in sorted(os.listdir(docs)):
        if name.endswith(".md"):
            with open(os.path.join(docs, name), encoding="utf-8") as fh:
                hand[name] = fh.read()
    from mkdocs.exceptions import PluginError

    from engine.core.errors import AiinfraError, KnowledgeError

    try:
        site = generated(root, hand)  # engine.site.generate.generate, cached by a digest of its inputs
        assets.ensure_node_modules()
    except KnowledgeError as exc:
        raise PluginError(f"the knowledge root {root} has problems; the site is not built from it:\n{exc.report()}") from None
    except AiinfraError as exc:
        raise PluginError(f"aiinfra: {exc}") from None
    _STATE.clear()
    _STATE.update(site=site, edit={p.path: (p.source, p.line) for p in site.pages if p.source}, hand=hand)
    for name in hand:
        _STATE["edit"].setdefault(name, (f"site/{name}", 1))
    config["nav"] = list(config["nav"] or []) + site.nav
    return config


def on_files(files, config, **kwargs):
    from mkdocs.structure.files import File

    from engine.site import assets

    site = _STATE["site"]
    for page in site.pages:
        files.append(File.generated(config, page.path, content=page.text))
    for path, text in site.generated.items():
        files.append(File.generated(config, path, content=text))
    for path, disk in assets.files().items():
        files.append(File.generated(config, path, abs_src_path=str(disk)))
    return files


def on_pre_page(page, config, files, **kwargs):
    """The page renders through the render cache (an attribute of this page object only: mkdocs' class is untouched)."""
    from engine.site.render_cache import RenderCache

    cache = _STATE.get("render")
    if cache is None or cache.files is not files:
        cache = _STATE["render"] = RenderCache(config, files)
        cache.watch_search(config)
    page.render = functools.partial(cache.render, page)
    return page


def on_post_build(config, **kwargs):
    cache = _STATE.get("render")
    if cache is not None:
        cache.save()


_MERMAID_SCRIPT = re.compile(r'<script src="[^"]*assets/vendor/mermaid/mermaid\.min\.js"></script>\s*')


def on_post_page(output, page, config, **kwargs):
    """Mermaid (about 3 MB) only on the pages that draw a diagram (issue 29): mkdocs.yml lists it for every page, so
    Material's own loader finds it defined where a ``mermaid`` block is; every other page drops the script tag."""
    if 'class="mermaid"' in output:
        return output
    return _MERMAID_SCRIPT.sub("", output, count=1)


def on_post_template(output_content, template_name, config, **kwargs):
    """The same for the pages mkdocs renders from a template alone (404.html)."""
    return on_post_page(output_content, None, config)


def on_page_context(context, page, config, **kwargs):
    target = _STATE.get("edit", {}).get(page.file.src_uri)
    if target:
        page.edit_url = edit_url(page.url, *target)
    return context


def edit_url(page_url: str, file: str, line: int) -> str:
    """Where "edit this page" goes: ``$AIINFRA_EDIT_BASE`` + file, or this site's source view."""
    base = os.environ.get("AIINFRA_EDIT_BASE")
    if base:
        return base.rstrip("/") + "/" + file
    if not file.endswith((".yaml", ".md")):
        return ""  # a page drawn from a whole folder (the hardware table) has no one file to edit
    depth = len([p for p in page_url.split("/") if p]) if page_url.endswith("/") else max(len(page_url.split("/")) - 1, 0)
    anchor = f"#L{line}" if line else ""
    return "../" * depth + posixpath.join("source", file) + "/" + anchor
