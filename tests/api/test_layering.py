"""Import layering of engine/ (issue 14): lower layers never import higher ones, and no module cycles.

Every import counts: top-level, function-local, ``from . import``, and string literals passed
to ``importlib.import_module`` / ``find_spec``. ``if TYPE_CHECKING:`` blocks are skipped.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ENGINE = Path(__file__).resolve().parents[2] / "engine"
# lowest first; a module may import its own layer and the layers before it
LAYERS = ("core", "kb", "numeric", "domain", "trees", "plan", "measure", "check", "reading", "site", "cli", "top")
# engine/core and engine/kb are on every fast path: sympy only inside functions there
NO_TOP_LEVEL_SYMPY = ("core", "kb")
# modules that import sympy at top level today (show, solve, the tree proofs): allowed there
SYMPY_ALLOWED = {"engine.core.symbolic"}


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ENGINE.rglob("*.py")):
        parts = list(path.relative_to(ENGINE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = modules()


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in LAYERS else "top"


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name if name and name != "engine" else None


def _type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return test is not None and (getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == "TYPE_CHECKING")


def _walk(tree: ast.AST):
    for node in ast.iter_child_nodes(tree):
        if _type_checking(node):
            continue
        yield node
        yield from _walk(node)


def imports(module: str, path: Path) -> list[tuple[str, int, bool]]:
    """(imported engine module, line, top level) for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    top = {id(n) for n in tree.body}
    out = []
    for node in _walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            func = node.func
            if (getattr(func, "attr", None) or getattr(func, "id", None)) in ("import_module", "find_spec"):
                names = [node.args[0].value]
        for name in names:
            target = _resolve(name) if name.startswith("engine.") else None
            if target and target != module:
                out.append((target, node.lineno, id(node) in top))
    return out


EDGES = {m: imports(m, p) for m, p in MODULES.items()}


def test_every_module_has_a_layer():
    assert {layer(m) for m in MODULES} <= set(LAYERS)
    assert any(layer(m) == "core" for m in MODULES)  # the table matches the packages on disk


def test_no_import_from_a_lower_layer_to_a_higher_one():
    bad = [f"{MODULES[m].relative_to(ENGINE.parent)}:{line}: {m} ({layer(m)}) imports {t} ({layer(t)})"
           for m, edges in EDGES.items() for t, line, _ in edges if LAYERS.index(layer(t)) > LAYERS.index(layer(m))]
    assert bad == [], "upward imports:\n" + "\n".join(bad)


def test_no_import_cycles():
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for m, edges in EDGES.items():
        for t, line, _ in edges:
            graph.add_edge(m, t, line=line)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    shown = []
    for c in cycles:
        cycle = nx.find_cycle(graph.subgraph(c))
        shown.append(" -> ".join(f"{a} (line {graph.edges[a, b]['line']})" for a, b in cycle) + f" -> {cycle[0][0]}")
    assert shown == [], "import cycles:\n" + "\n".join(shown)


@pytest.mark.parametrize("package", NO_TOP_LEVEL_SYMPY)
def test_fast_layers_do_not_import_sympy_at_top_level(package):
    bad = []
    for m, path in MODULES.items():
        if layer(m) != package or m in SYMPY_ALLOWED:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                bad += [f"{path.relative_to(ENGINE.parent)}:{node.lineno}: {n}" for n in names if n.split(".")[0] == "sympy"]
    assert bad == []
