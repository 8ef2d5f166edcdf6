"""Map a function over items in forked worker processes, in order, when that is safe and useful;
or start one call in a forked worker and read its result later (:func:`forked_call`).

Used for the CPU-bound SymPy work of a cold run (code generation's directions, the trees'
proofs) and to overlap a cold ``check``'s independent parts. The function and the items are inherited by the forked workers, never pickled; only
each result is sent back, so results are exactly what a serial run computes, in the items'
order. ``AIINFRA_JOBS`` caps the workers (1 runs everything in this process). Falls back to a
serial run where fork is unavailable, when the process already runs other threads (a fork
could copy a held lock), or when no process can be started.
"""

from __future__ import annotations

import os

_WORK: list = []  # (function, items) for the forked workers


def jobs() -> int:
    """Worker processes: AIINFRA_JOBS, else the CPUs this process may use (at most 4)."""
    text = os.environ.get("AIINFRA_JOBS", "").strip()
    if text.isdigit() and int(text) >= 1:
        return int(text)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 4))


def _at(index: int):
    fn, items = _WORK[0]
    return fn(items[index])


def forked_map(fn, items, minimum: int = 4) -> list:
    """``[fn(x) for x in items]``, computed over forked workers when more than one CPU is available
    and there are at least ``minimum`` items."""
    items = list(items)
    workers = min(jobs(), len(items))
    if workers > 1 and len(items) >= minimum and not _WORK:
        import threading

        if threading.active_count() == 1:
            try:
                import multiprocessing

                context = multiprocessing.get_context("fork")
            except ValueError:  # no fork on this platform
                context = None
            if context is not None:
                _WORK.append((fn, items))
                try:
                    with context.Pool(workers) as pool:
                        return pool.map(_at, range(len(items)), chunksize=1)
                except OSError:
                    pass  # no processes to be had: run here
                finally:
                    _WORK.clear()
    return [fn(x) for x in items]


class Later:
    """``fn()``, computed by a forked worker while this process goes on (:func:`forked_call`), or
    here when ``result()`` is asked where no worker could be had. The worker only computes: if
    ``fn`` raises there, ``result()`` calls it again here, so its error is raised where it is read.
    Leaving the ``with`` block (or ``cancel()``) stops a worker whose result was never read."""

    def __init__(self, fn, pid: int | None = None, fd: int | None = None):
        self._fn, self._pid, self._fd = fn, pid, fd
        self.forked = pid is not None

    def result(self):
        if self._pid is None:
            return self._fn()
        import pickle

        chunks = []
        try:
            while chunk := os.read(self._fd, 1 << 16):
                chunks.append(chunk)
        finally:
            self._reap()
        try:
            status, value = pickle.loads(b"".join(chunks))  # from our own forked child, through a pipe only it holds
        except Exception:  # noqa: BLE001 - the worker died before it answered: compute here
            status, value = "again", None
        return value if status == "ok" else self._fn()

    def cancel(self) -> None:
        if self._pid is not None:
            import signal

            try:
                os.kill(self._pid, signal.SIGKILL)
            except OSError:
                pass
            self._reap()

    def _reap(self) -> None:
        pid, fd = self._pid, self._fd
        self._pid = self._fd = None
        if fd is not None:
            os.close(fd)
        if pid is not None:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass

    def __enter__(self) -> Later:
        return self

    def __exit__(self, *exc) -> None:
        self.cancel()


def forked_call(fn) -> Later:
    """``fn()`` started in a forked worker now; ``.result()`` waits for it. Used to overlap work that
    needs nothing the caller computes next (a cold ``check`` reads the measurement tables while it
    loads the rest). Runs in this process, when asked, under the same conditions as :func:`forked_map`'s
    serial fallback (``AIINFRA_JOBS=1``, one CPU, other threads running, no fork)."""
    import sys
    import threading

    if jobs() < 2 or _WORK or not hasattr(os, "fork") or threading.active_count() != 1:
        return Later(fn)
    for stream in (sys.stdout, sys.stderr):  # what is buffered now is written once, by this process
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return Later(fn)
    if pid == 0:  # the worker: compute, send, leave without running the parent's exit handlers
        try:
            os.close(read)
            import pickle

            try:
                payload = pickle.dumps(("ok", fn()))
            except BaseException:  # noqa: BLE001 - recomputed (and raised) by the parent
                payload = pickle.dumps(("again", None))
            with open(write, "wb") as fh:
                fh.write(payload)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
        finally:
            os._exit(0)
    os.close(write)
    return Later(fn, pid, read)
