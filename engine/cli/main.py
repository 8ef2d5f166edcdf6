"""``aiinfra``: the command line. Parsing and dispatch only; handlers live in sibling modules.

Handlers are imported lazily through a table (subcommand -> "module:function"), so
``aiinfra formula eval`` imports neither sympy, networkx, jsonschema nor PyYAML.
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

from engine import __version__

FORMATS = ("text", "json", "md", "csv")

HANDLERS = {
    ("check",): "engine.cli.cmd_check:run",
    ("formula", "list"): "engine.cli.cmd_formula:list_",
    ("formula", "show"): "engine.cli.cmd_formula:show",
    ("formula", "eval"): "engine.cli.cmd_eval:run",
    ("formula", "solve"): "engine.cli.cmd_solve:run",
    ("graph", "stats"): "engine.cli.cmd_graph:stats",
    ("graph", "export"): "engine.cli.cmd_graph:export",
    ("model", "list"): "engine.cli.cmd_model:list_",
    ("model", "show"): "engine.cli.cmd_model:show",
    ("model", "import"): "engine.cli.cmd_model:import_",
    ("hardware", "list"): "engine.cli.cmd_hardware:list_",
    ("hardware", "show"): "engine.cli.cmd_hardware:show",
    ("hardware", "audit"): "engine.cli.cmd_hardware:audit",
    ("roofline",): "engine.cli.cmd_roofline:run",
    ("forward",): "engine.cli.cmd_forward:forward",
    ("generate",): "engine.cli.cmd_forward:generate",
    ("collective", "ring"): "engine.cli.cmd_collective:run",
    ("collective", "tree"): "engine.cli.cmd_collective:run",
    ("collective", "all-to-all"): "engine.cli.cmd_collective:run",
    ("calc", "list"): "engine.cli.cmd_calc:list_",
    ("calc",): "engine.cli.cmd_calc:run",  # every other ``calc <name>``
}


def _parser_class():
    """argparse with one-line errors: ``aiinfra formula eval: error: ...`` and exit 2.

    Built on first use so that the fast evaluation path never imports argparse.
    """
    import argparse

    class Parser(argparse.ArgumentParser):
        entered: list = []  # (parser, its words) in the order parsing reached them; the last is the subcommand

        def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
            Parser.entered.append((self, list(sys.argv[1:] if args is None else args)))
            return super().parse_known_args(args, namespace)

        def error(self, message: str) -> None:  # type: ignore[override]
            where, words = Parser.entered[-1] if Parser.entered else (self, [])
            text = _choice_hint(message)
            if text == message:  # not a bad choice: a typo is why a required option is "missing", so name it first
                text = _misspelled_options(where, words) or message
                where = where if text != message else self
            sys.stderr.write(f"{where.prog}: error: {text} (see {where.prog} --help)\n")
            raise SystemExit(2)

        def _get_formatter(self):  # every add_argument makes one; without a width it imports shutil (bz2, lzma) to ask for it
            return self.formatter_class(prog=self.prog, width=_help_width())

    return Parser


def _help_width() -> int:
    """The width argparse's HelpFormatter takes by default (``shutil.get_terminal_size().columns - 2``), without shutil."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns - 2


def _misspelled_options(parser, words: list[str]) -> str:
    """``unrecognized option --modle (did you mean --model?)`` for each ``--word`` the parser does not know."""
    from engine.core.suggest import did_you_mean

    options = [o for o in parser._option_string_actions if o.startswith("--")]
    typed = [w.split("=", 1)[0] for w in words if w.startswith("--") and w != "--"]
    unknown = [t for t in dict.fromkeys(typed) if not any(o.startswith(t) for o in options)]  # argparse takes unique prefixes
    return "; ".join(f"unrecognized option {u}" + (f" ({hint.strip()})" if (hint := did_you_mean(u, options, 1)) else "") for u in unknown)


def _choice_hint(message: str) -> str:
    """argparse's invalid-choice message with a "did you mean" for the closest choice."""
    import re

    from engine.core.suggest import did_you_mean

    if m := re.fullmatch(r"(argument \S+: invalid choice: '(.*?)' \()choose from (.*)\)", message, re.S):
        hint = did_you_mean(m.group(2), re.findall(r"'([^']*)'", m.group(3)))
        return f"{m.group(1)}{hint}choose from {m.group(3)})"
    return message


