"""``aiinfra mcp``: serve the engine as Model Context Protocol tools over stdio (engine.cli.mcp_tools).

The SDK is the optional extra ``mcp``; without it the verb says how to install it and exits 2.
Nothing here imports the SDK until the verb runs.
"""

from __future__ import annotations

import sys

INSTALL = "aiinfra mcp needs the MCP SDK: pip install 'aiinfra[mcp]' (or pip install 'mcp>=2,<3')"

EXAMPLES = """examples:
  aiinfra mcp                       # serve on stdin/stdout (an assistant starts it)
  aiinfra mcp --list                # the tools and their JSON schemas, then exit
client configuration (Claude Desktop, Cursor, ...):
  {"mcpServers": {"aiinfra": {"command": "aiinfra", "args": ["mcp"]}}}
"""


def add_parsers(verbs, Parser, shared) -> None:
    import argparse

    p = verbs.add_parser("mcp", help="serve the engine to assistants (Model Context Protocol over stdio)", formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog=EXAMPLES,
                         description="Serve formula show/eval/solve, every calculator, tree walk, plan and plan serve, model/hardware show and "
                                     "validate as MCP tools over stdio; results are the --format json contracts, bad input the CLI's one-line error.")
    p.add_argument("--list", action="store_true", help="print the tools with their JSON schemas and exit (needs no SDK)")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_mcp:run")


def run(args) -> int:
    import importlib.util

    root = getattr(args, "root", None)
    if args.list:
        from engine.cli.mcp_tools.tools import schemas

        sys.stdout.write(schemas(root) + "\n")
        return 0
    if importlib.util.find_spec("mcp") is None:
        sys.stderr.write(INSTALL + "\n")
        return 2
    if root is not None:
        from engine.cli.common import root_of

        root_of(args)  # a bad --root is refused here, before the transport starts
    from engine.cli.mcp_tools.server import serve

    serve(root)
    return 0
