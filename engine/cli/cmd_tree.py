"""``aiinfra tree list|show|walk|regions|boundary|check``: decision trees of decision_trees/.

Parsers are added by :func:`add_parsers` (engine.cli.main imports this module only to build
them, so the top of this module imports nothing heavy); each handler loads what it needs.
"""

from __future__ import annotations

import sys

WALK_EXAMPLES = """examples:
  aiinfra tree walk pd-disaggregation --set latency_slo=interactive --set tpot_slo=50ms \\
      --set prompt_tokens=8192 --set serving_gpus=64 --set kv_link_bandwidth=50GB/s ...
  aiinfra tree walk checkpoint-strategy --answers my-cluster.yaml --format md
Missing inputs are asked for when stdin is a terminal (Enter keeps the default shown; back,
skip and help work at every prompt); a value the engine can compute from what it has is
never asked. Otherwise defaults are used and listed, and every input without a default that
the walk needs is named at once. `aiinfra tree show ID` lists a tree's inputs.
"""

BOUNDARY_EXAMPLES = """examples:
  aiinfra tree boundary pd-disaggregation --for prompt_tokens --set latency_slo=interactive ...
  aiinfra tree boundary checkpoint-strategy --for mtbf --set checkpoint_mode=sync \\
      --set checkpoint_durable_time=60s
"""


def _preset_flags(p) -> None:
    p.add_argument("--model", metavar="ID", help="fill architecture inputs from knowledge/models (e.g. qwen3-8b), each with its source")
    p.add_argument("--device", metavar="ID", help="fill memory, bandwidth, peak and power inputs from knowledge/hardware (e.g. h100-sxm)")
    p.add_argument("--precision", default="bf16", help="precision of the device's dense peak (default bf16)")


def add_parsers(verbs, Parser, shared) -> None:
    import argparse

    raw = argparse.RawDescriptionHelpFormatter
    tree = verbs.add_parser("tree", help="selection decision trees: walk, regions, boundaries, proofs",
                            description="Decision trees (decision_trees/*.yaml): walk one with your numbers, see which inputs lead to which advice, where the advice flips, and whether the branches have gaps or overlaps.")
    tverbs = tree.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    tverbs.required = True
    p = tverbs.add_parser("list", help="every decision tree", description="List the decision trees: id, title, chapters, leaves.")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_tree:list_")
    p = tverbs.add_parser("show", help="a tree's inputs, what computes them, and its leaves",
                          description="Show a tree: every input with its unit, default, domain or choices, which ones the engine computes (and from what) or --model/--device fill, the inputs reached through formulas, the parameters and the leaves.")
    p.add_argument("id", metavar="ID", help="tree id, e.g. pd-disaggregation")
    _preset_flags(p)
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_tree:show")
    p = tverbs.add_parser("walk", help="walk a tree with your numbers", description="Walk a tree: the path with the values that decided each step, the recommendation, why, what to read, and its failure boundary.",
                          formatter_class=raw, epilog=WALK_EXAMPLES)
    p.add_argument("id", metavar="ID", help="tree id, e.g. pd-disaggregation or tree:pd-disaggregation")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE", help="an input, parameter or intermediate symbol (repeatable; overrides --answers)")
    p.add_argument("--answers", metavar="FILE", help="a YAML mapping NAME: VALUE of inputs")
    p.add_argument("--no-prompt", action="store_true", help="never ask, even on a terminal: use defaults")
    _preset_flags(p)
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_tree:walk")
    p = tverbs.add_parser("regions", help="which inputs lead to which leaf", description="Per leaf, the simplified conjunction of the conditions on its paths; with --for VAR and the other inputs set, the interval of VAR that leads there.")
    p.add_argument("id", metavar="ID", help="tree id")
    p.add_argument("--for", dest="target", metavar="VAR", help="express each region as a set of this symbol")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE", help="a value for another input (repeatable)")
    _preset_flags(p)
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_tree:regions")
    p = tverbs.add_parser("boundary", help="the value of VAR where the advice changes", description="The values of VAR at which the recommendation changes, in closed form and as a number, for the other inputs set.",
                          formatter_class=raw, epilog=BOUNDARY_EXAMPLES)
    p.add_argument("id", metavar="ID", help="tree id")
    p.add_argument("--for", dest="target", required=True, metavar="VAR", help="the symbol to move")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE", help="a value for another input (repeatable)")
    _preset_flags(p)
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_tree:boundary")
    p = tverbs.add_parser("check", help="prove every tree: gaps, overlaps, unreachable leaves", description="Check every tree: structure, references, units, and at every test node a gap or overlap proven (linear) or searched by seeded sampling. Exit 1 when a problem is found.")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_tree:check")


