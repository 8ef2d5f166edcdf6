"""Calibration (engine/measure/calibrate.py): the least-squares fit recovers the parameters a synthetic table
was generated with, and the held-out prediction of a family never sees that family's measured values.

The synthetic table is the collective kind's: 8-rank ring all-reduces over NVLink (450e9 B/s per direction), one
algorithm slot whose tuner latency is 14 us (14 steps of 1 us), t = 14e-6 x lat_scale + S x 1.75 / (450e9 x e_link),
generated with lat_scale 4 and e_link 0.8 (and, for the scale-out rows, a 30 us tuner latency x 12 and 50e9 B/s x 0.6
for a 16-rank ring). The network part of the slot is 0, so net_scale is not identified and is not asserted.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.domain.measurements import Measurement
from engine.measure import calibrate

SIZES = [2**e for e in range(3, 34, 3)]  # 8 B to 8 GiB, 11 sizes
KIND = calibrate.KINDS["collective"]


def nvlink_time(size: float) -> float:
    return 14 * 4e-6 + size * 1.75 / (450e9 * 0.8)


def scaleout_time(size: float) -> float:
    return 30 * 12e-6 + size * (2 * 15 / 16) / (50e9 * 0.6)


def row(i: int, family: str, fabric: str, value: float) -> Measurement:
    return Measurement(id=f"meas:{family}/r{i}", source=f"meas:{family}", family=family, place=f"{family}.yaml:{i}", kind="collective",
                       model=None, device="h100-sxm", gpus=8, layout={}, precision={}, workload={"op": "allreduce", "fabric": fabric},
                       engine=None, engine_version=None, metric="time", statistic="single", value=value, unit="s", stated=f"{value:g} s", where=f"row {i}")


def synthetic(families=("a", "b", "c"), scale: dict | None = None, scaleout: bool = False) -> calibrate.Table:
    """The rows of each family at every size; ``scale`` multiplies one family's measured values."""
    rows, terms = [], []
    for fam in families:
        for i, size in enumerate(SIZES):
            rows.append(row(i, fam, "nvlink", nvlink_time(size) * (scale or {}).get(fam, 1.0)))
            terms.append(dict(size=float(size), factor=1.75, link=450e9, lat_ring=14e-6, net_ring=0.0, bw_ring=1.0))
    if scaleout:
        for i, size in enumerate(SIZES):
            rows.append(row(100 + i, "s", "roce", scaleout_time(size)))
            terms.append(dict(size=float(size), factor=2 * 15 / 16, link=50e9, lat_ring=30e-6, net_ring=0.0, bw_ring=1.0))
    return calibrate.table(KIND, rows, terms)


def test_the_fit_recovers_the_generating_parameters():
    fitted = calibrate.fit(synthetic())
    # one group (nvlink): its value and the shared one coincide at the exact solution; recovered to 0.1 %
    assert fitted["lat_scale"]["nvlink"] == pytest.approx(4.0, rel=1e-3)
    assert fitted["e_link"]["nvlink"] == pytest.approx(0.8, rel=1e-3)
    assert fitted["lat_scale"]["shared"] == pytest.approx(4.0, rel=1e-3)


def test_each_fabric_gets_its_own_values_shrunk_toward_the_shared_one():
    fitted = calibrate.fit(synthetic(scaleout=True))
    # two groups: the prior (3 per unit of log of group / shared) pulls each toward the shared value, so a group
    # lands between its generating value and the shared one, never beyond its own (no swing), within 20 %
    for name, truth in (("lat_scale", {"nvlink": 4.0, "scaleout": 12.0}), ("e_link", {"nvlink": 0.8, "scaleout": 0.6})):
        shared = fitted[name]["shared"]
        assert min(truth.values()) < shared < max(truth.values()), (name, shared)
        for group, value in truth.items():
            assert min(value, shared) < fitted[name][group] < max(value, shared), (name, group, fitted[name][group])
            assert fitted[name][group] == pytest.approx(value, rel=0.2)


def test_predict_with_the_generating_parameters_reproduces_the_table():
    tab = synthetic()
    pred = calibrate.predict(tab, {"lat_scale": {"shared": 4.0}, "e_link": {"shared": 0.8}})
    # 8 B: 14e-6 x 4 + 8 x 1.75 / 3.6e11 = 5.6e-5 + 3.9e-11 s
    assert pred[0] == pytest.approx(5.6e-5 + 8 * 1.75 / 3.6e11, rel=1e-12)
    np.testing.assert_allclose(pred, tab.measured, rtol=1e-12)


def test_held_out_leaves_the_whole_family_out():
    base = calibrate.held_out(synthetic())
    # family a's measured values doubled: its own held-out predictions (fitted on b and c alone) do not move,
    # the others' do (a is in their training set)
    moved = calibrate.held_out(synthetic(scale={"a": 2.0}))
    a = np.arange(len(SIZES))
    others = np.arange(len(SIZES), 3 * len(SIZES))
    np.testing.assert_allclose(moved[a], base[a], rtol=1e-12)
    assert np.all(np.abs(moved[others] / base[others] - 1) > 0.01)
    # and fitted on b and c, exact data, family a is predicted at the generating values
    np.testing.assert_allclose(base[a], [nvlink_time(s) for s in SIZES], rtol=1e-3)


def test_step_overhead_is_grouped_by_engine_release():
    # vLLM 0.7.x ran the V0 scheduler; 0.8.0 made the V1 engine the default (vLLM release notes): separate groups;
    # a version that does not read as major.minor keeps the engine's name alone
    from types import SimpleNamespace

    from engine.measure.calibrate import _engine

    def row(engine, version):
        return SimpleNamespace(engine=engine, engine_version=version)

    assert _engine(row("vllm", "0.7.4.dev181+gf35f8e22")) == "vllm-0.7"
    assert _engine(row("vllm", "0.11.0")) == "vllm-0.11"
    assert _engine(row("sglang", "v0.5.7")) == "sglang-0.5"
    assert _engine(row("tensorrt-llm", "PyTorch backend, commit b626186")) == "tensorrt-llm"
    assert _engine(row(None, "0.5.3")) == "unstated"


def test_an_unseen_release_takes_the_same_engines_nearest_fitted_release():
    # a held-out table whose release series no other table has (TensorRT-LLM 0.14) is predicted with the nearest
    # release of the same engine the fit saw (0.17), not with every engine's shared value; an engine with no release
    # fitted takes its unversioned group, a group of another grouping (a device generation) the shared value
    kind = calibrate.KINDS["serve"]
    fitted = {p.name: {"shared": p.start} for p in kind.params}
    fitted["overhead"] = {"shared": 6e-3, "tensorrt-llm-0.17": 3.5e-3, "tensorrt-llm-1.0": 5e-3, "sglang": 5.6e-3, "vllm-0.8": 6.3e-3}
    groups = [{"gen": "hopper", "engine": e, "engine_name": e.rsplit("-", 1)[0]} for e in ("tensorrt-llm-0.14", "tensorrt-llm-1.2", "sglang-0.4", "vllm-0.7", "lmdeploy-0.6")]
    got = calibrate.values_for(kind, fitted, groups)["overhead"]
    assert got.tolist() == [3.5e-3, 5e-3, 5.6e-3, 6.3e-3, 6e-3]
