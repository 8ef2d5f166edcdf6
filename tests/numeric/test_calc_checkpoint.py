"""calc:checkpoint-window (knowledge/calculators/checkpoint-window.yaml): worked examples, boundaries, properties.

Sources of the expected numbers, each written out beside its assertion:
- The book's checkpoint calculator v2 test vector (BOOK.md section 8, @eaab67bd): 70B, client 100 GB/s,
  storage 50 GB/s, MTBF 24 h, budget 0.01 → 1120 GB, 22.4 s, interval max(stall/budget, √(2·stall·MTBF));
  asynchronous saves use stall/budget only and need a measured pause.
- Young 1974 (CACM 17(9)): τ = √(2δM); the book's chapters 14 (@108da486 §14.4.3) and 20 (§20.4.1-2) numbers.
- Daly 2006 (FGCS 22(3)): τ = √(2δM)[1 + ⅓√(δ/2M) + (1/9)(δ/2M)] − δ for δ < 2M, else M; Figures 3-5
  (117, 57 and 9.1 min); the complete model T_w = M·e^(R/M)·(e^((τ+δ)/M) − 1)·T_s/τ for the waste.
No expected value was produced by running this code.
"""

from __future__ import annotations

import json
import math

import pytest

from engine.cli.main import main
from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.numeric.calculators import Calculator, load_records, run

BOOK_70B = dict(params=70e9, ckpt_bandwidth_basis="client_backend", ckpt_client_bandwidth="100GB/s",
                ckpt_backend_bandwidth="50GB/s", mtbf="24h")


@pytest.fixture(scope="module")
def calc():
    return Calculator.from_record(load_records(shipped_root())["calc:checkpoint-window"])


def ckpt(calc, module, **given):
    return run(calc, module, given)


def out(result, name):
    return result.outputs[name].value


def cli(argv, capsys):
    code = main(argv)
    o, e = capsys.readouterr()
    return code, o, e


# ---------------------------------------------------------------------- the book's checkpoint calculator v2


def test_book_v2_test_vector_70b(calc, module):
    # @eaab67bd test vector: 16 B × 70e9 = 1.12e12 B (1120 GB); 1.12e12 / min(100e9, 50e9) = 22.4 s, synchronous,
    # so the stall is 22.4 s; interval max(22.4 / 0.01, √(2 × 22.4 × 86400)) = max(2240, 1967.41) = 2240 s ≈ 37.3 min
    r = ckpt(calc, module, **BOOK_70B)
    assert out(r, "checkpoint_bytes") == pytest.approx(1.12e12, rel=1e-12)
    assert out(r, "checkpoint_data_time") == pytest.approx(22.4, rel=1e-12)
    assert out(r, "checkpoint_stall") == pytest.approx(22.4, rel=1e-12)
    assert out(r, "checkpoint_interval_young") == pytest.approx(1967.4145470, rel=1e-9)  # √3870720
    assert out(r, "checkpoint_interval_plan") == pytest.approx(2240, rel=1e-12)
    assert out(r, "checkpoint_interval") == out(r, "checkpoint_interval_plan")  # interval_basis default: plan
    # Daly: δ/2M = 22.4 / 172800 = 1.2962963e-4, √ = 0.0113855; factor 1 + 0.0113855/3 + 1.2962963e-4/9 = 1.00380957;
    # 1967.41455 × 1.00380957 − 22.4 = 1952.50955 s
    assert out(r, "checkpoint_interval_daly") == pytest.approx(1952.50955, rel=1e-8)
    # Daly's complete model at τ = 2240 s, R = 0: (2240 + 22.4)/86400 = 0.0261851852, e^that − 1 = 0.0265310292,
    # × 86400 = 2292.28092 s per segment; waste = 1 − 2240 / 2292.28092 = 0.0228073808
    assert out(r, "checkpoint_waste_fraction") == pytest.approx(0.0228073808, rel=1e-7)
    assert out(r, "checkpoint_goodput") == pytest.approx(1 - 0.0228073808, rel=1e-9)
    # availability, first order, R = 0 (restart_time's default): 1 − 22.4/2240 − (2240/2)/86400 = 1 − 0.01 − 0.0129630 = 0.9770370;
    # at Young's interval 1 − √(2 × 22.4 / 86400) = 1 − 0.0227710 = 0.9772290
    assert out(r, "checkpoint_availability") == pytest.approx(1 - 0.01 - 1120 / 86400, rel=1e-12)
    assert out(r, "checkpoint_availability_optimum") == pytest.approx(0.9772290, rel=1e-6)
    assert r.formulas == ["FX53", "FX54", "FX55", "FX56", "F22", "FX114", "FX57", "FX115", "FX58", "FX116", "FX506", "FX507"]
    assert not r.warnings


