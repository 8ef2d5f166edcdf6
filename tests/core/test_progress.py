"""engine.core.progress: a line per long phase on stderr when it is a terminal, nothing otherwise (issue 11)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from engine.cli.main import main
from engine.core import progress
from engine.core.progress import note
from engine.numeric import compiled

GOOD = str(Path(__file__).parent.parent / "fixtures" / "roots" / "good")


@pytest.fixture(autouse=True)
def _fresh_process(monkeypatch):
    monkeypatch.setattr(progress, "_SAID", set())  # each test as a new process: no note said yet


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_note_writes_only_to_a_terminal(monkeypatch):
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    note("building formula cache...")
    assert tty.getvalue() == "aiinfra: building formula cache...\n"
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    note("building formula cache...")
    assert pipe.getvalue() == ""


def test_a_cold_cache_build_says_so_on_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(tmp_path))
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    compiled.module("progress-test-cold", lambda: "X = 1")
    assert tty.getvalue() == "aiinfra: building formula cache...\n"


def test_a_cold_run_building_several_modules_says_so_once(tmp_path, monkeypatch):
    """Issue 28: a cold run printed 'building formula cache...' once per cached module (6 lines for one calc)."""
    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(tmp_path))
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    compiled.module("progress-test-once-a", lambda: "X = 1")
    compiled.module("progress-test-once-b", lambda: "Y = 2")
    assert tty.getvalue() == "aiinfra: building formula cache...\n"


def test_check_names_its_phases_on_a_terminal_and_is_silent_in_a_pipe(monkeypatch, capsys):
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["check", "--root", GOOD]) == 0
    phases = [line for line in tty.getvalue().splitlines() if "formula cache" not in line]  # a cold cache adds its own line
    assert phases == ["aiinfra: loading the knowledge root...", "aiinfra: checking references, units, worked examples and trees..."]
    monkeypatch.undo()
    assert main(["check", "--root", GOOD]) == 0
    assert capsys.readouterr().err == ""


def test_site_build_says_so_on_a_terminal(monkeypatch, capsys):
    import engine.site.build

    monkeypatch.setattr(engine.site.build, "build", lambda out, root: dict(out="build/site", pages=0, seconds=0.0, warnings=[]))
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["site", "build"]) == 0
    assert tty.getvalue() == "aiinfra: building the site (generating pages, then mkdocs --strict)...\n"
