"""engine.kb.knowledge: what ``Knowledge.load`` makes of small roots written into tmp_path.

Each root holds one mistake (or one rule) and the test compares the whole problem list,
in the project's own message text (engine/kb/knowledge.py). Line numbers are counted by hand
in the YAML written here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.errors import KnowledgeError, Problem
from engine.kb.knowledge import Knowledge

ROOTS = Path(__file__).parent.parent / "fixtures" / "roots"
KINDS = "books, chapters, concepts, paths, actions, goal_words"


def make_root(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "root"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def problems(root: Path) -> list[str]:
    return [str(p) for p in Knowledge.load(root, strict=False).problems]


# ------------------------------------------------------------------ file shapes


def test_unknown_top_level_kind_and_a_non_list(tmp_path):
    root = make_root(tmp_path, {"knowledge/k.yaml": (
        'books:\n'                                                           # 1
        '  - {id: "book:infra", title: T, title_zh: T, source: s}\n'         # 2
        'models: []\n'                                                       # 3
        'concepts: {id: "concept:x", name: X, name_zh: X}\n'                 # 4
    )})
    k = Knowledge.load(root, strict=False)
    assert [str(p) for p in k.problems] == [
        f"knowledge/k.yaml:3 models: is not a record kind (expected one of {KINDS})",
        "knowledge/k.yaml:4 concepts: expected a list of records",
    ]
    # the good part of the file still loads
    assert list(k.books) == ["book:infra"]
    assert k.concepts == {}


def test_a_knowledge_file_that_is_not_a_mapping(tmp_path):
    root = make_root(tmp_path, {"knowledge/k.yaml": '- {id: "concept:x", name: X, name_zh: X}\n'})
    assert problems(root) == [f"knowledge/k.yaml: expected a mapping with keys among {KINDS}"]


def test_a_formula_file_that_is_not_a_list(tmp_path):
    root = make_root(tmp_path, {"formulas/f.yaml": "id: F1\nname: x\n"})
    assert problems(root) == ["formulas/f.yaml: expected a list of formula records"]


def test_an_empty_file_is_a_problem(tmp_path):
    # #24: an emptied file used to drop its records without a word
    root = make_root(tmp_path, {"knowledge/k.yaml": "", "formulas/f.yaml": "# nothing yet\n"})
    assert problems(root) == ["formulas/f.yaml:1: is empty (expected a list of formula records)",
                              "knowledge/k.yaml:1: is empty (expected a mapping with keys among books, chapters, concepts, paths, actions, goal_words)"]


def test_a_root_may_hold_only_some_folders(tmp_path):
    root = make_root(tmp_path, {"knowledge/k.yaml": 'concepts:\n  - {id: "concept:x", name: X, name_zh: X}\n'})
    k = Knowledge.load(root)
    assert len(k.formulas) == 0
    assert list(k.concepts) == ["concept:x"]


def test_files_in_subfolders_are_loaded(tmp_path):
    root = make_root(tmp_path, {"knowledge/deep/er/k.yaml": 'concepts:\n  - {id: "concept:x", name: X, name_zh: X}\n'})
    k = Knowledge.load(root)
    assert k.places == {"concept:x": "knowledge/deep/er/k.yaml:2"}


# ------------------------------------------------------------------ ids


def test_bare_ids_are_qualified_with_the_chapters_book(tmp_path):
    root = make_root(tmp_path, {"knowledge/k.yaml": (
        'chapters:\n'
        '  - id: "quant:ch8"\n'
        '    title: Quantisation\n'
        '    title_zh: 量化\n'
        '    depends_on: ["3", "ch4", "5.1", "infra:ch22"]\n'
        '    sections:\n'
        '      - {id: "8.2", title: Formats, depends_on: ["8.1", "quant:ch3"]}\n'
        '      - {id: "8.10", title: Tenth, defines: ["concept:x"]}\n'
    )})
    k = Knowledge.load(root)
    chapter = k.chapters["quant:ch8"]
    assert chapter.book == "book:quant"
    assert chapter.depends_on == ("quant:ch3", "quant:ch4", "quant:5.1", "infra:ch22")
    # "8.10" stays 8.10: section numbers are strings
    assert [s.id for s in chapter.sections] == ["quant:8.2", "quant:8.10"]
    assert sorted(k.sections) == ["quant:8.10", "quant:8.2"]
    assert k.sections["quant:8.2"].chapter == "quant:ch8"
    assert k.sections["quant:8.2"].depends_on == ("quant:8.1", "quant:ch3")
    assert k.sections["quant:8.10"].defines == ("concept:x",)


def test_path_steps_are_qualified_with_the_default_book(tmp_path):
    root = make_root(tmp_path, {"knowledge/k.yaml": (
        'paths:\n'
        '  - {id: "path:p", title: P, title_zh: P, steps: ["22", "22.6", "quant:ch8", {to: "3", revisit: true, note: again}]}\n'
    )})
    k = Knowledge.load(root)
    assert [(s.to, s.revisit, s.note) for s in k.paths["path:p"].steps] == [
        ("infra:ch22", False, ""), ("infra:22.6", False, ""), ("quant:ch8", False, ""), ("infra:ch3", True, "again"),
    ]


def test_a_section_that_does_not_belong_to_its_chapter(tmp_path):
    root = make_root(tmp_path, {"knowledge/k.yaml": (
        'chapters:\n'                                                                            # 1
        '  - id: "infra:ch6"\n'                                                                  # 2
        '    title: T\n'
        '    title_zh: T\n'
        '    sections: [{id: "7.1", title: a}, {id: "quant:6.1", title: b}, {id: "6.2", title: c}]\n'
    )})
    k = Knowledge.load(root, strict=False)
    # problems are placed at the chapter record (line 2)
    assert [str(p) for p in k.problems] == [
        "knowledge/k.yaml:2 infra:ch6 sections[0].id: infra:7.1 does not belong to infra:ch6",
        "knowledge/k.yaml:2 infra:ch6 sections[1].id: quant:6.1 does not belong to infra:ch6",
    ]
    assert [s.id for s in k.chapters["infra:ch6"].sections] == ["infra:6.2"]
    assert list(k.sections) == ["infra:6.2"]


def test_a_chapter_number_with_a_leading_zero(tmp_path):
    root = make_root(tmp_path, {"knowledge/k.yaml": (
        'chapters:\n'
        '  - {id: "infra:ch06", title: T, title_zh: T, sections: [{id: "6.1", title: a}]}\n'
    )})
    k = Knowledge.load(root, strict=False)
    # either refused by the schema or read as chapter 6; here it is neither
    assert "infra:6.1 does not belong to infra:ch06" not in [p.message for p in k.problems]
    assert "infra:ch6" in k.chapters or k.problems[0].path == "id"


def test_a_section_id_that_is_not_an_id(tmp_path):
    root = make_root(tmp_path, {"knowledge/k.yaml": (
        'chapters:\n'
        '  - {id: "infra:ch6", title: T, title_zh: T, sections: [{id: six, title: a, references: ["roofline"]}]}\n'
    )})
    assert problems(root) == [
        "knowledge/k.yaml:2 infra:ch6 sections[0].id: 'six' is not a section id (expected infra:22.6 or 22.6)",
    ]


def test_a_concept_reference_needs_its_prefix(tmp_path):
    root = make_root(tmp_path, {"knowledge/k.yaml": (
        'chapters:\n'
        '  - {id: "infra:ch6", title: T, title_zh: T, sections: [{id: "6.1", title: a, references: ["roofline"]}]}\n'
    )})
    assert problems(root) == [
        "knowledge/k.yaml:2 infra:6.1 references[0]: 'roofline' is not an id (expected concept:name)",
    ]


def test_an_id_defined_twice_across_two_files_names_both_places(tmp_path):
    root = make_root(tmp_path, {
        "knowledge/a.yaml": 'concepts:\n  - {id: "concept:x", name: First, name_zh: X}\n',
        "knowledge/b.yaml": 'books: []\nconcepts:\n  - {id: "concept:x", name: Second, name_zh: X}\n',
    })
    k = Knowledge.load(root, strict=False)
    # files load in sorted order, so a.yaml (line 2) holds the first definition, b.yaml (line 3) the second
    assert [str(p) for p in k.problems] == [
        "knowledge/b.yaml:3 concept:x id: is defined twice (first at knowledge/a.yaml:2)",
    ]
    assert k.concepts["concept:x"].name == "First"
    assert k.places["concept:x"] == "knowledge/a.yaml:2"


def test_a_section_defined_in_two_chapters_files(tmp_path):
    root = make_root(tmp_path, {
        "knowledge/a.yaml": 'chapters:\n  - {id: "infra:ch6", title: T, title_zh: T, sections: [{id: "6.2", title: a}]}\n',
        "knowledge/b.yaml": '\n\nchapters:\n  - {id: "infra:ch6", title: U, title_zh: U, sections: [{id: "6.2", title: b}]}\n',
    })
    assert problems(root) == [
        "knowledge/b.yaml:4 infra:6.2 id: is defined twice (first at knowledge/a.yaml:2)",
        "knowledge/b.yaml:4 infra:ch6 id: is defined twice (first at knowledge/a.yaml:2)",
    ]


def test_a_formula_defined_twice_in_a_subfolder(tmp_path):
    good = (ROOTS / "good" / "formulas" / "f.yaml").read_text(encoding="utf-8")
    root = make_root(tmp_path, {"formulas/a.yaml": good, "formulas/more/b.yaml": "# another copy\n" + good})
    # the copy starts one line lower: its record is on line 2
    assert problems(root) == ["formulas/more/b.yaml:2 F1 id: is defined twice (first at formulas/a.yaml:1)"]


def test_schema_problems_carry_the_record_id_and_field_path(tmp_path):
    root = make_root(tmp_path, {"knowledge/k.yaml": 'concepts:\n  - {id: "concept:x", name: X, name_zh: 2}\n'})
    # line 2 '  - {id: "concept:x", name: X, name_zh: 2}': '{' column 5, the 2 column 41
    assert problems(root) == [
        'knowledge/k.yaml:2:41 concept:x name_zh: expected a string, got the number 2 (quote ids and section numbers: "4.10" is not 4.1)',
    ]


# ------------------------------------------------------------------ strictness and the root


def test_strict_load_raises_knowledge_error_with_every_problem(tmp_path):
    root = make_root(tmp_path, {"knowledge/k.yaml": "models: []\nhardware: []\n"})
    with pytest.raises(KnowledgeError) as info:
        Knowledge.load(root)
    assert info.value.exit_code == 1
    # sorted by place: line 1 before line 2
    assert str(info.value) == (
        f"knowledge/k.yaml:1 models: is not a record kind (expected one of {KINDS})\n"
        f"knowledge/k.yaml:2 hardware: is not a record kind (expected one of {KINDS})\n"
        "2 problems found"
    )
    assert [p.path for p in info.value.problems] == ["models", "hardware"]


def test_strict_is_the_default_and_non_strict_keeps_the_problems(tmp_path):
    root = make_root(tmp_path, {"knowledge/k.yaml": "models: []\n"})
    with pytest.raises(KnowledgeError):
        Knowledge.load(root)
    k = Knowledge.load(root, strict=False)
    assert k.problems == [Problem("knowledge/k.yaml:1", "", "models", f"is not a record kind (expected one of {KINDS})")]


def test_a_missing_root_folder(tmp_path):
    root = tmp_path / "nowhere"
    expected = f"{root}: is not a folder (expected a knowledge root with formulas/ and knowledge/)"
    assert problems(root) == [expected]
    with pytest.raises(KnowledgeError) as info:
        Knowledge.load(str(root))
    assert info.value.report() == expected + "\n1 problem found"


def test_the_good_fixture_loads_cleanly():
    k = Knowledge.load(ROOTS / "good")
    assert sorted(k.chapters) == ["infra:ch22", "infra:ch3", "infra:ch6"]
    assert sorted(k.sections) == ["infra:22.1", "infra:3.4", "infra:6.2"]
    assert k.chapters["infra:ch6"].depends_on == ("infra:3.4",)
    assert k.title("infra:ch22") == "Inference engines"
    assert k.title("concept:memory-conversion") == "Memory conversion"
    assert k.title("F1") == "KV cache bytes per token"
    assert k.title("infra:ch99") == "infra:ch99"
    assert k.record("infra:ch99") is None
