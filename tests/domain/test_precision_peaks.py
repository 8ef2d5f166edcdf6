"""Per-format peaks (NVFP4, MXFP4, MXFP6, MXFP8) in the hardware records and their refusal.

Figures are the vendors': NVIDIA HGX B200 specifications (8 GPUs): FP4 Tensor Core 144 PFLOPS
with sparsity, so 144 / 8 / 2 = 9 PFLOPS dense per GPU; FP8/FP6 72 PFLOPS sparse -> 4.5 dense.
GB200 NVL72 specifications (superchip = 2 GPUs): FP4 40 PFLOPS sparse -> 40 / 2 / 2 = 10 dense,
the 10 PFLOPS dense NVFP4 NVIDIA's Blackwell Ultra blog (2025-08) gives for Blackwell. AMD
MI355X specifications (2025): Peak MXFP4 10.1 PFLOPs and Peak MXFP6 10.1 PFLOPs (10066.3 TFLOPS);
AMD states no NVFP4 figure, so --precision nvfp4 on the MI355X is refused.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

from engine.cli.main import main
from engine.core.errors import InputError
from engine.domain import hardware
from engine.kb.knowledge import Knowledge

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hw(tmp_path_factory):
    root = tmp_path_factory.mktemp("hw-root")
    shutil.copytree(ROOT / "knowledge" / "hardware", root / "knowledge" / "hardware")
    return ["--root", str(root)]


@pytest.fixture(scope="module")
def dev(hw):
    return hardware.devices(Knowledge.load(hw[1]))


SELECTED = [
    ("b200", "nvfp4", False, 9e15, "144 PFLOPS / 8 GPUs / 2 (dense)"),
    ("b200", "mxfp4", False, 9e15, "the same FP4 path (PTX .kind::mxf4 and .kind::mxf4nvf4 are both m16n8k64)"),
    ("b200", "nvfp4", True, 18e15, "144 PFLOPS / 8 GPUs (with sparsity)"),
    ("b200", "mxfp8", False, 4.5e15, "72 PFLOPS / 8 / 2"),
    ("b200", "mxfp6", False, 4.5e15, "FP8/FP6 72 PFLOPS / 8 / 2"),
    ("gb200", "nvfp4", False, 10e15, "40 PFLOPS / 2 GPUs / 2"),
    ("gb200", "mxfp8", False, 5e15, "20 PFLOPS / 2 / 2"),
    ("mi355x", "mxfp4", False, 10066.3e12, "AMD: Peak MXFP4 10.1 PFLOPs"),
    ("mi355x", "mxfp6", False, 10066.3e12, "AMD: Peak MXFP6 10.1 PFLOPs"),
]


@pytest.mark.parametrize("name, fmt, sparse, flops, where", SELECTED, ids=[f"{s[0]}-{s[1]}-{s[2]}" for s in SELECTED])
def test_a_format_selects_the_peak_stated_for_it(dev, name, fmt, sparse, flops, where):
    sel = hardware.select_peak(dev[f"hw:{name}"], fmt, sparse=sparse)
    assert sel.peak.flops == pytest.approx(flops, rel=1e-12), where
    assert sel.peak.precision == hardware.FORMATS[fmt] and fmt in sel.peak.formats
    assert sel.notes[0].startswith(f"{fmt} runs on the {hardware.FORMATS[fmt]} matrix path")


REFUSED = [("mi355x", "nvfp4"), ("mi355x", "mxfp8"), ("h100-sxm", "mxfp4"), ("h100-sxm", "nvfp4"), ("a100-sxm-80gb", "mxfp8")]


@pytest.mark.parametrize("name, fmt", REFUSED)
def test_a_format_without_a_stated_peak_is_refused_listing_the_formats(dev, name, fmt):
    d = dev[f"hw:{name}"]
    with pytest.raises(InputError) as info:
        hardware.select_peak(d, fmt)
    assert info.value.field == "--precision"
    assert f"hw:{name} has no {fmt} peak" in info.value.message
    assert info.value.message.endswith("its formats: " + ", ".join(hardware.device_formats(d)))


def test_device_formats_list_precisions_then_stated_formats(dev):
    # MI355X peaks: fp32, bf16, fp16, fp8, fp6, fp4, int8; MXFP6 and MXFP4 stated by AMD
    assert hardware.device_formats(dev["hw:mi355x"]) == ("fp32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8", "mxfp4", "mxfp6")
    assert hardware.device_formats(dev["hw:b200"])[-4:] == ("nvfp4", "mxfp4", "mxfp6", "mxfp8")


def test_plain_fp4_still_selects_and_hopper_has_none(dev):
    assert hardware.select_peak(dev["hw:b200"], "fp4").peak.flops == pytest.approx(9e15, rel=1e-12)
    with pytest.raises(InputError) as info:
        hardware.select_peak(dev["hw:h100-sxm"], "fp4")
    assert info.value.field == "--precision" and "has no fp4 peak" in info.value.message


def test_a_format_on_the_wrong_element_precision_is_a_record_problem(hw):
    record = copy.deepcopy(Knowledge.load(hw[1]).hardware["hw:mi355x"])
    fp8 = next(p for p in record["peaks"] if p["precision"] == "fp8")
    fp8["formats"], fp8["formats_source"] = ["mxfp4"], "test"
    problems = hardware.record_problems(record)
    assert any(path.endswith(".formats") and "mxfp4 has fp4 elements, not fp8" in msg for path, msg in problems)


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_roofline_with_nvfp4_on_b200(capsys, hw):
    # 9e15 FLOP over 8e12 B: intensity 1125 FLOP/B = ridge 9e15 / 8e12 = 1125; 1 s either way
    code, out, err = run([*hw, "roofline", "--device", "b200", "--precision", "nvfp4", "--flops", "9e15", "--bytes", "8e12"], capsys)
    assert (code, err) == (0, "")
    assert "note: nvfp4 runs on the fp4 matrix path" in out and "time bound = 1 s" in out


@pytest.mark.parametrize("device, fmt", [("mi355x", "nvfp4"), ("h100-sxm", "mxfp4")])
def test_roofline_refuses_a_format_the_device_has_no_peak_for(capsys, hw, device, fmt):
    code, out, err = run([*hw, "roofline", "--device", device, "--precision", fmt, "--flops", "1e12", "--bytes", "1e9"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"aiinfra: error: --precision: hw:{device} has no {fmt} peak"), err
    assert "its formats: " in err


def test_the_schema_wants_a_source_for_stated_formats(hw):
    from engine.kb import schema
    from engine.kb.yamlio import plain

    record = copy.deepcopy(plain(Knowledge.load(hw[1]).hardware["hw:b200"]))
    fp4 = next(p for p in record["peaks"] if p["precision"] == "fp4" and p["sparsity"] == "dense")
    assert schema.validate("hardware", record, "b200.yaml", "hw:b200") == []
    del fp4["formats_source"]
    assert schema.validate("hardware", record, "b200.yaml", "hw:b200")
    fp4["formats"], fp4["formats_source"] = ["fp4e2m1"], "test"
    assert schema.validate("hardware", record, "b200.yaml", "hw:b200")
