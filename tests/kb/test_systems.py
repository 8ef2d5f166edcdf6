"""System records (knowledge/systems/*.yaml) and their check rules (engine.domain.systems).

Every number asserted is a vendor figure transcribed from the page named beside it, or hand
arithmetic shown on the line. The rule tests use tests/fixtures/roots/system_rules/, whose
made-up device is 80GB and 700W: each system file there breaks one rule (or none: fits.yaml).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from engine.core.errors import InputError
from engine.domain import systems
from engine.kb.knowledge import Knowledge, load_single_folder

ROOT = Path(__file__).resolve().parents[2]
RULES = Path(__file__).parent.parent / "fixtures" / "roots" / "system_rules"

B200_GUIDE = "NVIDIA DGX B200 User Guide, Introduction to NVIDIA DGX B200 Systems"
BASEPOD = "NVIDIA DGX BasePOD Reference Architecture, Core Components, NVIDIA DGX H200 and H100 Systems"


@pytest.fixture(scope="module")
def shipped():
    return load_single_folder(ROOT, "systems").systems, load_single_folder(ROOT, "hardware").hardware


def test_dgx_b200_figures(shipped):
    found, hardware = shipped
    r = found["sys:dgx-b200"]
    # B200_GUIDE, Component Descriptions: 8 x NVIDIA B200 GPUs, 1,440 GB total GPU memory
    assert (r["gpus"]["count"], r["gpus"]["device"], r["gpus"]["total_memory"]) == (8, "hw:b200", "1440GB")
    assert r["max_power"]["value"] == "14.3kW"                    # B200_GUIDE, Power Specifications: 14.3 kW max.
    psu = r["power_supplies"]                                     # B200_GUIDE: 6 x 3.3 kW, 5+1 redundancy
    assert (psu["count"], psu["rating"], psu["redundancy"]) == (6, "3.3kW", "5+1")
    assert (r["cpus"]["count"], r["cpus"]["cores_per_cpu"]) == (2, 56)   # B200_GUIDE: 2 x Intel Xeon 8570, 56 cores each
    assert r["system_memory"]["capacity"] == "2TB"                # B200_GUIDE: 2 TB using 32 x DIMMs
    assert r["rack_units"]["value"] == 10                         # B200_GUIDE, Mechanical Specifications: 10U Rackmount
    link = r["nvlink"]                                            # B200_GUIDE: 2 x 5th generation NVLink switches, 14.4 TB/s aggregate
    assert (link["domain_gpus"], link["switches"], link["aggregate_bandwidth"]) == (8, 2, "14.4TB/s")
    nics = {n["role"]: n for n in r["nics"]}                      # B200_GUIDE: 8 x ConnectX-7 single port (cluster), 2 x BlueField-3 dual port (storage)
    assert (nics["compute"]["count"], nics["compute"]["speed"]) == (8, "400Gb/s")
    assert (nics["storage"]["count"], nics["storage"]["ports_per_card"], nics["storage"]["speed"]) == (2, 2, "400Gb/s")
    assert B200_GUIDE in r["sources"][0]

    s = systems.summary(r, hardware["hw:b200"])
    assert s["max_power_w"] == 14_300                             # 14.3 kW
    assert s["gpu_power_w"] == 8 * 1000                           # 8 x 1,000 W (hw:b200 TDP, Blackwell technical brief)
    assert s["non_gpu_power_w"] == pytest.approx(14_300 - 8_000)  # 6.3 kW for everything but the GPUs
    assert s["gpu_memory_bytes"] == 1440e9
    assert s["compute_nic_Bps"] == 8 * 400e9 / 8                  # 8 ports x 400 Gb/s = 3.2 Tb/s = 400 GB/s
    assert s["storage_nic_Bps"] == 2 * 2 * 400e9 / 8              # 4 ports x 400 Gb/s = 200 GB/s


def test_dgx_h100_figures(shipped):
    found, hardware = shipped
    r = found["sys:dgx-h100"]
    # BASEPOD: eight NVIDIA Hopper GPUs, 640 GB total GPU memory for H100, four NVSwitch chips
    assert (r["gpus"]["count"], r["gpus"]["device"], r["gpus"]["total_memory"]) == (8, "hw:h100-sxm", "640GB")
    assert (r["nvlink"]["domain_gpus"], r["nvlink"]["switches"]) == (8, 4)
    assert (r["cpus"]["count"], r["cpus"]["cores_total"]) == (2, 112)       # BASEPOD: dual Xeon Platinum 8480C, 112 cores total
    assert (r["system_memory"]["capacity"], r["system_memory"]["type"]) == ("2TB", "DDR5")  # BASEPOD: 2 TB of DDR5
    compute = [n for n in r["nics"] if n["role"] == "compute"]
    assert [(n["count"], n["speed"]) for n in compute] == [(8, "400Gb/s")]  # BASEPOD: eight single-port ConnectX-7, up to 400 Gb/s
    # NVIDIA DGX H100 datasheet / user guide, as quoted: 10.2 kW max, six 3.3 kW PSUs in 4+2, 8U
    assert (r["max_power"]["value"], r["power_supplies"]["count"], r["power_supplies"]["redundancy"], r["rack_units"]["value"]) == (
        "10.2kW", 6, "4+2", 8)
    s = systems.summary(r, hardware["hw:h100-sxm"])
    # 8 x 700 W (H100 SXM datasheet) of the 10.2 kW maximum: 4.6 kW for the rest of the system
    assert (s["gpu_power_w"], s["max_power_w"], s["non_gpu_power_w"]) == (8 * 700, 10_200, 10_200 - 5_600)


def test_shipped_systems_break_no_rule(shipped):
    found, hardware = shipped
    k = SimpleNamespace(systems=found, hardware=hardware, places={})
    assert systems.problems(k) == []


def test_rules_on_the_fixture_root():
    k = Knowledge.load(RULES, strict=False)
    assert k.problems == []  # every file is schema-valid: only the cross-record rules object
    assert [str(p) for p in systems.problems(k)] == [
        "knowledge/systems/missing-device.yaml:1 sys:missing-device gpus.device: hw:not-there is not a device of knowledge/hardware",
        # 8 x 700 W = 5.6 kW > 5 kW
        "knowledge/systems/over-tdp.yaml:2 sys:over-tdp max_power.value: 5kW is below the GPUs alone: 8 x 700W (hw:gpu-a TDP) = 5.6 kW",
        # 2 of 2+2 supplies x 3 kW = 6 kW < 10 kW
        "knowledge/systems/weak-supplies.yaml:2 sys:weak-supplies power_supplies: 2 x 3kW (the N of 2+2) is below max_power 10kW",
        # 8 x 80GB = 640GB, not 700GB
        "knowledge/systems/wrong-memory.yaml:2 sys:wrong-memory gpus.total_memory: 700GB is not 8 x 80GB (hw:gpu-a memory) = 640GB",
    ]


def test_power_equal_to_the_gpus_passes():
    device = {"tdp": {"value": "700W"}, "memory": {"capacity": "80GB"}}
    record = {"gpus": {"count": 8, "device": "hw:x", "source": "s"}, "max_power": {"value": "5.6kW", "source": "s"}}
    assert systems.record_problems(record, {"hw:x": device}) == []          # 8 x 700 W = 5.6 kW exactly: fits
    record["max_power"]["value"] = "5.5kW"
    assert systems.record_problems(record, {"hw:x": device}) == [
        ("max_power.value", "5.5kW is below the GPUs alone: 8 x 700W (hw:x TDP) = 5.6 kW")]


def test_schema_refuses_a_bad_record(tmp_path):
    path = tmp_path / "knowledge" / "systems" / "bad.yaml"
    path.parent.mkdir(parents=True)
    path.write_text('id: sys:bad\nname: B\nvendor: V\nas_of: "2026-12"\n'
                    'gpus: {count: 0, device: h100, source: "made-up figures"}\n'
                    'max_power: {value: 10 kW, source: "made-up figures"}\nsources: ["made-up figures"]\n', encoding="utf-8")
    assert [str(p) for p in Knowledge.load(tmp_path, strict=False).problems] == [
        "knowledge/systems/bad.yaml:5:15 sys:bad gpus.count: 0 is less than the minimum of 1",
        # columns counted by hand: "gpus: {count: 0, device: " is 25 characters, "max_power: {value: " 19
        "knowledge/systems/bad.yaml:5:26 sys:bad gpus.device: 'h100' does not match the expected form ^hw:[a-z0-9][a-z0-9_.+-]*$",
        "knowledge/systems/bad.yaml:6:20 sys:bad max_power.value: '10 kW' does not match the expected form ^[0-9]+(\\.[0-9]+)?(W|kW)$",
    ]


def test_system_presets_for_power_tco(shipped):
    found, hardware = shipped
    values = systems.system_values(found["sys:dgx-b200"], hardware["hw:b200"])
    assert values["gpus_per_node"][0] == 8
    assert values["node_power"][0] == 14_300                      # B200_GUIDE, Power Specifications: 14.3 kW max.
    assert values["it_power_model"][0] == "node_power"
    assert values["gpu_tdp"][0] == 1000                           # hw:b200 TDP
    assert "14.3 kW max." in values["node_power"][1]              # each value names its source
    h100 = systems.system_values(found["sys:dgx-h100"], hardware["hw:h100-sxm"])
    assert h100["node_power"][0] == 10_200                        # DGX H100 datasheet: ~10.2 kW max
    assert h100["it_power_model"][0] == "node_power"


@pytest.mark.parametrize(("text", "message"), [
    ("dgx-b300", "ID: no system 'dgx-b300' (did you mean dgx-b200 or dgx-h100? known: atlas-800t-a2, atlas-800t-a3, atlas-900-a3-superpod, dgx-b200, dgx-h100, gb200-nvl72, gb300-nvl72)"),
    ("DGX-B200!", "ID: 'DGX-B200!' is not a sys id (expected sys:name)"),
])
def test_find_refuses_unknown_ids(shipped, text, message):
    with pytest.raises(InputError) as info:
        systems.find(shipped[0], text)
    assert str(info.value) == message


def test_find_takes_bare_full_and_upper_case_ids(shipped):
    assert systems.find(shipped[0], "sys:dgx-h100")["id"] == systems.find(shipped[0], "DGX-H100")["id"] == "sys:dgx-h100"
