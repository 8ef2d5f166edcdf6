"""``aiinfra site build|serve``: the docs site (generation in ``engine.site``; this module parses and prints)."""

from __future__ import annotations

import sys

from engine.cli.common import emit
from engine.core.errors import InputError

_HERE = "engine.cli.cmd_site"

BUILD_EXAMPLES = """examples:
  aiinfra site build                      # build/site/ (mkdocs --strict: any warning fails)
  aiinfra site build --out /tmp/site      # somewhere else
  aiinfra site serve                      # build, then serve on http://127.0.0.1:8000/
  aiinfra site serve --no-build --port 8123
"""


def add_parsers(verbs, Parser, shared) -> None:
    import argparse

    site = verbs.add_parser("site", help="build or serve the docs site", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=BUILD_EXAMPLES,
                            description="The docs site: every formula, calculator, decision tree, chapter, reading path and concept as a page, generated from the same YAML the CLI reads, with offline math, diagrams and interactive forms.")
    sverbs = site.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    sverbs.required = True
    p = sverbs.add_parser("build", help="generate the pages and build the site (strict)", formatter_class=argparse.RawDescriptionHelpFormatter,
                          epilog=BUILD_EXAMPLES,
                          description="Generate every page from the knowledge root and build the site with mkdocs --strict (a warning fails the build). KaTeX and Mermaid are installed from npm (package-lock.json) the first time.")
    p.add_argument("--out", metavar="DIR", help="output folder (default build/site)")
    shared(p, False)
    p.set_defaults(handler=f"{_HERE}:build")
    p = sverbs.add_parser("serve", help="build, then serve the site on 127.0.0.1", formatter_class=argparse.RawDescriptionHelpFormatter,
                          epilog=BUILD_EXAMPLES,
                          description="Build the site (unless --no-build) and serve the built files on 127.0.0.1 until Ctrl-C. Nothing outside this machine is contacted.")
    p.add_argument("--out", metavar="DIR", help="the built site's folder (default build/site)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    p.add_argument("--no-build", action="store_true", help="serve what is already built")
    shared(p, False)
    p.set_defaults(handler=f"{_HERE}:serve")


def _build(args) -> dict:
    from engine.cli.common import root_of
    from engine.core.progress import note
    from engine.site.build import build as run

    root = root_of(args) if getattr(args, "root", None) is not None else None
    out = _out_of(args)
    note("building the site (generating pages, then mkdocs --strict)...")
    result = run(out, root)
    _llms_txt(result.get("out"), root)
    return result


def _llms_txt(out, root) -> None:
    """The site's llms.txt (the MCP tools the engine serves), written beside the pages: the tool table reads the CLI's
    own parsers, so it is written here, above the site layer, not by the page generator."""
    from pathlib import Path

    from engine.cli.common import write_atomic
    from engine.cli.mcp_tools import llms_txt

    if out and Path(out).is_dir():
        write_atomic(str(Path(out) / llms_txt.PATH), llms_txt.render(root))


def _out_of(args) -> str | None:
    out = getattr(args, "out", None)
    if out == "":
        raise InputError("--out", "is empty (expected a folder)")
    return out


def check_listen(host: str, port: int) -> None:
    """A port in 0..65535 (0 picks a free one), checked before the build; a warning when ``host`` is not loopback."""
    import ipaddress

    if not 0 <= port <= 65535:
        raise InputError("--port", f"expected a port from 1 to 65535 (or 0 for any free port), got {port}")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        sys.stderr.write(f"aiinfra: warning: --host {host!r} is not a loopback address: every machine that can reach it can read the site\n")


def build(args) -> int:
    result = _build(args)
    if getattr(args, "format", "text") == "json":
        from engine.cli.render import to_json

        emit(to_json({k: result[k] for k in ("out", "pages", "seconds", "warnings")}))
    else:
        emit(f"built {result['pages']} pages into {result['out']} in {result['seconds']:.1f} s (strict: 0 warnings)")
    return 0


def serve(args) -> int:
    from pathlib import Path

    from engine.site.assets import repo_root
    from engine.site.build import DEFAULT_OUT
    from engine.site.build import serve as run

    check_listen(args.host, args.port)
    if args.no_build:
        folder = Path(_out_of(args) or repo_root() / DEFAULT_OUT)
        if not (folder / "index.html").exists():
            raise InputError("--no-build", f"no built site in {folder} (run aiinfra site build first)")
    else:
        result = _build(args)
        emit(f"built {result['pages']} pages into {result['out']} in {result['seconds']:.1f} s")
        folder = Path(result["out"])

    def ready(url: str) -> None:
        emit(f"serving {folder} at {url} (Ctrl-C to stop)")
        sys.stdout.flush()

    try:
        run(str(folder), args.host, args.port, ready)
    except OSError as exc:
        import errno
        import socket

        # the address itself is wrong (not this machine's, or no such name): the host is the field to fix
        bad_host = isinstance(exc, socket.gaierror) or exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)
        raise InputError("--host" if bad_host else "--port", f"cannot listen on {args.host}:{args.port} ({exc.strerror or exc})") from None
    except KeyboardInterrupt:
        emit("stopped")
    return 0
