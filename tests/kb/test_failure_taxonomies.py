"""Failure taxonomy records (knowledge/failure_taxonomies/*.yaml) and their rules (engine.domain.failures).

Every number asserted is transcribed from Llama 3 ("The Llama 3 Herd of Models", arXiv 2407.21783,
section 3.3.4 and Table 5) or is hand arithmetic written on the line.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from engine.core.errors import InputError, KnowledgeError
from engine.domain import failures
from engine.kb.knowledge import Knowledge, load_single_folder

ROOT = Path(__file__).resolve().parents[2]

# Table 5: (row, component, count, printed %)
TABLE_5 = [("Faulty GPU", "GPU", 148, 30.1), ("GPU HBM3 Memory", "GPU", 72, 17.2), ("Software Bug", "Dependency", 54, 12.9),
           ("Network Switch/Cable", "Network", 35, 8.4), ("Host Maintenance", "Unplanned Maintenance", 32, 7.6),
           ("GPU SRAM Memory", "GPU", 19, 4.5), ("GPU System Processor", "GPU", 17, 4.1), ("NIC", "Host", 7, 1.7),
           ("NCCL Watchdog Timeouts", "Unknown", 7, 1.7), ("Silent Data Corruption", "GPU", 6, 1.4),
           ("GPU Thermal Interface + Sensor", "GPU", 6, 1.4), ("SSD", "Host", 3, 0.7), ("Power Supply", "Host", 3, 0.7),
           ("Server Chassis", "Host", 2, 0.5), ("IO Expansion Board", "Host", 2, 0.5), ("Dependency", "Dependency", 2, 0.5),
           ("CPU", "Host", 2, 0.5), ("System Memory", "Host", 2, 0.5)]


@pytest.fixture(scope="module")
def llama3():
    return load_single_folder(ROOT, "failure_taxonomies").failure_taxonomies["ft:llama3-405b"]


def test_llama3_record_transcribes_table_5(llama3):
    assert llama3["period"]["days"] == 54                     # section 3.3.4: a 54-day snapshot
    assert llama3["gpus"]["count"] == 16384                   # section 3.3.1: up to 16K H100 GPUs
    counts = llama3["interruptions"]                          # section 3.3.4: 466 interruptions, 47 planned, 419 unexpected
    assert (counts["total"], counts["planned"], counts["unexpected"]) == (466, 47, 419)
    rows = [(r["name"], r["component"], r["count"], r["printed_share"]) for r in llama3["categories"] if r["kind"] == "unexpected"]
    assert rows == TABLE_5
    assert "2407.21783" in llama3["source"]


def test_counts_add_up_and_only_the_faulty_gpu_share_is_off(llama3):
    assert failures.record_problems(llama3) == []
    # 148 / 419 = 0.35322 -> 35.3%, printed 30.1%; e.g. 72 / 419 = 17.18% -> 17.2% as printed
    assert failures.notes(llama3) == ["row 'Faulty GPU': printed 30.1% but 148 / 419 = 35.3%"]


def test_count_rules_name_the_total(llama3):
    bad = copy.deepcopy(llama3)
    bad["categories"][1]["count"] = 147                        # Faulty GPU one short: 418 unexpected, 465 in all
    found = failures.record_problems(bad)
    assert ("categories", "the categories' counts add up to 465, not interruptions.total 466") in found
    assert ("categories", "the unexpected categories' counts add up to 418, not interruptions.unexpected 419") in found
    bad = copy.deepcopy(llama3)
    bad["interruptions"]["planned"] = 46                       # 46 + 419 = 465, not 466
    assert ("interruptions", "planned 46 + unexpected 419 is not total 466") in failures.record_problems(bad)


def test_share_outside_rounding_is_a_note_not_a_problem(llama3):
    bad = copy.deepcopy(llama3)
    bad["categories"][2]["printed_share"] = 17.3               # 72 / 419 = 17.18%: 17.3 is off by more than 0.05
    assert failures.record_problems(bad) == []
    assert "row 'GPU HBM3 Memory': printed 17.3% but 72 / 419 = 17.2%" in failures.notes(bad)


def test_job_mtbf(llama3):
    # 54 days x 24 h / 419 unexpected = 3.0930 h; / 466 in all = 2.7811 h
    assert failures.job_mtbf_s(llama3) / 3600 == pytest.approx(54 * 24 / 419)
    assert failures.job_mtbf_s(llama3) / 3600 == pytest.approx(3.093, abs=5e-4)
    assert failures.job_mtbf_s(llama3, "all") / 3600 == pytest.approx(2.781, abs=5e-4)


def test_figures_from_fx500_fx501_fx502(llama3):
    from engine.domain.model_count import formula_module

    rows = {f["name"]: f for f in failures.figures(llama3, formula_module(ROOT))}
    faulty = rows["Faulty GPU"]
    assert faulty["share"] == pytest.approx(0.35322196)        # 148 / 419
    assert faulty["mtbf_s"] == pytest.approx(31524.324)         # 54 x 86400 / 148 = 4665600 / 148 s = 8.757 h
    assert faulty["per_gpu_mtbf_s"] == pytest.approx(31524.324 * 16384)   # x 16,384 GPUs = 5.165e8 s = 16.4 years
    assert rows["GPU HBM3 Memory"]["mtbf_s"] == pytest.approx(64800)      # 4665600 / 72 = 18 h
    assert rows["Software Bug"]["mtbf_s"] == pytest.approx(86400)         # 4665600 / 54: one a day
    planned = rows["Planned maintenance"]
    assert planned["share"] is None                             # the shares are of the 419 unexpected
    assert planned["mtbf_s"] == pytest.approx(4665600 / 47)     # 99268.1 s = 27.57 h


def test_find(llama3):
    table = {"ft:llama3-405b": llama3}
    assert failures.find(table, "llama3-405b") is llama3
    assert failures.find(table, "ft:llama3-405b") is llama3
    with pytest.raises(InputError):
        failures.find(table, "llama2")


def test_schema_rejects_a_bad_id(tmp_path):
    folder = tmp_path / "knowledge" / "failure_taxonomies"
    folder.mkdir(parents=True)
    text = (ROOT / "knowledge" / "failure_taxonomies" / "llama3-405b-pretraining.yaml").read_text(encoding="utf-8")
    (folder / "bad.yaml").write_text(text.replace("id: ft:llama3-405b", "id: sys:llama3-405b"), encoding="utf-8")
    with pytest.raises(KnowledgeError):
        load_single_folder(tmp_path, "failure_taxonomies")
    k = Knowledge.load(tmp_path, strict=False)
    assert any("sys:llama3-405b" in str(p) or "id" in str(p) for p in k.problems)
    assert not k.failure_taxonomies
