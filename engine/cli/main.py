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
}


def _parser_class():
    """argparse with one-line errors: ``aiinfra formula eval: error: ...`` and exit 2.

    Built on first use so that the fast evaluation path never imports argparse.
    """
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]
            sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
            raise SystemExit(2)

    return Parser


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


def build_parser():
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
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    _shared(p, False)
    return top


def fast_eval_args(argv: list[str]) -> SimpleNamespace | None:
    """``formula eval ID [--set N=V]... [--format F] [--root D]`` read without building the parser.

    The evaluation path is the one people script in loops, so it skips argparse's set-up;
    anything unusual (help, an unknown option, a bad format) returns None and the full
    parser takes over, with its messages.
    """
    args = SimpleNamespace(verb="formula", action="eval", id=None, sets=[], format="text", root=None)
    positional: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        name, eq, value = token.partition("=")
        if name in ("--set", "--format", "--root"):
            if not eq:
                if i + 1 >= len(argv):
                    return None
                value = argv[i + 1]
                i += 1
            if name == "--set":
                args.sets.append(value)
            elif name == "--format":
                if value not in FORMATS:
                    return None
                args.format = value
            else:
                args.root = value
        elif token.startswith("-"):
            return None
        else:
            positional.append(token)
        i += 1
    if len(positional) != 3 or positional[:2] != ["formula", "eval"]:
        return None
    args.id = positional[2]
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = fast_eval_args(argv)
        if args is None:
            args = build_parser().parse_args(argv)
        key = tuple(x for x in (args.verb, getattr(args, "action", None)) if x)
        module_name, func_name = HANDLERS[key].split(":")
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
        from engine.errors import AiinfraError

        if isinstance(exc, AiinfraError):
            sys.stderr.write(_error_text(exc) + "\n")
            return exc.exit_code
        if os.environ.get("AIINFRA_DEBUG"):
            raise
        sys.stderr.write(f"aiinfra: internal error: {exc.__class__.__name__}: {exc} (set AIINFRA_DEBUG=1 for a traceback)\n")
        return 70


def _error_text(exc) -> str:
    from engine.errors import KnowledgeError

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
