"""Decision-tree records and loading: ``decision_trees/<name>.yaml`` read into :class:`Tree`."""

from __future__ import annotations

from pathlib import Path

from engine.core.errors import InputError, KnowledgeError, Problem
from engine.core.record import dataclass

FOLDER = "decision_trees"


@dataclass(frozen=True, slots=True)
class Input:
    symbol: str
    default: object = None
    source: str = ""
    description: str = ""
    unit: str | None = None  # tree-local numeric symbols
    domain: str | None = None
    values: tuple[str, ...] = ()  # tree-local categorical symbols
    produced_by: str = ""  # F../FX.. or calc:<name>
    measured: bool = False  # the user states it; no "or give X to derive it" through a formula the tree does not use

    @property
    def local(self) -> bool:
        return self.unit is not None or bool(self.values)


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str
    value: float
    unit: str
    source: str
    description: str


@dataclass(frozen=True, slots=True)
class Branch:
    when: str
    to: str
    label: str = ""


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    kind: str
    question: str
    question_zh: str = ""
    input: str = ""  # ask
    options: tuple[tuple[str, str], ...] = ()  # ask: (value, target)
    branches: tuple[Branch, ...] = ()  # test
    otherwise: str = ""  # test


@dataclass(frozen=True, slots=True)
class Leaf:
    id: str
    recommendation: str
    rationale: str
    read: tuple[str, ...]
    formulas: tuple[str, ...]
    recommendation_zh: str = ""
    severity: str = ""
    boundary: dict | None = None  # {when, message, severity}


@dataclass
class Tree:
    id: str
    title: str
    title_zh: str
    chapters: tuple[str, ...]
    sections: tuple[str, ...]
    decision: str
    inputs: dict[str, Input]
    parameters: dict[str, Parameter]
    fixed: dict[str, tuple[object, str]]
    start: str
    nodes: dict[str, Node]
    leaves: dict[str, Leaf]
    decision_zh: str = ""
    notes: str = ""
    display: str = ""  # decision_trees/<file>.yaml
    raw: object = None  # the marked YAML, for line numbers

    @property
    def name(self) -> str:
        return self.id.split(":", 1)[1]

    @classmethod
    def from_record(cls, raw: dict, display: str = "") -> Tree:
        inputs = {}
        for spec in raw["inputs"]:
            inputs[spec["symbol"]] = Input(spec["symbol"], spec.get("default"), spec.get("source", ""), spec.get("description", ""),
                                           spec.get("unit"), spec.get("domain"), tuple(spec.get("values", ())), spec.get("from", ""),
                                           bool(spec.get("measured", False)))
        params = {p["name"]: Parameter(p["name"], float(p["value"]), p["unit"], p["source"], p["description"]) for p in raw.get("parameters", ())}
        fixed = {f["symbol"]: (f["value"], f["reason"]) for f in raw.get("fixed", ())}
        nodes = {k: _node(k, v) for k, v in raw["nodes"].items()}
        leaves = {k: Leaf(k, v["recommendation"], v["rationale"], tuple(v["read"]), tuple(v["formulas"]), v.get("recommendation_zh", ""),
                          v.get("severity", ""), dict(v["failure_boundary"]) if v.get("failure_boundary") else None)
                  for k, v in raw["leaves"].items()}
        return cls(raw["id"], raw["title"], raw["title_zh"], tuple(raw["chapters"]), tuple(raw.get("sections", ())), raw["decision"],
                   inputs, params, fixed, raw["start"], nodes, leaves, raw.get("decision_zh", ""), raw.get("notes", ""), display, raw)

    def where(self, *path) -> str:
        """``decision_trees/x.yaml:LINE`` of the value at ``path`` (the record's line when unknown)."""
        from engine.kb.yamlio import mark_at

        mark = mark_at(self.raw, list(path)) if self.raw is not None else None
        return f"{self.display}:{mark[0]}" if mark else self.display

    def targets(self, node: Node) -> list[str]:
        """The nodes or leaves ``node`` may lead to (an ask: its options; a test: branches, then otherwise)."""
        if node.kind == "ask":
            return [t for _, t in node.options]
        return [b.to for b in node.branches] + ([node.otherwise] if node.otherwise else [])


def _node(key: str, v: dict) -> Node:
    if v["kind"] == "ask":
        return Node(key, "ask", v["question"], v.get("question_zh", ""), v["input"], tuple((str(o), t) for o, t in v["options"].items()))
    branches = tuple(Branch(b["when"], b["to"], b.get("label", "")) for b in v["branches"])
    return Node(key, "test", v["question"], v.get("question_zh", ""), branches=branches, otherwise=v.get("otherwise", ""))


# ---------------------------------------------------------------------- loading


def tree_files(root) -> list[Path]:
    base = Path(root) / FOLDER
    return sorted(base.glob("*.yaml")) if base.is_dir() else []


def load(root, paths: list[Path] | None = None) -> tuple[dict[str, Tree], list[Problem]]:
    """Every tree of ``root`` (or of ``paths`` alone) that passes its schema, and the problems of those that do not."""
    import zlib

    from engine.kb.loadcache import FileCache
    from engine.kb.schema import read_records

    chosen = tree_files(root) if paths is None else paths
    # unchanged tree files replay without PyYAML or jsonschema; a command reading one tree keeps
    # that tree's entry apart (reading every tree's entries to replay one cost more than the walk)
    files = FileCache(root, tag="trees" if paths is None else f"tree{zlib.crc32(chr(0).join(p.name for p in chosen).encode()):08x}")
    good, problems = read_records([(p, f"{FOLDER}/{p.name}") for p in chosen], "tree", "decision-tree", reader=files)
    files.save(whole=True)
    trees: dict[str, Tree] = {}
    for display, data in good:
        tree = Tree.from_record(data, display)
        if tree.id in trees:
            problems.append(Problem(display, tree.id, "id", f"is defined twice (first in {trees[tree.id].display})"))
            continue
        trees[tree.id] = tree
    return trees, problems


def load_trees(root) -> dict[str, Tree]:
    """The trees of ``root``; KnowledgeError (exit 1) when a file does not load."""
    trees, problems = load(root)
    if problems:
        raise KnowledgeError(problems)
    return trees


def load_one(root, text: str) -> Tree:
    """Tree ``text`` (``tree:name`` or ``name``) of ``root``: read from ``decision_trees/name.yaml``
    alone when that file defines it, as a single-record command reads one record (``aiinfra check``
    finds problems elsewhere, a duplicate id included); otherwise every tree is loaded to find it."""
    key = text.strip().lower()
    name = key.split(":", 1)[1] if key.startswith("tree:") else key
    path = Path(root) / FOLDER / f"{name}.yaml"
    if name and "/" not in name and "\\" not in name and not name.startswith(".") and len(path.name.encode()) <= 255 and path.is_file():
        trees, problems = load(root, [path])
        if problems:
            raise KnowledgeError(problems)
        if f"tree:{name}" in trees:
            return trees[f"tree:{name}"]
    return find(load_trees(root), text)


def find(trees: dict[str, Tree], text: str) -> Tree:
    """A tree by ``tree:name`` or bare ``name``; InputError naming the known ones otherwise."""
    from engine.core.suggest import known

    key = text.strip().lower()
    key = key if key.startswith("tree:") else f"tree:{key}"
    if key not in trees:
        names = [t.split(":", 1)[1] for t in sorted(trees)]
        raise InputError("ID", f"{text!r} is not a decision tree ({known(key.split(':', 1)[1], names)})")
    return trees[key]
