"""Calculator pages, generated from ``knowledge/calculators/*.yaml``.

A page lists the inputs (with units, defaults and where the defaults come from), the outputs,
the formula chain the calculator can reach, its assumptions and failure boundaries, an
example result computed now by the Python engine (when the record declares ``examples``), and
an interactive form that resolves the same chain in the browser.
"""

from __future__ import annotations

from engine.core.humanize import friendly, number
from engine.site import accuracy_pages, forms
from engine.site.context import Page, SiteData, calculator_page, md_escape, rel, split_place

INDEX = "calculators/index.md"


def pages(data: SiteData) -> list[Page]:
    if not data.calculators:
        return []
    return [index(data)] + [calculator(data, cid) for cid in sorted(data.calculators)]


def index(data: SiteData) -> Page:
    lines = ["# Calculators", "", "Each calculator is declared as data in `knowledge/calculators/`: it names formula symbols as inputs "
             "and outputs, and its formula chain is derived from the formula graph. Every page has a form that runs "
             "the same chain in the browser.", "", "| calculator | title | outputs | formulas |", "|---|---|---|---|"]
    for cid, calc in sorted(data.calculators.items()):
        title = md_escape(calc.title) + (f" · {calc.title_zh}" if calc.title_zh else "")
        outs = ", ".join(f"`{o}`" for o in calc.outputs)
        lines.append(f"| {data.link(INDEX, cid, calc.name)} | {title} | {outs} | {data.links(INDEX, data.reach[cid])} |")
    lines += ["", *accuracy_line(data, INDEX)]
    return Page(INDEX, "\n".join(lines) + "\n", "Calculators", "knowledge/calculators", 0)


def accuracy_line(data: SiteData, here: str) -> list[str]:
    """A pointer to the Accuracy page, where the root has measurements to publish one."""
    if not accuracy_pages.available(data.root):
        return []
    return [f"*How far to trust a predicted time (here and from `aiinfra plan` and `aiinfra plan serve`): the [Accuracy]({rel(here, accuracy_pages.ACCURACY_PAGE)}) page compares the "
            "engine with published measurements (held out by publisher family), with the worst cases and their causes.*", ""]


def _graph(data: SiteData):
    from engine.numeric.calculators import Graph

    return Graph(data.module)


