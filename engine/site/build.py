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

from engine.core.errors import InputError
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
    except OSError as exc:  # the output folder is a file, read-only, under /proc, ...
        raise InputError("--out", f"cannot write the site into {str(site_dir)!r} ({exc.strerror or exc.__class__.__name__})") from None
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
    with make_server(folder, host, port) as httpd:
        url = f"http://{host}:{httpd.server_address[1]}/"
        if ready is not None:
            ready(url)
        httpd.serve_forever()


IDLE_TIMEOUT_S = 30  # seconds a client may take to send its request line and headers


def make_server(folder: str, host: str, port: int):
    """A threading static server for ``folder``: files inside it only, no listings, a backlog for 256 waiting clients."""
    import http.server

    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = 256  # listen() backlog: 200 clients connecting at once all get an answer
        daemon_threads = True

    return Server((host, port), _handler_class(Path(folder).resolve()))


def _handler_class(base: Path):
    """SimpleHTTPRequestHandler confined to ``base`` (built lazily: http.server is not imported at load).

    A path with a NUL byte (raw or ``%00``) answers 400; a file or index.html whose real path
    (symlinks resolved) is outside ``base`` answers 404, as does a folder without index.html and a
    path the file system refuses (a component over 255 bytes). A client idle for IDLE_TIMEOUT_S
    seconds is disconnected.
    """
    import functools
    import http.server

    class Handler(http.server.SimpleHTTPRequestHandler):
        timeout = IDLE_TIMEOUT_S  # a connection that never finishes its request is closed, its thread freed

        def send_head(self):
            path = self.translate_path(self.path)
            if "\x00" in path or "\x00" in self.path:
                self.send_error(400, "a NUL byte in the path")
                return None
            if not _inside(base, Path(path)):
                self.send_error(404)
                return None
            return super().send_head()

        def list_directory(self, path):
            self.send_error(404)
            return None

        def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
            pass

    return functools.partial(Handler, directory=str(base))


def _inside(base: Path, path: Path) -> bool:
    """Whether what ``path`` serves (itself, or its index.html for a folder) really lies in ``base``; a missing file counts as inside (it answers 404 anyway)."""
    try:
        target = path / "index.html" if path.is_dir() else path
        real = target.resolve(strict=True)
    except FileNotFoundError:
        return True
    except (OSError, RuntimeError):  # a symlink loop, a path too long
        return False
    return real == base or base in real.parents
