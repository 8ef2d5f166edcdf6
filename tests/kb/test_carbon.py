"""Grid carbon-intensity presets (knowledge/carbon_intensity.yaml): loading, schema, presets.

Each figure is transcribed from the source named beside it; an implied figure is recomputed
here from the source's own numbers by hand arithmetic, never taken from our code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.errors import InputError, KnowledgeError
from engine.domain import systems
from engine.kb.knowledge import Knowledge, load_record_list

ROOT = Path(__file__).resolve().parents[2]
BAD = Path(__file__).parent.parent / "fixtures" / "roots" / "bad_carbon"


@pytest.fixture(scope="module")
def grids():
    return systems.load_grids(ROOT)


def test_bloom_france_is_stated(grids):
    r = grids["grid:france-2022-bloom"]
    # Luccioni, Viguier, Ligozat (JMLR 2023, arXiv 2211.02001), Table 1: carbon intensity of the energy grid 57 gCO2eq/kWh
    assert (r["value"], r["kind"], r["basis"], r["year"]) == (57, "stated", "location", 2022)
    assert "Table 1" in r["source"] and "2211.02001" in r["source"]
    # the same paper's own totals agree: 24.7 t CO2eq (abstract) / 433,196 kWh (Table 1) = 57.0 g/kWh
    assert 24.7e6 / 433_196 == pytest.approx(r["value"], rel=0.001)


def test_llama31_is_implied_by_the_model_card(grids):
    r = grids["grid:meta-llama31-2024"]
    assert (r["kind"], r["basis"]) == ("implied", "location")
    # Llama 3.1 model card: 39.3M GPU-hours at 700 W; 11,390 t CO2eq location-based.
    energy_kwh = 39.3e6 * 700 / 1000                              # 27,510,000 kWh
    assert r["value"] == pytest.approx(11_390e6 / energy_kwh, abs=0.005)   # 1.139e10 g / 2.751e7 kWh = 414.03
    assert "11,390" in r["derivation"] and "27,510,000 kWh" in r["derivation"]


def test_every_preset_names_its_source(grids):
    assert len(grids) >= 2
    assert all(len(r["source"]) > 20 and r["basis"] == "location" for r in grids.values())


def test_grid_values_fill_carbon_intensity_with_the_source(grids):
    value, source = systems.grid_values(grids["grid:france-2022-bloom"])["carbon_intensity"]
    assert value == 57.0
    assert source.startswith("preset grid:france-2022-bloom: France") and "Table 1" in source


def test_the_full_load_counts_the_presets():
    k = Knowledge.load(ROOT, strict=False)
    assert set(k.carbon_intensity) == set(systems.load_grids(ROOT))
    assert k.places["grid:france-2022-bloom"] == "knowledge/carbon_intensity.yaml:7"  # the first entry's line, counted in the file


def test_schema_problems_of_the_bad_fixture():
    expected = [
        "knowledge/carbon_intensity.yaml:10:10 grid:market value: 0 is less than or equal to the minimum of 0",
        "knowledge/carbon_intensity.yaml:11:10 grid:market basis: 'market' is not one of location",
        "knowledge/carbon_intensity.yaml:2:3 grid:no-derivation: missing required field 'derivation'",
    ]
    assert [str(p) for p in Knowledge.load(BAD, strict=False).problems] == expected
    with pytest.raises(KnowledgeError) as info:
        load_record_list(BAD, "carbon_intensity.yaml")
    assert [str(p) for p in info.value.problems] == expected


def test_not_a_list_is_one_problem(tmp_path):
    (tmp_path / "knowledge").mkdir()
    (tmp_path / "knowledge" / "carbon_intensity.yaml").write_text("grid:x: 57\n", encoding="utf-8")
    assert [str(p) for p in Knowledge.load(tmp_path, strict=False).problems] == [
        "knowledge/carbon_intensity.yaml: expected a list of carbon_intensity records"]


def test_an_id_twice_names_both_places(tmp_path):
    entry = '- {id: "grid:a", region: R, value: 100, basis: location, kind: stated, source: "made-up figures"}\n'
    (tmp_path / "knowledge").mkdir()
    (tmp_path / "knowledge" / "carbon_intensity.yaml").write_text(entry + entry, encoding="utf-8")
    assert [str(p) for p in Knowledge.load(tmp_path, strict=False).problems] == [
        "knowledge/carbon_intensity.yaml:2 grid:a id: is defined twice (first at knowledge/carbon_intensity.yaml:1)"]


def test_unknown_grid_is_refused_naming_the_flag():
    with pytest.raises(InputError) as info:
        systems.preset_values(ROOT, None, "mars")
    assert str(info.value).startswith("--grid: no grid preset 'mars' (")
