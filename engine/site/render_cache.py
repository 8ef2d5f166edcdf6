"""Each page's Markdown-to-HTML conversion, cached by a content hash of everything it depends on (issue 24).

Converting the Markdown of about 800 pages was more than half of a warm ``site build``. mkdocs'
``Page.render`` turns ``page.markdown`` into ``page.content``, the table of contents, the title
found in the first heading, the anchors the page holds and the anchors it links to; given the
same Markdown, the same page address, the same set of files (their addresses decide every
relative link) and the same Markdown settings, it gives the same result. :class:`RenderCache`
keys that result by a BLAKE2b digest of:

- the page's source path and its Markdown (after every ``on_page_markdown`` hook);
- every file of the build: source path, output path, address and inclusion level (a page added,
  removed or moved renders every page again);
- the settings the conversion reads: ``markdown_extensions`` and their options (a function
  option by its module and name), ``use_directory_urls``, the link validation levels and the
  mkdocs logger's level; and the installed versions of Python, mkdocs, Markdown,
  pymdown-extensions and mkdocs-material (the extensions' code: a Markdown extension of this
  project's own would have to add its source here).

A page whose conversion logged anything (a broken link, say) is not stored, so a warm build
reports exactly what a cold one does.

The search plugin's entries for a page (Material's ``SearchIndex.add_entry_from_context``: an HTML
parse of the page and jieba's segmentation of its Chinese, about a third of what was left) are
cached the same way, keyed by the page's address, title, front matter, table of contents and
HTML, the search plugin's settings and the versions above and of jieba.

The results of one build are one JSON file in the user's private cache (``engine.core.cache``:
written atomically, digest-checked, a damaged file reads as missing); only data is stored, never
code; the file holds the pages of the latest build only, and the newest few such files are kept.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from hashlib import blake2b

PREFIX = "site_render_"
VERSION = "1"
KEEP = 3
PACKAGES = ("mkdocs", "markdown", "pymdown-extensions", "mkdocs-material", "jieba")


def _named(value):
    """JSON for a setting that is not plain data: a function by its module and name, anything else by repr."""
    if callable(value):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}"
    if isinstance(value, (set, frozenset)):
        return sorted(map(str, value))
    return repr(value)


def _versions() -> list[str]:
    from importlib.metadata import PackageNotFoundError, version

    found = [f"python {sys.version_info[0]}.{sys.version_info[1]}"]
    for name in PACKAGES:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} -")
    return found


def context_digest(config, files) -> str:
    """The digest of what every page's conversion shares: settings, versions and the files of the build."""
    links = config["validation"]["links"]
    settings = {
        "version": VERSION,
        "packages": _versions(),
        "markdown_extensions": list(config["markdown_extensions"]),
        "mdx_configs": config["mdx_configs"] or {},
        "use_directory_urls": bool(config["use_directory_urls"]),
        "links": {name: links[name] for name in ("not_found", "absolute_links", "unrecognized_links", "anchors")},
        "log_level": logging.getLogger("mkdocs").getEffectiveLevel(),
    }
    h = blake2b(json.dumps(settings, sort_keys=True, default=_named).encode(), digest_size=20)
    for f in files:
        h.update("\0".join((f.src_uri, f.dest_uri, f.url, f.inclusion.name)).encode() + b"\n")
    return h.hexdigest()


class _Heard(logging.Handler):
    """Counts every record logged while a page converts (jieba's own, about loading its dictionary once, aside)."""

    def __init__(self):
        super().__init__(logging.NOTSET)
        self.count = 0

    def emit(self, record) -> None:
        if record.name.partition(".")[0] != "jieba":
            self.count += 1


