"""``engine.domain.hardware.audit``: what a device record does not state.

The records here are made up for the test (no vendor figure is asserted); every expected list
is read off the record above it by hand.
"""

from __future__ import annotations

import copy

from engine.domain import hardware

BASE = {
    "id": "hw:test-gpu", "name": "Test GPU", "vendor": "Test", "form_factor": "card",
    "counted_as": {"unit": "gpu", "per_package": 1, "note": "one"}, "as_of": "2026-12",
    "memory": {"capacity": "80GB", "type": "HBM3", "bandwidth": "3TB/s", "source": "test datasheet 2026, https://example.com/ds"},
    "peaks": [
        {"precision": "bf16", "accumulator": "fp32", "unit": "tensor_core", "sparsity": "dense", "value": "100TFLOPS", "source": "test"},
        {"precision": "bf16", "accumulator": "fp32", "unit": "tensor_core", "sparsity": "sparse_2_4", "value": "200TFLOPS", "source": "test"},
        {"precision": "fp8", "accumulator": "fp32", "unit": "tensor_core", "sparsity": "dense", "value": "200TFLOPS", "source": "test"},
    ],
    "sources": ["Test GPU datasheet (2026), https://example.com/ds", "a talk with neither"],
}


def test_bare_record_lists_every_gap():
    a = hardware.audit(copy.deepcopy(BASE))
    assert a.id == "test-gpu"
    # audited precisions fp32 tf32 bf16 fp16 fp8 fp4 int8, less the stated bf16 and fp8
    assert a.peaks == ("fp32", "tf32", "fp16", "fp4", "int8")
    assert a.fields == ("memory.driver_total", "interconnect", "host_link", "tdp", "measured", "measured_collectives")
    assert a.sources == ("sources[1]: no URL", "sources[1]: no year")
    assert a.sparse == ("fp8",)  # bf16 has its 2:4 figure, fp8 has none
    assert a.count == 5 + 6 + 2


def test_filled_fields_are_not_reported():
    record = copy.deepcopy(BASE)
    record["memory"]["driver_total"] = {"value": "79.18GiB", "source": "a start-up log, 2026"}
    record["host_link"] = {"name": "PCIe Gen5 x16", "bidirectional": "128GB/s", "source": "test datasheet 2026"}
    record["tdp"] = {"value": "700W", "source": "test datasheet 2026"}
    record["sources"] = record["sources"][:1]
    a = hardware.audit(record)
    assert a.fields == ("interconnect", "measured", "measured_collectives")
    assert a.sources == ()


def test_host_link_quantities_are_checked():
    record = copy.deepcopy(BASE)
    record["host_link"] = {"name": "PCIe Gen5 x16", "per_direction": "64GB/s", "bidirectional": "100GB/s", "source": "test datasheet 2026"}
    found = dict(hardware.record_problems(record))
    assert "host_link.bidirectional" in found  # 100 is not 2 x 64
    record["host_link"]["bidirectional"] = "128GB/s"
    assert "host_link.bidirectional" not in dict(hardware.record_problems(record))


def test_every_shipped_vendor_has_a_stated_sparse_rule():
    from pathlib import Path

    import yaml

    folder = Path(__file__).resolve().parents[2] / "knowledge" / "hardware"
    records = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.yaml"))]
    assert {r["vendor"] for r in records} <= set(hardware.SPARSE_RULES)
    # vendors whose rule says none is published have no sparse record at all
    none = {v for v, rule in hardware.SPARSE_RULES.items() if rule.startswith("no ")}
    for r in records:
        if r["vendor"] in none:
            assert all(p["sparsity"] == "dense" for p in r["peaks"]), r["id"]