def _shared(parser, top: bool) -> None:
    import argparse

    default = None if top else argparse.SUPPRESS
    parser.add_argument("--format", choices=FORMATS, default=default if not top else "text",
                        help="output format: text (default), json, md, or csv where the output is a table")
    parser.add_argument("--root", metavar="DIR", default=default,
                        help="use DIR (a folder laid out like the shipped knowledge: formulas/, knowledge/, ...) instead of the shipped knowledge")


EVAL_EXAMPLES = """examples:
  aiinfra formula show F8          # inputs, units, domains and defaults
  aiinfra formula eval F8 --set attention=gqa --set layers=36 --set kv_heads=8 \\
      --set head_dim=128 --set kv_bytes=2B
  aiinfra formula eval F2 --set train_flops=6.3e24 --set n_gpus=1024 \\
      --set peak_flops=989TFLOPS --set mfu=35..45% --format json
"""

SOLVE_EXAMPLES = """examples:
  aiinfra formula solve F2 --for mfu                       # closed form only
  aiinfra formula solve F2 --for mfu --set train_flops=6.3e24 --set n_gpus=1024 \\
      --set peak_flops=989TFLOPS --le 120d                  # MFU needed to finish in 120 days
"""


def build_parser(argv: list[str] | None = None):
    import argparse

    raw = argparse.RawDescriptionHelpFormatter
    Parser = _parser_class()
    top = Parser(
        prog="aiinfra",
        description="Estimates for AI infrastructure from one source: formulas keyed to Appendix B, a knowledge graph of the books, and checks that keep them consistent.",
        epilog="Quantities: --set name=VALUE, a bare number in the input's unit or with a suffix (80GiB, 3.35TB/s, 2us, 2.7h); ranges lo..hi or v±p%. Exit codes: 0 ok, 1 violations found, 2 bad input.",
    )
    top.add_argument("--version", action="version", version=f"aiinfra {__version__}")
    _shared(top, True)
    verbs = top.add_subparsers(dest="verb", metavar="COMMAND", parser_class=Parser)
    verbs.required = True
    plugin = _plugin_of(argv)
    if plugin is not None:  # `aiinfra tree ...` etc.: that verb's parsers alone answer (the same prog, help and errors)
        import importlib

        importlib.import_module(plugin).add_parsers(verbs, Parser, _shared)
        return top
    if argv and argv[0] in CORE_VERBS:  # `aiinfra roofline ...`: build that verb's parsers alone
        verbs = _OnlyVerb(verbs, argv[0])

    p = verbs.add_parser("check", help="check every record, reference, unit and worked example", description="Load the knowledge root and run every integrity rule; print every violation. Exit 0 when clean, 1 with violations.")
    _shared(p, False)

    formula = verbs.add_parser("formula", help="list, show, evaluate or solve formulas", description="Formulas keyed to the book's Appendix B (F1..F22) and extensions (FX1..).")
    fverbs = formula.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    fverbs.required = True
    p = fverbs.add_parser("list", help="every formula with its section and output", description="List every formula: id, Appendix B section, output symbol and unit, defining section.")
    _shared(p, False)
    p = fverbs.add_parser("show", help="one formula in full", description="Show a formula: expression, LaTeX, symbols with units and domains, assumptions, defining section, variants, worked examples and the formulas that use its output.")
    p.add_argument("id", metavar="ID", help="formula id, e.g. F8 or FX3")
    _shared(p, False)
    p = fverbs.add_parser("eval", help="evaluate a formula for given inputs", description="Evaluate a formula numerically. Inputs not given take their documented defaults; ranges propagate to the result.",
                          formatter_class=raw, epilog=EVAL_EXAMPLES)
    p.add_argument("id", metavar="ID", help="formula id, e.g. F8")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE", help="an input value, e.g. --set hbm=80GiB or --set mfu=0.35..0.45 (repeatable)")
    _shared(p, False)
    p = fverbs.add_parser("solve", help="solve a formula for one of its inputs", description="Solve output = V (or <= V, >= V) for one input symbolically; print the closed form and, with the other inputs set, the number.",
                          formatter_class=raw, epilog=SOLVE_EXAMPLES)
    p.add_argument("id", metavar="ID", help="formula id, e.g. F2")
    p.add_argument("--for", dest="target", required=True, metavar="SYMBOL", help="the input to solve for")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE", help="a value for another input (repeatable)")
    rel = p.add_mutually_exclusive_group()
    rel.add_argument("--eq", metavar="V", help="the output equals V (default: the output stays a symbol)")
    rel.add_argument("--le", metavar="V", help="the output is at most V")
    rel.add_argument("--ge", metavar="V", help="the output is at least V")
    _shared(p, False)

    graph = verbs.add_parser("graph", help="statistics or an export of the knowledge graph", description="The knowledge graph: books, chapters, sections, concepts, formulas, symbols and reading paths.")
    gverbs = graph.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    gverbs.required = True
    p = gverbs.add_parser("stats", help="node and edge counts by kind", description="Count nodes by kind and edges by relation.")
    _shared(p, False)
    p = gverbs.add_parser("export", help="write the graph as GraphML or JSON", description="Write the whole graph as GraphML or node-link JSON, to stdout or a file (written atomically).")
    p.add_argument("--to", choices=("graphml", "json"), required=True, help="export format")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout (replaces only a regular file: a symbolic link, FIFO or device is refused)")
    _shared(p, False)
    _models_and_hardware(verbs, Parser, raw, _memory_figures(argv))
    if not (argv and (argv[0] in verbs.choices or argv[0] == "calc")):
        # a core verb first on the line needs no plugin parsers: argparse then only descends into it
        _plugins(verbs, Parser)
    if argv is not None and _verb_and_root(argv)[0] == "calc":  # the knowledge is read only for this verb
        _calculators(verbs, Parser, raw, _verb_and_root(argv)[1], list(argv or []))
    else:  # listed in --help and in the unknown-verb message without reading the calculators
        verbs.add_parser("calc", help=CALC_HELP, description=CALC_DESCRIPTION)
    return top


