"""Executors of a search: serial (the reference), a local process pool, and Dask.

Only the points whose layout is valid are evaluated (engine.plan.evaluate.candidates enumerates
them from the divisors of the GPU count, heads and batch: 3,072 of the 101,025,792 numbered
points for 405B on 16,384 GPUs); they are cut into tiles of at most ``tile`` points (about 1e6
by default) and each tile is evaluated and reduced to its own top k on the worker
(engine.plan.evaluate.top_of_points), so no executor ever holds all points. The merge orders by (step time, point index), the same
total order every tile uses, so every executor returns exactly what serial returns.
"""

from __future__ import annotations

import heapq
from enum import StrEnum

from engine.core.errors import InputError
from engine.core.record import dataclass
from engine.plan.space import Space

TILE = 1_000_000
MAX_TILES = 1_000  # a tile is a task with its own overhead: --tile 1 over millions of points would run for minutes


def max_workers() -> int:
    """The most worker processes a search starts: twice the CPUs (at least 8); more only queue for the same cores."""
    import os

    return max(8, 2 * (os.cpu_count() or 1))


def _check_workers(workers: int | None) -> None:
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
        raise InputError("--workers", f"{workers!r} is not a positive integer")
    if workers is not None and workers > max_workers():
        raise InputError("--workers", f"{workers} is more than this machine runs at once; expected at most {max_workers()} (twice its CPUs, at least 8)")


class Kind(StrEnum):
    SERIAL = "serial"
    PROCESS = "process"
    DASK = "dask"


@dataclass(frozen=True, slots=True)
class Found:
    """The merged result: the best (step_time, index) pairs, best first, and the counts."""

    top: tuple[tuple[float, int], ...]
    points: int  # numbered points of the space (every combination of the axes)
    feasible: int  # valid layouts that fit memory
    tiles: int
    executor: str
    layouts: int = 0  # valid layouts evaluated (DP x TP x CP x PP = N, TP dividing heads, ...)


def tiles(size: int, tile: int = TILE) -> list[tuple[int, int]]:
    if not isinstance(tile, int) or isinstance(tile, bool) or tile < 1:
        raise InputError("--tile", f"{tile!r} is not a positive number of points")
    if -(-size // tile) > MAX_TILES:
        least = -(-size // MAX_TILES)
        raise InputError("--tile", f"{tile} points per tile cut {size:,} points into {-(-size // tile):,} tiles; expected at most {MAX_TILES:,} "
                                   f"(--tile {least} or more)")
    return [(a, min(a + tile, size)) for a in range(0, size, tile)]


def _one(args: tuple) -> tuple[list[tuple[float, int]], int, int]:
    from engine.plan.evaluate import top_of_points

    space, index, k = args
    return top_of_points(space, index, k)


def _work(space: Space, k: int, tile: int) -> list[tuple]:
    """(space, the point numbers of one tile, k) for every tile of the valid layouts."""
    from engine.plan.evaluate import candidates

    index = candidates(space)
    return [(space, index[a:b], k) for a, b in tiles(len(index), tile)]


def _merge(space: Space, parts, k: int, n_tiles: int, kind: str) -> Found:
    parts = list(parts)
    best = heapq.nsmallest(k, (c for top, _, _ in parts for c in top))
    return Found(tuple(best), space.size, sum(p[2] for p in parts), n_tiles, kind, sum(p[1] for p in parts))


def run_serial(space: Space, k: int, tile: int = TILE) -> Found:
    work = _work(space, k, tile)
    return _merge(space, map(_one, work), k, len(work), Kind.SERIAL)


def run_process(space: Space, k: int, tile: int = TILE, workers: int | None = None) -> Found:

    work = _work(space, k, tile)
    return _merge(space, _pool_map(_one, work, workers), k, len(work), Kind.PROCESS)


def _pool_map(fn, work: list, workers: int | None) -> list:
    """``fn`` over ``work`` in a process pool; a pool that cannot start its workers (a process limit) is an InputError.

    Under a process limit (RLIMIT_NPROC counts threads too) a fork fails with EAGAIN or the pool's manager thread
    cannot start; the workers already forked then wait for work forever and the interpreter's exit waits for them, so
    they are stopped here before the error is raised (the ``with`` form joined a thread that never started: an
    internal error, then a hang)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(fn, item) for item in work]  # forks the workers and starts the manager thread
    except (OSError, RuntimeError) as exc:  # BlockingIOError from fork, RuntimeError "can't start new thread"
        _abandon(pool, before)
        raise _cannot_start(workers, exc) from None
    try:
        out = [f.result() for f in futures]
    except BrokenProcessPool as exc:
        _abandon(pool, before)
        raise _cannot_start(workers, exc) from None
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return out


def _cannot_start(workers: int | None, exc: BaseException) -> InputError:
    return InputError("--workers", f"cannot start {workers or 'the default number of'} worker processes ({exc or exc.__class__.__name__}); give fewer")


def _abandon(pool, before: set) -> None:
    """Stop the workers ``pool`` forked (every multiprocessing child not in ``before``) and drop the pool without
    joining its manager thread, which may never have started."""
    import multiprocessing

    for child in multiprocessing.active_children():
        if child not in before:
            child.kill()
            child.join(5)
    try:
        pool.shutdown(wait=False, cancel_futures=True)
    except RuntimeError:
        pass


def run_dask(space: Space, k: int, tile: int = TILE, client=None, address: str | None = None, workers: int = 2) -> Found:
    """On a Dask client: ``client`` if given, else a scheduler at ``address``, else a local
    cluster of ``workers`` processes on 127.0.0.1 started and stopped here."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("--executor", "dask needs the optional extra: pip install 'aiinfra[dask]' (dask[distributed])") from None
    work = _work(space, k, tile)
    if client is not None:
        return _merge(space, client.gather(client.map(_one, work, pure=False)), k, len(work), Kind.DASK)
    if address:
        with Client(address) as c:
            return _merge(space, c.gather(c.map(_one, work, pure=False)), k, len(work), Kind.DASK)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as cluster, Client(cluster) as c:
        return _merge(space, c.gather(c.map(_one, work, pure=False)), k, len(work), Kind.DASK)


def run(space: Space, k: int, executor: str = "serial", tile: int = TILE, workers: int | None = None, **options) -> Found:
    try:
        kind = Kind(executor)
    except ValueError:
        raise InputError("--executor", f"{executor!r} is not one of {', '.join(Kind)}") from None
    if k < 1:
        raise InputError("--top", f"{k!r} is not a positive integer")
    _check_workers(workers)
    if kind is Kind.SERIAL:
        return run_serial(space, k, tile)
    if kind is Kind.PROCESS:
        return run_process(space, k, tile, workers)
    return run_dask(space, k, tile, workers=workers or 2, **options)


def map_tiles(fn, work: list, executor: str = "serial", workers: int | None = None, client=None) -> list:
    """``fn`` over ``work`` on an executor, results in the order of ``work`` (so any merge of them
    is the serial one). ``fn`` must be a module-level function and each item picklable."""
    try:
        kind = Kind(executor)
    except ValueError:
        raise InputError("--executor", f"{executor!r} is not one of {', '.join(Kind)}") from None
    _check_workers(workers)
    if kind is Kind.SERIAL:
        return list(map(fn, work))
    if kind is Kind.PROCESS:
        return _pool_map(fn, work, workers)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("--executor", "dask needs the optional extra: pip install 'aiinfra[dask]' (dask[distributed])") from None
    if client is not None:
        return client.gather(client.map(fn, work, pure=False))
    with LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as cluster, Client(cluster) as c:
        return c.gather(c.map(fn, work, pure=False))