# ---------------------------------------------------------------------- handlers


def list_(args) -> int:
    from engine.cli.common import emit, root_of
    from engine.cli.render import table, to_json
    from engine.trees.walk import load_trees

    trees = load_trees(root_of(args))
    rows = [dict(id=t.id, title=t.title, title_zh=t.title_zh, chapters=list(t.chapters), leaves=len(t.leaves)) for _, t in sorted(trees.items())]
    if args.format == "json":
        emit(to_json(rows))
    else:
        emit(table(rows, [("id", "id"), ("title", "title"), ("title_zh", "title_zh"), ("chapters", "chapters"), ("leaves", "leaves")], args.format))
    return 0


def show(args) -> int:
    from engine.cli.common import emit, root_of
    from engine.trees.inputs import describe
    from engine.trees.walk import runner

    _no_csv(args)
    root = root_of(args)
    run = runner(root, args.id)
    emit(render_show(describe(run, _presets(args, root)), args.format))
    return 0


def walk(args) -> int:
    from engine.cli.common import emit, parse_sets, root_of
    from engine.trees.walk import runner

    _no_csv(args)
    root = root_of(args)
    given = _answers(args.answers) if args.answers else {}
    given.update(parse_sets(args.sets))
    run = runner(root, args.id)
    prompt = _TtyPrompt() if not args.no_prompt and sys.stdin.isatty() else None
    result = run.walk(given, prompt, _presets(args, root))
    emit(render_walk(result, args.format))
    return 0


def regions(args) -> int:
    from engine.cli.common import emit, parse_sets, root_of
    from engine.trees.proofs import analyse
    from engine.trees.walk import find, load_trees, runner

    _no_csv(args)
    root = root_of(args)
    given = parse_sets(args.sets)
    if args.target is None:
        if given:
            from engine.core.errors import InputError

            raise InputError("--set", "needs --for VAR (without it the regions are symbolic)")
        tree = find(load_trees(root), args.id)
        report = analyse(root)
        mine = [p for p in report.problems if p.id == tree.id]
        if mine:
            from engine.core.errors import KnowledgeError

            raise KnowledgeError(mine)
        emit(_render_regions(tree, report.regions[tree.id], args.format))
        return 0
    from engine.trees import regions as trees_symbolic

    run = runner(root, args.id)
    iv, _ = trees_symbolic.intervals(run, args.target, *_with_presets(run, given, args, root))
    emit(_render_intervals(run.tree, iv, args.format))
    return 0


def boundary(args) -> int:
    from engine.cli.common import emit, parse_sets, root_of
    from engine.trees import regions as trees_symbolic
    from engine.trees.walk import runner

    _no_csv(args)
    root = root_of(args)
    run = runner(root, args.id)
    iv, flips = trees_symbolic.boundaries(run, args.target, *_with_presets(run, parse_sets(args.sets), args, root))
    emit(_render_boundary(run.tree, iv, flips, args.format))
    return 0


def check(args) -> int:
    from engine.cli.common import emit, root_of
    from engine.cli.render import table, to_json
    from engine.trees.proofs import analyse
    from engine.trees.walk import load

    root = root_of(args)
    report = analyse(root)
    trees, _ = load(root)
    exact = sum(1 for proofs in report.proofs.values() for p in proofs if p["method"] == "exact")
    sampled = sum(1 for proofs in report.proofs.values() for p in proofs if p["method"] == "sampled")
    if args.format == "json":
        emit(to_json({"ok": not report.problems, "trees": len(trees), "problems": [str(p) for p in report.problems],
                      "notes": [str(p) for p in report.notes], "proofs": report.proofs}))
    elif args.format == "csv":
        rows = [dict(kind=k, place=p.place, id=p.id, field=p.path, message=p.message) for k, ps in (("problem", report.problems), ("note", report.notes)) for p in ps]
        emit(table(rows, [(c, c) for c in ("kind", "place", "id", "field", "message")], "csv"))
    else:
        md = args.format == "md"
        for p in report.problems:
            emit(f"- {p}" if md else str(p))
        for p in report.notes:
            emit(f"- note: {p}" if md else f"note: {p}")
        n = len(report.problems)
        emit(f"{'ok' if not n else 'FAILED'}: {len(trees)} trees, {exact} node checks proven exactly, {sampled} sampled; {n} problem{'s' if n != 1 else ''}")
    return 1 if report.problems else 0


# ---------------------------------------------------------------------- helpers


