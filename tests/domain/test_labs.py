"""engine.domain.labs: each shipped lab's computed expectation against the book's numbers or hand
arithmetic written on the line, the lab lookup, and the check rules (references, a computation that
runs on the lab's inputs) on tiny roots built in the test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.check import integrity
from engine.core.errors import InputError
from engine.domain import labs
from engine.kb.knowledge import Knowledge
from engine.numeric import compiled

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shipped():
    k = Knowledge.load(ROOT)
    return k, compiled.memoised(ROOT)


def outputs(shipped, n: int) -> dict:
    k, module = shipped
    e = labs.expectation(k.labs[f"lab:{n}"], module)
    return {o.symbol: o.value for o in e.outputs}, e.check


def test_eleven_labs_with_the_books_titles_and_levels(shipped):
    k, _ = shipped
    # BOOK.md section 10 / labs/README.md@2c3253cb: eleven labs and their levels
    assert [(r["number"], r["levels"]) for r in labs.ordered(k.labs)] == [
        (1, ["L0"]), (2, ["L1", "L2"]), (3, ["L2", "L3"]), (4, ["L0", "L3"]), (5, ["L1"]), (6, ["L1"]), (7, ["L1", "L2"]),
        (8, ["L3"]), (9, ["L0", "L1"]), (10, ["L0", "L1"]), (11, ["L0"])]
    assert k.labs["lab:2"]["title_zh"] == "GPU 拓扑与互联域识别"
    assert k.labs["lab:4"]["title_zh"] == "Kueue 与 Gang 语义演示"


def test_lab1_prefill_ffn_intensity(shipped):
    values, _ = outputs(shipped, 1)
    # lab 01: 2·8192·8192·28672 FLOPs over 2·8192·(8192 + 28672 + 28672) B = 8192·28672/65536 = 3584 FLOP/B (the book's 10^3)
    assert values["arith_intensity"] == pytest.approx(3584)


def test_lab2_domains_and_slowdown(shipped):
    values, check = outputs(shipped, 2)
    # 300 GB/s × 0.7 = 210 GB/s in the NVLink pair, 64 GB/s × 0.7 = 44.8 GB/s across the host bridge: 210 / 44.8 = 4.6875
    assert check.values == pytest.approx({"good_set_bandwidth": 2.1e11, "bad_set_bandwidth": 4.48e10})
    assert values["placement_slowdown"] == pytest.approx(4.6875)


def test_lab3_busbw(shipped):
    values, _ = outputs(shipped, 3)
    # nccl-tests PERFORMANCE.md: busbw = algbw × 2(n − 1)/n; 1.34217728e11 × 2 × 7/8 = 2.34881024e11 B/s
    assert values["bus_bandwidth"] == pytest.approx(2.34881024e11)


def test_lab4_admission_and_a_days_deadlock(shipped):
    values, check = outputs(shipped, 4)
    assert check.passed and check.verdict == "admitted: train-a; waiting whole: train-b"
    # section 9.4.1's 空耗卡时: 512 cards × 24 h = 12,288 GPU-hours
    assert values["partial_start_idle"] == pytest.approx(12288)


def test_lab5_checkpoint_size(shipped):
    values, _ = outputs(shipped, 5)
    # lab 05 第一步: S_ckpt ≈ 16N, 70B → 70e9 × 16 = 1.12e12 B ("约 1.1 TB")
    assert values["checkpoint_bytes"] == pytest.approx(1.12e12)


def test_lab6_kv_bytes_per_token(shipped):
    values, _ = outputs(shipped, 6)
    # Qwen3-8B config.json: 2 × 36 layers × 8 KV heads × 128 × 2 B = 147,456 B per token
    assert values["kv_bytes_per_token"] == pytest.approx(147456)


def test_lab8_pick_and_split(shipped):
    values, check = outputs(shipped, 8)
    assert check.passed and check.verdict.startswith("picks pod-a (score 3.8)")  # 0 + 2·0.4 + 3·1 against 2·1 + 2·0.7 + 0 = 3.4
    assert values["route_pool_share"] == pytest.approx(0.9)  # lab 08 第 6 步: 90 / (90 + 10)


def test_lab10_span_budget(shipped):
    values, check = outputs(shipped, 10)
    assert check.passed
    # 2.0 − (1.2 + 0.5) − 0.25 = 0.05 s outside the children; 0.25 / 2.0 = 0.125 in the tool
    assert values["span_gap_time"] == pytest.approx(0.05)
    assert values["tool_time_share"] == pytest.approx(0.125)


def test_lab11_admits_the_untouched_package(shipped):
    _, check = outputs(shipped, 11)
    assert check.passed and check.verdict == "admitted to the releasable state"


def test_lab7_random_routing_halves_the_hit_rate(shipped):
    values, _ = outputs(shipped, 7)
    # section 24.4.3's h = h_max × P_route × P_resident with P_route = 1/N = 1/2: 0.9 × 0.5 × 1 = 0.45
    assert values["routed_prefix_hit_rate"] == pytest.approx(0.45)
    assert "tree:prefix-aware-routing" in shipped[0].labs["lab:7"]["links"]["trees"]


def test_lab9_links_the_agent_sandbox_tree(shipped):
    k, module = shipped
    assert labs.expectation(k.labs["lab:9"], module).outputs == []
    assert "tree:agent-sandbox" in k.labs["lab:9"]["links"]["trees"]


@pytest.mark.parametrize("text, n", [("4", 4), ("lab:4", 4), ("lab-04", 4), ("LAB:11", 11)])
def test_find_accepts_the_forms(shipped, text, n):
    assert labs.find(shipped[0].labs, text)["number"] == n


def test_find_names_the_known_labs(shipped):
    with pytest.raises(InputError) as e:
        labs.find(shipped[0].labs, "12")
    assert (e.value.field, e.value.message) == ("N", "no lab '12' (known: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)")


def test_chapters_of_adds_the_sections_chapters():
    assert labs.chapters_of({"chapters": ["infra:ch27"], "sections": ["infra:27.4.5", "infra:24.4.5"]}) == ["infra:ch27", "infra:ch24"]


# ------------------------------------------------------------------ check rules on tiny roots
BAD = """id: lab:4
number: 5
title: a lab with broken references
title_zh: 测试
levels: [L0]
chapters: [infra:ch9]
source: "a test of the check rules"
question: what does the check say about this lab?
criterion: every reference resolves and the computation runs
inputs:
  - {name: quota, value: {cpu: 6}, description: quota, source: "a test of the check rules"}
  - {name: workloads, value: [{name: a, pods: 0, requests: {cpu: 1}}], description: jobs, source: "a test of the check rules"}