def test_recovery_time_lowers_availability_but_not_its_optimum_interval(calc, module):
    # R = 10 min = 600 s on the book's 70B vector: 1 − 0.01 − (1120 + 600)/86400 = 0.9700926; the optimum
    # 1 − 0.0227710 − 600/86400 = 0.9702846; Young's interval stays √3870720 = 1967.41 s
    r = ckpt(calc, module, **BOOK_70B, restart_time="10min")
    assert out(r, "checkpoint_availability") == pytest.approx(1 - 0.01 - 1720 / 86400, rel=1e-12)
    assert out(r, "checkpoint_availability_optimum") == pytest.approx(0.9702846, rel=1e-6)
    assert out(r, "checkpoint_interval_young") == pytest.approx(1967.4145470, rel=1e-9)


def test_book_units_gb_not_gib(calc, module):
    # ECOSYSTEM.md peer mistake "GB and GiB mixed": storage_bw_gbps = 50 is 50e9 B/s: 1.12e12 / 50e9 = 22.4 s;
    # read as 50 GiB/s it would be 1.12e12 / 53687091200 = 20.86 s
    r = ckpt(calc, module, checkpoint_bytes="1120GB", ckpt_write_bandwidth="50GB/s", mtbf="24h")
    assert out(r, "checkpoint_stall") == pytest.approx(22.4, rel=1e-12)


def test_book_v2_async_uses_the_budget_bound_only(calc, module):
    # Book v2: asynchronous stall = the measured pause; interval = stall / budget only. Chapter 14 (@aad5f6e1)
    # synthetic case: 6 s staging pause: 6 / 0.01 = 600 s, although Young √(2 × 6 × 86400) = 1018.23 s is longer
    r = ckpt(calc, module, checkpoint_mode="async", checkpoint_pause_time=6, mtbf="24h")
    assert out(r, "checkpoint_stall") == 6
    assert out(r, "checkpoint_interval_plan") == pytest.approx(600, rel=1e-12)
    assert out(r, "checkpoint_interval_young") == pytest.approx(1018.2337649, rel=1e-9)


def test_book_v2_async_without_a_measured_pause_is_an_error(calc, module, capsys):
    with pytest.raises(InputError) as exc:
        ckpt(calc, module, params=70e9, ckpt_write_bandwidth="50GB/s", mtbf="24h", checkpoint_mode="async")
    assert str(exc.value).startswith("--set checkpoint_pause_time: calc:checkpoint-window needs a value for checkpoint_pause_time")
    code, o, e = cli(["calc", "checkpoint-window", "--set", "checkpoint_mode=async", "--set", "params=70e9",
                      "--set", "ckpt_write_bandwidth=50GB/s", "--set", "mtbf=24h"], capsys)
    assert code == 2 and o == "" and e.count("\n") == 1 and "checkpoint_pause_time" in e and "Traceback" not in e


def test_book_chapter_14_budget_longer_than_mtbf(calc, module):
    # Book ch14 (@108da486) §14.4.3: 5 min synchronous write, cluster MTBF 8 h: Young √(2 × 300 × 28800) = 4156.92 s
    # (≈ 70 min), but the 1% budget needs 300 / 0.01 = 30000 s, longer than the 28800 s MTBF: the stall must shrink
    r = ckpt(calc, module, checkpoint_stall="5min", mtbf="8h")
    assert out(r, "checkpoint_interval_young") == pytest.approx(4156.9219, rel=1e-7)
    assert out(r, "checkpoint_interval_plan") == pytest.approx(30000, rel=1e-12)
    assert any("checkpoint_interval_plan > mtbf" in w for w in r.warnings)


# ---------------------------------------------------------------------- Young 1974 and Daly 2006


