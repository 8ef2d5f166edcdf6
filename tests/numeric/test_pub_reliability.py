"""Published reliability and checkpoint numbers (issue #13, "Reliability and checkpoints"), through the CLI JSON.

Sources of the expected numbers, each written out beside its assertion:
- Llama 3 (Llama Team, AI @ Meta, arXiv 2407.21783, 2024) section 3.3.4 and Table 5: 466 job
  interruptions in a 54-day snapshot of 405B pre-training, 47 planned and 419 unexpected, on up to
  16,384 H100 GPUs; Table 5's per-component counts (they add up to 419). Table 5 prints 30.1% for
  Faulty GPU, which is not 148/419 = 35.3% (every other row is its count / 419 to 0.1%): the counts
  are asserted, and the printed percentages only where they equal count / 419 rounded.
- Narayanan et al. 2021 (SC '21, arXiv 2104.04473) section 5.10: a 13.8 TB checkpoint, loaded at
  1 TB/s and saved at 273 GB/s; the paper states no times, so they are hand arithmetic.
- Daly 2006 (FGCS 22(3)) Figures 3-5: τ_opt = 117, 57 and 9.1 min for δ = 5 min and M = 24 h, 6 h,
  15 min (R = 10 min).
No expected value was produced by running this code.
"""

from __future__ import annotations

import json
import os

import pytest

from engine.cli.main import main

# a knowledge root to read instead of the shipped one (unset: the shipped knowledge)
ROOT = ["--root", os.environ["AIINFRA_PUB_ROOT"]] if os.environ.get("AIINFRA_PUB_ROOT") else []

DAYS_54 = 54 * 86400  # 4665600 s

# Llama 3 Table 5: component, category, interruption count, printed percentage
TABLE5 = [
    ("Faulty GPU", "GPU", 148, 30.1),
    ("GPU HBM3 Memory", "GPU", 72, 17.2),
    ("Software Bug", "Dependency", 54, 12.9),
    ("Network Switch/Cable", "Network", 35, 8.4),
    ("Host Maintenance", "Unplanned Maintenance", 32, 7.6),
    ("GPU SRAM Memory", "GPU", 19, 4.5),
    ("GPU System Processor", "GPU", 17, 4.1),
    ("NIC", "Host", 7, 1.7),
    ("NCCL Watchdog Timeouts", "Unknown", 7, 1.7),
    ("Silent Data Corruption", "GPU", 6, 1.4),
    ("GPU Thermal Interface + Sensor", "GPU", 6, 1.4),
    ("SSD", "Host", 3, 0.7),
    ("Power Supply", "Host", 3, 0.7),
    ("Server Chassis", "Host", 2, 0.5),
    ("IO Expansion Board", "Host", 2, 0.5),
    ("Dependency", "Dependency", 2, 0.5),
    ("CPU", "Host", 2, 0.5),
    ("System Memory", "Host", 2, 0.5),
]
MISPRINTED = {"Faulty GPU"}