def _presets(args, root) -> dict | None:
    """``--model``/``--device`` values (engine.domain.presets), each with its source."""
    if not (getattr(args, "model", None) or getattr(args, "device", None)):
        return None
    from engine.domain import presets

    out = dict(presets.precision_values(args.precision))  # kv_bytes follows --precision, as in calc
    out.update(presets.cached(root, args.model, args.device, args.precision))
    return out


def _with_presets(run, given: dict, args, root) -> tuple[dict, dict]:
    """``given`` plus the preset values the tree can use (never one the user gave or --for moves), and each preset
    value's source (a preset's range is [value, low, high], which only a preset may pass)."""
    out, sources = dict(given), {}
    for name, (value, source) in (_presets(args, root) or {}).items():
        if name in run.allowed and name not in out and name not in run.tree.fixed and name != args.target:
            out[name], sources[name] = value, source
    return out, sources


def _no_csv(args) -> None:
    if args.format == "csv":
        from engine.core.errors import InputError

        raise InputError("--format", "csv is available for tree list and tree check only (expected text, json or md)")


def _answers(path: str) -> dict[str, object]:
    from pathlib import Path

    from engine.core.errors import InputError
    from engine.kb.yamlio import load_yaml, plain

    if not Path(path).is_file():
        raise InputError("--answers", f"{path!r} is not a file")
    data, problems = load_yaml(Path(path), path)
    if problems:
        raise InputError("--answers", str(problems[0]))
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise InputError("--answers", f"{path} should be a YAML mapping NAME: VALUE")
    out = {}
    for k, v in plain(data).items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise InputError(f"--answers {k}", f"expected a number or a text value, got {type(v).__name__}")
        out[k] = v
    return out


class _TtyPrompt:
    """Asks on stderr, reads stdin; Enter keeps the default. Ctrl-C ends the walk (nothing is written).

    At every prompt ``back`` asks the previous question again, ``skip`` (like Enter) keeps the
    default, lets the engine compute the value, or leaves it unknown where the tree allows, and
    ``help`` shows what the input is.
    """

    WORDS = "type back for the previous question, skip to keep the default (or leave it to the engine), help for more"

    def __init__(self):
        self.hinted = False

    def ask(self, name: str, info: dict):
        from engine.trees.walk import BACK

        if not self.hinted:
            sys.stderr.write(f"Answer each question; Enter keeps the default shown ({self.WORDS}).\n")
            self.hinted = True
        sys.stderr.write(f"{name} ({_what(info)}): {info['desc']}{_shown(info)}\n")
        while True:
            try:
                text = input(f"  {name} = ").strip()
            except EOFError:
                raise KeyboardInterrupt from None
            word = text.lower()
            if word == "help":
                sys.stderr.write(_help(name, info))
                continue
            if word == "back":
                return BACK
            return None if word in ("", "skip") else text

    def say(self, text: str) -> None:
        sys.stderr.write(f"  {text}\n")


def _what(info: dict) -> str:
    if info["values"]:
        return "one of " + "|".join(info["values"])
    return info["unit"] if info["unit"] not in ("", "1") else "a number"


def _default(info: dict):
    from engine.core.humanize import number

    default = info["default"]
    return number(default[0]) if isinstance(default, list) else default


def _shown(info: dict) -> str:
    if info.get("computed_by"):
        return f" [Enter: compute it with {info['computed_by']}]"
    return f" [default {_default(info)}]" if info["default"] is not None else ""


def _help(name: str, info: dict) -> str:
    """What ``help`` prints at a prompt: the input's meaning, unit, default and choices."""
    lines = [f"{name}: {' '.join(str(info['desc']).split())}"]
    lines.append(f"unit: {info['unit']}" if info["unit"] not in ("", "1") else "unit: none (a plain number or a choice)")
    if info["values"]:
        lines.append("choices: " + ", ".join(info["values"]))
    elif info.get("domain"):
        lines.append(f"domain: {info['domain']}")
    if info["default"] is not None:
        lines.append(f"default: {_default(info)}" + (f" ({info['source']})" if info.get("source") else ""))
    else:
        lines.append("default: none")
    if info.get("computed_by"):
        lines.append(f"Enter or skip: {info['computed_by']} computes it from the other inputs")
    lines.append(_TtyPrompt.WORDS)
    return "".join(f"    {line}\n" for line in lines)


def _fmt(value, unit: str) -> str:
    from engine.core.humanize import friendly, number

    if isinstance(value, str):
        return value
    text = number(value, 6) + (f" {unit}" if unit not in ("", "1") else "")
    extra = friendly(value, unit)
    return f"{text} ({extra})" if extra else text


