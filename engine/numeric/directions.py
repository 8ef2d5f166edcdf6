"""The SymPy part of compiling a formula, cached per formula: per-input monotonicity, the
directions under its orderings, and its scaling shape (most of a cold ``aiinfra check``).

Each formula's part is keyed by a hash of what decides it (each variant's expression, the
symbols' names, domains and kinds in declared order, the orderings) and of the sources that
prove it (:data:`SOURCES`, and the SymPy version). A part is looked up:

1. in the table shipped with the engine, ``engine/numeric/directions.json``, written by
   ``python -m engine.numeric.directions --write`` for the shipped formulas (tests check that it
   covers them); it is data, never code;
2. in the user's private cache (engine.core.cache), one ``directions_<key>.json`` per formula;
3. else proven with SymPy (forked over the CPUs) and written to the cache. A part where SymPy ran
   out of its time budget is not cached (a faster run may decide it).

An edited formula misses both tables under its new key and is proven again; every other formula
keeps its part, so a cold run proves only what changed.
"""

from __future__ import annotations

import json
import os
import zlib

import engine

SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "directions.json")
SOURCES = ("engine/numeric/directions.py", "engine/core/symbolic.py", "engine/core/expr.py", "engine/core/expr_limits.py")
VERSION = "1"
_SHIPPED: list = []  # the shipped table, read once: [dict]
_SALT: list = []  # the sources' digest, computed once: [str]


def _salt() -> str:
    if not _SALT:
        from importlib.metadata import PackageNotFoundError, version

        here = os.path.dirname(os.path.dirname(os.path.abspath(engine.__file__)))
        crc, adler = zlib.crc32(VERSION.encode()), zlib.adler32(VERSION.encode())
        try:
            sympy_version = version("sympy")
        except PackageNotFoundError:
            sympy_version = "?"
        for name in SOURCES:
            try:
                with open(os.path.join(here, name), "rb") as fh:
                    data = name.encode() + b"\0" + fh.read() + b"\0"
            except OSError:
                data = name.encode() + b"\0missing\0"
            crc, adler = zlib.crc32(data, crc), zlib.adler32(data, adler)
        _SALT.append(f"{crc:08x}{adler:08x}:{sympy_version}")
    return _SALT[0]


def content(f) -> str:
    """What decides a formula's part, as canonical text (the formula's own words, not its place)."""
    symbols = [[n, s.domain, bool(s.categorical)] for n, s in f.symbols.items()]
    return json.dumps({"variants": [v.expr for v in f.variants], "symbols": symbols, "ordered": [list(p) for p in f.ordered]},
                      ensure_ascii=False, sort_keys=True)


def key(f) -> str:
    data = (_salt() + "\0" + content(f)).encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def part(f) -> list[list]:
    """Per variant of ``f``: [directions, orderings, directions under the orderings, scaling shape]."""
    from engine.core import symbolic

    numeric = {n: s for n, s in f.symbols.items() if not s.categorical}
    sym_table = symbolic.make_symbols({n: s.domain for n, s in numeric.items()})
    out = []
    for index, variant in enumerate(f.variants):
        used = variant.tree.symbols()
        inputs = [n for n in numeric if n in used]
        sympy_expr = symbolic.variant_to_sympy(f, index, sym_table)
        domains = {sym_table[n]: numeric[n].domain for n in inputs}
        mono = {n: symbolic.monotonicity(sympy_expr, sym_table[n], domains=domains) for n in inputs}
        given = [[a, b] for a, b in f.ordered if a in inputs and b in inputs]
        pairs = [(sym_table[a], sym_table[b]) for a, b in given]
        # the directions where every ordering holds (engine.numeric.calc_ranges checks that it does)
        mono_given = {n: (mono[n] if mono[n] is not None else symbolic.monotonicity(sympy_expr, sym_table[n], domains=domains, ordered=pairs))
                      for n in inputs} if given else {}
        out.append([mono, given, mono_given, symbolic.scaling_shape(sympy_expr)])
    return out


def _proven(f) -> tuple[list[list], bool]:
    """:func:`part` and whether SymPy decided it within its time budget throughout."""
    from engine.core import symbolic

    before = symbolic.timeouts[0]
    found = part(f)
    return found, symbolic.timeouts[0] == before


def shipped() -> dict:
    if not _SHIPPED:
        try:
            with open(SHIPPED, encoding="utf-8") as fh:
                table = json.load(fh)
        except (OSError, ValueError):
            table = {}
        _SHIPPED.append(table.get("parts", {}) if isinstance(table, dict) and table.get("salt") == _salt() else {})
    return _SHIPPED[0]


def parts(formulas: list) -> list[list[list]]:
    """:func:`part` of every formula, in order: from the shipped table, the private cache, else SymPy."""
    from engine.core import cache

    keys = [key(f) for f in formulas]
    table = shipped()
    found: list = [table.get(k) for k in keys]
    for i, k in enumerate(keys):
        if found[i] is None:
            found[i] = cache.read_json(f"directions_{k}.json")
    missing = [i for i, value in enumerate(found) if value is None]
    if missing:
        from engine.core.forked import forked_map

        for i, (value, complete) in zip(missing, forked_map(_proven, [formulas[i] for i in missing], minimum=9), strict=True):
            found[i] = value
            if complete:
                cache.write_json(f"directions_{keys[i]}.json", value)
        cache.prune("directions_", ".json", keep=4096)
    return found


def write(root) -> int:
    """Write the shipped table for the formulas of ``root`` (every part proven afresh); the count."""
    from engine.core.forked import forked_map
    from engine.kb.knowledge import Knowledge

    formulas = list(Knowledge.load(root, strict=False).formulas)
    proven = forked_map(_proven, formulas, minimum=9)
    undecided = [f.id for f, (_, complete) in zip(formulas, proven, strict=True) if not complete]
    if undecided:
        raise SystemExit(f"SymPy ran out of time on {', '.join(undecided)}; rerun on an idle machine")
    # one line per formula, sorted by key (a diff reads per formula); a part keeps its own order (the inputs' declared order)
    rows = sorted({key(f): value for f, (value, _) in zip(formulas, proven, strict=True)}.items(), key=lambda kv: kv[0])
    lines = [f"{json.dumps(k)}:{json.dumps(v, ensure_ascii=False, separators=(',', ':'))}" for k, v in rows]
    with open(SHIPPED, "w", encoding="utf-8") as fh:
        fh.write(f'{{"salt":{json.dumps(_salt())},"parts":{{\n' + ",\n".join(lines) + "\n}}\n")
    return len(formulas)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Write engine/numeric/directions.json, the shipped SymPy parts of the formulas")
    ap.add_argument("--write", action="store_true", help="prove every formula of --root and write the table")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    a = ap.parse_args()
    if a.write:
        print(f"{write(a.root)} formulas written to {SHIPPED}")
