"""Issue #24: ``--out``, ``--plot`` and ``--svg`` replace only a regular file.

An existing FIFO, device or socket is refused, and so is a symbolic link (never written
through); a full disk is exit 2 under every plot backend, PDF included.
"""

from __future__ import annotations

import os

import pytest

from engine.cli.common import write_atomic
from engine.cli.main import main
from engine.core.errors import InputError

SWEEP = ["calc", "kv-concurrency", "--set", "layers=36", "--set", "kv_heads=8", "--set", "head_dim=128", "--set", "gpu_memory_total=80GiB",
         "--set", "weight_bytes=16GiB", "--sweep", "context_tokens=1k..128k", "--points", "3"]


def test_a_fifo_is_refused_and_left_in_place(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError) as err:
        write_atomic(str(fifo), "{}", "--out")
    assert str(err.value) == f"--out: {str(fifo)!r} exists and is not a regular file (expected a regular file or a new path)"
    assert fifo.is_fifo()


def test_a_device_is_refused(tmp_path):
    # a device node of its own (never /dev/null or /dev/full: a regression would replace them, as root did)
    import stat

    dev = tmp_path / "null"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("creating a device node needs root")
    with pytest.raises(InputError) as err:
        write_atomic(str(dev), "x", "--svg")
    assert str(err.value) == f"--svg: {str(dev)!r} exists and is not a regular file (expected a regular file or a new path)"
    assert dev.is_char_device()


def test_a_symbolic_link_is_refused_not_written_through(tmp_path):
    target = tmp_path / "real.svg"
    target.write_text("keep")
    link = tmp_path / "link.svg"
    link.symlink_to(target)
    with pytest.raises(InputError) as err:
        write_atomic(str(link), "new", "--plot")
    assert str(err.value) == f"--plot: {str(link)!r} is a symbolic link (expected a regular file or a new path; links are not written through)"
    assert link.is_symlink() and target.read_text() == "keep"


def test_a_regular_file_is_replaced(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    write_atomic(str(path), b"new", "--out")
    assert path.read_text() == "new"


def test_plot_onto_a_fifo_exits_2_before_any_output(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    fifo = tmp_path / "curves.svg"
    os.mkfifo(fifo)
    code = main(SWEEP + ["--plot", str(fifo)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == f"aiinfra: error: --plot: {str(fifo)!r} exists and is not a regular file (expected a regular file or a new path)\n"


def test_a_pdf_plot_on_a_full_disk_exits_2(tmp_path, monkeypatch, capsys):
    # the PDF backend used to fail inside its own close ('Stream' object has no attribute 'pos'): the
    # figure is now drawn in memory and written by write_atomic, whose ENOSPC is an InputError
    pytest.importorskip("matplotlib")
    import errno

    assert main(SWEEP + ["--plot", str(tmp_path / "warm.svg")]) == 0  # every cache this run reads is written now
    os.unlink(tmp_path / "warm.svg")
    capsys.readouterr()
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def __getattr__(self, name):  # reads go through
            return getattr(self.fh, name)

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode="r", **kw: Full(real_fdopen(fd, mode, **kw)))
    path = tmp_path / "curves.pdf"
    code = main(SWEEP + ["--plot", str(path)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err == f"aiinfra: error: --plot: cannot write {str(path)!r} (No space left on device)\n"
    assert not path.exists() and os.listdir(tmp_path) == []