def render_walk(result, fmt: str) -> str:
    from engine.cli.render import to_json

    if fmt == "json":
        return to_json(result.to_json())
    md = fmt == "md"
    tree, leaf = result.tree, result.leaf
    lines = [f"## {tree.id} · {tree.title} ({tree.title_zh})" if md else f"{tree.id} · {tree.title} ({tree.title_zh})", "",
             f"Decision: {tree.decision}", "", "### Path" if md else "Path:"]
    for i, s in enumerate(result.steps, 1):
        if s.kind == "ask":
            lines.append(f"{i}. {s.question}" if md else f"  {i}. [{s.node}] {s.question}")
            lines.append(f"{'   ' if md else '       '}{s.input} = {s.answer} -> {s.to}")
            continue
        lines.append(f"{i}. {s.question}" if md else f"  {i}. [{s.node}] {s.question}")
        pad = "   " if md else "       "
        held = "none of the branches holds" if s.branch is None else s.condition
        lines.append(f"{pad}{'`' + held + '`' if md else held}" + (f" ({s.label})" if s.label and s.branch is not None else "") + f" -> {s.to}")
        lines.append(pad + ", ".join(f"{n} = {_fmt(v, u)}" for n, (v, u) in s.values.items()))
    sev = f" [{leaf.severity}]" if leaf.severity else ""
    lines += ["", f"### Recommendation ({leaf.id}){sev}" if md else f"Recommendation ({leaf.id}){sev}:", leaf.recommendation]
    if leaf.recommendation_zh:
        lines.append(leaf.recommendation_zh)
    lines += ["", "### Why" if md else "Why:", " ".join(leaf.rationale.split())]
    b = result.boundary
    if b:
        sev = f" [{b['severity']}]" if b.get("severity") else ""
        state = {True: "MET for these inputs: the advice does not hold", False: "not met", None: b.get("note", "not evaluated")}[b["met"]]
        lines += ["", "### Failure boundary" if md else "Failure boundary:", f"{b['when']}{sev}: {b['message']} ({state})"]
    lines += ["", "### Read" if md else "Read:", ", ".join(leaf.read), "Formulas: " + (", ".join(leaf.formulas) or "none")]
    defaults = [f"{n} = {_fmt(v.value, v.unit)} ({v.source.removeprefix('default: ')})" for n, v in result.inputs.items() if n in result.defaults_used]
    if defaults:
        lines += ["", "### Defaults used" if md else "Defaults used:"] + [f"- {d}" for d in defaults]
    if result.warnings:
        lines += ["", "### Warnings" if md else "Warnings:"] + [f"- {w}" for w in result.warnings]
    return "\n".join(lines)


def render_show(data: dict, fmt: str) -> str:
    from engine.cli.render import to_json

    if fmt == "json":
        return to_json(data)
    md = fmt == "md"
    lines = [f"## {data['tree']} · {data['title']} ({data['title_zh']})" if md else f"{data['tree']} · {data['title']} ({data['title_zh']})",
             "", f"Decision: {data['decision']}", ""]
    lines += _show_inputs("Inputs", "give any with --set NAME=VALUE or --answers FILE", data["inputs"], md)
    if data["chain"]:
        lines += [""] + _show_inputs("Inputs reached through formulas", "each may be given too", data["chain"], md)
    if data["fixed"]:
        lines += ["", "### Fixed" if md else "Fixed:"] + [f"- {f['symbol']} = {f['value']} ({f['reason']})" for f in data["fixed"]]
    if data["parameters"]:
        lines += ["", "### Parameters" if md else "Parameters:"]
        lines += [f"- {p['name']} = {p['value']:g} {p['unit']} ({p['source']})" for p in data["parameters"]]
    lines += ["", "### Leaves" if md else "Leaves:"]
    lines += [f"- {leaf['id']}{f' [{s}]' if (s := leaf['severity']) else ''}: {leaf['recommendation']}" for leaf in data["leaves"]]
    return "\n".join(lines)


def _show_inputs(title: str, hint: str, inputs: list[dict], md: bool) -> list[str]:
    lines = [f"### {title}" if md else f"{title} ({hint}):"]
    if md:
        lines += ["", hint, "", "| input | unit | domain or choices | default | computed / preset | meaning |", "|---|---|---|---|---|---|"]
    for i in inputs:
        kind = "one of " + "|".join(i["values"]) if i["values"] else i["domain"]
        default = "none" if i["default"] is None else f"{_value(i['default'])}{' ' + i['unit'] if i['unit'] and not i['values'] else ''}"
        how = _how(i)
        if md:
            cells = [f"`{i['symbol']}`", i["unit"], kind, default, how or "", i["description"]]
            lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
            continue
        unit = f"{i['unit']}, " if i["unit"] else ""
        lines.append(f"  {i['symbol']} ({unit}{kind}): default {default}" + (f"; {how}" if how else ""))
        lines.append(f"      {i['description']}")
    return lines


