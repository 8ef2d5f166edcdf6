"""The MCP tools: each one a CLI command, its JSON schema generated from what the CLI itself reads.

A calculator's tool takes the calculator record's declared inputs (unit, categorical values and
default from the formula table, as ``aiinfra calc NAME --help`` shows them) plus the presets
``--model``/``--device``; ``plan`` and ``plan_serve`` take the options of the ``plan`` parser;
the others take the positional id and ``--set`` pairs of their verb. A call becomes the CLI line
(:meth:`Tool.argv`) with ``--format json``, so its result is the CLI's JSON contract and its error
the CLI's one line. Nothing here imports the MCP SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.core.errors import InputError

NUMBER_OR_TEXT = ["number", "string"]
QUANTITY = ("a bare number is in the unit shown; a string may carry a unit ('80GiB', '3.35TB/s', '200ms') "
            "or be a range ('1..3', '0.35..0.45', '8192+-10%')")
INPUTS = {"type": "object", "additionalProperties": {"type": NUMBER_OR_TEXT},
          "description": "input symbols by name, each as --set NAME=VALUE: " + QUANTITY}


@dataclass(frozen=True, slots=True)
class Option:
    """One argument of a tool: its JSON schema and how it is written on the command line."""

    name: str
    schema: dict
    flag: str | None = None  # None: a positional word; "--set": NAME=VALUE; else the option
    required: bool = False

    def words(self, value) -> list[str]:
        if self.flag == "--set":
            return ["--set", f"{self.name}={text(value, self.name)}"]
        if self.flag is None:
            return [text(value, self.name)]
        if value is True:
            return [self.flag]
        if value is False or value is None:
            return []
        if isinstance(value, list):
            return [w for v in value for w in (self.flag, text(v, self.name))]
        return [self.flag, text(value, self.name)]


@dataclass(frozen=True, slots=True)
class Tool:
    """One MCP tool: ``prefix`` + the words of its arguments is the CLI line (``--format json`` added)."""

    name: str
    description: str
    prefix: tuple[str, ...]
    options: tuple[Option, ...] = ()
    inputs: bool = False  # takes an "inputs" object of --set pairs
    kind: str = "cli"  # "cli", or "tree_walk" (the walk's open questions are a result, not an error)
    keep: tuple[str, ...] = field(default=())  # top-level JSON keys kept (validate's summary); () keeps all

    def schema(self) -> dict:
        props = {o.name: o.schema for o in self.options}
        if self.inputs:
            props["inputs"] = INPUTS
        out = {"type": "object", "properties": props, "additionalProperties": False}
        required = [o.name for o in self.options if o.required]
        if required:
            out["required"] = required
        return out

    def argv(self, arguments: dict | None) -> list[str]:
        """The CLI words of a call; an unknown argument is refused as the CLI refuses an unknown option."""
        arguments = dict(arguments or {})
        by_name = {o.name: o for o in self.options}
        unknown = [k for k in arguments if k not in by_name and not (self.inputs and k == "inputs")]
        if unknown:
            raise InputError(unknown[0], f"is not an argument of {self.name} (its arguments: {', '.join(self.schema()['properties'])})")
        for o in self.options:
            if o.required and arguments.get(o.name) is None:
                raise InputError(o.name, f"is required by {self.name}")
        words = list(self.prefix)
        for o in self.options:  # positionals first, in their declared order
            if o.flag is None and arguments.get(o.name) is not None:
                words += o.words(arguments[o.name])
        for o in self.options:
            if o.flag is not None and o.name in arguments:
                words += o.words(arguments[o.name])
        inputs = arguments.get("inputs") or {}
        if not isinstance(inputs, dict):
            raise InputError("inputs", "expected an object of NAME: VALUE")
        for name, value in inputs.items():
            words += ["--set", f"{name}={text(value, name)}"]
        return words + ["--format", "json"]


def text(value, name: str) -> str:
    """A JSON value as the CLI reads it: numbers in full precision, strings as given."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        raise InputError(name, f"{value!r} is not a number or a string")
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _id(what: str, example: str, values: list[str] | None = None) -> Option:
    schema = {"type": "string", "description": f"{what} id, e.g. {example}"}
    if values:
        schema["enum"] = values
    return Option("id", schema, None, True)


