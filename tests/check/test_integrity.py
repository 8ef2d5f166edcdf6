"""engine.check.integrity and engine.kb.knowledge: each broken fixture root gives its named violation.

The expected lines are the project's own message text (STYLE.md habit 7: tests assert the
exact text); the fixture roots under tests/fixtures/roots/ are each one mistake away from
``good/``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.check import integrity
from engine.kb.knowledge import Knowledge

ROOTS = Path(__file__).parent.parent / "fixtures" / "roots"

# a problem in a field is placed at the line of that field (the unit on line 10, the expr on line 11), not of the record
CASES = {
    "duplicate_id": "formulas/g.yaml:1 F1 id: is defined twice (first at formulas/f.yaml:1)",
    "duplicate_key": "formulas/f.yaml:3:3 name: duplicate key 'name' (first defined on line 2)",
    "float_section": 'knowledge/book.yaml:14:14 infra:ch6 sections[0].id: expected a string, got the number 6.2 (quote ids and section numbers: "4.10" is not 4.1)',
    "unknown_unit": "formulas/f.yaml:10 F1 symbols.kv_bytes.unit: 'Bytes' is not a known unit (expected B, bit, FLOP, FLOPS, s, min, h, d, yr, tokens, requests, W, J, Wh, USD, CNY, gCO2e, GPU, %, 1, with prefixes k M G T P, Ki Mi Gi Ti, or m u n on times)",
    "dimension_mismatch": "formulas/f.yaml:11 F1 expr: in '2 * layers * kv_heads * head_dim * kv_bytes + layers': the term 'layers' is in 1 but '2 * layers * kv_heads * head_dim * kv_bytes' is in B",
    "dangling_reference": "knowledge/book.yaml:15 infra:ch22 depends_on: refers to infra:ch99, which is not defined",
    "cycle": "knowledge/book.yaml:4 infra:ch3 depends_on: chapter dependencies form a cycle: infra:ch3 --> infra:ch22 --> infra:ch6 --> infra:ch3",
    "concept_twice": "knowledge/book.yaml:22 concept:memory-conversion: is defined in 2 sections (infra:22.1, infra:6.2); a concept has exactly one defining section and is only referenced elsewhere",
    "malicious_expression": "formulas/f.yaml:11 F1 expr: calling \"__import__('os').system\" is not allowed (expected one of sqrt, log, exp, ceiling, floor, Min, Max, Abs, Piecewise)",
    "backward_path": "knowledge/book.yaml:24 path:serving steps[2]: infra:ch3 comes after infra:ch6 (step 1), which builds on it; reorder the path or mark step 3 as revisit: true",
    "failing_example": "formulas/f.yaml:1 F1 examples[0]: gives 147456 B/tokens, expected 150000 within 1e-06 (off by 1.70%; source: Qwen/Qwen3-8B config.json; hand arithmetic 2*36*8*128*2 = 147456)",
    "two_producers": "formulas/f.yaml:16 FX1 output.symbol: 'kv_bytes_per_token' is also produced by F1; one symbol has one producer (make them variants of one formula)",
    "two_units": "formulas/f.yaml:16 FX2 symbols.kv_bytes.unit: symbol 'kv_bytes' is in bit here but in B in F1; one symbol has one unit",
}


def problems_of(name: str) -> list[str]:
    knowledge = Knowledge.load(ROOTS / name, strict=False)
    return [str(p) for p in integrity.check(knowledge)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_broken_root_reports_its_violation(name):
    found = problems_of(name)
    assert CASES[name] in found, "\n".join(found)


@pytest.mark.parametrize("name", ["good", "revisit_path"])
def test_clean_roots_have_no_problems(name):
    assert problems_of(name) == []


def test_only_the_planted_mistake_is_reported_where_it_cannot_cascade():
    for name in ("duplicate_id", "duplicate_key", "unknown_unit", "dimension_mismatch", "dangling_reference",
                 "concept_twice", "malicious_expression", "failing_example", "two_producers", "two_units"):
        assert problems_of(name) == [CASES[name]], name


def test_backward_path_names_every_step_it_jumps_over():
    found = [p for p in problems_of("backward_path") if "path:serving" in p]
    # ch3 (step 3) is a prerequisite of both ch6 (step 1) and ch22 (step 2)
    assert len(found) == 2


def test_strict_load_raises_with_every_problem():
    from engine.core.errors import KnowledgeError

    with pytest.raises(KnowledgeError) as info:
        Knowledge.load(ROOTS / "duplicate_id")
    assert info.value.report().splitlines()[-1] == "1 problem found"


def test_shipped_knowledge_is_clean():
    knowledge = Knowledge.load(None, strict=False)
    assert integrity.check(knowledge) == []
    assert len(knowledge.formulas) >= 15


# ----------------------------------------------------------------- extensions, placeholders, actions


def _root_with(tmp_path, extra: str, book_yaml_edit=None):
    import shutil

    root = tmp_path / "root"
    shutil.copytree(ROOTS / "good", root)
    text = (root / "knowledge" / "book.yaml").read_text()
    if book_yaml_edit:
        text = book_yaml_edit(text)
    (root / "knowledge" / "book.yaml").write_text(text)
    if extra:  # an empty file is a problem of its own (#24)
        (root / "knowledge" / "extra.yaml").write_text(extra)
    return root


def _check(root) -> list[str]:
    return [str(p) for p in integrity.check(Knowledge.load(root, strict=False))]


def test_a_concept_extended_elsewhere_is_one_definition(tmp_path):
    root = _root_with(tmp_path, "", lambda t: t.replace('{id: "22.1", title: Serving basics, references:', '{id: "22.1", title: Serving basics, extends:'))
    assert _check(root) == []


def test_a_section_cannot_define_and_extend_the_same_concept(tmp_path):
    root = _root_with(tmp_path, "", lambda t: t.replace(
        '{id: "6.2", title: Memory conversion, defines: ["concept:memory-conversion"]}',
        '{id: "6.2", title: Memory conversion, defines: ["concept:memory-conversion"], extends: ["concept:memory-conversion"]}'))
    assert _check(root) == ["knowledge/book.yaml:14 infra:6.2 extends: concept:memory-conversion is both defined and extended here; a section does one or the other"]


def test_placeholder_and_conditional_steps_are_kept_and_not_called_backward(tmp_path):
    extra = """paths:
  - id: "path:evaluate-a-plan"
    title: Evaluate whether a plan holds
    title_zh: 评估一个技术方案是否成立
    kind: goal
    steps:
      - "infra:ch6"
      - {placeholder: 对应领域章, note: the chapter of the domain being evaluated}
      - "infra:ch22"
      - {to: "infra:ch3", condition: when the model basics are unclear}
