"""The knowledge graph: a small domain class around one networkx DiGraph.

Nodes are id strings (records stay in the registry); every edge has a ``rel``:

- ``part_of``: section --> chapter --> book
- ``depends_on``: chapter or section --> the chapter or section it builds on
- ``defines`` / ``references``: section --> concept
- ``defined_in``: formula --> section (``also_in`` too)
- ``computes``: formula --> ``sym:<output>``; ``sym:<input>`` --> formula as ``input_of``
- ``extends``: section --> a concept defined elsewhere that it extends
- ``step``: path --> chapter or section (attribute ``order``)
- ``points_to``: action word --> chapter or section

Edge direction is decided here and only here: "A depends on B" is an edge A --> B.
"""

from __future__ import annotations

import networkx as nx

from engine.core.ids import parse_id
from engine.core.record import dataclass


@dataclass
class KnowledgeGraph:
    g: nx.DiGraph

    @classmethod
    def build(cls, k) -> KnowledgeGraph:
        g = nx.DiGraph()
        for b in k.books.values():
            g.add_node(b.id, kind="book", title=b.title)
        for c in k.chapters.values():
            g.add_node(c.id, kind="chapter", title=c.title, title_zh=c.title_zh)
            _edge(g, c.id, c.book, "part_of")
            for dep in c.depends_on:
                _edge(g, c.id, dep, "depends_on")
            for s in c.sections:
                g.add_node(s.id, kind="section", title=s.title, title_zh=s.title_zh)
                _edge(g, s.id, c.id, "part_of")
                for dep in s.depends_on:
                    _edge(g, s.id, dep, "depends_on")
                for concept in s.defines:
                    _edge(g, s.id, concept, "defines")
                for concept in s.references:
                    _edge(g, s.id, concept, "references")
                for concept in s.extends:
                    _edge(g, s.id, concept, "extends")
        for concept in k.concepts.values():
            g.add_node(concept.id, kind="concept", title=concept.name, title_zh=concept.name_zh)
        for f in k.formulas:
            g.add_node(f.id, kind="formula", title=f.name, title_zh=f.name_zh)
            _edge(g, f.id, f.defined_in, "defined_in")
            for other in f.also_in:
                _edge(g, f.id, other, "also_in")
            _edge(g, f.id, f"sym:{f.output.symbol}", "computes")
            for name in f.inputs:
                _edge(g, f"sym:{name}", f.id, "input_of")
        for p in k.paths.values():
            g.add_node(p.id, kind="path", title=p.title, title_zh=p.title_zh)
            for order, step in enumerate(p.steps):
                if not step.to or g.has_edge(p.id, step.to):  # a placeholder, or a revisit: keep the first order
                    continue
                _edge(g, p.id, step.to, "step", order=order)
        for a in k.actions.values():
            g.add_node(a.id, kind="action", title=a.word, title_zh=a.word_zh)
            for target in a.targets:
                _edge(g, a.id, target, "points_to")
        for node, data in g.nodes(data=True):
            if "kind" not in data:
                data["kind"] = _kind_of(node)
                data["dangling"] = not node.startswith("sym:")
        return cls(g)

    # -------------------------------------------------------------- queries
    def edges(self, rel: str):
        return [(u, v) for u, v, r in self.g.edges(data="rel") if r == rel]

    def depends_on(self, a: str, b: str) -> bool:
        """Whether ``a`` builds on ``b`` (a chapter or a section), directly or transitively."""
        return b in self.prerequisites(a) or b in self.reachable(a)

    def chapter_of(self, ident: str) -> str:
        ident_obj = parse_id(ident)
        chapter = ident_obj.chapter
        return str(chapter) if chapter is not None else ident

    def chapter_graph(self) -> nx.DiGraph:
        """Dependencies lifted to chapters: ch A --> ch B when A or a section of A builds on B or a section of B."""
        cg = nx.DiGraph()
        for node, kind in self.g.nodes(data="kind"):
            if kind == "chapter":
                cg.add_node(node)
        for u, v in self.edges("depends_on"):
            cu, cv = self.chapter_of(u), self.chapter_of(v)
            if cu != cv:
                cg.add_edge(cu, cv)
        return cg

    def prerequisites(self, ident: str) -> set[str]:
        """Every chapter ``ident`` (a chapter or section) builds on, transitively."""
        found = {self.chapter_of(t) for t in self.reachable(ident)}
        found.discard(self.chapter_of(ident))
        return found

    def reachable(self, ident: str) -> set[str]:
        """Every chapter and section named on a dependency path from ``ident``.

        A chapter's dependencies include those its sections declare, and a section
        inherits its chapter's.
        """
        seen: set[str] = set()
        stack = [ident]
        while stack:
            for target in self._direct_deps(stack.pop()):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        seen.discard(ident)
        return seen

    def _direct_deps(self, ident: str) -> list[str]:
        if ident not in self.g:
            return []
        sources = [ident]
        kind = self.g.nodes[ident].get("kind")
        if kind == "chapter":
            sources += [u for u, _ in self.g.in_edges(ident) if self.g.edges[u, ident].get("rel") == "part_of"]
        elif kind == "section":
            sources.append(self.chapter_of(ident))
        return [v for src in sources if src in self.g for _, v, rel in self.g.out_edges(src, data="rel") if rel == "depends_on"]

    def reading_order(self, ids: list[str]) -> list[str]:
        """``ids`` ordered so that prerequisites come first (ties keep the given order)."""
        cg = self.chapter_graph()
        position = {ident: i for i, ident in enumerate(ids)}
        sub = nx.DiGraph()
        sub.add_nodes_from(ids)
        for a in ids:
            below = nx.descendants(cg, self.chapter_of(a)) if self.chapter_of(a) in cg else set()
            for b in ids:
                if b != a and self.chapter_of(b) in below:
                    sub.add_edge(b, a)
        try:
            return list(nx.lexicographical_topological_sort(sub, key=lambda n: position[n]))
        except nx.NetworkXUnfeasible:
            from engine.core.errors import KnowledgeError, Problem

            cycle = " --> ".join(self.chapter_cycle() or [])
            raise KnowledgeError([Problem("", "", "depends_on", f"no reading order exists: chapter dependencies form a cycle: {cycle}")]) from None

    def chapter_cycle(self) -> list[str] | None:
        try:
            cycle = nx.find_cycle(self.chapter_graph())
        except nx.NetworkXNoCycle:
            return None
        return [u for u, _ in cycle] + [cycle[0][0]]

    def stats(self) -> dict[str, object]:
        kinds: dict[str, int] = {}
        for _, kind in self.g.nodes(data="kind"):
            kinds[kind] = kinds.get(kind, 0) + 1
        rels: dict[str, int] = {}
        for _, _, rel in self.g.edges(data="rel"):
            rels[rel] = rels.get(rel, 0) + 1
        return {
            "nodes": self.g.number_of_nodes(),
            "edges": self.g.number_of_edges(),
            "nodes_by_kind": dict(sorted(kinds.items())),
            "edges_by_rel": dict(sorted(rels.items())),
            "weakly_connected_components": nx.number_weakly_connected_components(self.g) if self.g else 0,
        }


def _edge(g: nx.DiGraph, a: str, b: str, rel: str, **attrs) -> None:
    g.add_edge(a, b, rel=rel, **attrs)


def _kind_of(node: str) -> str:
    try:
        return parse_id(node).kind.value
    except ValueError:
        return "unknown"
