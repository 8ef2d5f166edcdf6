"""engine.core.forked: the forked map answers what the serial one does, in order, and falls back
to running here when it should (AIINFRA_JOBS=1, other threads running, too few items)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.core import forked


def _pid_and_square(x: int) -> tuple[int, int]:
    return os.getpid(), x * x


def test_results_come_back_in_order_from_other_processes():
    """Run in a fresh interpreter: under the whole suite another test may have left a thread
    running (a Dask or site-server test), and then forked_map rightly runs serially here."""
    script = (
        "import os\n"
        "os.environ['AIINFRA_JOBS'] = '2'\n"
        "from engine.core import forked\n"
        "def f(x):\n"
        "    return os.getpid(), x * x\n"
        "out = forked.forked_map(f, range(10))\n"
        "assert [sq for _, sq in out] == [x * x for x in range(10)], out\n"
        "assert os.getpid() not in {pid for pid, _ in out}, 'computed here, not by the workers'\n"
        "print('ok')\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr


def test_one_job_few_items_or_other_threads_run_here(monkeypatch):
    monkeypatch.setenv("AIINFRA_JOBS", "1")
    assert {pid for pid, _ in forked.forked_map(_pid_and_square, range(10))} == {os.getpid()}
    monkeypatch.setenv("AIINFRA_JOBS", "2")
    assert {pid for pid, _ in forked.forked_map(_pid_and_square, range(3))} == {os.getpid()}
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert {pid for pid, _ in forked.forked_map(_pid_and_square, range(10))} == {os.getpid()}
    finally:
        stop.set()
        other.join()


@pytest.mark.slow  # SymPy proves every tree twice
def test_the_trees_proofs_are_the_same_serial_and_forked(monkeypatch):
    """Every tree's problems, notes, proofs and regions: one process vs two workers."""
    from engine.kb.knowledge import Knowledge
    from engine.trees import proofs

    root = Path(__file__).resolve().parents[2]
    k = Knowledge.load(root, strict=False)
    monkeypatch.setenv("AIINFRA_JOBS", "1")  # proven here with SymPy, not taken from engine/trees/proven.json
    serial = proofs._analyse(root, k, shipped=False)
    monkeypatch.setenv("AIINFRA_JOBS", "2")
    both = proofs._analyse(root, k, shipped=False)
    assert len(serial.proofs) == len(list((root / "decision_trees").glob("*.yaml")))
    assert (both.problems, both.notes, both.proofs, both.regions) == (serial.problems, serial.notes, serial.proofs, serial.regions)


def test_a_forked_call_answers_from_another_process_while_this_one_goes_on():
    """In a fresh interpreter (see above): the value comes from the worker, printed output is written
    once, a worker whose call raises leaves the error to the reader, and an unread worker is stopped."""
    script = (
        "import os, sys, time\n"
        "os.environ['AIINFRA_JOBS'] = '2'\n"
        "from engine.core import forked\n"
        "print('before', end='')  # buffered at the fork: must not be written twice\n"
        "with forked.forked_call(lambda: (os.getpid(), sum(range(10**6)))) as later:\n"
        "    assert later.forked\n"
        "    pid, total = later.result()\n"
        "assert pid != os.getpid() and total == sum(range(10**6))\n"
        "calls = []\n"
        "def boom():\n"
        "    calls.append(os.getpid())\n"
        "    raise KeyError('x')\n"
        "later = forked.forked_call(boom)\n"
        "try:\n"
        "    later.result()\n"
        "except KeyError:\n"
        "    pass\n"
        "assert calls == [os.getpid()], calls  # raised again here, where it is read\n"
        "with forked.forked_call(lambda: time.sleep(60)) as sleeping:\n"
        "    child = sleeping._pid\n"
        "try:\n"
        "    os.kill(child, 0)\n"
        "    raise SystemExit('the unread worker still runs')\n"
        "except ProcessLookupError:\n"
        "    pass\n"
        "print(' ok')\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "before ok\n"), done.stderr


def test_a_forked_call_runs_here_with_one_job(monkeypatch):
    monkeypatch.setenv("AIINFRA_JOBS", "1")
    later = forked.forked_call(lambda: os.getpid())
    assert not later.forked and later.result() == os.getpid()
