"""The trees' proofs shipped with the engine: one entry per tree, keyed by what decides it.

Proving a tree (gaps and overlaps at every test node, unreachable leaves, each leaf's region;
:func:`engine.trees.regions.prove`) is SymPy work: most of a cold ``aiinfra check``. Its
result depends only on the tree's file (path and bytes: problems carry its lines), what it
reads of the formulas (the unit, domain, values and default of every symbol the tree names, as
the compiled table gives them, and the whole formula producing each such symbol), the calculators its inputs come from, the sources that prove it
(:data:`SOURCES`) and the SymPy version. A hash of these keys the entry.

``engine/trees/proven.json`` is written by ``python -m engine.trees.proofs --write`` for the
shipped trees (tests check that it is current). It is data, never code. A tree whose key is
not in it (someone edited the tree, a formula it reads or a proving source) is proven again,
exactly as without the table; nothing is ever taken from an entry under another key.
"""

from __future__ import annotations

import json
import os
import re
import zlib

import engine

SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "proven.json")
# the modules whose code decides a proof: the proof itself, the tree as the runner and its
# symbols see it, conditions' parsing and compiling, units, numbers in messages, line numbers
SOURCES = tuple(f"engine/trees/{m}.py" for m in ("proven", "records", "symbols", "state", "runner", "literals", "algebra", "decide", "regions")) + (
    "engine/numeric/calc_records.py", "engine/numeric/calc_conditions.py", "engine/core/expr.py", "engine/core/expr_limits.py",
    "engine/core/codegen.py", "engine/core/units.py", "engine/core/dimensions.py", "engine/core/symbolic.py", "engine/core/humanize.py",
    "engine/kb/yamlio.py")
VERSION = "1"
_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_SHIPPED: list = []  # the shipped table, read once: [dict]
_SALT: list = []  # the sources' digest, computed once: [str]


def _salt() -> str:
    if not _SALT:
        from importlib.metadata import PackageNotFoundError, version

        here = os.path.dirname(os.path.dirname(os.path.abspath(engine.__file__)))
        data = [VERSION.encode()]
        try:
            data.append(version("sympy").encode())
        except PackageNotFoundError:
            data.append(b"?")
        for name in SOURCES:
            try:
                with open(os.path.join(here, name), "rb") as fh:
                    data.append(name.encode() + b"\0" + fh.read())
            except OSError:
                data.append(name.encode() + b"\0missing")
        _SALT.append(_digest(b"\0".join(data)))
    return _SALT[0]


def _digest(data: bytes) -> str:
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data) & 0xFFFF:04x}"


def reads(tree) -> set[str]:
    """Every symbol the tree names: inputs, parameters, fixed values, asks and the words of its
    conditions (a superset: function names too). A proof reads each one's unit, domain, values
    and default, which the formulas that produce or declare it give; a produced symbol is a free
    variable over its domain in the proofs, so the chain behind it is not read."""
    names = set(tree.inputs) | set(tree.parameters) | set(tree.fixed)
    for node in tree.nodes.values():
        names.add(node.input)  # "" for a test node
        for b in node.branches:
            names.update(_NAME.findall(b.when))
    for leaf in tree.leaves.values():
        if leaf.boundary:
            names.update(_NAME.findall(str(leaf.boundary.get("when", ""))))
    names.discard("")
    return names


def content(root, tree, graph, calc_records) -> str | None:
    """What decides ``tree``'s proof, as canonical text; None when its file cannot be read."""
    try:
        with open(os.path.join(os.fspath(root), tree.display), "rb") as fh:
            text = fh.read().decode("utf-8", "surrogateescape")
    except OSError:
        return None
    names = sorted(reads(tree))
    symbols = [[n, graph.spec(n) if graph.known(n) else None, graph.units.get(n), graph.producer.get(n)] for n in names]
    producers = sorted({graph.producer[n] for n in names if n in graph.producer})
    calcs = sorted({i.produced_by for i in tree.inputs.values() if i.produced_by.startswith("calc:")})
    return json.dumps({"file": tree.display, "text": text, "symbols": symbols, "producers": [[f, graph.formulas[f]] for f in producers],
                       "calculators": [[c, (calc_records or {}).get(c)] for c in calcs]}, ensure_ascii=False, sort_keys=True, default=repr)


def key(root, tree, graph, calc_records) -> str | None:
    text = content(root, tree, graph, calc_records)
    return None if text is None else _digest((_salt() + "\0" + text).encode("utf-8", "surrogateescape"))


def shipped() -> dict:
    """key -> [problems, notes, proofs, regions] of the shipped trees (empty when the table is not for these sources)."""
    if not _SHIPPED:
        try:
            with open(SHIPPED, encoding="utf-8") as fh:
                table = json.load(fh)
        except (OSError, ValueError):
            table = {}
        _SHIPPED.append(table.get("proofs", {}) if isinstance(table, dict) and table.get("salt") == _salt() else {})
    return _SHIPPED[0]


def lookup(tree_key: str | None):
    """The shipped (problems, notes, proofs, regions) under ``tree_key``, or None (prove it)."""
    from engine.core.errors import Problem

    entry = shipped().get(tree_key) if tree_key else None
    if not isinstance(entry, list) or len(entry) != 4:
        return None
    try:
        problems, notes, proofs, regions = entry
        return [Problem(*p) for p in problems], [Problem(*p) for p in notes], proofs, regions
    except TypeError:
        return None


def as_json(proved) -> list:
    """(problems, notes, proofs, regions) as the table stores them."""
    problems, notes, proofs, regions = proved
    return [[list(p) for p in problems], [list(p) for p in notes], proofs, regions]


def write(entries: dict[str, tuple]) -> int:
    """Write the shipped table: key -> (problems, notes, proofs, regions), as
    ``engine.trees.proofs.prove_all(root, shipped=False)`` gives them; the count of trees in it."""
    rows = sorted((k, as_json(v)) for k, v in entries.items())
    lines = [f"{json.dumps(k)}:{json.dumps(v, ensure_ascii=False, separators=(',', ':'))}" for k, v in rows]
    with open(SHIPPED, "w", encoding="utf-8") as fh:
        fh.write(f'{{"salt":{json.dumps(_salt())},"proofs":{{\n' + ",\n".join(lines) + "\n}}\n")
    _SHIPPED.clear()
    return len(rows)