def calculator(data: SiteData, cid: str) -> Page:
    calc = data.calculators[cid]
    rec = data.k.calculators[cid]
    here = calculator_page(cid)
    graph = _graph(data)
    lines = [f"# {md_escape(calc.title)}", ""]
    if calc.title_zh:
        lines += [f"**{calc.title_zh}**", ""]
    lines += [f"`{cid}` · chapters {data.links(here, calc.chapters)} · sections {data.links(here, calc.sections)}", ""]
    lines += accuracy_line(data, here)
    lines += ["## Inputs", "", "| symbol | meaning | unit | default | derivable from |", "|---|---|---|---|---|"]
    for name, spec in calc.inputs.items():
        sym = graph.spec(name) if graph.known(name) else {"desc": "", "unit": "", "values": [], "default": None, "default_source": ""}
        unit = "one of " + ", ".join(f"`{v}`" for v in sym["values"]) if sym["values"] else f"`{sym['unit']}`"
        default, source = spec.get("default"), spec.get("source", "")
        if default is None and sym["default"] is not None:
            default = sym["default"] if isinstance(sym["default"], str) else number(sym["default"][0])
            source = sym["default_source"]
        shown = "" if default is None else f"{default}" + (f" ({md_escape(source)})" if source else "")
        producer = data.link(here, graph.producer[name]) if name in graph.producer else ""
        lines.append(f"| `{name}` | {md_escape(spec.get('description') or sym['desc'])} | {unit} | {shown} | {producer} |")
    lines += ["", "## Outputs", "", "| symbol | meaning | unit | formula |", "|---|---|---|---|"]
    for name in calc.outputs:
        fid = graph.producer.get(name)
        desc = graph.formulas[fid]["output"]["desc"] if fid else ""
        lines.append(f"| `{name}` | {md_escape(desc)} | `{graph.units.get(name, '')}` | {data.link(here, fid) if fid else ''} |")
    lines += ["", "## Formula chain", "", "Formulas this calculator can reach from its outputs (the chain actually run depends on the "
              "inputs given and the variants selected): " + data.links(here, data.reach[cid], with_title=True), ""]
    if calc.assumptions:
        lines += ["## Assumptions", ""] + [f"- {md_escape(a)}" for a in calc.assumptions] + [""]
    if calc.failure_boundaries:
        lines += ["## Failure boundaries", "", "The estimate stops holding when:", ""]
        lines += [f"- `{fb['when']}`: {md_escape(fb['message'])}" for fb in calc.failure_boundaries] + [""]
    if calc.refuse:
        lines += ["## Refused combinations", ""]
        for rule in calc.refuse:
            when = ", ".join(f"`{k}` = {v if isinstance(v, str) else ' or '.join(v)}" for k, v in rule["when"].items())
            lines.append(f"- {when}: {md_escape(rule['message'])}")
        lines.append("")
    if calc.notes:
        lines += ["## Notes", "", md_escape(calc.notes), ""]
    examples = list(rec.get("examples", ()))
    runs = _arch_runs(data, cid)
    if examples:
        lines += _example(data, calc, examples[0])
    elif not runs:
        lines += ["## Example", "", "This calculator's YAML declares no `examples:` yet, so the form below starts from the defaults; "
                  "fill in the required inputs.", ""]
    lines += runs
    lines += ["## Try it", "", "The form resolves the same formula chain in your browser with functions generated from the same "
              "SymPy expressions (no network). Leave a field empty to use its default or to derive it. \"Solve for\" turns the "
              "question around: pick an input and a condition on an output, and the form gives the interval of that input "
              "which meets it and the end that binds, bracketed in the browser as the command line brackets it "
              "(`--solve INPUT --where 'OUTPUT >= V'`; the command line also prints the closed form).", "",
              forms.html_block(form_spec(data, cid, examples[0]["set"] if examples else {})), ""]
    lines += [f"Command line: `aiinfra calc {calc.name} --set NAME=VALUE ...` (`--help` lists the inputs)", ""]
    file, line = split_place(data.k.places.get(cid, ""))
    lines += [f"*Defined in `{file}` line {line}.*", ""]
    return Page(here, "\n".join(lines), calc.title, file, line)


def _example(data: SiteData, calc, example: dict) -> list[str]:
    from engine.core.errors import AiinfraError
    from engine.numeric.calculators import run

    given = {k: str(v) for k, v in example["set"].items()}
    try:
        result = run(calc, data.module, given)
    except AiinfraError as exc:  # a broken record (`aiinfra check` names it) costs its example, not the site
        problems = getattr(exc, "problems", None)
        return ["## Example", "", md_escape(f"The example does not run: {'; '.join(map(str, problems)) if problems else exc}"), ""]
    cli = " ".join(f"--set {k}={v}" for k, v in given.items())
    out = ["## Example", "", md_escape(example.get("source", "")), "", f"`aiinfra calc {calc.name} {cli}` gives:", "",
           "| output | value | unit | |", "|---|---|---|---|"]
    for name, v in result.outputs.items():
        out.append(f"| `{name}` | {number(v.value)} | `{v.unit}` | {friendly(v.value, v.unit)} |")
    out += ["", "Formulas run: " + " → ".join(data.link(calculator_page(calc.id), f) for f in result.formulas), ""]
    if result.warnings:
        out += [f"- ⚠ {md_escape(w)}" for w in result.warnings] + [""]
    return out