def build(root: str | None = None) -> list[Tool]:
    """Every tool, generated from the knowledge root ``root`` (the shipped knowledge when None)."""
    from types import SimpleNamespace

    from engine.cli.common import root_of

    base = root_of(SimpleNamespace(root=root))
    ids = _ids(base)
    tools = _records(ids) + _formulas() + _calculators(base, ids) + _trees(ids) + _plans(ids) + [_validate()]
    return tools


def _ids(root: str) -> dict[str, list[str]]:
    """Model, device and tree ids, for the schemas' enums (the records the CLI reads)."""
    import os

    from engine.trees.walk import load_trees

    def stems(*folder: str) -> list[str]:
        path = os.path.join(root, *folder)
        return sorted(n[:-5] for n in os.listdir(path) if n.endswith(".yaml")) if os.path.isdir(path) else []

    return {"model": stems("knowledge", "models"), "device": stems("knowledge", "hardware"), "lab": stems("knowledge", "labs"),
            "tree": sorted(t.split(":", 1)[1] for t in load_trees(root))}


def _records(ids) -> list[Tool]:
    return [
        Tool("model_list", "Every model record: id, family, attention, layers, parameters (aiinfra model list).", ("model", "list")),
        Tool("model_show", "One model in full: config fields, derived fields, parameter count and the reference it matches (aiinfra model show ID).",
             ("model", "show"), (_id("model", "qwen3-8b", ids["model"]),)),
        Tool("hardware_list", "Every device: id, vendor, memory, bandwidth, dense BF16 peak (aiinfra hardware list).", ("hardware", "list")),
        Tool("hardware_show", "One device in full: peaks per precision (dense or sparse stated) with sources, memory nominal, in GiB and usable "
             "(aiinfra hardware show ID).", ("hardware", "show"), (_id("device", "h100-sxm", ids["device"]),)),
        Tool("lab_list", "The book's eleven labs: number, titles, level L0-L3, chapters, what each computes (aiinfra lab list).", ("lab", "list")),
        Tool("lab_show", "One lab: question, success criterion, inputs with sources, the expectation computed from them, links, reading "
             "paths and the commands that reproduce it (aiinfra lab show N).", ("lab", "show"), (_id("lab", "lab-04", ids["lab"]),)),
    ]


def _formulas() -> list[Tool]:
    fid = _id("formula", "F8 or FX3")
    rel = {"type": NUMBER_OR_TEXT, "description": "a value of the output, with a unit or in the output's unit"}
    return [
        Tool("formula_list", "Every formula: id (Appendix B F1..F22, extensions FX..), section, output symbol and unit (aiinfra formula list).",
             ("formula", "list")),
        Tool("formula_show", "One formula: expression, LaTeX, symbols with units, domains and defaults, assumptions, variants, worked examples "
             "(aiinfra formula show ID).", ("formula", "show"), (fid,)),
        Tool("formula_eval", "Evaluate one formula; inputs not given take their documented defaults, ranges propagate "
             "(aiinfra formula eval ID --set NAME=VALUE ...). Example: F8 with attention=gqa, layers=36, kv_heads=8, head_dim=128, kv_bytes=2 "
             "gives 147456 B per token (Qwen3-8B).", ("formula", "eval"), (fid,), inputs=True),
        Tool("formula_solve", "Solve a formula for one input: the closed form, and with the other inputs given the number; eq/le/ge "
             "bound the output (aiinfra formula solve ID --for SYMBOL ...).", ("formula", "solve"),
             (fid, Option("for", {"type": "string", "description": "the input symbol to solve for"}, "--for", True),
              Option("eq", rel, "--eq"), Option("le", rel, "--le"), Option("ge", rel, "--ge")), inputs=True),
    ]


PRESETS = (
    ("model", "fill architecture inputs from this model record (each filled value names its source)"),
    ("device", "fill memory, bandwidth, peak and power inputs from this device record"),
    ("precision", "precision of the device's dense peak used for peak_flops, and of kv_bytes unless given (default bf16)"),
    ("weights", "storage format of the weights for bytes_param (bf16, fp8, int4_group, nvfp4, mxfp4; scales included, FX650)"),
    ("kv_cache", "storage format of the K/V cache for kv_bytes (fp8, nvfp4, ...)"),
    ("system", "fill gpus_per_node, gpu_tdp and node power from a system record (e.g. dgx-b200)"),
    ("grid", "fill carbon_intensity from a grid preset (aiinfra system grids)"),
)