def test_young_book_chapter_20(calc, module):
    # Book ch20 (@108da486) §20.4.2: MTBF 48 h, δ = 5 min: τ_opt ≈ √(2 × (5/60) × 48) ≈ 2.83 h; √(2 × 300 × 172800) = 10182.34 s
    r = ckpt(calc, module, checkpoint_stall="5min", mtbf="48h")
    assert out(r, "checkpoint_interval_young") == pytest.approx(10182.338, rel=1e-7)


@pytest.mark.parametrize("mtbf, minutes, rel", [("24h", 117, 0.005), ("6h", 57, 0.01), ("15min", 9.1, 0.01)])
def test_daly_2006_figures(calc, module, mtbf, minutes, rel):
    # Daly 2006 Figures 3, 4, 5 (δ = 5 min): the model predicts τ_opt = 117, 57 and 9.1 min
    r = ckpt(calc, module, checkpoint_stall="5min", mtbf=mtbf)
    assert out(r, "checkpoint_interval_daly") == pytest.approx(minutes * 60, rel=rel)


def test_daly_figure_3_exact_arithmetic(calc, module):
    # √(2 × 300 × 86400) = 7200; δ/2M = 300/172800 = 1/576: 7200 × (1 + (1/24)/3 + (1/576)/9) − 300
    # = 7200 × 1.0140817901 − 300 = 7001.3889 s
    r = ckpt(calc, module, checkpoint_stall="5min", mtbf="24h")
    assert out(r, "checkpoint_interval_young") == pytest.approx(7200, rel=1e-12)
    assert out(r, "checkpoint_interval_daly") == pytest.approx(7001.388889, rel=1e-9)


def test_stall_at_least_twice_mtbf(calc, module):
    # Daly 2006: for δ ≥ 2M, τ = M: δ = 1 h, M = 20 min: τ = 1200 s. Young √(2 × 3600 × 1200) = 2939.39 s < δ
    r = ckpt(calc, module, checkpoint_stall="1h", mtbf="20min", interval_basis="young")
    assert out(r, "checkpoint_interval_daly") == 1200
    assert out(r, "checkpoint_interval_young") == pytest.approx(2939.3876913, rel=1e-9)
    assert any("checkpoint_stall >= 2 * mtbf" in w for w in r.warnings)
    assert any("checkpoint_interval < checkpoint_stall" in w for w in r.warnings)
    assert r.warnings[0].startswith("checkpointing cannot keep up with failures")


def test_first_order_waste_at_young_optimum(calc, module):
    # Young's optimum for δ = 60 s, M = 24 h: τ = √(2 × 60 × 86400) = 3219.94 s; first-order waste δ/τ + τ/(2M)
    # = 2 × 0.0186339 = √(2δ/M) = √(120/86400) = 0.0372678
    r = ckpt(calc, module, checkpoint_stall=60, mtbf="24h", interval_basis="young", waste_model="first_order")
    assert out(r, "checkpoint_waste_fraction") == pytest.approx(math.sqrt(120 / 86400), rel=1e-9)
    assert out(r, "checkpoint_goodput") == pytest.approx(1 - 0.0372678, rel=1e-6)


def test_daly_waste_at_young_optimum(calc, module):
    # Daly's complete model, same case, R = 0: (3219.9379 + 60)/86400 = 0.0379622442, e^that − 1 = 0.0386920155,
    # × 86400 = 3342.99014 s; waste = 1 − 3219.9379 / 3342.99014 = 0.0368090345 (below the first-order 0.0372678)
    r = ckpt(calc, module, checkpoint_stall=60, mtbf="24h", interval_basis="young")
    assert out(r, "checkpoint_waste_fraction") == pytest.approx(0.0368090345, rel=1e-7)


def test_daly_waste_with_restart_figure_3(calc, module):
    # Daly 2006 Figure 3 case: M = 24 h, R = 10 min, δ = 5 min, at τ_opt = 7001.3889 s:
    # (7001.3889 + 300)/86400 = 0.0845068, e^that − 1 = 0.0881802739; e^(600/86400) = 1.0069686130;
    # 86400 × 1.0069686130 × 0.0881802739 = 7671.86796 s; waste = 1 − 7001.3889 / 7671.86796 = 0.0873943700
    r = ckpt(calc, module, checkpoint_stall="5min", mtbf="24h", restart_time="10min", interval_basis="daly")
    assert out(r, "checkpoint_interval") == pytest.approx(7001.388889, rel=1e-9)
    assert out(r, "checkpoint_waste_fraction") == pytest.approx(0.08739437, rel=1e-6)


