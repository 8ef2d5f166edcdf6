"""``aiinfra hardware audit`` in every format on a root holding one made-up record.

The record is written below; the expected gaps are read off it by hand.
"""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main

RECORD = """\
id: hw:test-gpu
name: Test GPU
vendor: Test
form_factor: card
counted_as: {unit: gpu, per_package: 1, note: one}
as_of: "2026-12"
memory: {capacity: 80GB, type: HBM3, bandwidth: 3TB/s, source: "test datasheet 2026, https://example.com/ds"}
peaks:
  - {precision: bf16, accumulator: fp32, unit: tensor_core, sparsity: dense, value: 100TFLOPS, source: test sheet}
tdp: {value: 700W, source: "test datasheet 2026"}
host_link: {name: PCIe Gen5 x16, bidirectional: 128GB/s, source: "test datasheet 2026"}
sources: ["Test GPU datasheet (2026), https://example.com/ds"]
"""


@pytest.fixture
def root(tmp_path):
    folder = tmp_path / "knowledge" / "hardware"
    folder.mkdir(parents=True)
    (folder / "test-gpu.yaml").write_text(RECORD, encoding="utf-8")
    return ["--root", str(tmp_path)]


def test_json(root, capsys):
    assert main([*root, "hardware", "audit", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    data = json.loads(out)
    [row] = data["devices"]
    assert row["id"] == "test-gpu"
    assert row["peaks"] == ["fp32", "tf32", "fp16", "fp8", "fp4", "int8"]
    assert row["fields"] == ["memory.driver_total", "interconnect", "measured", "measured_collectives"]  # tdp and host_link are stated
    assert row["sources"] == []
    assert row["sparse"] == ["bf16"]
    assert row["missing"] == 6 + 4
    assert "host_link" in data["audited_fields"]


@pytest.mark.parametrize("fmt", ["text", "md", "csv"])
def test_tables(root, capsys, fmt):
    assert main([*root, "hardware", "audit", "--format", fmt]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "test-gpu" in out and "memory.driver_total" in out


def test_bad_format_is_one_line(root, capsys):
    assert main([*root, "hardware", "audit", "--format", "xml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--format" in err[0]


def test_bad_host_link_is_refused(tmp_path, capsys):
    # a broken knowledge record is reported as `hardware list` reports it: the problem with its field, exit 1
    folder = tmp_path / "knowledge" / "hardware"
    folder.mkdir(parents=True)
    (folder / "test-gpu.yaml").write_text(RECORD.replace("bidirectional: 128GB/s", "bidirectional: fast"), encoding="utf-8")
    code = main(["--root", str(tmp_path), "hardware", "audit"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and "host_link.bidirectional" in err[0] and "'fast'" in err[0]