compute:
  check: gang_admission
links:
  trees: [tree:nope]
  formulas: [FX999999]
commands: [aiinfra lab show 4]
"""


def test_check_names_each_broken_field(tmp_path):
    folder = tmp_path / "knowledge" / "labs"
    folder.mkdir(parents=True)
    (folder / "lab-04.yaml").write_text(BAD, encoding="utf-8")
    shutil.copytree(ROOT / "formulas", tmp_path / "formulas")
    k = Knowledge.load(tmp_path, strict=False)
    found = [(p.id, p.path, p.message) for p in integrity._labs(k)]
    assert found == [
        ("lab:4", "compute", "the computation does not run on the lab's inputs: inputs.workloads[0].pods: expected a positive whole number of pods, got 0"),
        ("lab:4", "links.formulas", "refers to FX999999, which does not exist"),
        ("lab:4", "links.trees", "refers to tree:nope, which does not exist"),
        ("lab:4", "number", "5 does not match the id lab:4"),
    ]


def test_schema_refuses_an_unknown_check(tmp_path):
    folder = tmp_path / "knowledge" / "labs"
    folder.mkdir(parents=True)
    (folder / "lab-04.yaml").write_text(BAD.replace("check: gang_admission", "check: guess"), encoding="utf-8")
    k = Knowledge.load(tmp_path, strict=False)
    assert not k.labs
    assert any("compute.check" in p.path for p in k.problems)