# Verbs whose parsers build_parser adds itself (the plugins add theirs); a test keeps the list in
# step with the full parser. With one of them first on the line only its parsers are built.
CORE_VERBS = ("check", "formula", "graph", "model", "hardware", "roofline", "forward", "generate", "collective", "calc")


class _Skipped:
    """Absorbs the building of a verb that is not on the command line (every call returns itself)."""

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self


_SKIPPED = _Skipped()


class _OnlyVerb:
    """The verbs' subparsers action when ``keep`` is first on the line: add_parser builds ``keep``
    alone and skips the others, so argparse objects, help strings and their gettext lookups are
    made for one verb (about 20 ms less for a one-record command). Parsing, help and errors of
    that verb are the full parser's: argparse descends only into the verb named."""

    def __init__(self, real, keep: str):
        self._real, self._keep = real, keep

    def add_parser(self, name, **kwargs):
        return self._real.add_parser(name, **kwargs) if name == self._keep else _SKIPPED

    def __getattr__(self, name):
        return getattr(self._real, name)


# Commands whose parsers live beside their handlers: each module's ``add_parsers(verbs, Parser,
# shared)`` adds its subcommands and sets ``handler="module:function"`` with set_defaults.
# A module is imported only to build the parser; keep its top-level imports light.
# Keyed by the verb each module adds (its first word on the command line).
PLUGIN_VERBS = {"tree": "engine.cli.cmd_tree", "path": "engine.cli.cmd_path", "arch": "engine.cli.cmd_arch", "site": "engine.cli.cmd_site",
                "state": "engine.cli.cmd_state", "plan": "engine.cli.cmd_plan", "system": "engine.cli.cmd_system",
                "failures": "engine.cli.cmd_failures", "validate": "engine.cli.cmd_validate", "kv": "engine.cli.cmd_kv",
                "mcp": "engine.cli.cmd_mcp", "scaling": "engine.cli.cmd_scaling", "lab": "engine.cli.cmd_lab"}
PLUGINS = tuple(PLUGIN_VERBS.values())


def _plugin_of(argv: list[str] | None) -> str | None:
    """The plugin module when ``argv`` starts with a plugin's verb: the parser then needs only
    that verb's subcommands (top-level options before the verb take the full parser)."""
    if not argv or argv[0] not in PLUGIN_VERBS:
        return None
    import importlib.util

    name = PLUGIN_VERBS[argv[0]]
    return name if importlib.util.find_spec(name) is not None else None