def _preset_options(ids, names=("model", "device", "precision")) -> list[Option]:
    out = []
    for name, desc in PRESETS:
        if name in names:
            schema = {"type": "string", "description": desc}
            if ids.get(name):
                schema["enum"] = ids[name]
            out.append(Option(name, schema, "--" + name.replace("_", "-")))
    return out


def _calculators(root: str, ids) -> list[Tool]:
    """One tool per calculator record: its declared inputs with unit, values and default, plus the presets."""
    from engine.numeric import compiled
    from engine.numeric.calc_records import Calculator, Graph, read_calculators

    records, _ = read_calculators(root)
    graph = Graph(compiled.load(root))
    tools = []
    for cid, rec in sorted(records.items()):
        calc = Calculator.from_record(rec)
        options = [Option(n, _input_schema(n, spec, graph), "--set") for n, spec in calc.inputs.items()]
        options += _preset_options(ids, tuple(n for n, _ in PRESETS))
        options.append(Option("explain", {"type": "boolean", "description": "add each formula with its number and the values substituted"}, "--explain"))
        name = cid.split(":", 1)[1]
        outputs = ", ".join(calc.outputs)
        tools.append(Tool("calc_" + name.replace("-", "_"), f"{rec['title']} (aiinfra calc {name}). Outputs: {outputs}. Inputs are formula "
                          f"symbols (--set NAME=VALUE): {QUANTITY}; any intermediate symbol of the chain may be given in 'inputs'.",
                          ("calc", name), tuple(options), inputs=True))
    return tools


def _input_schema(name: str, spec: dict, graph) -> dict:
    sym = graph.spec(name) if graph.known(name) else {"unit": "", "desc": "", "values": [], "default": None, "default_source": ""}
    desc = spec.get("description") or sym["desc"]
    default, source = spec.get("default"), spec.get("source", "")
    if default is None and sym["default"] is not None:
        default = sym["default"] if isinstance(sym["default"], str) else sym["default"][0]
        source = sym["default_source"]
    if sym["values"]:
        out = {"type": "string", "enum": list(sym["values"]), "description": desc}
    else:
        unit = sym["unit"] if sym["unit"] not in ("", "1") else "dimensionless"
        out = {"type": NUMBER_OR_TEXT, "description": f"{desc} [{unit}]"}
    if default is not None:
        out["default"] = default
        out["description"] += f" (default {default}" + (f": {source})" if source else ")")
    else:
        out["description"] += " (required unless derivable)"
    return out


def _trees(ids) -> list[Tool]:
    tid = _id("tree", "pd-disaggregation", ids["tree"])
    presets = tuple(_preset_options(ids))
    return [
        Tool("tree_list", "Every decision tree: id, title, chapters, leaves (aiinfra tree list).", ("tree", "list")),
        Tool("tree_show", "A tree's inputs with unit, default, domain or choices, which ones the engine computes or --model/--device fill, "
             "and its leaves (aiinfra tree show ID).", ("tree", "show"), (tid, *presets)),
        Tool("tree_walk", "Walk a decision tree with your numbers: the path with the values that decided each step, the recommendation, "
             "why, what to read, and its failure boundary (aiinfra tree walk ID --set ...). When inputs are missing the result is "
             "{\"status\": \"open\", \"questions\": [...]}: every input the walk needs at the node where it stopped, with unit, "
             "choices, default and description; give them in 'inputs' and call again.", ("tree", "walk"), (tid, *presets),
             inputs=True, kind="tree_walk"),
    ]


# plan's options a tool takes: the others write files (--svg, --trace), pick an executor, or read the other mode
PLAN_TRAIN = ("model", "device", "gpus", "global_batch", "seq", "nvlink_domain", "max_cp", "max_vp", "max_micro_batch", "scaleout_bandwidth",
              "compute_efficiency", "no_flash", "precision", "top", "all", "tp", "cp", "pp", "vp", "ep", "micro_batch", "zero", "recompute")
