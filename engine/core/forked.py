"""Map a function over items in forked worker processes, in order, when that is safe and useful.

Used for the CPU-bound SymPy work of a cold run (code generation's directions, the trees'
proofs). The function and the items are inherited by the forked workers, never pickled; only
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
