"""``aiinfra lab list|show`` and where labs are reached: ``path show`` lists a path's labs, every lab
is reached from at least one reading path and from each of its chapters' pages, and every command a
lab lists runs. Numbers asserted are hand arithmetic written on the line."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from engine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
RECORDS = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((ROOT / "knowledge" / "labs").glob("*.yaml"))]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_list_json_has_the_eleven_labs(capsys):
    code, out, _ = run(["lab", "list", "--format", "json"], capsys)
    rows = json.loads(out)
    assert code == 0 and [r["id"] for r in rows] == [f"lab:{n}" for n in range(1, 12)]
    assert rows[3]["computes"] == "gang_admission, FX1101"
    assert rows[6]["computes"] == "FX1285"
    assert rows[8]["computes"] == "links tree:agent-sandbox, tree:runbook-sandbox-escape"


def test_show_text_has_question_expectation_and_commands(capsys):
    code, out, _ = run(["lab", "show", "4"], capsys)
    assert code == 0
    assert out.startswith("lab:4 · Kueue and gang admission, shown\n\nKueue 与 Gang 语义演示\n")
    for part in ("Question:", "Success criterion:", "Inputs:", "Computed expectation:", "Commands:",
                 "gang_admission: admitted: train-a; waiting whole: train-b (criterion holds)",
                 "- train-b: pending, 0 of 6 pods created (needs cpu 6; free cpu 0)",
                 "path:problem-utilization-questioned", "  aiinfra formula eval FX1101 --set started_gpus=512 --set partial_start_wait=24h"):
        assert part in out, part
    assert "FX1101   partial_start_idle  12\u202f288  GPU*h" in out  # 512 cards × 24 h = 12,288 GPU-hours


def test_show_json(capsys):
    code, out, _ = run(["lab", "show", "lab:2", "--format", "json"], capsys)
    d = json.loads(out)
    assert code == 0 and d["id"] == "lab:2"
    # 300 GB/s × 0.7 = 2.1e11 B/s, 64 GB/s × 0.7 = 4.48e10 B/s; 2.1e11 / 4.48e10 = 4.6875
    assert d["expectation"]["check"]["values"] == pytest.approx({"good_set_bandwidth": 2.1e11, "bad_set_bandwidth": 4.48e10})
    assert d["expectation"]["outputs"] == [{"formula": "FX1281", "name": "Slowdown of one collective placed across a slower tier",
                                            "symbol": "placement_slowdown", "value": pytest.approx(4.6875), "unit": "1"}]
    assert "path:problem-slow-training" in [p["id"] for p in d["paths"]]


def test_show_md(capsys):
    code, out, _ = run(["lab", "show", "11", "--format", "md"], capsys)
    assert code == 0 and out.startswith("# lab:11 · Model signing and ML-BOM: reject when verification fails")
    assert "## Computed expectation" in out and "```bash" in out


@pytest.mark.parametrize("argv, message", [
    (["lab", "show", "12"], "aiinfra: error: N: no lab '12' (known: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)\n"),
    (["lab", "show", "two"], "aiinfra: error: N: expected a lab number such as 2 or lab:2, got 'two'\n"),
    (["lab", "show", "2", "--format", "csv"], "aiinfra: error: --format: lab show prints one record: text, json or md (csv is for lab list)\n"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert run(argv, capsys) == (2, "", message)


def test_path_show_lists_the_labs_of_its_steps(capsys):
    code, out, _ = run(["path", "show", "new-cluster", "--format", "json"], capsys)
    # path:new-cluster is 4 → 7 → 31: ch4 reaches labs 1 and 2 at step 1, ch7 lab 3 at step 2
    assert code == 0 and [(lab["id"], lab["step"]) for lab in json.loads(out)["labs"]] == [("lab:1", 1), ("lab:2", 1), ("lab:3", 2)]
    code, out, _ = run(["path", "show", "new-cluster"], capsys)
    assert "  lab:2 GPU 拓扑与互联域识别 (GPU topology and interconnect-domain discovery): step 1 infra:ch4" in out


def test_every_lab_is_reached_from_a_path_and_its_chapter_pages():
    from engine.domain.labs import chapters_of
    from engine.reading.labs import paths_to_lab
    from engine.site import book_pages, lab_pages
    from engine.site.data import load

    data = load(str(ROOT))
    pages = {p.path: p.text for p in book_pages.pages(data)}
    for r in RECORDS:
        assert paths_to_lab(data.k, r), r["id"]
        for ch in chapters_of(r):
            book, n = ch.split(":ch")
            line = next(x for x in pages[f"books/{book}/ch{n}.md"].splitlines() if x.startswith("- **Labs:**"))
            assert f"lab-{r['number']:02d}.md" in line, (r["id"], ch)
    assert [p.path for p in lab_pages.pages(data)] == ["labs/index.md"] + [f"labs/lab-{n:02d}.md" for n in range(1, 12)]


@pytest.mark.parametrize("lab, command", [(r["id"], c) for r in RECORDS for c in r["commands"]])
def test_every_lab_command_runs(lab, command, capsys):
    code, out, err = run(shlex.split(command)[1:], capsys)
    assert code == 0, (lab, command, err)


def test_mcp_lab_show_returns_the_expectation():
    import json as _json

    from engine.cli.mcp_tools import invoke, tools

    tool = next(t for t in tools.build() if t.name == "lab_show")
    outcome = invoke.call(tool, {"id": "lab-08"})
    d = _json.loads(outcome.text)
    # lab 08 第 6 步: 90 / (90 + 10) = 0.9 of the route to the current pool
    assert outcome.ok and d["expectation"]["outputs"][0]["value"] == pytest.approx(0.9)
