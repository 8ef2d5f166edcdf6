"""``aiinfra system list|show|grids``, ``calc power-tco --system/--grid`` and ``check`` on the system rules.

Numbers asserted are NVIDIA's figures named beside them (DGX B200 User Guide, "Introduction to
NVIDIA DGX B200 Systems"; DGX BasePOD reference architecture, "Core Components"), a grid
intensity's source, or hand arithmetic shown on the line.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from engine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
RULES = Path(__file__).parent.parent / "fixtures" / "roots" / "system_rules"


@pytest.fixture(scope="module")
def sysroot(tmp_path_factory):
    """``--root`` of a copy of the shipped systems, hardware and grid presets alone."""
    root = tmp_path_factory.mktemp("sys-root")
    for folder in ("systems", "hardware"):
        shutil.copytree(ROOT / "knowledge" / folder, root / "knowledge" / folder)
    shutil.copy(ROOT / "knowledge" / "carbon_intensity.yaml", root / "knowledge" / "carbon_intensity.yaml")
    return ["--root", str(root)]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_list_text(capsys, sysroot):
    code, out, err = run([*sysroot, "system", "list"], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["id", "name", "gpus"] and len(lines) == 7 + 2  # atlas-800t-a2, atlas-800t-a3, atlas-900-a3-superpod, dgx-b200, dgx-h100, gb200-nvl72, gb300-nvl72
    b200 = next(line for line in lines if line.startswith("dgx-b200"))
    for cell in ("8x b200", "1440GB", "14.3kW", "2TB", "8x400Gb/s", "10"):  # DGX B200 User Guide, component and power tables
        assert cell in b200
    h100 = next(line for line in lines if line.startswith("dgx-h100"))
    assert "8x h100-sxm" in h100 and "640GB" in h100 and " - " in h100  # no max power read: shown as '-'


def test_list_json_has_canonical_numbers_and_nulls(capsys, sysroot):
    code, out, _ = run([*sysroot, "system", "list", "--format", "json"], capsys)
    rows = {r["id"]: r for r in json.loads(out)}
    assert code == 0 and set(rows) == {"atlas-800t-a2", "atlas-800t-a3", "atlas-900-a3-superpod", "dgx-b200", "dgx-h100", "gb200-nvl72", "gb300-nvl72"}
    assert rows["dgx-b200"]["max_power_w"] == 14_300                 # 14.3 kW max.
    assert rows["dgx-b200"]["gpu_power_w"] == 8 * 1000               # 8 x B200 at 1,000 W
    assert rows["dgx-b200"]["compute_nic_Bps"] == 8 * 400e9 / 8      # 8 x 400 Gb/s = 400 GB/s
    assert rows["dgx-h100"]["max_power"] == "10.2kW" and rows["dgx-h100"]["max_power_w"] == 10_200   # DGX H100 datasheet: ~10.2 kW max
    assert rows["dgx-h100"]["gpu_memory_bytes"] == 640e9             # BasePOD: 640 GB total GPU memory


@pytest.mark.parametrize("fmt", ["md", "csv"])
def test_list_tables(capsys, sysroot, fmt):
    code, out, _ = run([*sysroot, "system", "list", "--format", fmt], capsys)
    assert code == 0
    if fmt == "md":
        assert out.startswith("| id | name | gpus |") and out.count("\n| dgx-") == 2
    else:
        rows = list(csv.DictReader(io.StringIO(out)))
        assert [r["id"] for r in rows] == ["atlas-800t-a2", "atlas-800t-a3", "atlas-900-a3-superpod", "dgx-b200", "dgx-h100", "gb200-nvl72", "gb300-nvl72"]
        assert rows[3]["max_power_w"] == "14300.0"


def test_show_text(capsys, sysroot):
    code, out, err = run([*sysroot, "system", "show", "dgx-b200"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "sys:dgx-b200 · NVIDIA DGX B200 (NVIDIA)"
    # 8 x 1,000 W = 8 kW; 14.3 kW - 8 kW = 6.3 kW for the rest of the box
    assert "GPUs: 8 x hw:b200, 1440GB GPU memory; 8 x 1000W TDP = 8 kW [" in out
    assert "Max system power: 14.3kW; the rest of the system may draw 6.3 kW [" in out
    assert "Power supplies: 6 x 3.3kW, 5+1 redundancy [" in out
    assert "Rack units: 10U [" in out and "https://docs.nvidia.com/dgx/dgxb200-user-guide/introduction-to-dgxb200.html" in out


def test_show_says_what_is_not_recorded(capsys, tmp_path):
    # a system record without its power figures (the shipped DGX H100 less max_power, power_supplies, rack_units)
    import yaml

    for folder in ("systems", "hardware"):
        shutil.copytree(ROOT / "knowledge" / folder, tmp_path / "knowledge" / folder)
    path = tmp_path / "knowledge" / "systems" / "dgx-h100.yaml"
    record = yaml.safe_load(path.read_text())
    for key in ("max_power", "power_supplies", "rack_units"):
        record.pop(key)
    path.write_text(yaml.safe_dump(record, sort_keys=False, allow_unicode=True))
    code, out, _ = run(["--root", str(tmp_path), "system", "show", "sys:dgx-h100", "--format", "md"], capsys)
    assert code == 0 and out.startswith("# sys:dgx-h100 · NVIDIA DGX H100 (NVIDIA)")
    assert "Max system power: not recorded (no vendor figure read); give node_power to calc power-tco with --set" in out
    assert "8 x 700W TDP = 5.6 kW" in out                            # H100 SXM datasheet: 700 W


def test_show_json(capsys, sysroot):
    code, out, _ = run([*sysroot, "system", "show", "dgx-b200", "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["id"] == "sys:dgx-b200" and data["max_power"]["value"] == "14.3kW"
    assert data["parsed"]["non_gpu_power_w"] == pytest.approx(6300)   # 14,300 W - 8 x 1,000 W


def test_grids(capsys, sysroot):
    code, out, _ = run([*sysroot, "system", "grids", "--format", "json"], capsys)
    rows = {r["id"]: r for r in json.loads(out)}
    assert code == 0 and rows["france-2022-bloom"]["value"] == 57   # Luccioni et al. 2023, Table 1
    code, out, _ = run([*sysroot, "system", "grids"], capsys)
    assert code == 0 and "implied = the source's emissions / its energy" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["system", "show", "dgx-b300"], "aiinfra: error: ID: no system 'dgx-b300' (did you mean dgx-b200 or dgx-h100? known: atlas-800t-a2, atlas-800t-a3, atlas-900-a3-superpod, dgx-b200, dgx-h100, gb200-nvl72, gb300-nvl72)\n"),
    (["system", "show", "no good"], "aiinfra: error: ID: 'no good' is not a sys id (expected sys:name)\n"),
    (["system", "show", "dgx-b200", "--format", "csv"],
     "aiinfra: error: --format: system show prints one record: text, json or md (csv is for system list and system grids)\n"),
])
def test_bad_input_is_one_line_exit_2(capsys, sysroot, argv, message):
    code, out, err = run([*sysroot, *argv], capsys)
    assert (code, out, err) == (2, "", message)


def test_missing_id_is_an_argparse_error(capsys, sysroot):
    code, out, err = run([*sysroot, "system", "show"], capsys)
    assert (code, out) == (2, "")
    assert err == "aiinfra system show: error: the following arguments are required: ID (see aiinfra system show --help)\n"


def test_power_tco_from_a_system_and_a_grid(capsys):
    code, out, err = run(["--root", str(ROOT), "calc", "power-tco", "--system", "dgx-b200", "--grid", "france-2022-bloom",
                          "--set", "n_gpus=1024", "--set", "pue=1.2", "--set", "electricity_price=0.1USD/kWh",
                          "--set", "capex_per_gpu=40000", "--set", "depreciation_period=4", "--format", "json"], capsys)
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["inputs"]["node_power"]["value"] == 14_300 and "14.3 kW max." in data["inputs"]["node_power"]["source"]
    assert data["inputs"]["it_power_model"]["value"] == "node_power"
    assert data["inputs"]["carbon_intensity"]["value"] == 57
    # 1024 / 8 = 128 nodes x 14.3 kW = 1,830.4 kW; x PUE 1.2 = 2,196.48 kW; x 8760 h = 19,241,164.8 kWh; x 57 g = 1.09674639e9 g
    assert data["outputs"]["it_power"]["value"] == pytest.approx(1_830_400)
    assert data["outputs"]["facility_energy"]["value"] == pytest.approx(19_241_164.8)
    assert data["outputs"]["operational_emissions"]["value"] == pytest.approx(1_096_746_393.6)


def test_power_tco_user_value_beats_the_preset(capsys):
    code, out, _ = run(["--root", str(ROOT), "calc", "power-tco", "--system", "dgx-b200", "--set", "node_power=12kW",
                        "--set", "n_gpus=8", "--set", "pue=1", "--set", "electricity_price=0.1USD/kWh", "--set", "capex_per_gpu=1",
                        "--set", "depreciation_period=4", "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["inputs"]["node_power"]["source"] == "user"
    assert data["outputs"]["it_power"]["value"] == pytest.approx(12_000)   # one node x 12 kW


@pytest.mark.parametrize(("flag", "message"), [
    ("--system", "aiinfra: error: --system: no system 'dgx-a100' (did you mean dgx-h100 or dgx-b200? known: atlas-800t-a2, atlas-800t-a3, atlas-900-a3-superpod, dgx-b200, dgx-h100, gb200-nvl72, gb300-nvl72)\n"),
    ("--grid", "aiinfra: error: --grid: no grid preset 'dgx-a100' (known: france-2022-bloom, meta-llama31-2024)\n"),
])
def test_power_tco_unknown_preset_exit_2(capsys, flag, message):
    code, out, err = run(["--root", str(ROOT), "calc", "power-tco", flag, "dgx-a100", "--set", "n_gpus=8"], capsys)
    assert (code, out, err) == (2, "", message)


def test_check_reports_the_system_rules(capsys):
    code, out, err = run(["--root", str(RULES), "check"], capsys)
    lines = out.splitlines()
    assert code == 1
    assert lines[:2] == [
        "knowledge/systems/missing-device.yaml:1 sys:missing-device gpus.device: hw:not-there is not a device of knowledge/hardware",
        "knowledge/systems/over-tdp.yaml:2 sys:over-tdp max_power.value: 5kW is below the GPUs alone: 8 x 700W (hw:gpu-a TDP) = 5.6 kW",
    ]
    assert lines[-1].startswith("FAILED: ") and "5 systems, 0 grid presets" in lines[-1] and lines[-1].endswith("; 4 problems")