def run_json(capsys, argv):
    code = main([*ROOT, *argv, "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def formula(capsys, fid, **given):
    argv = ["formula", "eval", fid]
    for name, value in given.items():
        argv += ["--set", f"{name}={value}"]
    return run_json(capsys, argv)["outputs"]


def calc(capsys, **given):
    argv = ["calc", "checkpoint-window"]
    for name, value in given.items():
        argv += ["--set", f"{name}={value}"]
    return run_json(capsys, argv)


def test_table5_counts_add_up_to_the_unexpected_interruptions():
    # Llama 3 section 3.3.4: 419 unexpected interruptions; Table 5's counts are their breakdown
    assert sum(n for _, _, n, _ in TABLE5) == 419


def test_job_mtbf_from_observed_interruptions(capsys):
    # Llama 3 section 3.3.4: 54 days, 419 unexpected → 4665600 / 419 = 11135.084 s ≈ 3.09 h
    out = formula(capsys, "FX60", mtbf_basis="observed", observation_period="54d", interruption_count=419)
    assert out["mtbf"]["value"] == pytest.approx(11135.084, rel=1e-7), "Llama 3 §3.3.4: 54 d / 419"
    assert out["mtbf"]["value"] / 3600 == pytest.approx(3.09, abs=0.005)
    # all 466 interruptions (47 planned + 419 unexpected): 4665600 / 466 = 10012.017 s
    out = formula(capsys, "FX60", mtbf_basis="observed", observation_period="54d", interruption_count=466)
    assert out["mtbf"]["value"] == pytest.approx(10012.017, rel=1e-7), "Llama 3 §3.3.4: 54 d / 466"


@pytest.mark.parametrize(("component", "category", "count", "printed_pct"), TABLE5)
def test_table5_category_share(capsys, component, category, count, printed_pct):
    out = formula(capsys, "FX500", category_interruption_count=count, interruption_count=419)
    share = out["interruption_share"]["value"]
    assert share == pytest.approx(count / 419, rel=1e-12), f"Llama 3 Table 5 {component}: {count} / 419"
    if component not in MISPRINTED:
        # the printed percentage is the count / 419 rounded to 0.1%
        assert round(100 * share, 1) == printed_pct, f"Llama 3 Table 5 {component} ({category}): {printed_pct}%"


def test_table5_faulty_gpu_percentage_is_the_count_not_the_print(capsys):
    # 148 / 419 = 35.3%; the table's 30.1% is not reproduced (misprint noted in FX500's notes)
    share = formula(capsys, "FX500", category_interruption_count=148, interruption_count=419)["interruption_share"]["value"]
    assert round(100 * share, 1) == 35.3


def test_category_and_per_gpu_mtbf(capsys):
    # Faulty GPU: 4665600 / 148 = 31524.324 s; × 16384 GPUs = 516494524 s ≈ 16.4 years
    out = formula(capsys, "FX501", observation_period="54d", category_interruption_count=148)
    assert out["category_mtbf"]["value"] == pytest.approx(31524.324, rel=1e-7), "Llama 3 Table 5 Faulty GPU"
    out = formula(capsys, "FX502", per_gpu_mtbf_basis="category", category_mtbf=DAYS_54 / 148, n_gpus=16384)
    assert out["per_gpu_mtbf"]["value"] == pytest.approx(516494524, rel=1e-7)
    # every unexpected interruption charged to a GPU: 11135.084 × 16384 = 182437216 s
    out = formula(capsys, "FX502", mtbf=DAYS_54 / 419, n_gpus=16384)
    assert out["per_gpu_mtbf"]["value"] == pytest.approx(182437216, rel=1e-7)


def test_narayanan_checkpoint_load_and_save_time(capsys):
    # Narayanan et al. 2021 §5.10: 13.8e12 B / 1e12 B/s = 13.8 s load; / 273e9 B/s = 50.549451 s save
    out = formula(capsys, "FX505", checkpoint_bytes="13.8TB", ckpt_read_bandwidth="1TB/s")
    assert out["checkpoint_load_time"]["value"] == pytest.approx(13.8, rel=1e-9)
    out = formula(capsys, "FX54", ckpt_bandwidth_basis="write_bandwidth", checkpoint_bytes="13.8TB",
                  ckpt_write_bandwidth="273GB/s")
    assert out["checkpoint_data_time"]["value"] == pytest.approx(50.549451, rel=1e-7)


@pytest.mark.parametrize(("mtbf", "published_min", "tol"), [("24h", 117, 0.005), ("6h", 57, 0.01), ("15min", 9.1, 0.01)])
def test_daly_figures(capsys, mtbf, published_min, tol):
    # Daly 2006 Figures 3-5, δ = 5 min: τ_opt = 117, 57, 9.1 min (rounded in the captions)
    out = formula(capsys, "FX114", checkpoint_stall="5min", mtbf=mtbf)
    assert out["checkpoint_interval_daly"]["value"] / 60 == pytest.approx(published_min, rel=tol)


def test_young_with_restart_time(capsys):
    # √(2 × 300 × (86400 + 600)) = √52200000 = 7224.9567 s; R = 0 gives Young's √(2 × 300 × 86400) = 7200 s
    out = formula(capsys, "FX503", checkpoint_stall="5min", mtbf="24h", restart_time="10min")
    assert out["checkpoint_interval_young_restart"]["value"] == pytest.approx(7224.9567, rel=1e-7)
    out = formula(capsys, "FX503", checkpoint_stall="5min", mtbf="24h", restart_time=0)
    assert out["checkpoint_interval_young_restart"]["value"] == pytest.approx(7200, rel=1e-12)


def test_interval_in_steps(capsys):
    # 4156.9219 / 10 = 415.69 → 415 steps; 600 / 900 → at least every step
    out = formula(capsys, "FX504", checkpoint_interval=4156.9219, train_step_time=10)
    assert out["checkpoint_interval_steps"]["value"] == 415
    out = formula(capsys, "FX504", checkpoint_interval=600, train_step_time=900)
    assert out["checkpoint_interval_steps"]["value"] == 1


def test_calculator_shows_the_new_outputs(capsys):
    # Narayanan §5.10 checkpoint with Llama 3's observed MTBF: 13.8e12 / 273e9 = 50.549451 s stall,
    # 13.8 s load, MTBF 4665600 / 419 = 11135.084 s, per GPU × 16384 = 182437216 s
    d = calc(capsys, checkpoint_bytes="13.8TB", ckpt_write_bandwidth="273GB/s", ckpt_read_bandwidth="1TB/s",
             mtbf_basis="observed", observation_period="54d", interruption_count=419, n_gpus=16384,
             train_step_time="20s", interval_basis="young")
    o = d["outputs"]
    assert o["checkpoint_stall"]["value"] == pytest.approx(50.549451, rel=1e-7)
    assert o["checkpoint_load_time"]["value"] == pytest.approx(13.8, rel=1e-9)
    assert o["mtbf"]["value"] == pytest.approx(11135.084, rel=1e-7)
    assert o["per_gpu_mtbf"]["value"] == pytest.approx(182437216, rel=1e-7)
    # Young √(2 × 50.549451 × 11135.084) = √1125744.71 = 1061.0112 s, in 20 s steps: floor(53.05) = 53
    assert o["checkpoint_interval_young"]["value"] == pytest.approx(1061.0112, rel=1e-6)
    assert o["checkpoint_interval_steps"]["value"] == 53
    assert {"FX502", "FX504", "FX505"} <= set(d["formulas"])


def test_calculator_keeps_its_outputs_without_the_new_inputs(capsys):
    # the book's chapter 14 example (δ = 5 min, M = 8 h): no step time, read bandwidth or GPU count given
    d = calc(capsys, checkpoint_stall=300, mtbf="8h")
    o = d["outputs"]
    assert o["checkpoint_interval_young"]["value"] == pytest.approx(4156.9219, rel=1e-7)
    for name in ("checkpoint_interval_steps", "checkpoint_load_time", "per_gpu_mtbf"):
        assert name not in o
    assert not any(n in w for w in d["warnings"] for n in ("checkpoint_load_time", "per_gpu_mtbf", "checkpoint_interval_steps"))
