"""Build the site with mkdocs (strict) and serve a built site on 127.0.0.1.

``build`` loads ``mkdocs.yml`` from the repository, points the hooks at the requested
knowledge root through ``$AIINFRA_ROOT``, and runs mkdocs' own build in this process, so a
warning of any kind fails the build. ``serve`` is a plain static file server: nothing but the
built files is served and nothing is reloaded.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from engine.errors import InputError
from engine.site.assets import repo_root

DEFAULT_OUT = "build/site"


class _Counter(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record) -> None:
        self.messages.append(record.getMessage())


def build(out: str | None = None, root: str | None = None, strict: bool = True) -> dict:
    """Build the site into ``out`` (default build/site); returns {out, pages, seconds, warnings}."""
    try:
        from mkdocs.commands.build import build as mkdocs_build
        from mkdocs.config import load_config
        from mkdocs.exceptions import Abort, MkDocsException
    except ImportError:
        raise InputError("mkdocs", "the site needs the site extras: pip install -e '.[site]'") from None
    base = repo_root()
    config_file = base / "mkdocs.yml"
    if not config_file.exists():
        raise InputError("mkdocs.yml", f"not found in {base} (build the site from a source checkout)")
    site_dir = Path(out or base / DEFAULT_OUT).resolve()
    saved_root = os.environ.get("AIINFRA_ROOT")
    if root is not None:
        if not Path(root).is_dir():
            raise InputError("--root", f"{root!r} is not a folder")
        os.environ["AIINFRA_ROOT"] = str(Path(root).resolve())  # read by engine.site.hooks
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    os.environ.setdefault("DISABLE_MKDOCS_2_WARNING", "true")
    try:
        import jieba  # the search plugin segments Chinese with it; its start-up lines are noise here

        jieba.setLogLevel(logging.WARNING)
    except ImportError:
        pass
    counter = _Counter()
    log = logging.getLogger("mkdocs")
    log.addHandler(counter)
    started = time.perf_counter()
    try:
        config = load_config(str(config_file), site_dir=str(site_dir), strict=strict)
        mkdocs_build(config)
    except (Abort, MkDocsException) as exc:
        raise InputError("site build", f"mkdocs failed: {exc} ({len(counter.messages)} warnings: {'; '.join(counter.messages[:3])})") from None
    finally:
        log.removeHandler(counter)
        if saved_root is None:
            os.environ.pop("AIINFRA_ROOT", None)
        else:
            os.environ["AIINFRA_ROOT"] = saved_root
    pages = sum(1 for _ in site_dir.rglob("index.html"))
    return {"out": str(site_dir), "pages": pages, "seconds": time.perf_counter() - started, "warnings": counter.messages}


def serve(folder: str, host: str = "127.0.0.1", port: int = 8000, ready=None) -> None:
    """Serve ``folder`` over HTTP until interrupted; ``ready(url)`` is called once listening."""
    import functools
    import http.server

    handler = functools.partial(_QuietHandler, directory=folder)
    with http.server.ThreadingHTTPServer((host, port), handler) as httpd:
        url = f"http://{host}:{httpd.server_address[1]}/"
        if ready is not None:
            ready(url)
        httpd.serve_forever()


class _QuietHandler:
    """SimpleHTTPRequestHandler without a log line per request (built lazily: http.server is not imported at load)."""

    def __new__(cls, *args, **kwargs):
        import http.server

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
                pass

        return Handler(*args, **kwargs)