def _plugins(verbs, Parser) -> None:
    import importlib
    import importlib.util

    for name in PLUGINS:
        if importlib.util.find_spec(name) is None:
            continue
        importlib.import_module(name).add_parsers(verbs, Parser, _shared)


def _verb_and_root(argv: list[str]) -> tuple[str | None, str | None]:
    """The first positional word and the --root value, read before parsing."""
    words, root = _words(argv)
    return (argv[words[0]] if words else None), root


def _words(argv: list[str]) -> tuple[list[int], str | None]:
    """Where the positional words are (skipping the values of the shared options), and --root."""
    words, root, i = [], None, 0
    while i < len(argv):
        token = argv[i]
        if token in ("--format", "--root"):
            if token == "--root" and i + 1 < len(argv):
                root = argv[i + 1]
            i += 2
            continue
        if token.startswith("--root="):
            root = token.split("=", 1)[1]
        elif not token.startswith("-"):
            words.append(i)
        i += 1
    return words, root


def fold_calc_name(argv: list[str]) -> list[str]:
    """``calc KV-Concurrency`` names calc:kv-concurrency: calculator names are lower-case, typed in any case."""
    words = _words(argv)[0]
    if len(words) < 2 or argv[words[0]] != "calc":
        return argv
    return argv[:words[1]] + [argv[words[1]].lower()] + argv[words[1] + 1:]


CALC_HELP = "calculators declared as data (knowledge/calculators/)"
CALC_DESCRIPTION = "Calculators: formula chains derived from the formula graph, with ranges, assumptions and failure boundaries."


def _calculators(verbs, Parser, raw, root: str | None, argv: list[str]) -> None:
    """``calc list`` and one subcommand per calculator, generated from knowledge/calculators/."""
    from engine.cli.cmd_calc import help_text
    from engine.cli.common import root_of
    from engine.numeric import compiled
    from engine.numeric.calc_records import read_calculators

    root = root_of(SimpleNamespace(root=root))
    records, problems = read_calculators(root)  # a broken calculator does not take the others down (#24)
    module = compiled.load(root, strict=False)  # a refused formula stops only the calculators that need it (#24)
    calc = verbs.add_parser("calc", help=CALC_HELP, description=CALC_DESCRIPTION)
    cverbs = calc.add_subparsers(dest="action", metavar="CALCULATOR", parser_class=Parser)
    cverbs.required = True
    p = cverbs.add_parser("list", help="every calculator", description="List the calculators: id, title, outputs.")
    _shared(p, False)
    for cid, rec in sorted(records.items()):
        name = cid.split(":", 1)[1]
        p = cverbs.add_parser(name, help=rec["title"], description=f"{rec['title']} ({rec['title_zh']})", formatter_class=raw, epilog=help_text(rec, module))
        p.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE", help="an input or intermediate symbol, e.g. --set context_tokens=8192 or a range 1..3 (repeatable)")
        p.add_argument("--explain", action="store_true", help="print each formula with its number and the values substituted")
        p.add_argument("--model", metavar="ID", help="fill architecture inputs from knowledge/models (e.g. qwen3-8b); each filled value names its source")
        p.add_argument("--device", metavar="ID", help="fill memory, bandwidth, peak and power inputs from knowledge/hardware (e.g. h100-sxm)")
        p.add_argument("--precision", default="bf16", help="precision of the device's dense peak used for peak_flops, and of kv_bytes unless given (default bf16)")
        p.add_argument("--weights", metavar="FORMAT", help="storage format of the weights for bytes_param (e.g. bf16, fp8, int4_group, nvfp4, mxfp4: "
                                                           "scales included, FX650); compute stays at --precision (FX651)")
        p.add_argument("--kv-cache", metavar="FORMAT", help="storage format of the K/V cache for kv_bytes (e.g. fp8, nvfp4); default: --precision's element bytes")
        p.add_argument("--system", metavar="ID", help="fill gpus_per_node, gpu_tdp and, where stated, node_power from knowledge/systems (e.g. dgx-b200)")
        p.add_argument("--grid", metavar="ID", help="fill carbon_intensity from a grid preset of knowledge/carbon_intensity.yaml (aiinfra system grids)")
        p.add_argument("--sweep", metavar="NAME=LO..HI", help="evaluate every output over NAME from LO to HI (vectorised; CSV on stdout, JSON with --format json, a table with --format md)")
        p.add_argument("--points", type=int, default=32, metavar="N", help="points of the sweep, 2 to 100,000 (default 32; integer inputs are rounded and deduplicated)")
        p.add_argument("--log", action="store_true", help="space the sweep's points logarithmically")
        p.add_argument("--solve", metavar="INPUT", help="solve this numeric input for the --where conditions through the whole chain: closed form, "
                                                          "the interval of inputs, the binding condition, the number (a numeric bracket where SymPy has no closed form)")
        p.add_argument("--where", action="append", default=[], metavar="'OUTPUT >= V'", help="a condition on an output for --solve: "
                                                                                              "OUTPUT >= V, OUTPUT <= V or OUTPUT = V, V with a unit (repeatable)")
        p.add_argument("--numeric", action="store_true", help="with --solve: bracket numerically on the compiled chain even where SymPy has a closed form")
        p.add_argument("--plot", metavar="FILE.svg", help="with --sweep: also draw the curves to FILE (svg, png or pdf; needs matplotlib; replaces only a regular file: a symbolic link, FIFO or device is refused)")
        _shared(p, False)
    words = _words(argv)[0]
    asked = argv[words[1]].strip().lower() if problems and len(words) > 1 and argv[words[0]] == "calc" else None
    if asked is not None and asked != "list" and f"calc:{asked.removeprefix('calc:')}" not in records:
        from engine.core.errors import KnowledgeError

        raise KnowledgeError(problems)  # the calculator asked for may be the broken one: its problems are the answer


