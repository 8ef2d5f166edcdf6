"""Measurement tables (``knowledge/measurements/*.yaml``, issue 26): defaults merged into rows, every broken row
reported at its file:line with the record id, the field and one sentence; ``aiinfra check`` reports a broken table.

Each case is a tiny knowledge root written to tmp_path; model and device records are only looked up by file name,
so empty files stand in for them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from engine.cli.main import main
from engine.domain import measurements

GOOD = Path(__file__).parent.parent / "fixtures" / "roots" / "good"
HEAD = """id: meas:{name}
title: "a tiny table for tests"
source: "hand-written fixture, tests/domain"
as_of: "2026-01"
"""
DEFAULTS = """defaults:
  kind: serve
  model: m1
  device: d1
  gpus: 8
  layout: {tp: 8, ep: 2}
  precision: {weights: fp8, kv_cache: fp8}
  workload: {prompt: 1000, output: 100, concurrency: 4}
  metric: tpot
  unit: ms
records:
"""


def root_with(tmp_path: Path, rows: str, name: str = "t", file_id: str | None = None) -> Path:
    """A root whose only measurement table is knowledge/measurements/<name>.yaml (header on lines 1-4, defaults on
    lines 5-15, the rows from line 16 on); model m1 and device d1 exist."""
    for folder in ("models", "hardware", "measurements"):
        (tmp_path / "knowledge" / folder).mkdir(parents=True, exist_ok=True)
    (tmp_path / "knowledge" / "models" / "m1.yaml").touch()
    (tmp_path / "knowledge" / "hardware" / "d1.yaml").touch()
    text = HEAD.format(name=file_id or name) + DEFAULTS + rows
    (tmp_path / "knowledge" / "measurements" / f"{name}.yaml").write_text(text, encoding="utf-8")
    return tmp_path


def load_lines(root: Path) -> tuple[list, list[str]]:
    rows, problems = measurements.load(root)
    return rows, [str(p) for p in problems]


def test_merge_is_key_by_key_for_layout_precision_and_workload():
    defaults = {"kind": "serve", "layout": {"tp": 8, "ep": 2}, "precision": {"weights": "fp8", "kv_cache": "fp8"},
                "workload": {"prompt": 1000, "output": 100}, "metric": "tpot"}
    row = {"id": "a", "layout": {"ep": 4}, "precision": {"weights": "bf16"}, "workload": {"concurrency": 16}, "metric": "ttft"}
    assert measurements.merge(defaults, row) == {
        "kind": "serve", "id": "a", "metric": "ttft",  # a plain field: the row's value wins
        "layout": {"tp": 8, "ep": 4},
        "precision": {"weights": "bf16", "kv_cache": "fp8"},
        "workload": {"prompt": 1000, "output": 100, "concurrency": 16},
    }
    assert defaults["layout"] == {"tp": 8, "ep": 2}  # the defaults are not changed by a row


def test_a_loaded_row_carries_its_merged_fields_and_its_value_in_seconds(tmp_path):
    root = root_with(tmp_path, '  - {id: a, layout: {ep: 4}, precision: {weights: bf16}, workload: {concurrency: 16}, value: 10, where: "row a"}\n')
    rows, problems = load_lines(root)
    assert problems == []
    (r,) = rows
    assert (r.id, r.source, r.family, r.place, r.kind, r.model, r.device, r.gpus) == (
        "meas:t/a", "meas:t", "t", "knowledge/measurements/t.yaml:16", "serve", "m1", "d1", 8)
    assert r.layout == {"tp": 8, "ep": 4}
    assert r.precision == {"weights": "bf16", "kv_cache": "fp8"}
    assert r.workload == {"prompt": 1000, "output": 100, "concurrency": 16}
    # 10 ms = 10 x 1e-3 s
    assert (r.metric, r.value, r.unit, r.stated, r.statistic) == ("tpot", 10 * 1e-3, "s", "10 ms", "single")


def test_each_broken_row_is_named_at_its_line_with_its_field(tmp_path):
    root = root_with(tmp_path, "".join([
        '  - {id: a, value: 10, where: "row a"}\n',                                   # line 16: fine
        '  - {id: b, value: 12, where: "row b", metric: tflops, unit: TFLOP/s}\n',     # 17: a gemm metric in a serve row
        '  - {id: c, value: 12, where: "row c", unit: GB/s}\n',                        # 18: tpot in GB/s
        '  - {id: d, value: 12, where: "row d", model: nope}\n',                       # 19: no such model
        '  - {id: e, value: 12, where: "row e", device: nope}\n',                      # 20: no such device
        '  - {id: a, value: 12, where: "row a again"}\n',                              # 21: id a twice
        '  - {id: f, value: 12}\n',                                                    # 22: no where
        '  - {id: g, value: 12, where: "row g", workload: {prompt: null}}\n',          # 23: prompt of the wrong type
    ]))
    rows, lines = load_lines(root)
    assert [r.id for r in rows] == ["meas:t/a"]
    place = "knowledge/measurements/t.yaml"
    assert lines == [
        f"{place}:17 meas:t/b metric: 'tflops' is a gemm metric, not a serve one",
        f"{place}:18 meas:t/c unit: tpot is stated in s, ms, us, not 'GB/s'",
        f"{place}:19 meas:t/d model: no model record 'nope' in knowledge/models/",
        f"{place}:20 meas:t/e device: no device record 'nope' in knowledge/hardware/",
        f"{place}:21 meas:t/a id: defined twice in the file (first at {place}:16)",
        # in engine.kb.schema's words, as every other record kind reports them
        f"{place}:22 meas:t/f: missing required field 'where'",
        f"{place}:23 meas:t/g workload.prompt: expected integer, got null None",
    ]


def test_a_kind_that_needs_a_workload_field_says_which(tmp_path):
    # a serve row cannot be evaluated without its output length; the default gives prompt and output, this row
    # is a gemm one whose workload lacks n and k
    root = root_with(tmp_path, '  - {id: k, kind: gemm, metric: tflops, unit: TFLOP/s, workload: {m: 4096}, value: 500, where: "row k"}\n')
    _, lines = load_lines(root)
    assert lines == ["knowledge/measurements/t.yaml:16 meas:t/k workload.n: a gemm measurement needs workload.n"]


def test_a_file_whose_id_is_not_its_name_is_refused_at_line_1(tmp_path):
    root = root_with(tmp_path, '  - {id: a, value: 10, where: "row a"}\n', name="u", file_id="t")
    rows, lines = load_lines(root)
    assert rows == []
    assert lines == ["knowledge/measurements/u.yaml:1 meas:t id: expected 'meas:u' (the file's name)"]


def test_check_reports_a_broken_measurement_table_and_exits_1(tmp_path, capsys):
    root = tmp_path / "root"
    shutil.copytree(GOOD, root)
    (root / "knowledge" / "measurements").mkdir()
    (root / "knowledge" / "measurements" / "t.yaml").write_text(
        HEAD.format(name="t") + "records:\n"
        '  - {id: r1, kind: hbm, device: h100-sxm, metric: bandwidth, unit: GB/s, value: 2900, where: "row r1"}\n', encoding="utf-8")
    code = main(["check", "--root", str(root)])
    out, _ = capsys.readouterr()
    assert code == 1
    # the good root has no device records: h100-sxm is unknown there
    assert "knowledge/measurements/t.yaml:6 meas:t/r1 device: no device record 'h100-sxm' in knowledge/hardware/" in out.splitlines()
    assert out.splitlines()[-1].endswith("; 1 problem")


def test_a_clean_table_is_read_again_from_the_cache_and_an_edit_is_seen(tmp_path):
    root = root_with(tmp_path, '  - {id: a, value: 10, where: "row a"}\n')
    first, problems = load_lines(root)
    assert problems == []
    again, _ = load_lines(root)  # from the private cache (the schema check is skipped): the same record
    assert again == first
    table = root / "knowledge" / "measurements" / "t.yaml"
    table.write_text(table.read_text(encoding="utf-8").replace("value: 10", "value: 20"), encoding="utf-8")
    (edited,), _ = load_lines(root)
    assert edited.value == 20 * 1e-3  # the file's bytes are in the key: 20 ms, not the cached 10 ms
    # a file with a problem is never served from the cache: its problem is reported every time
    table.write_text(table.read_text(encoding="utf-8").replace("value: 20", "value: -1"), encoding="utf-8")
    for _ in range(2):
        rows, problems = load_lines(root)
        assert rows == [] and len(problems) == 1