"""
    root = _root_with(tmp_path, extra)
    assert _check(root) == []
    path = Knowledge.load(root).paths["path:evaluate-a-plan"]
    assert [s.placeholder for s in path.steps] == ["", "对应领域章", "", ""]
    assert path.steps[3].condition == "when the model basics are unclear"


def test_action_words_must_point_at_known_chapters(tmp_path):
    extra = """actions:
  - {id: "action:deploy", word: deploy, word_zh: 部署, targets: ["22", "infra:ch99"]}
"""
    root = _root_with(tmp_path, extra)
    assert _check(root) == ["knowledge/extra.yaml:2 action:deploy targets: refers to infra:ch99, which is not defined"]


def test_a_chapter_part_must_agree_with_the_book(tmp_path):
    def edit(text):
        text = text.replace('  - {id: "book:infra", title: AI Infra, title_zh: AI Infra, source: fixture}',
                            '  - id: "book:infra"\n    title: AI Infra\n    title_zh: AI Infra\n    source: fixture\n'
                            '    parts: [{number: 1, title: Foundations, title_zh: 基础与心智模型, chapters: ["infra:ch3", "infra:ch6"]}]')
        return text.replace("    title: AI and LLM basics\n", "    title: AI and LLM basics\n    part: 2\n")
    root = _root_with(tmp_path, "", edit)
    found = _check(root)
    assert any(p.endswith("infra:ch3 part: says part 2, but book:infra lists it in part 1") for p in found), found