def test_job_mtbf_from_nodes_book_chapter_20_rates(calc, module):
    # Book ch20 (@108da486) §20.4.1 rates per node of 8 cards and 8 ports: 8 × 0.1 + 0.2 + 8 × 0.05 = 1.4 failures/yr,
    # node MTBF = 31536000 / 1.4 = 22525714.29 s; 128 nodes: 22525714.29 / 128 = 175982.14 s, the book's 1024-card
    # cluster figure (179.2 failures/yr, one every ≈ 2 days)
    r = ckpt(calc, module, checkpoint_stall=60, node_mtbf=31536000 / 1.4, n_nodes=128)
    assert out(r, "mtbf") == pytest.approx(175982.142857, rel=1e-9)
    assert r.inputs["mtbf_basis"].value == "node_mtbf"


def test_configured_interval_given_directly(calc, module):
    # first order at a configured 1 h interval, δ = 5 min, M = 24 h: 300/3600 + 3600/172800 = 0.0833333 + 0.0208333 = 0.1041667
    r = ckpt(calc, module, checkpoint_stall="5min", mtbf="24h", checkpoint_interval="1h", waste_model="first_order")
    assert out(r, "checkpoint_waste_fraction") == pytest.approx(0.10416667, rel=1e-7)
    assert r.inputs["checkpoint_interval"].source == "user"


def test_configured_interval_shorter_than_the_stall_warns(calc, module):
    r = ckpt(calc, module, checkpoint_stall="5min", mtbf="24h", checkpoint_interval="4min")
    assert any("checkpoint_interval < checkpoint_stall" in w for w in r.warnings)


def test_waste_over_half_warns(calc, module):
    # Daly 2006 Figure 5 regime (δ = 5 min, M = 15 min) with the 1% budget: plan 300 / 0.01 = 30000 s ≫ M;
    # (30000 + 300)/900 = 33.67 MTBFs per segment: goodput = 30000 / (900 × (e^33.67 − 1)) ≈ 8e-14, waste ≈ 1
    r = ckpt(calc, module, checkpoint_stall="5min", mtbf="15min")
    assert out(r, "checkpoint_waste_fraction") == pytest.approx(1.0, abs=1e-9)
    assert any("checkpoint_waste_fraction > 0.5" in w for w in r.warnings)


def test_waste_stays_finite_far_past_the_mtbf(calc, module):
    # plan 3600 / 0.01 = 360000 s against M = 300 s: e^((τ+δ)/M) = e^1212 overflows a float; the model's limit is waste 1
    r = ckpt(calc, module, checkpoint_stall="1h", mtbf="5min")
    assert out(r, "checkpoint_waste_fraction") == 1.0 and out(r, "checkpoint_goodput") == 0.0


# ---------------------------------------------------------------------- properties


def test_restart_does_not_move_daly_optimum_and_scales_goodput(calc, module):
    # Daly 2006: T_w ∝ e^(R/M), so τ_opt does not depend on R and goodput(R) = goodput(0) × e^(−R/M);
    # e^(−600/86400) = 0.99307961
    a = ckpt(calc, module, checkpoint_stall="5min", mtbf="24h", interval_basis="daly")
    b = ckpt(calc, module, checkpoint_stall="5min", mtbf="24h", interval_basis="daly", restart_time="10min")
    assert out(a, "checkpoint_interval_daly") == out(b, "checkpoint_interval_daly")
    assert out(b, "checkpoint_goodput") / out(a, "checkpoint_goodput") == pytest.approx(0.99307961, rel=1e-7)


@pytest.mark.parametrize("stall, mtbf", [(60, "24h"), ("5min", "6h"), ("5min", "24h"), (22.4, "8h")])
def test_daly_interval_minimises_daly_waste(calc, module, stall, mtbf):
    best = ckpt(calc, module, checkpoint_stall=stall, mtbf=mtbf, interval_basis="daly")
    tau = out(best, "checkpoint_interval")
    for k in (0.8, 0.95, 1.05, 1.25):
        other = ckpt(calc, module, checkpoint_stall=stall, mtbf=mtbf, checkpoint_interval=tau * k)
        assert out(other, "checkpoint_waste_fraction") > out(best, "checkpoint_waste_fraction")


