"""Decision-tree pages: a Mermaid flowchart, each leaf's region and failure boundary, and a walker.

The pages appear when the tree engine (``engine.trees.walk``) and trees (``decision_trees/*.yaml``)
exist. Regions are the simplified conjunctions ``engine.trees.proofs.analyse`` proves (cached with
the compiled formulas). Red marks only leaves whose severity is ``bottleneck`` or ``failure``.

The walker runs in the browser and follows ``engine.trees.walk._WalkState`` step by step: branch
conditions are printed by SymPy's JavaScript printer (``engine.site.jsgen``) and compared in
base units; symbols that formulas produce are computed through the same chain resolver the
calculator forms use, with the tree's pseudo-calculator (its inputs and their defaults).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from engine.site import forms
from engine.site.context import Page, SiteData, md_escape, split_place, tree_page

INDEX = "trees/index.md"
RED = ("bottleneck", "failure")


def available(root: str) -> bool:
    return importlib.util.find_spec("engine.trees.walk") is not None and any(Path(root, "decision_trees").glob("*.yaml"))


def load(data: SiteData) -> dict:
    """The trees of the root (``engine.trees.walk.Tree`` by id), or {} before the tree engine exists."""
    if not available(data.root):
        return {}
    from engine.trees.walk import load_trees

    return load_trees(data.root)


def _runner(data: SiteData, tree):
    from engine.trees.walk import Runner

    return Runner(tree, data.module, dict(data.k.calculators))


# ---------------------------------------------------------------------- pages


def pages(data: SiteData) -> list[Page]:
    if not data.trees:
        return []
    from engine.core.errors import KnowledgeError
    from engine.trees.proofs import _FATAL, analyse

    try:
        report = analyse(data.root, data.k)
        regions, failure = report.regions, ""
    except Exception as exc:  # noqa: BLE001 - the page falls back to the unsimplified path conditions and says why
        report, regions, failure = None, {}, f"{type(exc).__name__}: {exc}"
    broken = [p for p in (report.problems if report else []) if any(f in p.message for f in _FATAL)]
    if broken:  # a start or branch leading nowhere, a cycle: the tree cannot be walked; the site is not built from it (#24)
        raise KnowledgeError(broken)
    out = [index(data)]
    for tid in sorted(data.trees):
        found = regions.get(tid)
        if found is None:
            t = data.trees[tid]
            found = {leaf: [" and ".join(c) or "always" for c in paths] for leaf, paths in path_conditions(t).items()}
        out.append(tree(data, tid, found, failure))
    return out


def path_conditions(t) -> dict[str, list[list[str]]]:
    """leaf -> every route to it, each the list of answers and conditions taken (not simplified)."""
    out: dict[str, list[list[str]]] = {name: [] for name in t.leaves}

    def visit(node: str, taken: list[str], seen: tuple) -> None:
        if node in t.leaves:
            out[node].append(taken)
            return
        if node not in t.nodes or node in seen:
            return
        n = t.nodes[node]
        for value, target in n.options:
            visit(target, [*taken, f"{n.input} = {value}"], (*seen, node))
        negated = []
        for b in n.branches:
            visit(b.to, [*taken, *negated, b.when], (*seen, node))
            negated.append(f"not ({b.when})")
        if n.otherwise:
            visit(n.otherwise, [*taken, *negated], (*seen, node))

    visit(t.start, [], ())
    return out


def index(data: SiteData) -> Page:
    lines = ["# Decision trees", "", "Selection trees from `decision_trees/`: each leaf cites chapters and formulas; red marks only "
             "bottleneck and failure leaves. Every page has a walker that runs in the browser.", "",
             "| tree | title | decides | chapters |", "|---|---|---|---|"]
    for tid, t in sorted(data.trees.items()):
        title = md_escape(t.title) + (f" · {t.title_zh}" if t.title_zh else "")
        lines.append(f"| {data.link(INDEX, tid, t.name)} | {title} | {md_escape(t.decision)} | {data.links(INDEX, t.chapters)} |")
    return Page(INDEX, "\n".join(lines) + "\n", "Decision trees", "decision_trees/README.md", 1)


def _short(text: str, limit: int = 90) -> str:
    first = text.split(". ")[0].split("; ")[0]
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def mermaid(t) -> list[str]:
    from engine.site.knowledge_pages import mermaid_label

    ids = {name: f"n{i}" for i, name in enumerate([*t.nodes, *t.leaves])}
    lines = ["```mermaid", "flowchart TD"]
    for name, node in t.nodes.items():
        lines.append(f'  {ids[name]}{{"{mermaid_label(node.question)}"}}')
    for name, leaf in t.leaves.items():
        lines.append(f'  {ids[name]}(["{mermaid_label(name + ": " + _short(leaf.recommendation))}"])')
    for name, node in t.nodes.items():
        for value, target in node.options:
            lines.append(f'  {ids[name]} -- "{mermaid_label(value)}" --> {ids[target]}')
        for b in node.branches:
            lines.append(f'  {ids[name]} -- "{mermaid_label(b.label or b.when)}" --> {ids[b.to]}')
        if node.otherwise:
            lines.append(f'  {ids[name]} -- "otherwise" --> {ids[node.otherwise]}')
    red = [ids[n] for n, leaf in t.leaves.items() if leaf.severity in RED]
    if red:
        lines.append("  classDef red fill:#fdecea,stroke:#c62828,color:#b71c1c")
        lines.append(f"  class {','.join(red)} red")
    return lines + ["```", ""]


def tree(data: SiteData, tid: str, regions: dict, failure: str = "") -> Page:
    t = data.trees[tid]
    here = tree_page(tid)
    runner = _runner(data, t)
    lines = [f"# {md_escape(t.title)}", ""]
    if t.title_zh:
        lines += [f"**{t.title_zh}**", ""]
    lines += [f"`{tid}` · chapters {data.links(here, t.chapters)}" + (f" · sections {data.links(here, t.sections)}" if t.sections else ""), ""]
    lines += [f"**Decides:** {md_escape(t.decision)}" + (f" {t.decision_zh}" if t.decision_zh else ""), ""]
    lines += mermaid(t)
    lines += ["## Inputs", "", "| input | meaning | unit | default |", "|---|---|---|---|"]
    for name in t.inputs:
        info = runner.symbols.info(name)
        unit = "one of " + ", ".join(f"`{v}`" for v in info["values"]) if info["values"] else f"`{info['unit']}`"
        default = "" if info["default"] is None else _shown(info["default"]) + (f" ({md_escape(info['source'])})" if info["source"] else "")
        produced = t.inputs[name].produced_by
        via = f" (from {data.link(here, produced)})" if produced else ""
        lines.append(f"| `{name}` | {md_escape(info['desc'])}{via} | {unit} | {default} |")
    if t.parameters:
        lines += ["", "## Parameters", "", "| parameter | value | unit | meaning | source |", "|---|---|---|---|---|"]
        for p in t.parameters.values():
            lines.append(f"| `{p.name}` | {_shown(p.value)} | `{p.unit}` | {md_escape(p.description)} | {md_escape(p.source)} |")
    if t.fixed:
        lines += ["", "## Fixed by the tree", ""] + [f"- `{n}` = {v}: {md_escape(why)}" for n, (v, why) in t.fixed.items()]
    lines += flips(t, runner)
    lines += ["", "## Leaves", ""]
    if failure:
        lines += [f"!!! note \"Regions not simplified\"\n    The symbolic analysis failed ({md_escape(failure)}); each region below is the "
                  "unsimplified conjunction of the answers and conditions on the way to the leaf. `aiinfra tree check` shows the problem.", ""]
    for name, leaf in t.leaves.items():
        mark = f" ({leaf.severity})" if leaf.severity else ""
        lines += [f"### {name}{mark} {{#leaf-{name}}}", "", f"**{md_escape(leaf.recommendation)}**", ""]
        if leaf.recommendation_zh:
            lines += [leaf.recommendation_zh, ""]
        lines += [md_escape(leaf.rationale), ""]
        region = regions.get(name, [])
        lines += ["**Region:** " + (" **or** ".join(f"`{r}`" for r in region) if region else "unreachable"), ""]
        if leaf.boundary:
            sev = f" ({leaf.boundary['severity']})" if leaf.boundary.get("severity") else ""
            lines += [f"**Failure boundary{sev}:** `{leaf.boundary['when']}` — {md_escape(leaf.boundary['message'])}", ""]
        lines += [f"**Read:** {data.links(here, leaf.read, with_title=True)} · **Formulas:** {data.links(here, leaf.formulas)}", ""]
    if t.notes:
        lines += ["## Notes", "", md_escape(t.notes), ""]
    lines += ["## Walk it", "", "Give the inputs; the walker follows the same conditions in your browser, with functions generated "
              "from the same SymPy expressions (no network). Empty fields take their defaults.", "",
              forms.html_block(walker_spec(data, t, runner), "aiinfra-walker-host"), "",
              f"Command line: `aiinfra tree walk {t.name} --set NAME=VALUE ...`; where the advice flips along one input: "
              f"`aiinfra tree boundary {t.name} --for NAME --set ...`.", ""]
    file = t.display
    line = split_place(t.where("id"))[1]
    lines += [f"*Defined in `{file}` line {line}.*", ""]
    return Page(here, "\n".join(lines), t.title, file, line)


def flips(t, runner) -> list[str]:
    """Where the advice flips: each test branch's comparison as an equation, solved in closed form for
    every tree input it names (sympy, through the whitelisted parser), with parameters substituted."""
    import sympy as sp

    from engine.core import symbolic
    from engine.core.errors import ExprError
    from engine.core.expr import parse

    rows: list[str] = []
    seen: set = set()
    params = {p.name: p.value for p in t.parameters.values() if isinstance(p.value, int | float)}
    for node in t.nodes.values():
        for b in node.branches:
            try:
                tree = parse(f"Piecewise((1, {b.when}), (0, True))", frozenset(runner.symbols.names() | set(t.parameters)))
            except ExprError:
                continue
            used = sorted(tree.symbols())
            table = {n: sp.Symbol(n, positive=True) for n in used}
            expr = symbolic.to_sympy(tree, table)
            if not isinstance(expr, sp.Piecewise):
                continue  # the comparison holds on the whole positive domain (count > 0 of a positive symbol): no flip
            cond = expr.args[0][1]
            if not isinstance(cond, sp.core.relational.Relational):
                continue  # and/or of several comparisons: the regions below say it
            eq = (cond.lhs - cond.rhs).subs({table[k]: sp.nsimplify(v, rational=True) for k, v in params.items() if k in table})
            for var in used:
                if var in params or var not in t.inputs or runner.symbols.info(var)["values"]:
                    continue
                x = table[var]
                num = sp.together(eq).as_numer_denom()[0]
                if num.has(sp.Piecewise, sp.Min, sp.Max, sp.floor, sp.ceiling) or sp.degree(num, x) != 1:
                    continue  # closed forms for the linear case only; the CLI's boundary handles the rest numerically
                a, c = num.diff(x), num.subs(x, 0)
                if a.has(x):
                    continue
                text = sp.sstr(sp.cancel(-c / a))
                for sol in [text]:
                    row = f"| `{node.id}` | `{b.when}` | `{var}` | `{var} = {sol}` |"
                    key = (node.id, var, sol)
                    if key not in seen:
                        seen.add(key)
                        rows.append(row)
    if not rows:
        return []
    return ["", "## Where the advice flips", "",
            "Each branch condition as an equation, solved in closed form for a tree input it names (parameters substituted). "
            "For a number with your other inputs: `aiinfra tree boundary " + t.name + " --for NAME --set ...`.", "",
            "| node | condition | input | flips at |", "|---|---|---|---|", *rows, ""]


def _shown(value) -> str:
    from engine.core.humanize import number

    if isinstance(value, list | tuple):
        value = value[0]
    return value if isinstance(value, str) else number(value)


# ---------------------------------------------------------------------- walker


def _names(t, runner) -> list[str]:
    names = {n for used, _ in runner.conds.values() for n in used}
    names |= {n for used, _ in runner.boundaries.values() for n in used}
    names |= {node.input for node in t.nodes.values() if node.kind == "ask"}
    names |= set(t.inputs) | set(t.parameters) | set(runner.allowed)
    return sorted(n for n in names if runner.symbols.known(n))


def walker_spec(data: SiteData, t, runner=None) -> dict:
    from engine.numeric.evaluate import read_input

    runner = runner or _runner(data, t)
    symbols = runner.symbols
    info_out = {}
    for name in _names(t, runner):
        info = symbols.info(name)
        default = info["default"]
        if default is not None and not info["values"] and info["kind"] != "parameter":
            default = None if info["kind"] == "formula" else read_input(name, str(default), info).value
        info_out[name] = {"kind": info["kind"], "unit": info["unit"], "scale": symbols.scale(name), "values": info["values"],
                          "domain": info["domain"], "default": default, "source": info["source"], "desc": info["desc"],
                          "produced": symbols.produced(name)}
    calc = runner.calc
    scaled = {}
    for name, spec in calc.inputs.items():
        if spec.get("default") is not None and runner.graph.known(name) and not runner.graph.spec(name)["values"]:
            scaled[name] = read_input(name, str(spec["default"]), runner.graph.spec(name)).value
    fixed = {}
    for name, (value, _why) in t.fixed.items():
        spec = runner.graph.spec(name)
        fixed[name] = str(value) if spec["values"] else read_input(name, str(value), spec).value
    fields = []
    for name in [*t.inputs, *t.parameters]:
        info = info_out[name]
        spec = {"desc": info["desc"], "unit": info["unit"], "domain": info["domain"], "values": info["values"],
                "default": None if info["default"] is None or info["values"] else [info["default"]]}
        field = forms.field(name, spec, None)
        if info["values"]:
            field["initial"] = "" if symbols.info(name)["default"] is not None else info["values"][0]
            field["optional"] = symbols.info(name)["default"] is not None
        elif symbols.info(name)["default"] is not None and info["kind"] == "formula":
            field["placeholder"] = f"default {_shown(symbols.info(name)['default'])}"
        fields.append(field)
    nodes = {}
    for name, node in t.nodes.items():
        nodes[name] = {"kind": node.kind, "question": node.question, "input": node.input, "options": [list(o) for o in node.options],
                       "otherwise": node.otherwise,
                       "branches": [{"key": f"{t.id}#{name}#{i}", "when": b.when, "to": b.to, "label": b.label} for i, b in enumerate(node.branches)]}
    leaves = {}
    for name, leaf in t.leaves.items():
        boundary = None
        if leaf.boundary:
            boundary = {"key": f"{t.id}#leaf#{name}", "when": leaf.boundary["when"], "message": leaf.boundary["message"]}
        leaves[name] = {"title": leaf.recommendation, "zh": leaf.recommendation_zh, "severity": leaf.severity, "boundary": boundary}
    return {"kind": "walker", "id": t.id, "start": t.start, "nodes": nodes, "leaves": leaves, "symbols": info_out, "fixed": fixed,
            "calc": {"id": t.id, "inputs": calc.inputs, "outputs": [], "refuse": [], "failure_boundaries": [], "scaled_defaults": scaled},
            "fields": fields}


def conditions(data: SiteData) -> dict:
    """Branch and failure-boundary functions of every tree, keyed as walker_spec refers to them."""
    from engine.site.jsgen import condition_function

    out = {}
    for tid, t in data.trees.items():
        runner = _runner(data, t)
        names = runner.symbols.names()
        for nid, node in t.nodes.items():
            for i, b in enumerate(node.branches):
                out[f"{tid}#{nid}#{i}"] = condition_function(b.when, names)
        for lid, leaf in t.leaves.items():
            if leaf.boundary:
                out[f"{tid}#leaf#{lid}"] = condition_function(leaf.boundary["when"], names)
    return out