def _storage_help(flag: str) -> str:
    from engine.cli.cmd_forward import STORAGE_HELP

    return STORAGE_HELP[flag]


def _memory_figures(argv: list[str] | None) -> str | None:
    """The explanation of a device's three memory figures, for ``hardware --help`` (read only for that verb)."""
    if argv is None or _verb_and_root(argv)[0] != "hardware":
        return None
    from engine.domain.hardware import MEMORY_FIGURES

    return MEMORY_FIGURES


def _models_and_hardware(verbs, Parser, raw, memory_figures: str | None = None) -> None:
    """model, hardware, roofline, forward, generate and collective (issue 4)."""
    model = verbs.add_parser("model", help="model architectures from config.json", description="Models: architecture fields from Hugging Face config.json files, with their source and parameter count.")
    mverbs = model.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    mverbs.required = True
    p = mverbs.add_parser("list", help="every model with its family and parameter count", description="List the models: id, family, attention, layers, parameters.")
    _shared(p, False)
    p = mverbs.add_parser("show", help="one model in full", description="Show a model: config fields, what the importer derived, the parameter count and the reference it matches.")
    p.add_argument("id", metavar="ID", help="model id, e.g. qwen3-8b or model:qwen3-8b")
    _shared(p, False)
    p = mverbs.add_parser("import", help="write a model record from a config.json", description="Read a Hugging Face config.json and write knowledge/models/<id>.yaml atomically. Keys that do not change the architecture are ignored by an explicit list; any other key the importer does not understand is refused with its name.")
    p.add_argument("config", metavar="CONFIG_JSON", help="path to a config.json")
    p.add_argument("--id", dest="model_id", metavar="ID", help="model id (default: from the file's folder name)")
    p.add_argument("--repo", help="Hugging Face repository the config came from, e.g. Qwen/Qwen3-8B")
    p.add_argument("--revision", default="unpinned", help="commit of the config (default: unpinned)")
    p.add_argument("--params", type=int, metavar="N", help="the official parameter total to check against")
    p.add_argument("--out", metavar="DIR", help="folder to write into (default: ROOT/knowledge/models)")
    p.add_argument("--force", action="store_true", help="replace a record of the same id that is already there (refused without it)")
    _shared(p, False)

    hw = verbs.add_parser("hardware", help="accelerators with precision-qualified peaks", description="Accelerators: peaks per input and accumulator precision (dense or sparse stated), memory, bandwidth, interconnect, TDP, each with its source.", epilog=memory_figures)
    hverbs = hw.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    hverbs.required = True
    p = hverbs.add_parser("list", help="every device", description="List the devices: id, vendor, memory, bandwidth, dense BF16 peak.")
    _shared(p, False)
    p = hverbs.add_parser("show", help="one device in full", epilog=memory_figures,
                          description="Show every peak record of a device with precision, accumulator, execution unit, sparsity and source, and its memory: nominal, in GiB and driver-reported usable where recorded.")
    p.add_argument("id", metavar="ID", help="device id, e.g. h100-sxm or hw:h100-sxm")
    _shared(p, False)
    p = hverbs.add_parser("audit", help="the fields each device record lacks", description="One row per device: precisions with no dense peak, absent optional fields (driver-reported memory, interconnect, host link, TDP, measured ratios), sources without a URL or year, and dense matrix precisions with no structured-sparse figure.")
    _shared(p, False)

    p = verbs.add_parser("roofline", help="time bound and bottleneck on a device", description="Roofline bound on a device: time = max(FLOPs / peak, bytes / bandwidth), the bottleneck, arithmetic intensity and ridge point. With --model, every operator of the forward ledger and the total.",
                         formatter_class=raw)
    p.add_argument("--device", required=True, metavar="ID", help="device id, e.g. h100-sxm")
    p.add_argument("--precision", default="bf16", help="input precision of the peak to use (default bf16)")
    p.add_argument("--accumulator", help="accumulator precision, when the device states several (e.g. fp32, fp16)")
    p.add_argument("--sparse", action="store_true", help="use a structured-sparse peak (never used otherwise)")
    p.add_argument("--flops", metavar="F", help="work in FLOP (units accepted: 2.5e12, 2.5TFLOP)")
    p.add_argument("--bytes", metavar="B", help="memory traffic in bytes (units accepted: 16GB, 80GiB)")
    p.add_argument("--link-bytes", metavar="B", help="bytes one chip sends over its inter-chip link for the same work, one direction: "
                                                    "adds the interconnect roofline (FX705 intensity against FX706's ridge, peak / link bandwidth)")
    p.add_argument("--link-bandwidth", metavar="BW", help="inter-chip link bandwidth per direction for --link-bytes (default: the device's "
                                                         "interconnect per direction, e.g. 450GB/s for H100 SXM NVLink 4)")
    p.add_argument("--model", metavar="ID", help="bound every operator of this model's forward pass instead")
    p.add_argument("--tokens", type=int, metavar="T", help="new tokens per sequence (with --model)")
    p.add_argument("--batch", type=int, default=1, metavar="B", help="sequences (with --model; default 1)")
    p.add_argument("--history", type=int, default=0, metavar="H", help="cached tokens per sequence (with --model)")
    p.add_argument("--tp", type=int, default=1, metavar="N", help="tensor-parallel degree: per-GPU bound of the sharded model (with --model; default 1)")
    p.add_argument("--weights", metavar="FORMAT", help="with --model: the weights' storage format (default bf16; fp8, int4_group, nvfp4, ...: "
                                                     "scales included, FX650); --precision stays the compute peak (FX651)")
    p.add_argument("--kv-cache", metavar="FORMAT", help="with --model: the K/V cache's storage format (default bf16; fp8, ...)")
    _shared(p, False)

    for verb, help_, desc in (
        ("forward", "per-operator account of one forward pass", "Per-operator ledger of one forward pass: shapes, matrix and scalar FLOPs, special functions, weight, activation and KV bytes. Prefill (tokens=T), decode (tokens=1 with --history), prefix-cache hits (history + new tokens)."),
        ("generate", "totals of G decode steps after a prompt", "Totals for G decode calls after a P-token prompt: FLOPs, weight and KV bytes read and written."),
    ):
        p = verbs.add_parser(verb, help=help_, description=desc, formatter_class=raw)
        p.add_argument("--model", required=True, metavar="ID", help="model id, e.g. qwen3-8b")
        if verb == "forward":
            p.add_argument("--tokens", type=int, required=True, metavar="T", help="new tokens per sequence")
            p.add_argument("--history", type=int, default=0, metavar="H", help="tokens already in the KV cache (prefix hit or decode history)")
            p.add_argument("--output-head", choices=("last", "all", "none"), default="last", help="logits for the last token (default), every token, or none")
        else:
            p.add_argument("--history", type=int, required=True, metavar="P", help="prompt tokens already prefilled")
            p.add_argument("--steps", type=int, required=True, metavar="G", help="decode steps")
        p.add_argument("--batch", type=int, default=1, metavar="B", help="sequences (default 1)")
        p.add_argument("--routing", default="balanced", metavar="balanced|concentrated|FILE", help="MoE routing: balanced, concentrated, or a counts.json histogram")
        p.add_argument("--weight-bytes", default="2", metavar="P", help="bytes per weight element (default 2)")
        p.add_argument("--kv-bytes", default="2", metavar="P", help="bytes per cached element (default 2)")
        p.add_argument("--weights", metavar="FORMAT", help=_storage_help("--weights"))
        p.add_argument("--kv-cache", metavar="FORMAT", help=_storage_help("--kv-cache"))
        p.add_argument("--tp", type=int, default=1, metavar="N", help="tensor-parallel degree for per-GPU KV bytes (default 1)")
        __import__("engine.cli.cmd_forward", fromlist=["add_report_options"]).add_report_options(p, verb)  # issue 13 options
        _shared(p, False)

    coll = verbs.add_parser("collective", help="round-by-round collective schedules", description="Round-by-round schedule of a collective: who sends which chunk to whom, per-rank bytes, total network bytes, critical-path steps and the alpha-beta time.")
    cverbs = coll.add_subparsers(dest="action", metavar="ALGORITHM", parser_class=Parser)
    cverbs.required = True
    for algo, help_ in (("ring", "ring algorithm"), ("tree", "unsegmented binomial tree: reduce to rank 0, then broadcast"), ("all-to-all", "pairwise all-to-all from a source x destination matrix")):
        p = cverbs.add_parser(algo, help=help_, description=help_)
        p.add_argument("--op", required=True, choices=("allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"), help="the collective")
        p.add_argument("--ranks", type=int, metavar="P", help="number of ranks (with --model: --tp for ring/tree, the EP group for all-to-all)")
        p.add_argument("--bytes", metavar="M", help="message size per rank (units accepted: 1GB, 256MiB); --model computes it")
        p.add_argument("--model", metavar="ID", help="TP all-reduce of a model: message = --tokens x hidden x --act-bytes, 2L per forward")
        p.add_argument("--tokens", type=int, metavar="N", help="tokens in the batch (with --model)")
        p.add_argument("--tp", type=int, metavar="T", help="tensor-parallel group size = ranks (with --model)")
        p.add_argument("--act-bytes", metavar="P", help="bytes per activation element (with --model; default 2, BF16)")
        p.add_argument("--bandwidth", metavar="B", help="per-link bandwidth, e.g. 50GB/s")
        p.add_argument("--latency", metavar="A", help="per-step latency, e.g. 20us")
        p.add_argument("--routing", default="balanced", metavar="balanced|hotspot|FILE", help="all-to-all traffic: balanced, hotspot, or a matrix.json")
        p.add_argument("--show-rounds", type=int, default=8, metavar="N", help="rounds to print in text output (default 8; all in json)")
        _shared(p, False)


