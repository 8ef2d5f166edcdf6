"""What ``aiinfra tree show`` lists: a tree's inputs (units, defaults, domains, choices, what
computes them), its parameters and its leaves, as plain data (the CLI renders it)."""

from __future__ import annotations

from engine.trees.runner import Runner


def describe(run: Runner, presets: dict[str, tuple[object, str]] | None = None) -> dict:
    """The tree of ``run`` for a reader: every declared input, parameter and leaf.

    ``presets`` (symbol -> (value, source), engine.domain.presets for --model/--device) marks
    the inputs they fill, with the value and its source.
    """
    tree = run.tree
    return {
        "tree": tree.id, "title": tree.title, "title_zh": tree.title_zh, "decision": tree.decision,
        "chapters": list(tree.chapters), "start": tree.start,
        "inputs": [_input(run, name, presets or {}) for name in tree.inputs],
        "chain": [_input(run, name, presets or {}) for name in chain_inputs(run)],
        "fixed": [{"symbol": n, "value": v, "reason": r} for n, (v, r) in tree.fixed.items()],
        "parameters": [{"name": p.name, "value": p.value, "unit": p.unit, "source": p.source, "description": p.description}
                       for p in tree.parameters.values()],
        "leaves": [{"id": leaf.id, "recommendation": leaf.recommendation, "severity": leaf.severity or None,
                    "formulas": list(leaf.formulas), "read": list(leaf.read)} for leaf in tree.leaves.values()],
    }


def _input(run: Runner, name: str, presets: dict[str, tuple[object, str]]) -> dict:
    info = run.symbols.info(name)
    unit = info["unit"] if info["unit"] not in ("", "1") else ""
    default = info["default"][0] if isinstance(info["default"], list) else info["default"]  # a range default: its central value
    preset = None
    if name in presets and name not in run.tree.fixed:
        value, source = presets[name]
        preset = {"value": value, "source": source}
    return {
        "symbol": name, "kind": "choice" if info["values"] else "number", "unit": unit,
        "default": default, "default_source": info["source"] if default is not None else "",
        "domain": "" if info["values"] else info["domain"], "values": list(info["values"]),
        "description": " ".join(str(info["desc"]).split()),
        "computed": computed_by(run, name), "preset": preset,
    }


def computed_by(run: Runner, name: str) -> dict | None:
    """``{formula, from}`` when the walk computes ``name`` through the chain unless it is given."""
    graph, inp = run.graph, run.tree.inputs.get(name)
    fid = graph.producer.get(name)
    if fid is None or (inp is not None and inp.local):
        return None
    if not (inp is not None and inp.produced_by) and run.symbols.info(name)["default"] is not None:
        return None  # its default is used; the formula is not run for it
    meta = graph.formulas[fid]
    names = [meta["selector"]] if meta["selector"] else []
    for variant in meta["variants"].values():
        names += [n for n in variant["inputs"] if n not in names]
    by = inp.produced_by if inp is not None and inp.produced_by.startswith("calc:") else fid
    return {"formula": by, "from": names}


def chain_inputs(run: Runner) -> list[str]:
    """The symbols the computed inputs need that the tree does not declare, in the order first reached."""
    tree = run.tree
    skip = set(tree.inputs) | set(tree.parameters) | set(tree.fixed)
    out: list[str] = []
    todo = [n for n in tree.inputs if computed_by(run, n)]
    while todo:
        found = computed_by(run, todo.pop(0))
        for n in found["from"] if found else ():
            if n not in skip and n not in out:
                out.append(n)
                todo.append(n)
    return out