def _how(i: dict) -> str:
    parts = []
    if i["preset"]:
        parts.append(f"preset {_value(i['preset']['value'])}{' ' + i['unit'] if i['unit'] else ''} ({i['preset']['source']})")
    if i["computed"]:
        parts.append(f"computed by {i['computed']['formula']} from {', '.join(i['computed']['from'])} unless given")
    return "; ".join(parts)


def _value(v) -> str:
    from engine.core.humanize import number

    if isinstance(v, list):  # a range: central value, low, high
        return f"{number(v[1])}..{number(v[2])}" if len(v) == 3 else ", ".join(map(str, v))
    return number(v) if isinstance(v, int | float) and not isinstance(v, bool) else str(v)


def _render_regions(tree, regions: dict, fmt: str) -> str:
    from engine.cli.render import to_json

    if fmt == "json":
        return to_json({"tree": tree.id, "parameters": {p.name: {"value": p.value, "unit": p.unit} for p in tree.parameters.values()}, "regions": regions})
    md = fmt == "md"
    lines = [f"## {tree.id} · regions" if md else f"{tree.id} · regions (conditions on every path to each leaf, simplified)", ""]
    for leaf, texts in regions.items():
        lines.append(f"- **{leaf}**: {tree.leaves[leaf].recommendation}" if md else f"{leaf}: {tree.leaves[leaf].recommendation}")
        if not texts:
            lines.append("    never reached")
        for j, text in enumerate(texts):
            lines.append(f"    {'when' if j == 0 else 'or  '} {text}")
    if tree.parameters:
        lines += ["", "Parameters:"] + [f"  {p.name} = {p.value:g} {p.unit} ({p.source})" for p in tree.parameters.values()]
    return "\n".join(lines)


def _render_intervals(tree, iv, fmt: str) -> str:
    from engine.cli.render import to_json
    from engine.trees.regions import set_text

    texts = {leaf: set_text(s, iv.scale, iv.unit) for leaf, s in iv.sets.items()}
    if fmt == "json":
        return to_json({"tree": tree.id, "for": iv.var, "unit": iv.unit, "regions": texts, "defaults_used": iv.defaults, "notes": iv.notes})
    md = fmt == "md"
    lines = [f"## {tree.id} · regions in {iv.var}" if md else f"{tree.id} · regions in {iv.var}", ""]
    width = max(len(k) for k in texts)
    for leaf, text in texts.items():
        shown = "not reached for these inputs" if text == "never" else f"{iv.var} in {text}"
        lines.append(f"- {leaf}: {shown}" if md else f"  {leaf.ljust(width)}  {shown}")
    if iv.integer:
        lines.append(f"({iv.var} takes whole numbers only)")
    lines += _tail(iv)
    return "\n".join(lines)


def _render_boundary(tree, iv, flips, fmt: str) -> str:
    from engine.cli.render import to_json

    if fmt == "json":
        return to_json({"tree": tree.id, "for": iv.var, "unit": iv.unit,
                        "boundaries": [{"value": f.at, "closed_form": f.closed_form, "below": f.below, "above": f.above, "at": f.at_point} for f in flips],
                        "defaults_used": iv.defaults, "notes": iv.notes})
    md = fmt == "md"
    lines = [f"## {tree.id} · where the advice changes with {iv.var}" if md else f"{tree.id} · where the advice changes with {iv.var}", ""]
    if not flips:
        only = sorted(leaf for leaf, s in iv.sets.items() if s.is_empty is not True)
        lines.append(f"the recommendation does not change with {iv.var} for these inputs ({', '.join(only) or 'no leaf'})")
    for f in flips:
        lines.append(f"{'- ' if md else '  '}{iv.var} = {_fmt(f.at, iv.unit)}: {f.below} below, {f.above} above (at the point itself: {f.at_point})")
        if f.closed_form:
            lines.append(f"      closed form: {f.closed_form}")
    lines += _tail(iv)
    return "\n".join(lines)


def _tail(iv) -> list[str]:
    lines = []
    if iv.defaults:
        lines += ["", "Defaults used:"] + [f"- {d}" for d in iv.defaults]
    if iv.notes:
        lines += ["", "Notes:"] + [f"- {n}" for n in iv.notes]
    return lines
