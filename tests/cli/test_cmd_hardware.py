"""``aiinfra hardware list|show``: every format, and bad input as one line with exit 2.

Numbers asserted are the vendors' figures named beside them.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from engine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
COUNT = len(list((ROOT / "knowledge" / "hardware").glob("*.yaml")))


@pytest.fixture(scope="module")
def hw(tmp_path_factory):
    """``--root`` of a copy of the shipped hardware records alone: the handlers are the same,
    the load skips the formulas and models (about 1 s a call on the full root)."""
    root = tmp_path_factory.mktemp("hw-root")
    shutil.copytree(ROOT / "knowledge" / "hardware", root / "knowledge" / "hardware")
    return ["--root", str(root)]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_list_text(capsys, hw):
    code, out, err = run([*hw, "hardware", "list"], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["id", "vendor", "name", "per", "memory", "bandwidth", "bf16", "dense", "fp8", "dense", "TDP"]
    assert len(lines) == COUNT + 2
    cells = {row[0]: row for row in (re.split(r"\s{2,}", line) for line in lines[2:])}
    # H100 datasheet 80GB, 3.35TB/s, 700W; Hopper whitepaper dense BF16 989.4, FP8 1978.9 (FP32 accumulate)
    assert cells["h100-sxm"] == ["h100-sxm", "NVIDIA", "NVIDIA H100 SXM5 80GB", "gpu", "80GB", "3.35TB/s", "989.4TFLOPS", "1978.9TFLOPS", "700W"]
    assert cells["v100-sxm2-32gb"][-3:] == ["-", "-", "300W"]  # Volta: no BF16, no FP8 tensor path


def test_list_json_has_canonical_numbers(capsys, hw):
    code, out, _ = run([*hw, "hardware", "list", "--format", "json"], capsys)
    rows = {r["id"]: r for r in json.loads(out)}
    assert code == 0 and len(rows) == COUNT
    assert rows["h100-sxm"]["bf16_flops"] == 989.4e12         # Hopper whitepaper, dense BF16
    assert rows["h100-sxm"]["memory_bytes"] == 80e9           # datasheet "80GB"
    assert rows["tpu-v4"]["memory_bytes"] == 32 * 2**30       # Cloud TPU docs "32 GiB"
    assert rows["gb200"]["counted_as"] == "gpu" and rows["mi250x"]["counted_as"] == "gcd"
    assert rows["tpu-v6e"]["tdp_w"] is None                   # Google publishes no TDP


def test_list_csv_and_md(capsys, hw):
    _, out, _ = run([*hw, "hardware", "list", "--format", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == COUNT and rows[0].keys() >= {"id", "bf16", "bf16_flops", "memory_bytes"}
    _, out, _ = run([*hw, "hardware", "list", "--format", "md"], capsys)
    assert out.splitlines()[0] == "| id | vendor | name | per | memory | bandwidth | bf16 dense | fp8 dense | TDP |"


def test_show_text_lists_every_peak_with_its_source(capsys, hw):
    code, out, _ = run([*hw, "hardware", "show", "h100-sxm"], capsys)
    assert code == 0
    assert out.startswith("hw:h100-sxm · NVIDIA H100 SXM5 80GB (NVIDIA, SXM5 module)")
    assert "Memory: 80GB HBM3 nominal (8e10 B = 74.51 GiB = 80 GB), bandwidth 3.35TB/s" in out
    assert "Interconnect: NVLink 4: 450GB/s per direction, 900GB/s both directions (18 links)" in out
    peaks = [line for line in out.splitlines() if line.startswith(("bf16 ", "int8 "))]
    assert [line.split()[:5] for line in peaks] == [
        ["bf16", "fp32", "tensor_core", "dense", "989.4TFLOPS"],
        ["bf16", "fp32", "tensor_core", "sparse_2_4", "1979TFLOPS"],
        ["int8", "int32", "tensor_core", "dense", "1978.9TOPS"],
        ["int8", "int32", "tensor_core", "sparse_2_4", "3958TOPS"],
    ]
    assert "Measured (achieved / peak):" in out and "38%-43%" in out


def test_show_derivations_are_printed(capsys, hw):
    _, out, _ = run([*hw, "hardware", "show", "hw:gb200"], capsys)
    assert "Counted as: one gpu; 2 per GB200 Grace Blackwell Superchip" in out
    assert "per GPU = 10/2; dense = sparse/2: only the sparse figure is published" in out


def test_show_json_is_the_record_plus_parsed_numbers(capsys, hw):
    code, out, _ = run([*hw, "hardware", "show", "mi300x", "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["id"] == "hw:mi300x"
    assert data["memory"]["capacity"] == "192GB" and data["parsed"]["memory_bytes"] == 192e9
    bf16 = [p for p in data["parsed"]["peaks"] if p["precision"] == "bf16"]
    assert [(p["sparsity"], p["flops"]) for p in bf16] == [("dense", 1307.4e12), ("sparse_2_4", 2614.9e12)]  # AMD MI300X data sheet


def test_show_csv_and_md(capsys, hw):
    _, out, _ = run([*hw, "hardware", "show", "tpu-v5p", "--format", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["precision"], float(r["value_flops"])) for r in rows] == [("bf16", 459e12), ("fp8", 459e12), ("int8", 918e12)]
    _, out, _ = run([*hw, "hardware", "show", "tpu-v5p", "--format", "md"], capsys)
    assert out.startswith("# hw:tpu-v5p · Google Cloud TPU v5p") and "## Peaks" in out


@pytest.mark.parametrize("argv, message", [
    (["hardware", "show", "h800"], "aiinfra: error: ID: no device 'h800' (did you mean h200 or h800-sxm? known: a10, a100-pcie-40gb, a100-pcie-80gb,"),
    (["hardware", "show", "h100-sx"], "aiinfra: error: ID: no device 'h100-sx' (did you mean h100-sxm or h800-sxm or h100-nvl? known: a10, a100-pcie-40gb, a100-pcie-80gb,"),
    (["hardware", "show", "Not An Id"], "aiinfra: error: ID: 'Not An Id' is not a hw id (expected hw:name)"),
    (["--root", "/nonexistent/aiinfra-root", "hardware", "list"], "aiinfra: error: --root: '/nonexistent/aiinfra-root' is not a folder"),
])
def test_bad_input(capsys, hw, argv, message):
    code, out, err = run(argv if argv[0] == "--root" else [*hw, *argv], capsys)
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1, err


def test_a_root_without_hardware_lists_nothing(tmp_path, capsys):
    (tmp_path / "knowledge").mkdir()  # a root (a folder with no knowledge folder at all is bad input: tests/cli/test_cli.py)
    code, out, _ = run(["--root", str(tmp_path), "hardware", "list", "--format", "json"], capsys)
    assert (code, json.loads(out)) == (0, [])


def test_show_prints_the_driver_reported_memory_beside_the_nominal(capsys, hw):
    # knowledge/hardware/h100-sxm.yaml: driver_total 79.18GiB (vLLM start-up log); 79.18 x 2^30 = 85,018,877,624 B = 85.02 GB
    code, out, _ = run([*hw, "hardware", "show", "h100-sxm"], capsys)
    lines = out.splitlines()
    memory = next(i for i, line in enumerate(lines) if line.startswith("Memory: "))
    assert code == 0 and lines[memory + 1].startswith("Usable (driver-reported): 79.18GiB (8.502e10 B = 79.18 GiB = 85.02 GB), what serving engines budget from [vLLM start-up logs")
    _, out, _ = run([*hw, "hardware", "show", "h100-sxm", "--format", "json"], capsys)
    assert json.loads(out)["parsed"]["driver_total_bytes"] == pytest.approx(79.18 * 2**30)


def test_show_without_a_recorded_driver_total_prints_the_derived_one_labelled(capsys, hw):
    # h100-pcie.yaml cites no driver total: 80 GB read as 80 GiB x 0.99 = 79.20 GiB = 85,040,906,650 B (engine/domain/usable_memory.py)
    _, out, _ = run([*hw, "hardware", "show", "h100-pcie"], capsys)
    lines = out.splitlines()
    memory = next(i for i, line in enumerate(lines) if line.startswith("Memory: "))
    assert lines[memory].startswith("Memory: 80GB HBM2e nominal") and "driver-reported" not in out
    assert lines[memory + 1].startswith("Usable (derived): 79.20GiB (8.504e10 B = 79.2 GiB = 85.04 GB), what serving engines budget "
                                        "from [derived, not measured: the nominal HBM capacity read in binary units")
    _, out, _ = run([*hw, "hardware", "show", "h100-pcie", "--format", "json"], capsys)
    parsed = json.loads(out)["parsed"]
    assert parsed["driver_total_bytes"] == pytest.approx(79.2 * 2**30) and parsed["driver_total_basis"] == "derived"
    _, out, _ = run([*hw, "hardware", "show", "mi300x", "--format", "json"], capsys)
    parsed = json.loads(out)["parsed"]  # mi300x.yaml: 196592MiB (hipDeviceQuery) = 206,141,652,992 B
    assert (parsed["driver_total_bytes"], parsed["driver_total_basis"]) == (196592 * 2**20, "measured")


def test_help_explains_the_three_memory_figures(capsys, hw):
    code, out, _ = run(["hardware", "show", "--help"], capsys)
    text = " ".join(out.split())
    assert code == 0
    assert "Three memory figures. Nominal: the vendor's capacity as the datasheet prints it (H100 SXM: 80GB)" in text
    assert "GiB: the same bytes in binary units (8e10 B = 74.51 GiB)" in text  # 8e10 / 2^30 = 74.506
    assert "usable: the total the driver reports (torch.cuda.mem_get_info, deviceQuery; nvidia-smi prints about 0.5 GiB more" in text  # "Driver-reported" may wrap at the hyphen
    assert "an HBM device's usable total is derived, and labelled derived: the nominal number read as GiB x 0.99 (H200: 141 GB -> 139.59 GiB)" in text


@pytest.mark.parametrize("typed", ["H100-SXM", "HW:H100-SXM", " h100-sxm "])
def test_device_ids_are_case_insensitive(capsys, hw, typed):
    code, out, err = run([*hw, "hardware", "show", typed], capsys)
    assert (code, err) == (0, "") and out.startswith("hw:h100-sxm · NVIDIA H100 SXM5 80GB")


def test_the_site_hardware_page_explains_the_memory_figures(hw):
    from engine.domain.hardware import MEMORY_FIGURES
    from engine.site.data import load as load_site_data
    from engine.site.knowledge_pages import hardware_table

    text = hardware_table(load_site_data(hw[1])).text
    assert f"\n\n{MEMORY_FIGURES}\n\n" in text  # the same paragraph as `hardware show --help`, written once
    assert "| NVIDIA | 80GB HBM3 (driver-reported 79.18GiB) | 3.35TB/s |" in text  # h100-sxm.yaml: capacity 80GB, driver_total 79.18GiB
    assert "| NVIDIA | 80GB HBM2e (derived 79.20GiB) | 2TB/s |" in text  # h100-pcie.yaml: no driver total; 80 x 0.99 = 79.20 GiB


def test_a_record_that_states_no_peak_loads_shows_and_refuses_by_name(tmp_path, capsys):
    # Issue 28: Apple publishes no GPU FLOP rate for the M3/M4 families, so such a record carries `peaks: []`.
    # Before, the schema demanded one peak (an invented one or no record); now the record loads, `hardware show`
    # prints it, and a peak-driven question is refused naming that no peak is stated.
    import yaml

    from engine.core.errors import InputError
    from engine.domain import hardware
    from engine.kb.knowledge import load_single_folder

    record = yaml.safe_load((ROOT / "knowledge" / "hardware" / "rtx-pro-6000-blackwell-workstation.yaml").read_text(encoding="utf-8"))
    record.update(id="hw:no-peak-test", peaks=[])
    folder = tmp_path / "knowledge" / "hardware"
    folder.mkdir(parents=True)
    (folder / "no-peak-test.yaml").write_text(yaml.safe_dump(record, sort_keys=False), encoding="utf-8")
    code, out, err = run(["--root", str(tmp_path), "hardware", "show", "no-peak-test"], capsys)
    assert (code, err) == (0, "") and "hw:no-peak-test" in out
    device = hardware.find(load_single_folder(tmp_path, "hardware"), "no-peak-test", "--device")
    assert device.headline("bf16") is None
    with pytest.raises(InputError, match="the vendor states no peak for this device"):
        hardware.select_peak(device, "bf16")