class RenderCache:
    """The converted pages and search entries of one build: read from the previous build's file, written for the next."""

    def __init__(self, config, files):
        self.context = context_digest(config, files)
        self.files = files
        self.name = f"{PREFIX}{self.context[:32]}.json"
        self.stored: dict = {"pages": {}, "search": {}}
        self.used: dict = {"pages": {}, "search": {}}
        self._loaded = False
        self._search_context = ""

    def _table(self, table: str) -> dict:
        if not self._loaded:
            from engine.core import cache

            self._loaded = True
            stored = cache.read_json(self.name)
            if isinstance(stored, dict) and stored.get("context") == self.context:
                for name in self.stored:
                    if isinstance(stored.get(name), dict):
                        self.stored[name] = stored[name]
        return self.stored[table]

    def key(self, page) -> str:
        h = blake2b(self.context.encode(), digest_size=20)
        h.update(page.file.src_uri.encode() + b"\0" + page.markdown.encode())
        return h.hexdigest()

    def render(self, page, config, files) -> None:
        """``page.render(config, files)``, or its stored result when nothing it depends on changed."""
        from mkdocs.structure.pages import Page

        if page.markdown is None or files is not self.files:
            return Page.render(page, config, files)
        key = self.key(page)
        entry = self._table("pages").get(key)
        if entry is not None and self._restore(page, entry, files):
            self.used["pages"][key] = entry
            return None
        with _Listening() as heard:
            Page.render(page, config, files)
        if heard.count == 0:
            self.used["pages"][key] = _entry(page)
        return None

    def _restore(self, page, entry: dict, files) -> bool:
        from mkdocs.structure.toc import get_toc

        try:
            links = entry["links"]
            if links is not None:
                targets = {}
                for src_uri, anchors in links:
                    target = files.get_file_from_path(src_uri)
                    if target is None or not isinstance(anchors, dict):
                        return False
                    targets[target] = dict(anchors)
                links = targets
            content, toc, title, anchors = entry["content"], get_toc(entry["toc"]), entry["title"], set(entry["anchors"])
            if not isinstance(content, str) or not (title is None or isinstance(title, str)):
                return False
        except (KeyError, TypeError, ValueError):
            return False
        page.content, page.toc, page._title_from_render, page.present_anchor_ids = content, toc, title, anchors
        if links is not None:
            page.links_to_anchors = links
        return True

    def watch_search(self, config) -> None:
        """Route Material's search index through this cache (its ``add_entry_from_context``, on this index object only)."""
        for plugin in config["plugins"].values():
            index = getattr(plugin, "search_index", None)
            add = getattr(index, "add_entry_from_context", None)
            if add is None or not isinstance(getattr(index, "entries", None), list) or getattr(add, "func", None) == self.index:
                continue
            self._search_context = _search_digest(self.context, plugin)
            index.add_entry_from_context = functools.partial(self.index, index, add)

    def index(self, index, add, page) -> None:
        """``add(page)`` (the search plugin's entries for the page), or the stored entries when its inputs are unchanged."""
        try:
            h = blake2b(self._search_context.encode(), digest_size=20)
            meta = {name: page.meta.get(name) for name in ("search", "title", "tags")}
            h.update(json.dumps([page.url, page.title, meta, _toc_tokens(page.toc)], sort_keys=True).encode() + b"\0")
            h.update((page.content or "").encode())
            key = h.hexdigest()
        except (TypeError, ValueError):  # front matter that is not plain data: no caching
            return add(page)
        entries = self._table("search").get(key)
        if isinstance(entries, list) and all(isinstance(e, dict) for e in entries):
            index.entries.extend(dict(e) for e in entries)
            self.used["search"][key] = entries
            return None
        before = len(index.entries)
        with _Listening() as heard:
            add(page)
        new = index.entries[before:]
        try:
            plain = json.loads(json.dumps(new))
        except (TypeError, ValueError):
            return None
        if heard.count == 0 and plain == new:
            self.used["search"][key] = plain
        return None

    def save(self) -> bool:
        """Write this build's converted pages and search entries (only those this build used) when they changed."""
        from engine.core import cache

        if not any(self.used.values()):
            return False
        if all(self.used[t].keys() == self._table(t).keys() for t in self.used):
            return False  # everything came from the file: it already holds exactly this
        if cache.write_json(self.name, {"context": self.context, **self.used}):
            cache.prune(PREFIX, ".json", keep=KEEP)
            return True
        return False


class _Listening:
    """Counts every record logged (to the root, mkdocs' or Markdown's logger) inside the block."""

    def __enter__(self) -> _Heard:
        self.heard = _Heard()
        self.loggers = [logging.getLogger(), logging.getLogger("mkdocs"), logging.getLogger("MARKDOWN")]
        for log in self.loggers:
            log.addHandler(self.heard)
        return self.heard

    def __exit__(self, *exc) -> None:
        for log in self.loggers:
            log.removeHandler(self.heard)


def _search_digest(context: str, plugin) -> str:
    """The search plugin's settings (and the bytes of any jieba dictionary it names)."""
    settings = dict(plugin.config)
    h = blake2b(context.encode(), digest_size=20)
    h.update(json.dumps(settings, sort_keys=True, default=_named).encode())
    for name in ("jieba_dict", "jieba_dict_user"):
        path = settings.get(name)
        if path:
            try:
                with open(path, "rb") as fh:
                    h.update(fh.read())
            except OSError:
                h.update(b"missing")
    return h.hexdigest()


def _toc_tokens(items) -> list:
    return [{"level": a.level, "id": a.id, "name": a.title, "children": _toc_tokens(a.children)} for a in items]


def _entry(page) -> dict:
    links = page.links_to_anchors
    return {
        "content": page.content,
        "toc": _toc_tokens(page.toc),
        "title": page._title_from_render,
        "anchors": sorted(page.present_anchor_ids or ()),
        "links": None if links is None else [[f.src_uri, dict(anchors)] for f, anchors in links.items()],
    }
