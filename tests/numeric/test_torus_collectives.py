"""FX710: collectives over a TPU ICI torus, the scaling-book's model (jax-ml/scaling-book sharding.md@04d8de58,
link bandwidths from tpus.md@54e2c439). Every expected value is hand arithmetic shown beside it."""

from __future__ import annotations

import pytest

from engine import api

V5E_LINK = 9e10    # TPU v5e: 4.5e10 B/s one way, 9e10 bidirectional per link (tpus.md@54e2c439)
V6E_LINK = 1.8e11  # TPU v6e: 9e10 one way, 1.8e11 bidirectional


def t(op, size, link, axes, chips, **kw):
    return api.evaluate("FX710", torus_collective=op, msg_bytes=size, ici_link_bandwidth=link, torus_axes=axes,
                        axis_chips=chips, **kw).outputs["torus_collective_time"].value


def test_bandwidth_bound_allgather_does_not_depend_on_the_axis_size():
    # V / W_ICI = 1e8 / 9e10 = 1.111 ms on an 8-chip or a 16-chip ring alike ("doesn't depend on |X|")
    assert t("allgather", 1e8, V5E_LINK, 1, 16) == t("allgather", 1e8, V5E_LINK, 1, 8) == pytest.approx(1e8 / 9e10, rel=1e-12)


def test_more_axes_more_bandwidth_and_allreduce_is_twice_allgather():
    one = t("allgather", 1e9, V6E_LINK, 1, 16)
    two = t("allgather", 1e9, V6E_LINK, 2, 32)
    assert one == pytest.approx(1e9 / 1.8e11, rel=1e-12) and two == pytest.approx(one / 2, rel=1e-12)
    assert t("allreduce", 1e9, V6E_LINK, 2, 32) == pytest.approx(2 * two, rel=1e-12)  # 5.556 ms
    assert t("reducescatter", 1e9, V6E_LINK, 2, 32) == two
    assert t("all2all", 1e9, V6E_LINK, 2, 32) == pytest.approx(two / 4, rel=1e-12)


def test_small_messages_are_latency_bound():
    # 45 kB on v5e: 0.5 us of bytes against 16 / 2 = 8 hops of 1 us
    assert t("allgather", 45e3, V5E_LINK, 1, 16) == pytest.approx(8e-6, rel=1e-12)
    assert t("allgather", 45e3, V5E_LINK, 1, 16, hop_latency=0) == pytest.approx(45e3 / 9e10, rel=1e-12)
