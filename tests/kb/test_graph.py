"""engine.kb.graph: the KnowledgeGraph built from the tiny fixture roots.

Every count below is worked out by hand from the fixture YAML (tests/fixtures/roots/<name>/),
never read back from the engine. ``good`` in one line: book:infra; chapters ch3 (section 3.4),
ch6 (section 6.2, depends on "3.4"), ch22 (section 22.1, depends on ch6); one concept
defined in 6.2 and referenced by 22.1; formula F1 (defined in infra:6.2, four inputs);
path:serving with steps ch3, ch6, ch22.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.kb.graph import KnowledgeGraph
from engine.kb.knowledge import Knowledge

ROOTS = Path(__file__).parent.parent / "fixtures" / "roots"


def graph_of(name: str) -> KnowledgeGraph:
    return Knowledge.load(ROOTS / name, strict=False).graph()


@pytest.fixture(scope="module")
def good() -> KnowledgeGraph:
    return graph_of("good")


# ------------------------------------------------------------------ nodes and edges


def test_knowledge_graph_returns_a_knowledge_graph(good):
    assert isinstance(good, KnowledgeGraph)


def test_nodes_are_id_strings_with_their_kind(good):
    kinds = dict(good.g.nodes(data="kind"))
    assert kinds["book:infra"] == "book"
    assert kinds["infra:ch22"] == "chapter"
    # bare "6.2" in the YAML is qualified with the chapter's book
    assert kinds["infra:6.2"] == "section"
    assert kinds["concept:memory-conversion"] == "concept"
    assert kinds["F1"] == "formula"
    assert kinds["path:serving"] == "path"
    assert kinds["sym:kv_bytes"] == "sym"


def test_edges_point_from_the_dependent_to_what_it_builds_on(good):
    # good/knowledge/book.yaml: ch6 depends_on ["3.4"], ch22 depends_on ["infra:ch6"]
    assert sorted(good.edges("depends_on")) == [("infra:ch22", "infra:ch6"), ("infra:ch6", "infra:3.4")]
    assert ("infra:22.1", "infra:ch22") in good.edges("part_of")
    assert ("infra:ch22", "book:infra") in good.edges("part_of")
    assert good.edges("defines") == [("infra:6.2", "concept:memory-conversion")]
    assert good.edges("references") == [("infra:22.1", "concept:memory-conversion")]
    assert good.edges("defined_in") == [("F1", "infra:6.2")]
    assert good.edges("computes") == [("F1", "sym:kv_bytes_per_token")]
    assert sorted(good.edges("input_of")) == [
        ("sym:head_dim", "F1"), ("sym:kv_bytes", "F1"), ("sym:kv_heads", "F1"), ("sym:layers", "F1"),
    ]


def test_path_steps_carry_their_order(good):
    # good: steps ["infra:ch3", "infra:ch6", "infra:ch22"] -> orders 0, 1, 2
    orders = {v: good.g.edges[u, v]["order"] for u, v in good.edges("step")}
    assert orders == {"infra:ch3": 0, "infra:ch6": 1, "infra:ch22": 2}


def test_a_revisited_step_is_one_edge_that_keeps_its_first_order(tmp_path):
    root = tmp_path / "root"
    (root / "knowledge").mkdir(parents=True)
    (root / "knowledge" / "k.yaml").write_text(
        'chapters:\n'
        '  - {id: "infra:ch3", title: A, title_zh: A}\n'
        '  - {id: "infra:ch6", title: B, title_zh: B, depends_on: ["infra:ch3"]}\n'
        'paths:\n'
        '  - id: "path:p"\n'
        '    title: P\n'
        '    title_zh: P\n'
        '    steps: ["infra:ch3", "infra:ch6", {to: "infra:ch3", revisit: true}]\n',
        encoding="utf-8",
    )
    graph = Knowledge.load(root).graph()
    # three steps, two distinct targets: ch3 keeps order 0 (its first visit), ch6 is step 1
    assert sorted(graph.edges("step")) == [("path:p", "infra:ch3"), ("path:p", "infra:ch6")]
    assert graph.g.edges["path:p", "infra:ch3"]["order"] == 0
    assert graph.g.edges["path:p", "infra:ch6"]["order"] == 1


def test_revisit_path_keeps_the_written_step_order():
    graph = graph_of("revisit_path")
    # revisit_path: steps ["infra:ch6", "infra:ch22", {to: "infra:ch3", revisit: true}]
    orders = {v: graph.g.edges[u, v]["order"] for u, v in graph.edges("step")}
    assert orders == {"infra:ch6": 0, "infra:ch22": 1, "infra:ch3": 2}


def test_a_reference_to_an_undefined_record_is_a_dangling_node_of_its_kind():
    graph = graph_of("dangling_reference")
    # dangling_reference: ch22 depends_on ["infra:ch99"], which no chapter defines
    assert graph.g.nodes["infra:ch99"] == {"kind": "chapter", "dangling": True}
    # symbols are never defined as records, so they are not dangling
    assert graph.g.nodes["sym:layers"] == {"kind": "sym", "dangling": False}


def test_an_unparsable_reference_becomes_an_unknown_node(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(ROOTS / "good", root)
    text = (root / "formulas" / "f.yaml").read_text(encoding="utf-8")
    (root / "formulas" / "f.yaml").write_text(text.replace('defined_in: "infra:6.2"', 'defined_in: "six point two"'), encoding="utf-8")
    graph = Knowledge.load(root, strict=False).graph()
    assert graph.g.nodes["six point two"] == {"kind": "unknown", "dangling": True}


# ------------------------------------------------------------------ chapters and prerequisites


def test_chapter_of(good):
    assert good.chapter_of("infra:22.1") == "infra:ch22"
    assert good.chapter_of("infra:ch6") == "infra:ch6"
    assert good.chapter_of("quant:8.2.1") == "quant:ch8"
    # an appendix section belongs to chapter "B" of its book
    assert good.chapter_of("infra:B.2.3") == "infra:chB"
    # anything that is not a chapter or section is its own answer
    assert good.chapter_of("concept:memory-conversion") == "concept:memory-conversion"


def test_chapter_graph_lifts_section_dependencies_to_chapters(good):
    cg = good.chapter_graph()
    assert set(cg.nodes) == {"infra:ch3", "infra:ch6", "infra:ch22"}
    # ch6 depends on section 3.4, which lifts to ch6 --> ch3; ch22 --> ch6 is declared directly
    assert set(cg.edges) == {("infra:ch6", "infra:ch3"), ("infra:ch22", "infra:ch6")}


def test_chapter_graph_lifts_a_section_level_dependency(tmp_path):
    root = tmp_path / "root"
    (root / "knowledge").mkdir(parents=True)
    (root / "knowledge" / "k.yaml").write_text(
        'chapters:\n'
        '  - {id: "infra:ch3", title: A, title_zh: A, sections: [{id: "3.1", title: a}]}\n'
        '  - {id: "infra:ch6", title: B, title_zh: B, sections: [{id: "6.1", title: b, depends_on: ["3.1"]}, {id: "6.2", title: c, depends_on: ["6.1"]}]}\n',
        encoding="utf-8",
    )
    graph = Knowledge.load(root).graph()
    # 6.1 --> 3.1 becomes ch6 --> ch3; 6.2 --> 6.1 stays inside ch6 and adds no self-loop
    assert set(graph.chapter_graph().edges) == {("infra:ch6", "infra:ch3")}
    assert graph.prerequisites("infra:6.2") == {"infra:ch3"}


def test_prerequisites_are_transitive_chapters(good):
    # ch22 --> ch6 --> ch3
    assert good.prerequisites("infra:ch22") == {"infra:ch6", "infra:ch3"}
    assert good.prerequisites("infra:22.1") == {"infra:ch6", "infra:ch3"}
    assert good.prerequisites("infra:ch6") == {"infra:ch3"}
    assert good.prerequisites("infra:ch3") == set()


def test_prerequisites_of_an_id_outside_the_chapter_graph_is_empty(good):
    assert good.prerequisites("concept:memory-conversion") == set()
    assert good.prerequisites("infra:ch99") == set()


def test_depends_on_follows_chapters_transitively(good):
    assert good.depends_on("infra:ch22", "infra:ch3")
    assert good.depends_on("infra:22.1", "infra:ch6")
    assert not good.depends_on("infra:ch3", "infra:ch22")
    assert not good.depends_on("infra:ch6", "infra:ch22")
    assert not good.depends_on("infra:ch6", "infra:ch6")


def test_depends_on_a_declared_section(good):
    # good/knowledge/book.yaml line 12: infra:ch6 depends_on ["3.4"], i.e. infra:3.4
    assert good.depends_on("infra:ch6", "infra:3.4")


# ------------------------------------------------------------------ reading order and cycles


def test_reading_order_puts_prerequisites_first(good):
    assert good.reading_order(["infra:ch22", "infra:ch3", "infra:ch6"]) == ["infra:ch3", "infra:ch6", "infra:ch22"]
    # sections are ordered by their chapters: 22.1 builds on ch3 through ch6
    assert good.reading_order(["infra:22.1", "infra:3.4"]) == ["infra:3.4", "infra:22.1"]


def test_reading_order_keeps_the_given_order_between_unrelated_ids(good):
    # a chapter and one of its own sections, and a concept, are not ordered by dependencies
    assert good.reading_order(["infra:6.2", "infra:ch6"]) == ["infra:6.2", "infra:ch6"]
    assert good.reading_order(["infra:ch6", "infra:6.2"]) == ["infra:ch6", "infra:6.2"]
    assert good.reading_order(["infra:ch22", "concept:memory-conversion", "infra:ch3"]) == [
        "concept:memory-conversion", "infra:ch3", "infra:ch22",
    ]


def test_reading_order_of_the_revisit_path_steps():
    graph = graph_of("revisit_path")
    assert graph.reading_order(["infra:ch6", "infra:ch22", "infra:ch3"]) == ["infra:ch3", "infra:ch6", "infra:ch22"]


def test_no_chapter_cycle_in_good(good):
    assert good.chapter_cycle() is None


def test_chapter_cycle_is_a_closed_id_path():
    graph = graph_of("cycle")
    # cycle/knowledge/book.yaml: ch3 --> ch22 (declared), ch22 --> ch6 (declared), ch6 --> 3.4 (lifted to ch3);
    # the same path test_integrity expects in its message
    assert graph.chapter_cycle() == ["infra:ch3", "infra:ch22", "infra:ch6", "infra:ch3"]


def test_prerequisites_inside_a_cycle_exclude_the_start():
    graph = graph_of("cycle")
    assert graph.prerequisites("infra:ch3") == {"infra:ch22", "infra:ch6"}
    assert graph.depends_on("infra:ch6", "infra:ch22")


# ------------------------------------------------------------------ stats


def test_stats_of_good(good):
    # nodes: 1 book + 3 chapters + 3 sections + 1 concept + 1 formula + 1 path
    #        + 5 symbols (output kv_bytes_per_token; inputs layers, kv_heads, head_dim, kv_bytes) = 15
    # edges: part_of 3 chapters + 3 sections = 6; depends_on 2; defines 1; references 1;
    #        defined_in 1; computes 1; input_of 4; step 3 -> 19
    assert good.stats() == {
        "nodes": 15,
        "edges": 19,
        "nodes_by_kind": {"book": 1, "chapter": 3, "concept": 1, "formula": 1, "path": 1, "section": 3, "sym": 5},
        "edges_by_rel": {
            "computes": 1, "defined_in": 1, "defines": 1, "depends_on": 2,
            "input_of": 4, "part_of": 6, "references": 1, "step": 3,
        },
        "weakly_connected_components": 1,
    }


def test_stats_of_an_empty_root(tmp_path):
    (tmp_path / "knowledge").mkdir()
    graph = Knowledge.load(tmp_path).graph()
    assert graph.stats() == {"nodes": 0, "edges": 0, "nodes_by_kind": {}, "edges_by_rel": {}, "weakly_connected_components": 0}