def fast_eval_args(argv: list[str]) -> SimpleNamespace | None:
    """``formula eval ID [--set N=V]... [--format F] [--root D]`` read without building the parser.

    The evaluation path is the one people script in loops, so it skips argparse's set-up;
    anything unusual (help, an unknown option, a bad format) returns None and the full
    parser takes over, with its messages.
    """
    from engine.cli.common import scan_options

    args = SimpleNamespace(verb="formula", action="eval", id=None, sets=[], format="text", root=None)
    pairs = scan_options(argv, ("--set", "--format", "--root"))
    if pairs is None:
        return None
    positional = [value for name, value in pairs if name is None]
    for name, value in pairs:
        if name == "--set":
            args.sets.append(value)
        elif name == "--format":
            if value not in FORMATS:
                return None
            args.format = value
        elif name == "--root":
            args.root = value
    if len(positional) != 3 or positional[:2] != ["formula", "eval"]:
        return None
    args.id = positional[2]
    return args


# single-record commands read without building the parser: (verb, action) -> (handler, the
# positional's name, whether it takes every remaining word); same rules as fast_eval_args
FAST_SHOW = {
    ("hardware", "show"): ("engine.cli.cmd_hardware:show", "id", False),
    ("model", "show"): ("engine.cli.cmd_model:show", "id", False),
    ("path", "show"): ("engine.cli.cmd_path:show", "id", False),
    ("path", "for"): ("engine.cli.cmd_path:for_", "words", True),
    ("arch", "show"): ("engine.cli.cmd_arch:show", "id", False),
}


