"""engine.integrity and engine.knowledge: each broken fixture root gives its named violation.

The expected lines are the project's own message text (STYLE.md habit 7: tests assert the
exact text); the fixture roots under tests/fixtures/roots/ are each one mistake away from
``good/``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import integrity
from engine.knowledge import Knowledge

ROOTS = Path(__file__).parent / "fixtures" / "roots"

CASES = {
    "duplicate_id": "formulas/g.yaml:1 F1 id: is defined twice (first at formulas/f.yaml:1)",
    "duplicate_key": "formulas/f.yaml:3:3 name: duplicate key 'name' (first defined on line 2)",
    "float_section": 'knowledge/book.yaml:14:14 infra:ch6 sections[0].id: expected a string, got the number 6.2 (quote ids and section numbers: "4.10" is not 4.1)',
    "unknown_unit": "formulas/f.yaml:1 F1 symbols.kv_bytes.unit: 'Bytes' is not a known unit (expected B, bit, FLOP, FLOPS, s, min, h, d, yr, tokens, requests, W, J, Wh, USD, gCO2e, GPU, %, 1, with prefixes k M G T P, Ki Mi Gi Ti, or m u n on times)",
    "dimension_mismatch": "formulas/f.yaml:1 F1 expr: in '2 * layers * kv_heads * head_dim * kv_bytes + layers': the term 'layers' is in 1 but '2 * layers * kv_heads * head_dim * kv_bytes' is in B",
    "dangling_reference": "knowledge/book.yaml:15 infra:ch22 depends_on: refers to infra:ch99, which is not defined",
    "cycle": "knowledge/book.yaml:4 infra:ch3 depends_on: chapter dependencies form a cycle: infra:ch3 --> infra:ch22 --> infra:ch6 --> infra:ch3",
    "concept_twice": "knowledge/book.yaml:22 concept:memory-conversion: is defined in 2 sections (infra:22.1, infra:6.2); a concept has exactly one defining section and is only referenced elsewhere",
    "malicious_expression": "formulas/f.yaml:1 F1 expr: calling \"__import__('os').system\" is not allowed (expected one of sqrt, log, exp, ceiling, floor, Min, Max, Abs, Piecewise)",
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
    from engine.errors import KnowledgeError

    with pytest.raises(KnowledgeError) as info:
        Knowledge.load(ROOTS / "duplicate_id")
    assert info.value.report().splitlines()[-1] == "1 problem found"


def test_shipped_knowledge_is_clean():
    knowledge = Knowledge.load(None, strict=False)
    assert integrity.check(knowledge) == []
    assert len(knowledge.formulas) >= 15
