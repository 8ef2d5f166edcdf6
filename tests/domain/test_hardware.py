"""engine/domain/hardware.py and knowledge/hardware/: datasheet peaks, units, and the refusals.

Every expected number is the vendor's figure named beside it (the same document the record
cites), or hand arithmetic on such figures written next to it.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from engine.core.errors import InputError
from engine.domain import hardware
from engine.kb.knowledge import Knowledge

ROOT = Path(__file__).resolve().parents[2]
HW_FILES = sorted((ROOT / "knowledge" / "hardware").glob("*.yaml"))


def peak(dev, name, precision, sparsity="dense", accumulator=None, unit=None):
    found = [p for p in dev[f"hw:{name}"].peaks if p.precision == precision and p.sparsity == sparsity
             and (accumulator is None or p.accumulator == accumulator) and (unit is None or p.unit == unit)]
    assert len(found) == 1, f"{name} {precision} {sparsity} {accumulator} {unit}: {found}"
    return found[0]


# ----------------------------------------------------------------------------- the shipped records


def test_every_shipped_record_loads_and_passes_the_cross_field_rules(k):
    assert len(HW_FILES) >= 25
    assert sorted(k.hardware) == sorted(f"hw:{p.stem}" for p in HW_FILES)  # file name = id
    assert hardware.problems(k) == []
    assert len(hardware.devices(k)) == len(HW_FILES)


def test_the_issue_list_of_accelerators_is_covered(k):
    wanted = ["a100-sxm-80gb", "h100-sxm", "h100-pcie", "h200", "h20", "b200", "gb200", "l40s", "l4", "rtx-4090", "rtx-5090",
              "mi250x", "mi300x", "mi325x", "mi355x", "gaudi2", "gaudi3", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e",
              "ascend-910b", "ascend-910c",
              # issue #13's additions
              "a100-sxm-40gb", "b300", "gb300", "mi350x", "tpu7x", "trainium3", "ascend-950dt"]
    assert [w for w in wanted if f"hw:{w}" not in k.hardware] == []


DATASHEET = [
    # device, precision, sparsity, accumulator, FLOP/s, where the number is printed
    ("h100-sxm", "bf16", "dense", "fp32", 989.4e12, "H100 whitepaper WP-10792-001: BF16 with FP32 accumulate 989.4"),
    ("h100-sxm", "bf16", "sparse_2_4", "fp32", 1979e12, "H100 datasheet: BFLOAT16 Tensor Core 1,979 teraFLOPS*"),
    ("h100-sxm", "tf32", "dense", "fp32", 494.7e12, "H100 whitepaper: TF32 Tensor 494.7"),
    ("h100-sxm", "fp8", "dense", "fp32", 1978.9e12, "H100 whitepaper: FP8 with FP32 accumulate 1978.9"),
    ("a100-sxm-80gb", "bf16", "dense", "fp32", 312e12, "A100 datasheet: BFLOAT16 Tensor Core 312 TFLOPS | 624*"),
    ("a100-sxm-80gb", "bf16", "sparse_2_4", "fp32", 624e12, "A100 datasheet: 624 TFLOPS*"),
    ("a100-sxm-80gb", "tf32", "dense", "fp32", 156e12, "A100 datasheet: TF32 156 TFLOPS"),
    ("l40s", "bf16", "dense", "fp32", 362.05e12, "L40S datasheet: BFLOAT16 Tensor Core 362.05 | 733*"),
    ("rtx-4090", "bf16", "dense", "fp32", 165.2e12, "Ada whitepaper: RTX 4090 BF16 with FP32 accumulate 165.2"),
    ("mi300x", "bf16", "dense", "fp32", 1307.4e12, "AMD MI300X: Peak bfloat16 1307.4 TFLOPs"),
    ("mi300x", "bf16", "sparse_2_4", "fp32", 2614.9e12, "AMD MI300X: with structured sparsity 2614.9 TFLOPs"),
    ("mi300x", "fp8", "dense", "fp32", 2614.9e12, "AMD MI300X: Peak FP8 2614.9 TFLOPs"),
    ("tpu-v4", "bf16", "dense", "fp32", 275e12, "Cloud TPU v4: 275 teraflops (bf16 or int8)"),
    ("tpu-v5e", "bf16", "dense", "fp32", 197e12, "Cloud TPU v5e: 197 TFLOPs"),
    ("tpu-v5p", "bf16", "dense", "fp32", 459e12, "Cloud TPU v5p: 459 TFLOPs"),
    ("tpu-v6e", "bf16", "dense", "fp32", 918e12, "Cloud TPU v6e: 918 TFLOPs"),
    ("gaudi3", "bf16", "dense", "fp32", 1835e12, "Intel Hot Chips 2024: BF16 Matrix TFLOPs 1835"),
    ("trainium2", "bf16", "dense", "unstated", 667e12, "AWS Neuron docs: 667 BF16/FP16/TF32 TFLOPS"),
    ("a100-sxm-40gb", "bf16", "dense", "fp32", 312e12, "A100 datasheet: BFLOAT16 Tensor Core 312 TFLOPS | 624* (40GB and 80GB SXM alike)"),
    ("tpu7x", "bf16", "dense", "unstated", 2307e12, "Cloud TPU7x (Ironwood) table: Peak compute per chip (BF16) (TFLOPs) 2307"),
    ("tpu7x", "fp8", "dense", "unstated", 4614e12, "Cloud TPU7x (Ironwood) table: Peak compute per chip (FP8) (TFLOPs) 4614"),
    ("trainium3", "bf16", "dense", "unstated", 671e12, "AWS Neuron docs, Trainium3: 671 BF16/FP16/TF32 TFLOPS"),
    ("trainium3", "fp4", "dense", "unstated", 2517e12, "AWS Neuron docs, Trainium3: 2,517 MXFP8/MXFP4 TFLOPS"),
    ("b300", "fp4", "dense", "unstated", 14e15, "Blackwell Ultra datasheet, HGX B300: FP4 Tensor Core 18 | 14 PFLOPS (sparse | dense)"),
    ("b300", "bf16", "sparse_2_4", "fp32", 4.5e15, "Blackwell Ultra datasheet, HGX B300: FP16/BF16 Tensor Core 4.5 PFLOPS (with sparsity)"),
    ("gb300", "fp4", "dense", "unstated", 15e15, "Blackwell Ultra datasheet, GB300: FP4 Tensor Core 20 | 15 PFLOPS; NVIDIA blog: 15 PetaFLOPS dense NVFP4"),
    ("gb300", "fp8", "sparse_2_4", "unstated", 10e15, "Blackwell Ultra datasheet, GB300: FP8/FP6 Tensor Core 10 PFLOPS (with sparsity)"),
    ("mi350x", "fp4", "dense", "fp32", 9227.5e12, "AMD MI350X brochure: Peak MXFP4 9.2275 PFLOPs"),
    ("mi350x", "fp32", "dense", "fp32", 144.2e12, "AMD MI350X: Peak FP32 Vector 144.2 TFLOPs"),
    ("ascend-950dt", "fp4", "dense", "unstated", 2e15, "Huawei Connect 2025 keynote as reported: 950DT two petaflops of FP4 (MXFP4 2 PFLOPS)"),
]


@pytest.mark.parametrize("name, precision, sparsity, acc, expected, where", DATASHEET, ids=lambda x: str(x))
def test_stated_peaks_are_the_vendor_figures(dev, name, precision, sparsity, acc, expected, where):
    p = peak(dev, name, precision, sparsity, acc, unit=None if precision != "bf16" or name != "gaudi3" else "mme")
    assert p.flops == pytest.approx(expected, rel=1e-12), where
    assert p.derivation == "", f"{name} {precision}: stated directly in {where}"


DERIVED = [
    # device, precision, FLOP/s, hand arithmetic on the stated figure
    ("h100-pcie", "bf16", 1513e12 / 2, "H100 datasheet (2022) H100 PCIe: 1,513 TFLOPS with sparsity; dense = 1513 / 2 = 756.5"),
    ("l4", "fp8", 485e12 / 2, "L4 datasheet: FP8 485 teraFLOPS with sparsity; dense = 242.5"),
    ("h200", "bf16", 1979e12 / 2, "H200 datasheet: 1,979 TFLOPS with sparsity; dense = 989.5"),
    ("b200", "bf16", 36e15 / 8 / 2, "HGX B200: FP16/BF16 36 PFLOPS for 8 GPUs with sparsity; 36 / 8 / 2 = 2.25 PFLOPS"),
    ("gb200", "bf16", 10e15 / 2 / 2, "GB200 superchip: FP16/BF16 10 PFLOPS with sparsity for 2 GPUs; 10 / 2 / 2 = 2.5 PFLOPS"),
    ("gb200", "fp4", 40e15 / 2 / 2, "GB200 superchip: FP4 40 PFLOPS with sparsity; 40 / 2 / 2 = 10 PFLOPS"),
    ("mi250x", "bf16", 383e12 / 2, "MI250X module: bfloat16 383 TFLOPs; per GCD 383 / 2 = 191.5"),
    ("ascend-910c", "bf16", 752e12 / 2, "CloudMatrix384 paper: about 752 TFLOPS per package; per die 376"),
    ("b300", "bf16", 4.5e15 / 2, "Blackwell Ultra datasheet, HGX B300: FP16/BF16 4.5 PFLOPS with sparsity; dense = 2.25 (Verda: 2.25 without sparsity)"),
    ("gb300", "bf16", 5e15 / 2, "Blackwell Ultra datasheet, GB300: FP16/BF16 5 PFLOPS with sparsity; dense = 2.5 (GB300 NVL72: 360 PFLOPS sparse / 72 / 2 = 2.5)"),
    ("b300", "int8", 307e12 / 2, "Blackwell Ultra datasheet, HGX B300: INT8 307 TOPS with sparsity; dense = 153.5 (Verda: 0.15 POPS without sparsity)"),
    ("mi350x", "bf16", round(256 * 4096 * 2.2e9, -11), "256 CUs x 4,096 BF16 FLOP per clock x 2.2 GHz = 2,306.87 TFLOPS, to AMD's 0.1 TFLOPS 2,306.9; AMD: Peak bfloat16 2.3 PFLOPs"),
    ("mi350x", "fp8", round(256 * 8192 * 2.2e9, -11), "256 CUs x 8,192 FP8 FLOP per clock x 2.2 GHz = 4,613.73 TFLOPS, to 0.1 TFLOPS 4,613.7; AMD brochure: OCP-FP8 4.614 PFLOPs"),
    ("ascend-950dt", "fp8", 1e15, "Huawei Connect 2025 as reported: 1 PFLOPS FP8 per chip; Atlas 950 SuperPoD 8 EFLOPS / 8,192 chips = 0.98"),
]


@pytest.mark.parametrize("name, precision, expected, arithmetic", DERIVED, ids=lambda x: str(x))
def test_derived_peaks_say_how_they_were_derived(dev, name, precision, expected, arithmetic):
    p = peak(dev, name, precision)
    assert p.flops == pytest.approx(expected, rel=1e-12), arithmetic
    assert p.derivation, f"{name} {precision} is derived ({arithmetic}) and must say so"


def test_every_dense_peak_published_only_as_sparse_says_dense_is_half(dev):
    # a dense value whose source quotes only the '*' (with sparsity) figure must carry the derivation
    checked = 0
    for d in dev.values():
        for p in d.peaks:
            if p.sparsity == "dense" and "*" in p.source and "|" not in p.source:
                assert "sparse/2" in p.derivation, f"{d.id} {p.label}: {p.source}"
                checked += 1
    assert checked >= 20  # H100 PCIe/NVL, H200, H200 NVL, L4 print only starred figures


def test_sparse_figures_are_twice_dense_where_both_are_stated(dev):
    # the rule problems() enforces, shown on NVIDIA's own rounding: 1979 / 989.4 = 2.0002
    assert peak(dev, "h100-sxm", "bf16", "sparse_2_4").flops / peak(dev, "h100-sxm", "bf16").flops == pytest.approx(1979 / 989.4)


def test_memory_capacity_keeps_the_vendor_unit(dev):
    assert dev["hw:h100-sxm"].memory_bytes == 80e9               # "80GB" on the H100 datasheet: 80 x 10^9 B
    assert dev["hw:tpu-v4"].memory_bytes == 32 * 2**30           # "32 GiB" on the Cloud TPU v4 page: 34,359,738,368 B
    assert dev["hw:tpu-v5p"].memory_bytes == 95 * 2**30          # "HBM capacity per chip (GiB) 95"
    assert dev["hw:trainium2"].memory_bytes == 96 * 2**30        # "96 GiB of device memory"
    assert dev["hw:tpu-v6e"].memory_bytes == 32e9                # "32 GB"
    assert dev["hw:tpu7x"].memory_bytes == 192 * 2**30           # "HBM capacity per chip (GiB) 192"
    assert dev["hw:trainium3"].memory_bytes == 144 * 2**30       # "144 GiB of device memory"
    assert dev["hw:a100-sxm-40gb"].memory_bytes == 40e9          # "40GB HBM2"
    # GB and GiB are not the same number: 80GB is 74.5 GiB (80e9 / 2^30 = 74.506)
    assert dev["hw:h100-sxm"].memory_bytes / 2**30 == pytest.approx(74.50580596923828)


def test_bandwidths_in_bytes_per_second(dev):
    assert dev["hw:h100-sxm"].bandwidth == 3.35e12   # 3.35TB/s
    assert dev["hw:a100-sxm-80gb"].bandwidth == 2.039e12  # 2,039GB/s
    assert dev["hw:tpu-v4"].bandwidth == 1.2e12      # 1200 GBps
    assert dev["hw:tpu-v6e"].bandwidth == 1.638e12   # 1638 GBps
    assert dev["hw:tpu7x"].bandwidth == 7.38e12      # 7380 GBps
    assert dev["hw:trainium3"].bandwidth == 4.9e12   # 4.9 TB/sec (the NKI guide's 4.7 is noted, not used)
    assert dev["hw:a100-sxm-40gb"].bandwidth == 1.555e12  # 1,555GB/s


def test_multi_die_parts_are_counted_as_frameworks_see_them(dev):
    gb200, mi250x, c910 = dev["hw:gb200"], dev["hw:mi250x"], dev["hw:ascend-910c"]
    assert (gb200.counted_as["unit"], gb200.counted_as["per_package"]) == ("gpu", 2)
    assert "Grace CPU" in gb200.counted_as["package"]
    assert (mi250x.counted_as["unit"], mi250x.counted_as["per_package"]) == ("gcd", 2)
    assert mi250x.memory_bytes == 128e9 / 2          # AMD: 128GB per module, two GCDs
    assert mi250x.bandwidth == 3.2e12 / 2            # AMD: 3.2 TB/s per module
    assert gb200.memory_bytes == 372e9 / 2           # NVIDIA: up to 372GB per superchip, two GPUs
    assert (c910.counted_as["unit"], c910.counted_as["per_package"]) == ("die", 2)


def test_interconnect_per_direction_is_half_of_nvidias_bidirectional_figure(dev):
    link = dev["hw:h100-sxm"].interconnect
    assert (link["bidirectional"], link["per_direction"]) == ("900GB/s", "450GB/s")  # datasheet: NVLink 900GB/s


def test_integer_peaks_are_shown_as_tops(dev):
    p = peak(dev, "h100-sxm", "int8", "sparse_2_4")
    assert (p.text, p.shown, p.flops) == ("3958TFLOPS", "3958TOPS", 3958e12)  # datasheet: INT8 3,958 TOPS*


# ----------------------------------------------------------------------------- choosing a peak


def test_bf16_on_h100_is_the_dense_bf16_figure_never_sparse_or_tf32(dev):
    sel = hardware.select_peak(dev["hw:h100-sxm"], "bf16")
    assert sel.peak.flops == 989.4e12            # not 1979e12 (2:4 sparse) and not 494.7e12 (TF32)
    assert (sel.peak.precision, sel.peak.sparsity) == ("bf16", "dense")
    assert hardware.select_peak(dev["hw:h100-sxm"], "bf16", sparse=True).peak.flops == 1979e12


def test_bf16_on_a100_is_312_not_the_tf32_156(dev):
    assert hardware.select_peak(dev["hw:a100-sxm-80gb"], "BF16").peak.flops == 312e12


def test_missing_precision_is_refused_with_the_records_that_exist(dev):
    with pytest.raises(InputError) as info:
        hardware.select_peak(dev["hw:v100-sxm2-32gb"], "bf16")
    assert str(info.value) == (
        "--precision: hw:v100-sxm2-32gb has no bf16 peak; its peaks: "
        "fp64 dense (fp64 accumulate, cuda_core) 7.8TFLOPS; fp32 dense (fp32 accumulate, cuda_core) 15.7TFLOPS; "
        "fp16 dense (fp32 accumulate, tensor_core) 125TFLOPS"
    )


def test_tf32_never_stands_in_for_bf16():
    # a device that states TF32 and FP16 but no BF16 (as Volta-era and some vendor pages do)
    record = _record(peaks=[_peak("tf32", "fp32", "dense", "156TFLOPS"), _peak("fp16", "fp32", "dense", "312TFLOPS")])
    with pytest.raises(InputError) as info:
        hardware.select_peak(hardware.build(record), "bf16")
    assert info.value.field == "--precision"
    assert "has no bf16 peak" in info.value.message and "tf32 dense" in info.value.message


def test_sparse_only_is_used_only_with_sparse():
    record = _record(peaks=[_peak("bf16", "fp32", "sparse_2_4", "624TFLOPS")])
    with pytest.raises(InputError) as info:
        hardware.select_peak(hardware.build(record), "bf16")
    assert str(info.value) == (
        "--sparse: hw:test states only structured-sparse bf16 peaks (bf16 sparse_2_4 (fp32 accumulate, tensor_core) 624TFLOPS); "
        "pass --sparse to use one, knowing it holds only for sparse operands"
    )
    assert hardware.select_peak(hardware.build(record), "bf16", sparse=True).peak.flops == 624e12


def test_sparse_is_refused_where_none_is_published(dev):
    with pytest.raises(InputError) as info:
        hardware.select_peak(dev["hw:mi250x"], "bf16", sparse=True)
    assert str(info.value) == ("--sparse: hw:mi250x has no structured-sparse bf16 peak; its bf16 peaks: "
                               "bf16 dense (fp32 accumulate, matrix_core) 191.5TFLOPS")


def test_accumulators_with_different_peaks_must_be_chosen(dev):
    with pytest.raises(InputError) as info:
        hardware.select_peak(dev["hw:rtx-4090"], "fp16")
    assert str(info.value) == (
        "--accumulator: hw:rtx-4090 states different fp16 peaks by accumulator "
        "(fp16 dense (fp16 accumulate, tensor_core) 330.3TFLOPS; fp16 dense (fp32 accumulate, tensor_core) 165.2TFLOPS); "
        "choose one with --accumulator fp16|fp32"
    )
    # Ada whitepaper, RTX 4090: FP16 with FP32 accumulate 165.2, with FP16 accumulate 330.3
    assert hardware.select_peak(dev["hw:rtx-4090"], "fp16", "fp32").peak.flops == 165.2e12
    assert hardware.select_peak(dev["hw:rtx-4090"], "fp16", "fp16").peak.flops == 330.3e12


def test_accumulators_with_the_same_peak_are_not_a_question(dev):
    sel = hardware.select_peak(dev["hw:h100-sxm"], "fp16")
    assert sel.peak.flops == 989.4e12  # Hopper whitepaper: 989.4 with FP16 and with FP32 accumulate
    assert sel.notes == ("fp16 and fp32 accumulate give the same fp16 peak",)


def test_an_accumulator_the_device_does_not_state_is_refused(dev):
    with pytest.raises(InputError) as info:
        hardware.select_peak(dev["hw:h100-sxm"], "bf16", "fp16")
    assert str(info.value) == ("--accumulator: hw:h100-sxm has no bf16 peak with fp16 accumulate; its bf16 peaks: "
                               "bf16 dense (fp32 accumulate, tensor_core) 989.4TFLOPS")


def test_the_matrix_unit_is_the_roof_not_the_vector_unit(dev):
    sel = hardware.select_peak(dev["hw:gaudi3"], "bf16")
    assert sel.peak.flops == 1835e12  # MME, not the 28.7 TFLOPS vector (TPC) figure
    assert sel.notes == ("the mme peak is the roof; the vector peak of bf16 is lower and not used",)


def test_unknown_precision_and_accumulator_names(dev):
    with pytest.raises(InputError) as info:
        hardware.select_peak(dev["hw:h100-sxm"], "bf17")
    assert str(info.value) == "--precision: 'bf17' is not one of fp64, fp32, tf32, bf16, fp16, fp8, fp6, fp4, int8, int4"
    with pytest.raises(InputError) as info:
        hardware.select_peak(dev["hw:h100-sxm"], "bf16", "fp8")
    assert str(info.value) == "--accumulator: 'fp8' is not one of fp64, fp32, fp16, int32"


def test_find_accepts_bare_and_prefixed_ids_and_names_the_known_ones(k):
    assert hardware.find(k, "hw:h100-sxm").id == hardware.find(k, "h100-sxm").id == "hw:h100-sxm"
    with pytest.raises(InputError) as info:
        hardware.find(k, "h800", "--device")
    assert info.value.field == "--device"
    assert info.value.message.startswith("no device 'h800' (did you mean h200 or h800-sxm? known: a10, a100-pcie-40gb, a100-pcie-80gb, a100-sxm-40gb, a100-sxm-80gb, a30, a40, a800-40gb-active,")


# ----------------------------------------------------------------------------- rules over a record


def _peak(precision, acc, sparsity, value, unit="tensor_core"):
    return {"precision": precision, "accumulator": acc, "unit": unit, "sparsity": sparsity, "value": value, "source": "test datasheet, table 1"}


def _record(**changes) -> dict:
    record = {
        "id": "hw:test", "name": "Test GPU", "vendor": "Test", "form_factor": "card",
        "counted_as": {"unit": "gpu", "per_package": 1, "note": "one device"}, "as_of": "2026-12",
        "memory": {"capacity": "80GB", "type": "HBM3", "bandwidth": "3.35TB/s", "source": "test datasheet, table 1"},
        "peaks": [_peak("bf16", "fp32", "dense", "989.4TFLOPS"), _peak("bf16", "fp32", "sparse_2_4", "1979TFLOPS")],
        "sources": ["test datasheet, table 1"],
    }
    record.update(changes)
    return record


def test_a_clean_record_has_no_problems():
    assert hardware.record_problems(_record()) == []


def test_a_sparse_figure_that_is_not_twice_the_dense_one_is_reported():
    # e.g. the dense and sparse columns swapped when the file was typed
    record = _record(peaks=[_peak("bf16", "fp32", "dense", "1979TFLOPS"), _peak("bf16", "fp32", "sparse_2_4", "989.4TFLOPS")])
    assert hardware.record_problems(record) == [
        ("peaks[1].value", "2:4-sparse 989.4TFLOPS is not twice the dense 1979TFLOPS of bf16 (fp32, tensor_core); check which figure is which"),
    ]


def test_repeated_peaks_packages_links_and_measurements_are_reported():
    record = _record(
        peaks=[_peak("bf16", "fp32", "dense", "989.4TFLOPS"), _peak("bf16", "fp32", "dense", "989TFLOPS")],
        counted_as={"unit": "gpu", "per_package": 2, "note": "two per board"},
        interconnect={"name": "NVLink", "per_direction": "450GB/s", "bidirectional": "600GB/s", "source": "test datasheet, table 2"},
        measured=[{"kind": "mfu", "precision": "fp8", "low": 0.5, "high": 0.4, "workload": "w", "source": "test paper, table 3"}],
    )
    assert hardware.record_problems(record) == [
        ("peaks[1]", "repeats peaks[0] (bf16, fp32, tensor_core, dense)"),
        ("counted_as.package", "per_package is 2; name the package the records share"),
        ("interconnect.bidirectional", "600GB/s is not twice per_direction 450GB/s"),
        ("measured[0]", "low 0.5 is above high 0.4"),
        ("measured[0].precision", "fp8 has no peak record on this device to be a fraction of"),
    ]


def test_problems_carry_the_file_and_record(tmp_path):
    import yaml

    record = _record(peaks=[_peak("bf16", "fp32", "dense", "1979TFLOPS"), _peak("bf16", "fp32", "sparse_2_4", "989.4TFLOPS")])
    folder = tmp_path / "knowledge" / "hardware"
    folder.mkdir(parents=True)
    (folder / "test.yaml").write_text(yaml.safe_dump(record, sort_keys=False))
    found = [str(p) for p in hardware.problems(Knowledge.load(tmp_path))]
    assert found == ["knowledge/hardware/test.yaml:1 hw:test peaks[1].value: 2:4-sparse 989.4TFLOPS is not twice the dense "
                     "1979TFLOPS of bf16 (fp32, tensor_core); check which figure is which"]


def test_the_schema_refuses_tops_units_spaces_and_unknown_fields(tmp_path):
    import yaml

    record = _record()
    record["peaks"] = copy.deepcopy(record["peaks"]) + [_peak("int8", "int32", "dense", "1979TOPS")]
    record["memory"] = dict(record["memory"], capacity="80 GB")
    record["tflops"] = 989
    folder = tmp_path / "knowledge" / "hardware"
    folder.mkdir(parents=True)
    (folder / "test.yaml").write_text(yaml.safe_dump(record, sort_keys=False))
    found = [f"{p.path}: {p.message}" for p in Knowledge.load(tmp_path, strict=False).problems]
    assert found == [
        "memory.capacity: '80 GB' does not match the expected form ^[0-9]+(\\.[0-9]+)?(GB|GiB|TB|TiB)$",
        "peaks[2].value: '1979TOPS' does not match the expected form ^[0-9]+(\\.[0-9]+)?(GFLOPS|TFLOPS|PFLOPS)$",
        ": unknown field(s) ('tflops' was unexpected)",
    ]


def test_2025_devices_in_a_roofline(dev):
    """TPU7x: 2.5e12 FLOP over 16 GB in BF16 is memory-bound, 16e9 / 7.38e12 = 2.168 ms against
    2.5e12 / 2.307e15 = 1.084 ms of compute (Cloud TPU7x table: 2307 TFLOPs, 7380 GBps); the ridge
    is 2307 / 7.38 = 312.6 FLOP/B. Trainium3 states one figure for MXFP8 and MXFP4 (2,517 TFLOPS),
    so --precision mxfp4 and mxfp8 find the same roof."""
    tpu = dev["hw:tpu7x"]
    bf16 = hardware.select_peak(tpu, "bf16").peak
    assert (bf16.flops, tpu.bandwidth) == (2307e12, 7.38e12)
    assert 16e9 / tpu.bandwidth == pytest.approx(2.168e-3, rel=1e-3) and 2.5e12 / bf16.flops == pytest.approx(1.0837e-3, rel=1e-3)
    assert bf16.flops / tpu.bandwidth == pytest.approx(312.6, rel=1e-3)
    trn3 = dev["hw:trainium3"]
    assert hardware.select_peak(trn3, "mxfp4").peak.flops == hardware.select_peak(trn3, "mxfp8").peak.flops == 2517e12
    with pytest.raises(InputError, match="nvfp4"):  # AWS states MXFP4, not NVIDIA's NVFP4
        hardware.select_peak(trn3, "nvfp4")


def test_tpu_host_links_are_the_scaling_book_figures(dev):
    """jax-ml/scaling-book tpus.md@54e2c439: PCIe is typically around 1.6e10 B/s per TPU, 3.2e10 for v6e."""
    links = {name: hardware.quantity(dev[f"hw:{name}"].record["host_link"]["unspecified_direction"], "B/s")
             for name in ("tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e")}
    assert links == {"tpu-v4": 1.6e10, "tpu-v5e": 1.6e10, "tpu-v5p": 1.6e10, "tpu-v6e": 3.2e10}


def test_datasheet_host_links_per_direction(dev):
    """The datasheets' host-link rows count both directions: H100/H200 'PCIe Gen5: 128GB/s', L40S 'PCIe Gen4 x16: 64GB/s
    bidirectional', Blackwell Ultra HGX B300 'PCIe Gen6 256 GB/s', MI350X '1 x PCIe Gen5 x16, 128 GB/s'. One way is half:
    PCIe Gen5 x16 is 32 GT/s x 16 lanes / 8 = 64 GB/s, Gen4 32 GB/s, Gen6 128 GB/s before encoding and FLIT overhead."""
    def one_way(name):
        return hardware.quantity(dev[f"hw:{name}"].record["host_link"]["per_direction"], "B/s")
    assert {n: one_way(n) for n in ("h100-sxm", "h100-nvl", "h200", "h200-nvl", "mi300x", "mi355x", "mi350x")} == dict.fromkeys(
        ("h100-sxm", "h100-nvl", "h200", "h200-nvl", "mi300x", "mi355x", "mi350x"), 32e9 * 16 / 8)
    assert one_way("l40s") == 16e9 * 16 / 8 == 32e9
    assert one_way("b300") == 64e9 * 16 / 8 == 128e9
    assert one_way("a100-sxm-40gb") == one_way("a100-sxm-80gb") == one_way("a100-pcie-80gb") == 32e9   # A100 datasheet: PCIe Gen4 64GB/s
    assert one_way("h100-pcie") == 64e9                                                                   # H100 PCIe: a PCIe Gen5 card


def test_blackwell_ultra_and_cdna4_memory(dev):
    assert dev["hw:b300"].memory_bytes == 270e9 and dev["hw:b300"].bandwidth == 7.7e12   # datasheet HGX B300: 270 GB, 7.7 TB/s
    assert dev["hw:gb300"].memory_bytes == 279e9 and dev["hw:gb300"].bandwidth == 8e12   # datasheet GB300: 279 GB, 8 TB/s
    assert dev["hw:mi350x"].memory_bytes == 288e9 and dev["hw:mi350x"].bandwidth == 8e12  # AMD: 288GB HBM3E, 8 TB/s
    assert dev["hw:ascend-950dt"].memory_bytes == 144e9                                  # HiZQ 2.0: 144 GB, 4 TB/s
    # GB300 NVL72 rack: 20 TB over 72 GPUs = 277.8 GB, within 0.5% of the datasheet's 279 GB per GPU
    assert 20e12 / 72 == pytest.approx(dev["hw:gb300"].memory_bytes, rel=0.005)
    assert dev["hw:gb300"].tdp_w == 1400 and dev["hw:b300"].tdp_w == 1100 and dev["hw:mi350x"].tdp_w == 1000


def test_tpu_ici_links_per_axis(dev):
    """scaling-book tpus.md@54e2c439, ICI bandwidth per link one-way / bidirectional: v5e 4.5e10 / 9e10,
    v5p and v6e 9e10 / 1.8e11 B/s. With the v5e link, FX710 gives the book's 100 MB AllGather over one 16-chip axis:
    max(1e-6 x 16 / 2, 1e8 / 9e10) = 1.111 ms."""
    from engine import api

    def link(name, key):
        return hardware.quantity(dev[f"hw:{name}"].record["ici_link"][key], "B/s")
    assert (link("tpu-v5e", "per_direction"), link("tpu-v5e", "bidirectional")) == (4.5e10, 9e10)
    assert link("tpu-v5p", "bidirectional") == link("tpu-v6e", "bidirectional") == 1.8e11
    result = api.evaluate("FX710", torus_collective="allgather", msg_bytes=1e8, ici_link_bandwidth=link("tpu-v5e", "bidirectional"),
                          torus_axes=1, axis_chips=16, hop_latency=1e-6)
    assert result.outputs["torus_collective_time"].value == pytest.approx(1e8 / 9e10)