def fast_show_args(argv: list[str]) -> SimpleNamespace | None:
    """``check``, ``hardware show ID``, ``model show ID``, ``path show ID``, ``path for WORDS...``
    and ``arch show ID`` (with ``--format`` and ``--root``) read without building the parser;
    anything else returns None and the full parser answers, with its messages."""
    from engine.cli.common import scan_options

    pairs = scan_options(argv, ("--format", "--root"))
    if pairs is None:
        return None
    words = [value for name, value in pairs if name is None]
    if words == ["check"]:
        args = SimpleNamespace(verb="check", format="text", root=None, handler=HANDLERS[("check",)])
    else:
        spec = FAST_SHOW.get(tuple(words[:2]))
        rest = words[2:]
        if spec is None or not rest or (len(rest) > 1 and not spec[2]):
            return None
        handler, field, many = spec
        args = SimpleNamespace(verb=words[0], action=words[1], format="text", root=None, handler=handler)
        setattr(args, field, rest if many else rest[0])
    for name, value in pairs:
        if name == "--format" and value not in FORMATS:
            return None
        if name is not None:
            setattr(args, name[2:], value)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    folders = sys.modules.get("engine.kb.folders")
    if folders is not None:  # a warning about ignored records is printed once per command (main may run again in one process)
        folders._WARNED.clear()
    try:
        _utf8_only(argv)
        args = fast_eval_args(argv) or fast_show_args(argv)
        if args is None and argv[:1] in (["forward"], ["generate"]):
            from engine.cli.cmd_forward import fast_args

            args = fast_args(argv)
        if args is None and argv[:1] == ["calc"]:
            from engine.cli.cmd_calc import fast_args

            args = fast_args(argv)
        if args is None:
            argv = fold_calc_name(argv)
            args = build_parser(argv).parse_args(argv)
        key = tuple(x for x in (args.verb, getattr(args, "action", None)) if x)
        _wrap(args)
        handler = getattr(args, "handler", None) or HANDLERS.get(key) or HANDLERS[key[:1]]
        module_name, func_name = handler.split(":")
        module = __import__(module_name, fromlist=[func_name])
        code = getattr(module, func_name)(args)
        sys.stdout.flush()
        return int(code or 0)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 2
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        sys.stderr.write("aiinfra: interrupted\n")
        return 130
    except Exception as exc:  # every failure ends as a message, never a traceback
        from engine.core.errors import AiinfraError

        if isinstance(exc, AiinfraError):
            sys.stderr.write(_error_text(exc) + "\n")
            return exc.exit_code
        if os.environ.get("AIINFRA_DEBUG"):
            raise
        sys.stderr.write(f"aiinfra: internal error: {exc.__class__.__name__}: {exc} (set AIINFRA_DEBUG=1 for a traceback)\n")
        return 70


