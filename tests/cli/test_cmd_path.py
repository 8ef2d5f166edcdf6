"""``aiinfra path list|show|for|prereq|check``: the books' reading paths in the books' order,
goal words in English and Chinese, prerequisites checked by hand against the chapters'
dependency declarations, and bad input (exit 2, one line)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "roots"


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def ids(notation: str, book: str = "infra") -> list[str]:
    """The books' path notation to ids: ``3 → §19.5 → 附录 E → 对应领域章`` ->
    ``infra:ch3, infra:19.5, infra:chE, 对应领域章`` (a placeholder stays as the book writes it)."""
    out = []
    for step in (s.strip() for s in notation.split("→")):
        if step.startswith("§"):
            out.append(f"{book}:{step[1:]}")
        elif step.startswith("附录"):
            out.append(f"{book}:ch{step.split()[-1]}")
        elif step.isdigit():
            out.append(f"{book}:ch{step}")
        else:
            out.append(step)
    return out


def steps_of(path_json: dict) -> list[str]:
    return [s["id"] or s["title_zh"] for s in path_json["steps"]]


# ----------------------------------------------------------------------------- goal paths
# ../shared/BOOK.md §5 "Reading paths and action words": README.md@0053e343 and outline
# §0.7@bbb89a29 have the same 14 paths; the title is BOOK.md's (shortened) wording, which
# `path for` must still find, goal paths first.
BOOK_GOAL_PATHS = [
    ("完全没有算法背景", "path:algorithm-basics", "3 → 6"),
    ("跑通第一次大模型训练", "path:first-training-run", "3 → 6 → 16 → 17 → 18"),
    ("建一个微调平台", "path:fine-tuning-platform", "21 → §19.5 → 25 → 11 → 30"),
    ("上线一个推理服务", "path:inference-service", "22 → 24 → 23 → 31 → 29"),
    ("支撑 Agent/多轮长上下文", "path:agent-long-context", "§3.4 → 22 → 24 → 27 → 28 → 31"),
    ("把成本压下来", "path:cut-cost", "11 → 24 → 23 → 31"),
    ("迁到国产卡", "path:domestic-accelerators", "§5.3 → 12 → 附录 E"),
    ("排查性能问题", "path:performance-troubleshooting", "§5.4 → §4.4 → 11"),
    ("RL/后训练", "path:rl-post-training", "§3.6 → §6.5 → 21 → 20"),
    ("多模态", "path:multimodal", "§3.5 → §6.4 → 13 → 24 → 26"),
    ("规划新集群", "path:new-cluster", "4 → 7 → 31"),
    ("建立全局认知", "path:global-overview", "1 → 2 → 3"),
    ("给客户做选型建议", "path:customer-selection", "4 → 12 → 31"),
    ("评估方案是否成立", "path:evaluate-a-plan", "2 → 6 → 对应领域章 → 31"),
]


@pytest.mark.parametrize(("words", "path_id", "order"), BOOK_GOAL_PATHS, ids=[p[1] for p in BOOK_GOAL_PATHS])
def test_every_goal_path_of_book_md_shows_in_the_books_order(words, path_id, order, capsys):
    code, out, _ = run(["path", "show", path_id, "--format", "json"], capsys)
    assert code == 0
    shown = json.loads(out)
    assert (shown["kind"], shown["book"]) == ("goal", "book:infra")
    assert steps_of(shown) == ids(order), f"BOOK.md §5: {words} → {order}"
    code, out, _ = run(["path", "for", words, "--format", "json"], capsys)
    first = json.loads(out)["results"][0]
    assert (code, first["id"], steps_of(first)) == (0, path_id, ids(order)), f"BOOK.md §5: {words} → {order}"


def test_book_md_lists_fourteen_goal_paths_and_path_list_has_them(capsys):
    _, out, _ = run(["path", "list", "--kind", "goal", "--format", "json"], capsys)
    rows = json.loads(out)
    assert len(BOOK_GOAL_PATHS) == 14  # BOOK.md §5: "the same 14 paths"
    assert [f"path:{r['id']}" for r in rows] == [p[1] for p in BOOK_GOAL_PATHS]
    assert [r["steps"] for r in rows] == [len(ids(p[2])) for p in BOOK_GOAL_PATHS]


def test_show_gives_the_chapter_titles_of_both_languages(capsys):
    # BOOK.md §2 table (中文标题) for ch22, ch24, ch23, ch31, ch29
    _, out, _ = run(["path", "show", "inference-service", "--format", "json"], capsys)
    steps = json.loads(out)["steps"]
    assert [s["title_zh"] for s in steps] == ["推理引擎原理", "服务化架构与显存类加速", "推理优化:计算类加速", "容量、成本与 SLO", "可观测性与评测流水线"]
    assert all(s["title"] for s in steps)
    _, text, _ = run(["path", "show", "path:inference-service"], capsys)
    assert text.splitlines()[0] == "path:inference-service  (goal path, book:infra)"
    assert "上线一个推理服务 (Launch an inference service)" in text


def test_a_placeholder_step_is_shown_as_the_book_writes_it(capsys):
    # BOOK.md §5 row 14: 2 → 6 → 对应领域章 → 31
    _, out, _ = run(["path", "show", "evaluate-a-plan"], capsys)
    row = next(line for line in out.splitlines() if line.startswith("3 "))
    assert row.split() == ["3", "-", "对应领域章", "placeholder"]
    assert "step 3 (placeholder): The chapter of the domain the plan belongs to" in out


def test_a_section_step_shows_its_own_title(capsys):
    # BOOK.md §5 row 3: 21 → §19.5 → ...; §19.5 is the platform form of fine-tuning as a service
    _, out, _ = run(["path", "show", "fine-tuning-platform", "--format", "json"], capsys)
    step = json.loads(out)["steps"][1]
    assert (step["id"], step["chapter"], step["title_zh"]) == ("infra:19.5", "infra:ch19", "微调即服务的平台形态【本章最有价值的部分】")


# ----------------------------------------------------------------------------- problem-first index
# ch01 §1.7.2 problem-first index (9 entries). BOOK.md §5 quotes entry 2 (OOM → 6 → 17 → §5.2);
# the other eight are transcribed from the chapter file ch01@66915518 §1.7.2 as cited in
# knowledge/paths.yaml, which this checkout cannot reread.
PROBLEM_PATHS = [
    ("path:problem-utilization-questioned", "集群利用率被质疑了", "11 → 29 → 9"),
    ("path:problem-oom", "训练跑不起来 / OOM", "6 → 17 → §5.2"),
    ("path:problem-slow-training", "训练能跑但慢", "§5.4 → 16 → 7 → 13"),
    ("path:problem-training-interruptions", "千卡训练老中断", "20 → 14"),
    ("path:problem-inference-latency-cost", "推理延迟 / 成本压不下来", "22 → 23 → 24"),
    ("path:problem-domestic-migration", "要不要迁国产卡 / 怎么评估", "§5.3 → 12 → 附录 E"),
    ("path:problem-new-cluster-budget", "领导要我规划新集群 / 出预算", "4 → 7 → 31"),
    ("path:problem-presales-assessment", "我是售前 / 方案架构师,要判断方案成立不成立", "§4.2.2 → 12 → 31"),
    ("path:problem-no-algorithm-background", "完全没有算法背景,听不懂算法同事说话", "3 → 6"),
]


@pytest.mark.parametrize(("path_id", "words", "order"), PROBLEM_PATHS, ids=[p[0] for p in PROBLEM_PATHS])
def test_every_problem_first_entry_shows_in_the_books_order(path_id, words, order, capsys):
    code, out, _ = run(["path", "show", path_id, "--format", "json"], capsys)
    shown = json.loads(out)
    assert (code, shown["kind"], steps_of(shown)) == (0, "problem", ids(order))
    _, out, _ = run(["path", "for", words, "--format", "json"], capsys)
    assert json.loads(out)["results"][0]["id"] == path_id  # the entry's own title is an exact match


def test_the_oom_entry_marks_its_return_to_the_allocator(capsys):
    # BOOK.md §5: OOM → 6 → 17 → §5.2; ch17 declares §5.2 (knowledge/chapters/infra.yaml), so
    # the last step goes back to a prerequisite and is shown as a revisit
    _, out, _ = run(["path", "show", "problem-oom"], capsys)
    row = next(line for line in out.splitlines() if line.startswith("3 "))
    assert row.split()[:2] == ["3", "infra:5.2"] and row.split()[-1] == "revisit"


# ----------------------------------------------------------------------------- role routes (book:quant)
# seeds/000_532c7d4277317b1e.txt, README 适合谁读: read chapters 1-3 first, then by role:
# model apps and inference services 8, 9, then 11, 12, back to 4-7 on capacity, operator or
# communication problems; systems or networks 5-7, then 9, 10; chips 4-7 and the later
# chapters' worked examples (recorded as 8-12); systematic learning in table-of-contents order.
ROLE_PATHS = [
    ("path:quant-start", "1 → 2 → 3"),
    ("path:quant-model-apps", "1 → 2 → 3 → 8 → 9 → 11 → 12 → 4 → 5 → 6 → 7"),
    ("path:quant-systems-network", "1 → 2 → 3 → 5 → 6 → 7 → 9 → 10"),
    ("path:quant-chips", "1 → 2 → 3 → 4 → 5 → 6 → 7 → 8 → 9 → 10 → 11 → 12"),
    ("path:quant-systematic", "1 → 2 → 3 → 4 → 5 → 6 → 7 → 8 → 9 → 10 → 11 → 12"),
]


@pytest.mark.parametrize(("path_id", "order"), ROLE_PATHS, ids=[p[0] for p in ROLE_PATHS])
def test_every_role_route_shows_in_the_readmes_order(path_id, order, capsys):
    code, out, _ = run(["path", "show", path_id, "--format", "json"], capsys)
    shown = json.loads(out)
    assert (code, shown["kind"], shown["book"], steps_of(shown)) == (0, "role", "book:quant", ids(order, "quant"))


def test_the_go_back_steps_are_conditional_and_shown_with_their_condition(capsys):
    # seed 000: 遇到容量、算子或通信问题时,回到第 4—7 章追踪原因
    _, out, _ = run(["path", "show", "quant-model-apps", "--format", "json"], capsys)
    steps = json.loads(out)["steps"]
    assert [s["how"] for s in steps] == [""] * 7 + ["conditional"] * 4
    assert all("capacity, operator or communication problems" in s["condition"] for s in steps[7:])
    assert [s["title_zh"] for s in steps[7:]] == ["加速器架构", "算子与运行时", "超节点", "数据中心网络"]  # seed 000 内容目录, ch4-7
    _, text, _ = run(["path", "show", "quant-model-apps"], capsys)
    assert "step 8 (conditional): when capacity, operator or communication problems come up, go back to chapters 4-7 to trace their cause" in text
    assert next(line for line in text.splitlines() if line.startswith("11 ")).split()[-1] == "conditional"


def test_role_route_is_found_by_its_chinese_title(capsys):
    # seed 000: 做模型应用和推理服务,可以重点读第 8、9 章
    _, out, _ = run(["path", "for", "做模型应用和推理服务", "--format", "json"], capsys)
    results = json.loads(out)["results"]
    assert [r["id"] for r in results] == ["path:quant-model-apps"]
    assert steps_of(results[0])[3:5] == ["quant:ch8", "quant:ch9"]


# ----------------------------------------------------------------------------- path for
def test_for_in_english_finds_the_goal(capsys):
    code, out, _ = run(["path", "for", "launch", "an", "inference", "service", "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["query"] == "launch an inference service"
    assert data["results"][0]["id"] == "path:inference-service"
    assert data["results"][0]["matched"] == {"field": "title", "how": "exact"}


def test_for_english_words_in_order(capsys):
    # "plan cluster": each word starts a word of "Plan a new cluster" (goal) and of the problem entry
    _, out, _ = run(["path", "for", "plan cluster", "--format", "json"], capsys)
    assert [r["id"] for r in json.loads(out)["results"]] == ["path:new-cluster", "path:problem-new-cluster-budget"]


def test_for_in_chinese_gives_goals_first_then_action_words(capsys):
    # BOOK.md §5: 建一个微调平台 (goal) and the action word 微调 → 21 + §19.5 + 25
    _, out, _ = run(["path", "for", "微调", "--format", "json"], capsys)
    results = json.loads(out)["results"]
    assert [r["id"] for r in results] == ["path:fine-tuning-platform", "action:fine-tune"]
    assert [t["id"] for t in results[1]["targets"]] == ids("21 → §19.5 → 25")


@pytest.mark.parametrize(("words", "action", "targets"), [
    ("部署", "action:deploy", "22 → 23 → 24 → 25 → 26 → 30"),  # BOOK.md §5: 部署 → 22–26 + 30
    ("优化", "action:optimize", "23 → 17 → 11"),  # 优化 → 23 (inference) / 17 (training) / 11 (utilisation)
    ("评测", "action:evaluate", "§3.7 → 29"),  # 评测 → §3.7 + 29
    ("how to deploy a model", "action:deploy", "22 → 23 → 24 → 25 → 26 → 30"),  # the English word inside a sentence
])
def test_for_falls_back_to_action_words(words, action, targets, capsys):
    code, out, _ = run(["path", "for", words, "--format", "json"], capsys)
    results = json.loads(out)["results"]
    assert code == 0 and [r["id"] for r in results] == [action]
    assert [t["id"] for t in results[0]["targets"]] == ids(targets)


def test_for_training_lists_paths_then_the_action_word(capsys):
    # BOOK.md §5: 训练 → 16–21 (action word); goal 跑通第一次大模型训练 comes first
    _, out, _ = run(["path", "for", "training", "--format", "json"], capsys)
    results = json.loads(out)["results"]
    assert results[0]["id"] == "path:first-training-run"
    assert results[-1]["id"] == "action:train"
    assert [t["id"] for t in results[-1]["targets"]] == ids("16 → 17 → 18 → 19 → 20 → 21")
    assert [r["kind"] for r in results] == sorted((r["kind"] for r in results), key=["goal", "problem", "role", "action"].index)


def test_for_text_names_the_matches_first(capsys):
    _, out, _ = run(["path", "for", "微调"], capsys)
    lines = out.splitlines()
    assert lines[0] == "2 matches (goal paths first, then problem and role paths, then action words): path:fine-tuning-platform, action:fine-tune"
    assert "path:fine-tuning-platform  (goal path, book:infra)  matched on title_zh (substring)" in lines
    assert "action:fine-tune  (action word 微调 / Fine-tune)  matched on word_zh (exact)" in lines


# ----------------------------------------------------------------------------- prereq
# Hand check against knowledge/chapters/infra.yaml depends_on:
#   ch24: 3.4, 6.2, ch7 | ch7: 4.1.4, 6.2 | ch6: 3.1, 3.2, 3.4, 4.3, 4.4 | ch4: 3.1, 3.4 | ch3: none
# so ch24 needs {3, 4, 6, 7}, and 3 < 4 < 6 < 7 is forced (4 needs 3, 6 needs 4, 7 needs 6).
CH24_PREREQ = ["infra:ch3", "infra:ch4", "infra:ch6", "infra:ch7"]


@pytest.mark.parametrize("form", ["24", "ch24", "infra:ch24", "CH24"])
def test_prereq_of_ch24_in_every_accepted_form(form, capsys):
    code, out, _ = run(["path", "prereq", form, "--format", "json"], capsys)
    data = json.loads(out)
    assert (code, data["id"], [r["chapter"] for r in data["prerequisites"]]) == (0, "infra:ch24", CH24_PREREQ)


def test_prereq_of_ch24_says_what_is_needed_and_whether_declared_directly(capsys):
    _, out, _ = run(["path", "prereq", "24", "--format", "json"], capsys)
    rows = {r["chapter"]: r for r in json.loads(out)["prerequisites"]}
    # ch24 itself declares 3.4, 6.2 and ch7; ch4 is reached only through ch6 and ch7
    assert {c: r["declared"] for c, r in rows.items()} == {"infra:ch3": "direct", "infra:ch4": "transitive", "infra:ch6": "direct", "infra:ch7": "direct"}
    assert rows["infra:ch7"]["whole"] is True
    assert rows["infra:ch4"]["sections"] == ["infra:4.1.4", "infra:4.3", "infra:4.4"]  # from ch6 (4.3, 4.4) and ch7 (4.1.4)
    _, text, _ = run(["path", "prereq", "24"], capsys)
    assert text.splitlines()[0] == "Read before infra:ch24 服务化架构与显存类加速 (Serving architecture and memory-class acceleration), from the dependency declarations:"


def test_prereq_of_ch17_breaks_ties_in_book_order(capsys):
    # ch17: 3.1, 3.2, 4.3, 5.2, 5.4, 6.2, ch16 | ch16: 6.2, 7.4.2, 14.4 | ch14: 6.2, ch13 | ch13: 4.4, ch6
    # ch5: 4.2.1, 4.4 | ch7: 4.1.4, 6.2 -> {3, 4, 5, 6, 7, 13, 14, 16}. Constraints: 4>3, 5>4, 6>3,4,
    # 7>4,6, 13>4,6, 14>6,13, 16>6,7,14. Ties (5 or 6 after 4; 7 or 13 after 6) go in book order.
    _, out, _ = run(["path", "prereq", "infra:ch17", "--format", "json"], capsys)
    assert [r["chapter"] for r in json.loads(out)["prerequisites"]] == ids("3 → 4 → 5 → 6 → 7 → 13 → 14 → 16")


@pytest.mark.parametrize("argv", [["quant:ch8"], ["quant:8"], ["8", "--book", "quant"]])
def test_prereq_in_the_quant_book(argv, capsys):
    # knowledge/chapters/quant.yaml: ch8: ch6, ch7 | ch7: ch6 | ch6: ch5 | ch5: ch4 | ch4: ch2, ch3 | ch3: ch2 | ch2: ch1
    _, out, _ = run(["path", "prereq", *argv, "--format", "json"], capsys)
    assert [r["chapter"] for r in json.loads(out)["prerequisites"]] == ids("1 → 2 → 3 → 4 → 5 → 6 → 7", "quant")


def test_prereq_of_a_section_includes_its_chapters_declarations(capsys):
    # §22.4 inherits ch22's 3.4 and 4.4; ch4 adds 3.1 and 3.4 -> {3, 4}
    _, out, _ = run(["path", "prereq", "22.4", "--format", "json"], capsys)
    data = json.loads(out)
    assert (data["id"], [r["chapter"] for r in data["prerequisites"]]) == ("infra:22.4", ["infra:ch3", "infra:ch4"])


def test_prereq_of_a_chapter_without_declarations(capsys):
    # quant.yaml: ch10 declares nothing
    code, out, _ = run(["path", "prereq", "quant:ch10"], capsys)
    assert (code, out) == (0, "quant:ch10 训练系统 (Training systems) declares no dependencies: nothing to read first.\n")


# ----------------------------------------------------------------------------- check
def test_check_of_the_shipped_paths_finds_no_break_and_names_each_deliberate_return(capsys):
    code, out, _ = run(["path", "check", "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["violations"] == []
    returns = {(r["path"], r["step"]): r for r in data["returns"]}
    # BOOK.md §5 OOM → 6 → 17 → §5.2, and ch17 declares §5.2 itself
    assert returns[("path:problem-oom", 3)]["edge"] == "infra:ch17 --> infra:5.2"
    # §5.4 → §4.4: §5.4 inherits ch5's declaration of §4.4
    assert returns[("path:performance-troubleshooting", 2)]["edge"] == "infra:5.4 --> infra:4.4"
    assert returns[("path:performance-troubleshooting", 2)]["declared"][0].startswith("infra:ch5 depends_on infra:4.4 (knowledge/chapters/infra.yaml:")
    # quant ch4 comes back after ch8 through ch8 -> ch6 -> ch5 -> ch4 (quant.yaml)
    assert returns[("path:quant-model-apps", 8)]["edge"] == "quant:ch8 --> quant:ch6 --> quant:ch5 --> quant:ch4"
    assert {r["path"] for r in data["returns"] if r["message"].startswith("quant:")} == {"path:quant-model-apps"}


def test_check_names_the_edge_a_backward_step_breaks(capsys):
    # the fixture declares ch6 -> 3.4 and ch22 -> ch6, and reads 6 → 22 → 3
    code, out, _ = run(["path", "check", "--root", str(FIXTURES / "backward_path")], capsys)
    assert code == 1
    assert out.splitlines() == [
        "knowledge/book.yaml:24 path:serving steps[2]: infra:ch3 comes after infra:ch22 (step 2), which builds on it; reorder the path or mark step 3 as revisit: true",
        "  edge: infra:ch22 --> infra:ch6 --> infra:3.4; declared: infra:ch22 depends_on infra:ch6 (knowledge/book.yaml:15); infra:ch6 depends_on infra:3.4 (knowledge/book.yaml:9)",
        "knowledge/book.yaml:24 path:serving steps[2]: infra:ch3 comes after infra:ch6 (step 1), which builds on it; reorder the path or mark step 3 as revisit: true",
        "  edge: infra:ch6 --> infra:3.4; declared: infra:ch6 depends_on infra:3.4 (knowledge/book.yaml:9)",
        "1 path, 3 steps: 2 break a dependency declaration; 0 deliberate returns to a prerequisite (0 revisit, 0 conditional)",
    ]


def test_check_reports_what_aiinfra_check_reports(capsys):
    root = str(FIXTURES / "backward_path")
    _, whole, _ = run(["check", "--root", root], capsys)
    _, paths, _ = run(["path", "check", "--root", root], capsys)
    from_check = [line for line in whole.splitlines() if "path:serving" in line]
    assert from_check and from_check == [line for line in paths.splitlines() if line.startswith("knowledge/")]


def test_check_lists_a_revisit_apart_and_passes(capsys):
    code, out, _ = run(["path", "check", "--root", str(FIXTURES / "revisit_path")], capsys)
    assert code == 0
    assert out.splitlines() == [
        "deliberate returns to a prerequisite (not violations):",
        "  path:serving step 3 infra:ch3 (revisit) returns to a prerequisite of step 1 infra:ch6 (and of steps 2)",
        "    edge: infra:ch6 --> infra:3.4; declared: infra:ch6 depends_on infra:3.4 (knowledge/book.yaml:9)",
        "1 path, 3 steps: 0 break a dependency declaration; 1 deliberate returns to a prerequisite (1 revisit, 0 conditional)",
    ]


# ----------------------------------------------------------------------------- list and formats
def test_list_has_every_path_of_every_kind(capsys):
    _, out, _ = run(["path", "list", "--format", "json"], capsys)
    rows = json.loads(out)
    counts = {kind: sum(r["kind"] == kind for r in rows) for kind in ("goal", "problem", "role")}
    # BOOK.md §5: 14 goal paths; ch01 §1.7.2: 9 entries; seed 000: chapters 1-3 first plus 4 roles
    assert counts == {"goal": 14, "problem": 9, "role": 5}
    assert {r["book"] for r in rows if r["kind"] == "role"} == {"quant"}


def test_list_text_csv_md(capsys):
    _, text, _ = run(["path", "list"], capsys)
    assert text.splitlines()[0].split() == ["id", "kind", "book", "title", "title_zh", "steps"]
    _, csv_out, _ = run(["path", "list", "--format", "csv", "--kind", "role"], capsys)
    assert csv_out.splitlines()[0] == "id,kind,book,title,title_zh,steps"
    rows = list(csv.reader(io.StringIO(csv_out)))
    assert rows[1] == ["quant-start", "role", "quant", "Read chapters 1-3 first, to learn the models and workloads", "先读第 1—3 章,了解模型与负载", "3"]
    _, md, _ = run(["path", "list", "--format", "md"], capsys)
    assert md.startswith("| id | kind | book | title | title_zh | steps |")


def test_show_csv_and_md(capsys):
    _, csv_out, _ = run(["path", "show", "cut-cost", "--format", "csv"], capsys)
    assert csv_out.splitlines()[0] == "n,id,chapter,title,title_zh,how,condition,note"
    assert [line.split(",")[1] for line in csv_out.splitlines()[1:]] == ids("11 → 24 → 23 → 31")  # BOOK.md §5 row 6
    _, md, _ = run(["path", "show", "cut-cost", "--format", "md"], capsys)
    assert md.startswith("## path:cut-cost: 把成本压下来\n")


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(("argv", "message"), [
    (["path", "show", "inference-servise"],
     "aiinfra: error: ID: 'inference-servise' is not a reading path (close: inference-service, problem-inference-latency-cost; see aiinfra path list)"),
    (["path", "show", "nothing-like-it"], "aiinfra: error: ID: 'nothing-like-it' is not a reading path (see aiinfra path list)"),
    (["path", "prereq", "99"], "aiinfra: error: CHAPTER: infra:ch99 is not in book:infra (book:infra has ch0-ch31, chA-chK)"),
    (["path", "prereq", "quant:ch13"], "aiinfra: error: CHAPTER: quant:ch13 is not in book:quant (book:quant has ch1-ch12)"),
    (["path", "prereq", "24.99"], "aiinfra: error: CHAPTER: infra:24.99 is not in book:infra (infra:ch24 has sections 24.1, 24.2, 24.3, 24.4, 24.5, 24.6, 24.7, 24.8)"),
    (["path", "prereq", "quant:8.1"], "aiinfra: error: CHAPTER: quant:8.1 is not in book:quant (quant:ch8 lists no sections)"),
    (["path", "prereq", "foo:ch3"], "aiinfra: error: CHAPTER: 'foo:ch3' names no known book (books: infra, quant)"),
    (["path", "prereq", "serving"], "aiinfra: error: CHAPTER: 'serving' is not a chapter or section (expected e.g. 24, ch24, infra:ch24, quant:ch8 or 22.4)"),
    (["path", "for", "xyzzy"], "aiinfra: error: GOAL: no reading path or action word matches 'xyzzy' (see aiinfra path list)"),
    (["path", "for", "上线一个推理"], None),  # a substring: matches, exit 0
    (["path", "for", "q"], "aiinfra: error: GOAL: 'q' is too short to match (give at least two letters or characters)"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    code, _, err = run(argv, capsys)
    if message is None:
        assert (code, err) == (0, "")
        return
    assert (code, err) == (2, message + "\n")


def test_for_suggests_close_titles(capsys):
    code, _, err = run(["path", "for", "上线推理平台"], capsys)
    assert code == 2 and err.startswith("aiinfra: error: GOAL: no reading path or action word matches '上线推理平台' (close: ")
    assert "上线一个推理服务" in err and err.count("\n") == 1


def test_argparse_errors_exit_2(capsys):
    code, _, err = run(["path", "list", "--kind", "chapter"], capsys)
    assert code == 2 and "invalid choice: 'chapter'" in err
    code, _, _ = run(["path", "show"], capsys)
    assert code == 2


def test_the_parser_module_imports_nothing_heavy():
    code = "import sys, engine.cli.cmd_path; print(sorted(m for m in ('networkx', 'yaml', 'sympy', 'jsonschema') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


# ------------------------------------------------------------------ huge numbers (issue 16)
# int() refuses a digit string past 4,300 digits with a ValueError (exit 70 before); a chapter
# or section number that long names nothing, so it is reported like any unknown one.
_DIGITS = "9" * 5000


@pytest.mark.parametrize(("chapter", "message"), [
    (_DIGITS, f"infra:ch{_DIGITS} is not in book:infra (book:infra has ch0-ch31, chA-chK)"),
    (f"ch{_DIGITS}", f"infra:ch{_DIGITS} is not in book:infra (book:infra has ch0-ch31, chA-chK)"),
    (f"quant:{_DIGITS}", f"quant:ch{_DIGITS} is not in book:quant (book:quant has ch1-ch12)"),
    (f"{_DIGITS}.1", f"infra:{_DIGITS}.1 is not in book:infra (book:infra has ch0-ch31, chA-chK)"),
    (f"24.{_DIGITS}", f"infra:24.{_DIGITS} is not in book:infra (infra:ch24 has sections 24.1, 24.2, 24.3, 24.4, 24.5, 24.6, 24.7, 24.8)"),
])
def test_prereq_of_a_5000_digit_number_is_one_line_and_exit_2(chapter, message, capsys):
    code, out, err = run(["path", "prereq", chapter], capsys)
    assert (code, out, err) == (2, "", f"aiinfra: error: CHAPTER: {message}\n")


# ------------------------------------------------------------------ English goals in a reader's words (issue 28)
# The goal path cut-cost is titled "Bring costs down" (knowledge/paths.yaml); a reader types "reduce GPU
# cost". knowledge/goal_words.yaml folds reduce/cut/lower/save/down onto one word and cost/money onto
# another, and a light stem makes costs cost and GPUs GPU. By hand, the path titles that share at least
# two of {reduce, GPU, cost}: "Bring costs down" (reduce, cost) and the problem entry "Inference latency
# or cost will not come down" (cost, reduce); no other title holds two of them (GPU alone: "Migrate to
# domestic accelerators", "Thousand-card training ...", "Working on chips ...").
@pytest.mark.parametrize("words", ["reduce GPU cost", "lower cost", "cut costs", "save money on GPUs", "Reducing the costs!"])
def test_for_english_goal_in_other_words_finds_cut_cost(words, capsys):
    code, out, err = run(["path", "for", words, "--format", "json"], capsys)
    assert (code, err) == (0, "")
    first = json.loads(out)["results"][0]
    assert (first["id"], first["title"], steps_of(first)) == ("path:cut-cost", "Bring costs down", ids("11 → 24 → 23 → 31"))  # BOOK.md §5 row 6
    assert first["matched"]["how"] == "shared words"


def test_for_reduce_gpu_cost_ranks_the_goal_then_the_problem_entry(capsys):
    _, out, _ = run(["path", "for", "reduce", "GPU", "cost", "--format", "json"], capsys)
    results = json.loads(out)["results"]
    assert [r["id"] for r in results] == ["path:cut-cost", "path:problem-inference-latency-cost"]
    assert results[0]["matched"] == {"field": "title", "how": "shared words", "words": ["reduce", "cost"]}
    _, text, _ = run(["path", "for", "reduce", "GPU", "cost"], capsys)
    assert "path:cut-cost  (goal path, book:infra)  matched on title (shared words: reduce, cost)" in text.splitlines()


# knowledge/chapters/infra.yaml: the English titles holding both "KV" and "cache" are §22.1 "KV cache and
# memory", §24.4.4 "KV cache pooling: cross-instance sharing and its consistency cost" and Appendix B §B.2.3
# "KV cache (ch6): F8–F9" (§24.1 has KV alone, §24.4.3 cache alone). No path title names the KV cache; the
# paths that read ch22, ch24 or Appendix B (knowledge/paths.yaml): inference-service (22, 24),
# agent-long-context (22, 24), cut-cost (24), multimodal (24), then the problem entry
# problem-inference-latency-cost (22, 23, 24).
KV_SECTIONS = [("infra:22.1", "KV cache and memory", "KV Cache 与显存"),
               ("infra:24.4.4", "KV cache pooling: cross-instance sharing and its consistency cost", "KV Cache 池化:跨实例共享与一致性代价"),
               ("infra:B.2.3", "KV cache (ch6): F8–F9", "KV Cache(第 6 章)")]
KV_PATHS = ["path:inference-service", "path:agent-long-context", "path:cut-cost", "path:multimodal", "path:problem-inference-latency-cost"]


def test_for_kv_cache_lists_the_sections_about_it_and_the_paths_that_read_them(capsys):
    code, out, err = run(["path", "for", "KV", "cache", "--format", "json"], capsys)
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["results"] == []
    assert [(c["id"], c["kind"], c["title"], c["title_zh"]) for c in data["chapters"]] == [(i, "section", t, z) for i, t, z in KV_SECTIONS]
    assert data["chapters"][0]["paths"] == ["path:inference-service", "path:agent-long-context", "path:problem-inference-latency-cost"]
    assert data["chapters"][2]["paths"] == []
    assert data["paths"] == KV_PATHS


def test_for_kv_cache_text_md_csv(capsys):
    _, text, _ = run(["path", "for", "KV cache"], capsys)
    lines = text.splitlines()
    assert lines[0] == "3 chapters and sections whose title has kv and cache:"
    assert [line.split()[0] for line in lines[4:7]] == [i for i, _, _ in KV_SECTIONS]  # under the header and its rule
    assert "KV cache and memory" in lines[4] and "KV Cache 与显存" in lines[4]
    assert lines[-1] == "read on the paths: " + ", ".join(KV_PATHS) + " (aiinfra path show ID)"
    _, md, _ = run(["path", "for", "KV cache", "--format", "md"], capsys)
    assert md.startswith("## 3 chapters and sections whose title has kv and cache\n\n| id | title | title_zh |")
    _, csv_out, _ = run(["path", "for", "KV cache", "--format", "csv"], capsys)
    rows = list(csv.reader(io.StringIO(csv_out)))
    assert rows[0] == ["match", "kind", "id", "n", "step", "title", "title_zh", "how"]
    assert rows[1] == ["1", "section", "infra:22.1", "1", "infra:22.1", "KV cache and memory", "KV Cache 与显存", ""]
    assert len(rows) == 4


def test_for_english_goal_with_no_shared_word_is_still_exit_2(capsys):
    code, _, err = run(["path", "for", "the", "quantum", "teleporter"], capsys)
    assert code == 2 and err.startswith("aiinfra: error: GOAL: no reading path or action word matches 'the quantum teleporter'")
    assert err.count("\n") == 1


def test_for_chinese_goal_lists_no_chapters(capsys):
    # Chinese goals match as before (substring, characters in order); the word matcher is for English
    _, out, _ = run(["path", "for", "上线一个推理服务", "--format", "json"], capsys)
    data = json.loads(out)
    assert [r["id"] for r in data["results"]] == ["path:inference-service"]
    assert (data["chapters"], data["paths"]) == ([], [])


def test_text_leaves_out_the_records_provenance_json_keeps_it(capsys):
    # knowledge/paths.yaml path:inference-service's source names the README commit and the older README snapshot it
    # was checked against; knowledge/actions.yaml action:fine-tune's names README.md@0053e343. Internal to us: JSON only.
    for argv in (["path", "show", "inference-service"], ["path", "show", "inference-service", "--format", "md"],
                 ["path", "for", "上线一个推理服务"], ["path", "for", "微调"], ["path", "show", "quant-start"]):
        code, out, _ = run(argv, capsys)
        assert code == 0 and "path:" in out
        assert not any(word in out for word in ("seed 004", "seeds/", "README.md@", "outline.md@", "source:")), argv
    _, out, _ = run(["path", "show", "inference-service", "--format", "json"], capsys)
    data = json.loads(out)
    assert "an older snapshot of the README text" in data["provenance"] and "source" not in data
    assert "seeds/" not in out  # our own copy of a source is no provenance for a reader (issue 29): the source is named
    _, out, _ = run(["path", "for", "微调", "--format", "json"], capsys)
    action = next(r for r in json.loads(out)["results"] if r["kind"] == "action")
    assert action["provenance"].startswith("README.md@0053e343") and "source" not in action