def test_four_times_the_mtbf_doubles_young(calc, module):
    # √(2δ · 4M) = 2√(2δM)
    a = out(ckpt(calc, module, checkpoint_stall=30, mtbf="6h"), "checkpoint_interval_young")
    b = out(ckpt(calc, module, checkpoint_stall=30, mtbf="24h"), "checkpoint_interval_young")
    assert b == pytest.approx(2 * a, rel=1e-12)


@pytest.mark.parametrize("model", ["first_order", "daly"])
def test_goodput_and_waste_sum_to_one(calc, module, model):
    r = ckpt(calc, module, **BOOK_70B, waste_model=model, restart_time="15min")
    assert out(r, "checkpoint_goodput") + out(r, "checkpoint_waste_fraction") == pytest.approx(1, abs=1e-15)


def test_mtbf_range_is_exact_for_young(calc, module):
    # √(2 × 22.4 × 43200) = 1391.1722 s; √(2 × 22.4 × 172800) = 2782.3443 s
    r = ckpt(calc, module, checkpoint_stall=22.4, mtbf="12h..48h")
    y = r.outputs["checkpoint_interval_young"]
    assert y.method == "exact"
    assert (y.low, y.high) == (pytest.approx(1391.1722, rel=1e-7), pytest.approx(2782.3443, rel=1e-7))


# ---------------------------------------------------------------------- CLI


def test_cli_json_book_vector(capsys):
    code, o, _ = cli(["calc", "checkpoint-window", "--set", "params=70e9", "--set", "ckpt_bandwidth_basis=client_backend",
                      "--set", "ckpt_client_bandwidth=100GB/s", "--set", "ckpt_backend_bandwidth=50GB/s", "--set", "mtbf=24h",
                      "--format", "json"], capsys)
    assert code == 0
    data = json.loads(o)
    assert data["calculator"] == "calc:checkpoint-window"
    # 1120 GB; 22.4 s; max(2240, 1967.41) = 2240 s
    assert data["outputs"]["checkpoint_bytes"]["value"] == pytest.approx(1.12e12)
    assert data["outputs"]["checkpoint_stall"]["value"] == pytest.approx(22.4)
    assert data["outputs"]["checkpoint_interval_plan"]["value"] == pytest.approx(2240)
    assert data["inputs"]["mtbf"]["value"] == 86400 and data["inputs"]["mtbf"]["source"] == "user"


def test_cli_explain_shows_daly_waste(capsys):
    code, o, _ = cli(["calc", "checkpoint-window", "--set", "checkpoint_stall=60", "--set", "mtbf=24h", "--explain"], capsys)
    assert code == 0
    assert "FX58 Expected waste fraction of periodic checkpointing (first order, or Daly's exponential model) (daly)" in o
    assert "F22 Optimum checkpoint interval (Young's first-order estimate)" in o
    assert "= sqrt(2 * 60 * 86400)" in o


def test_cli_help_names_the_books_terms(capsys):
    code, o, _ = cli(["calc", "checkpoint-window", "--help"], capsys)
    assert code == 0
    for term in ("n_params_b", "client_bw_gbps", "storage_bw_gbps", "stall_budget", "async_upload", "bytes_per_param",
                 "async_pause_seconds", "mtbf_hours"):
        assert term in o


@pytest.mark.parametrize("extra, field", [
    (["--set", "stall_budget=0"], "--set stall_budget"),
    (["--set", "checkpoint_mode=lazy"], "--set checkpoint_mode"),
    (["--set", "mtbf=3GB"], "--set mtbf"),
    (["--set", "restart_time=-1s"], "--set restart_time"),
    (["--set", "mtbf_hours=24"], "--set mtbf_hours"),
])
def test_bad_input_is_one_line_exit_2(capsys, extra, field):
    code, o, e = cli(["calc", "checkpoint-window", "--set", "checkpoint_stall=60", "--set", "mtbf=24h", *extra], capsys)
    assert code == 2 and o == ""
    assert e.count("\n") == 1 and field in e and "Traceback" not in e