# verbs whose text output is not prose around tables (a protocol, a server's log, graph exports), never wrapped
NO_WRAP = frozenset({"mcp", "site", "graph"})


def _wrap(args) -> None:
    """Whether emit wraps this command's sentences at $COLUMNS (engine.cli.common.WRAP): a text report of a prose verb,
    not a sweep's CSV."""
    from engine.cli import common

    common.WRAP = (getattr(args, "format", "text") == "text" and getattr(args, "verb", None) not in NO_WRAP
                   and not getattr(args, "sweep", None))


def _utf8_only(argv: list[str]) -> None:
    """Refuse an argument that is not UTF-8 (Python keeps such bytes as lone surrogates, which no
    file name, id or number can hold), naming the option it was given to."""
    for i, arg in enumerate(argv):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            from engine.core.errors import InputError

            flag, eq, value = arg.partition("=")
            inline = arg.startswith("--") and eq
            field = flag if inline else argv[i - 1] if i and argv[i - 1].startswith("-") else f"argument {i + 1}"
            shown = os.fsencode(value if inline else arg)
            raise InputError(field, f"{shown!r} is not valid UTF-8 (expected text)") from None


def _error_text(exc) -> str:
    from engine.core.errors import KnowledgeError

    if isinstance(exc, KnowledgeError):
        return exc.report()
    return f"aiinfra: error: {exc}"


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:  # pragma: no cover
        pass


def entry() -> None:  # pragma: no cover - console script wrapper
    raise SystemExit(main())


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
