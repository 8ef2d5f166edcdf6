"""engine.core.fileread: only regular files, at most a cap of bytes; and the places that read knowledge roots through it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from engine.core.fileread import FileRefused, read_regular


def _in_thread(fn, timeout: float = 10.0):
    """fn() in a daemon thread: (True, result or exception) when it returned, (False, None) when it blocked."""
    box: list = []

    def target():
        try:
            box.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout)
    return (True, box[0]) if box else (False, None)


def _unblock(fifo: Path) -> None:
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def test_reads_a_regular_file_up_to_the_cap(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"12345")
    assert read_regular(path, 5) == b"12345"
    with pytest.raises(FileRefused, match=r"^is larger than 4 bytes, the most read from one file$"):
        read_regular(path, 4)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    returned, result = _in_thread(lambda: read_regular(fifo, 100))
    if not returned:
        _unblock(fifo)
    assert returned, "read_regular blocked on a FIFO"
    assert isinstance(result, FileRefused) and result.reason == "is a FIFO, not a regular file"


def test_dev_zero_is_refused():
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    with pytest.raises(FileRefused, match=r"^is a character device, not a regular file$"):
        read_regular("/dev/zero", 100)


def test_a_missing_file_raises_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "nope", 100)


def test_a_fifo_in_a_knowledge_root_is_a_problem_and_the_cache_key_does_not_block(tmp_path):
    from engine.core.errors import KnowledgeError
    from engine.kb.knowledge import Knowledge
    from engine.numeric import compiled

    for folder, name in (("formulas", "f.yaml"), ("knowledge", "k.yaml")):
        (tmp_path / folder).mkdir()
        os.mkfifo(tmp_path / folder / name)
    returned, key = _in_thread(lambda: compiled.content_hash(tmp_path))
    if not returned:
        _unblock(tmp_path / "formulas" / "f.yaml")
    assert returned and isinstance(key, str), "the compiled-module key blocked on a FIFO in formulas/"
    returned, error = _in_thread(lambda: Knowledge.load(tmp_path))
    assert returned and isinstance(error, KnowledgeError), error
    assert error.report().splitlines() == [
        "formulas/f.yaml: is a FIFO, not a regular file",
        "knowledge/k.yaml: is a FIFO, not a regular file",
        "2 problems found",
    ]


def test_reads_the_whole_file_whatever_its_size_and_a_file_reporting_no_size(tmp_path):
    """The read asks for the size fstat gives (not the cap), then reads on: nothing is cut short."""
    for size in (0, 1, 4095, 65536, 65537, 300_001):
        path = tmp_path / f"f{size}"
        data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
        path.write_bytes(data)
        assert read_regular(path, 400_000) == data
    if Path("/proc/self/status").exists():  # a regular file whose size reads as 0
        assert read_regular("/proc/self/status", 1 << 20).startswith(b"Name:")
        with pytest.raises(FileRefused, match=r"^is larger than 10 bytes, the most read from one file$"):
            read_regular("/proc/self/status", 10)