PLAN_SERVE = ("model", "device", "precision", "top", "nvlink_domain", "prompt", "output", "ttft", "tpot", "demand", "qps", "max_batch", "tp", "ep",
              "batch", "concurrency", "dp", "engine", "max_ep", "weights", "kv_cache", "mfu", "mbu", "allreduce_latency", "kv_link_bandwidth",
              "waterline", "no_split", "prune", "speculative", "simulate", "requests", "arrival", "cv", "lengths", "range_ratio", "sigma", "seed",
              "token_budget", "admission", "schedule", "percentile")


def _plans(ids) -> list[Tool]:
    actions = _parser_actions("plan")
    train = tuple(_from_action(actions[n], ids) for n in PLAN_TRAIN)
    serve = tuple(_from_action(actions[n], ids) for n in PLAN_SERVE)
    return [
        Tool("plan", "Search the parallel layouts of a training job (TP x CP x PP x DP x EP, micro-batch, ZeRO, recomputation): memory per "
             "GPU and step time; the fastest that fit, the binding constraint of each. Pin any axis (tp, pp, ...) to evaluate that layout "
             "(aiinfra plan --model M --device D --gpus N). Keep searches small: pin axes on large GPU counts.", ("plan", "train"), train),
        Tool("plan_serve", "Serving instances (co-located or prefill/decode split) of TP x EP x decode batch against TTFT and TPOT targets: "
             "the Pareto front and the fewest GPUs for a demand (qps or tokens/s). Pin tp/ep/batch to evaluate one layout; simulate=true "
             "steps a pinned layout request by request (aiinfra plan serve --model M --device D --prompt P --output O --ttft T --tpot T).",
             ("plan", "serve"), serve),
    ]


def _parser_actions(verb: str) -> dict:
    """dest -> argparse action of the parser of ``aiinfra VERB`` (the CLI's own declarations)."""
    from engine.cli.main import build_parser

    top = build_parser([verb])
    sub = next(a for a in top._actions if a.dest == "verb")  # argparse keeps subparsers as an action
    return {a.dest: a for a in sub.choices[verb]._actions}


def _from_action(action, ids) -> Option:
    name = action.dest
    flag = action.option_strings[0] if action.option_strings else None
    schema: dict = {"description": (action.help or "").replace("%%", "%")}
    if action.nargs == 0:
        schema["type"] = "boolean"
    elif action.choices:
        schema.update(type="string", enum=list(action.choices))
    elif getattr(action.type, "__name__", "") in ("_int", "int"):
        schema["type"] = "integer"
    elif getattr(action.type, "__name__", "") in ("_float", "float"):
        schema["type"] = "number"
    else:
        schema["type"] = NUMBER_OR_TEXT if name not in ("model", "device", "precision", "engine", "recompute", "weights", "kv_cache",
                                                         "speculative") else "string"
    if name in ("model", "device") and ids.get(name):
        schema["enum"] = ids[name]
    if action.default not in (None, False) and action.nargs != 0:
        schema["default"] = action.default
    return Option(name, schema, flag, bool(action.required))


def _validate() -> Tool:
    actions = _parser_actions("validate")
    options = tuple(_from_action(actions[n], {}) for n in ("kind", "device", "model", "worst"))
    kind = options[0]
    options = (Option("kind", {"type": "array", "items": kind.schema, "description": kind.schema["description"]}, kind.flag),) + options[1:]
    return Tool("validate", "Score the engine against the published measurements, held out by source: per kind MAPE, median error factor, "
                "shares within +-15/30/50%, rank correlation, and the worst held-out rows (aiinfra validate; the summary, without the "
                "per-record rows). Slow: minutes for every kind; narrow it with kind.", ("validate",), options,
                keep=("summary", "calibration", "held_out_by", "families", "worst"))


def schemas(root: str | None = None) -> str:
    """The tool list as JSON, as ``tools/list`` gives it (``aiinfra mcp --list``; needs no SDK)."""
    import json

    return json.dumps([{"name": t.name, "description": t.description, "inputSchema": t.schema()} for t in build(root)], indent=1, ensure_ascii=False)
