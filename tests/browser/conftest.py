"""Browser tests: the built site served on 127.0.0.1 and driven by Playwright in Debian's Chromium.

They skip (not fail) when Playwright or Chromium is missing. Chromium is Debian's
(``apt-get install chromium``, /usr/bin/chromium; override with $AIINFRA_CHROMIUM) and is
started with Playwright's ``executable_path``: no browser is downloaded. Screenshots go to
``$AIINFRA_ARTIFACTS`` (default build/test-artifacts/browser/).
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("AIINFRA_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions"]


def _chromium() -> str | None:
    if os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def artifacts() -> Path:
    folder = Path(os.environ.get("AIINFRA_ARTIFACTS") or Path(__file__).resolve().parents[2] / "build" / "test-artifacts" / "browser")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def site_url(tmp_path_factory):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    if _chromium() is None:
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api")
    import functools
    import http.server

    from engine.site.build import build

    out = tmp_path_factory.mktemp("browser-site")
    result = build(str(out))
    assert result["warnings"] == []

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser(site_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, site_url):
    """A fresh page that records every request and every script error."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, service_workers="block")
    pg = context.new_page()
    pg.requests = []
    pg.errors = []
    pg.on("request", lambda r: pg.requests.append(r.url))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    context.close()