def _arch_runs(data: SiteData, cid: str) -> list[str]:
    """Example results from the reference architectures that run this calculator with cited inputs."""
    from engine.site.arch_pages import calculator_runs

    found = calculator_runs(data, cid)
    if not found:
        return []
    here = calculator_page(cid)
    out = ["## Examples from the reference architectures", "", "Each tier runs this calculator with its own hardware and cited inputs "
           "(computed when this site was built):", ""]
    for rid, run in found:
        out += [f"**{data.link(here, rid, with_title=True)}** — {md_escape(run.label)}", "", "| output | value | unit | |", "|---|---|---|---|"]
        for name, v in run.result.outputs.items():
            out.append(f"| `{name}` | {number(v.value)} | `{v.unit}` | {friendly(v.value, v.unit)} |")
        out.append("")
    return out


def form_spec(data: SiteData, cid: str, initial: dict) -> dict:
    """The calculator as aiinfra.js runs it: the record's inputs, outputs and rules, and its fields."""
    from engine.numeric.evaluate import read_input

    calc = data.calculators[cid]
    graph = _graph(data)
    _, allowed = graph.reach(calc)
    names = list(calc.inputs)
    outs = set(calc.outputs) | set(getattr(calc, "optional_outputs", []))
    extras = sorted(n for n in allowed if n not in calc.inputs and n not in outs and n not in graph.producer and graph.default(n) is not None)
    fields, scaled = [], {}
    for name in names + extras:
        if not graph.known(name):
            continue
        spec = graph.spec(name)
        declared = calc.inputs.get(name, {})
        value = initial.get(name)
        if not spec["values"]:
            if value is not None:
                value = read_input(name, str(value), spec).value
            if declared.get("default") is not None:
                scaled[name] = read_input(name, str(declared["default"]), spec).value
        field = forms.field(name, spec, value, declared.get("description"), optional=True)
        if spec["values"] and declared.get("default") is not None:
            field["placeholder"] = f"default {declared['default']}"
        fields.append(field)
    for field in fields:
        if field.get("values") and field["name"] not in initial:
            field["initial"] = ""
    rules = [{"key": f"{cid}#{i}", "when": fb["when"], "message": fb["message"]} for i, fb in enumerate(calc.failure_boundaries)]
    spec = {"id": cid, "inputs": calc.inputs, "outputs": calc.outputs, "optional_outputs": list(getattr(calc, "optional_outputs", [])),
            "refuse": calc.refuse, "failure_boundaries": rules, "scaled_defaults": scaled}
    # "solve for": each output the run prints, with the units its bound may be typed in
    solvable = [{"name": n, "unit": graph.units.get(n, ""), "units": forms.unit_choices(graph.units.get(n, ""))}
                for n in list(calc.outputs) + [o for o in getattr(calc, "optional_outputs", []) if o not in calc.outputs] if n in graph.producer]
    # values the chain derives, which the command line also takes directly (--set checkpoint_bytes=13.8TB skips the
    # formula that makes it): an "advanced" group of the form, and with the outputs the inputs it may solve for
    numeric = [f["name"] for f in fields if not f.get("values")]
    derived = sorted(n for n in allowed if n in graph.producer and n not in numeric and graph.known(n) and not graph.spec(n)["values"])
    derived_fields = []
    for name in derived:
        value = initial.get(name)
        field = forms.field(name, graph.spec(name), None if value is None else read_input(name, str(value), graph.spec(name)).value,
                            f"{graph.spec(name)['desc']} (derived by {graph.producer[name]}; give it to skip that formula)", optional=True)
        derived_fields.append(field)
    outputs_in = [n for n in list(calc.outputs) + [o for o in getattr(calc, "optional_outputs", []) if o not in calc.outputs] if n in graph.producer]
    return {"kind": "calc", "id": cid, "calc": spec, "fields": fields, "derived_fields": derived_fields,
            "solve": {"outputs": solvable, "targets": numeric, "derived": derived + [n for n in outputs_in if n not in derived]}}


def conditions(data: SiteData) -> dict:
    """Failure-boundary functions of every calculator, keyed as form_spec refers to them."""
    from engine.site.jsgen import condition_function

    units = _graph(data).units
    out = {}
    for cid, calc in data.calculators.items():
        for i, fb in enumerate(calc.failure_boundaries):
            out[f"{cid}#{i}"] = condition_function(fb["when"], units)
    return out
