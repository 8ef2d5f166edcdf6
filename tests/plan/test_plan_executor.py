"""Executors: process pool and Dask return exactly what serial returns (tiles reduced on workers)."""

from __future__ import annotations

import pytest

from engine.plan import executor
from engine.plan.space import build

ROOT = "."


@pytest.fixture(scope="module")
def dense():
    return build(ROOT, "llama-3.1-8b", "h100-sxm", 64, global_batch=256, seq=4096, micro_batches=8)


@pytest.fixture(scope="module")
def moe():
    return build(ROOT, "mixtral-8x7b", "h100-sxm", 64, global_batch=128, seq=4096, micro_batches=2)


def test_tiles_cover_the_space_once():
    assert executor.tiles(10, 4) == [(0, 4), (4, 8), (8, 10)]


def test_serial_is_the_same_whatever_the_tile(dense):
    one = executor.run(dense, 7, "serial", tile=dense.size)
    many = executor.run(dense, 7, "serial", tile=97)  # tiles cut the valid layouts (1,992 here), not the numbered points
    assert one.tiles == 1 and many.tiles > 5
    assert one.top == many.top and (one.points, one.feasible) == (many.points, many.feasible) == (dense.size, one.feasible)
    assert one.feasible > 7


@pytest.mark.parametrize("case", [
    ("llama-3.1-8b", 64, dict(global_batch=256, seq=4096, micro_batches=8)),
    ("mixtral-8x7b", 64, dict(global_batch=128, seq=4096, micro_batches=6)),  # EP axis, micro-batches that do not divide the batch
    ("llama-3.1-8b", 96, dict(global_batch=96, seq=65536, nvlink_domain=16, micro_batches=5)),  # CP axis, a GPU count of 2^5 x 3
    ("llama-3.1-70b", 1000, dict(global_batch=1000, seq=4096, max_vp=8, max_cp=4, micro_batches=4)),  # 1000 = 2^3 x 5^3, V up to 8
])
def test_candidates_are_exactly_the_valid_layouts_of_a_full_scan(case):
    # issue 24: the search enumerates divisors instead of scanning every numbered point; it must
    # keep the same points in the same (ascending) order, which is the tie-break
    import numpy as np

    from engine.plan.evaluate import candidates, decode, feasible_layout

    model, gpus, options = case
    s = build(ROOT, model, "h100-sxm", gpus, **options)
    _, ok = feasible_layout(s, decode(s, 0, s.size))
    assert np.array_equal(candidates(s), np.flatnonzero(ok))
    assert 0 < len(candidates(s)) < s.size


def test_search_over_candidates_equals_the_full_scan(dense, moe):
    from engine.plan.evaluate import top_of_tile

    for s in (dense, moe):
        scan, _, fit = top_of_tile(s, 0, s.size, 10)
        found = executor.run(s, 10, "serial")
        assert list(found.top) == scan and found.feasible == fit and found.points == s.size


@pytest.mark.parametrize("space", ["dense", "moe"])
def test_process_pool_equals_serial(space, request):
    s = request.getfixturevalue(space)
    serial = executor.run(s, 10, "serial", tile=500)
    pool = executor.run(s, 10, "process", tile=500, workers=2)
    assert pool.top == serial.top and (pool.points, pool.feasible, pool.tiles) == (serial.points, serial.feasible, serial.tiles)


def test_dask_two_local_workers_equal_serial(dense, moe):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        for s in (dense, moe):
            serial = executor.run(s, 10, "serial", tile=500)
            found = executor.run_dask(s, 10, tile=500, client=client)
            assert found.top == serial.top
            assert (found.points, found.feasible, found.tiles) == (serial.points, serial.feasible, serial.tiles)
            assert found.executor == "dask"


def test_unknown_executor_is_refused(dense):
    from engine.core.errors import InputError

    with pytest.raises(InputError, match="--executor"):
        executor.run(dense, 3, "mpi")
