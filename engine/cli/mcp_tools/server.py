"""The tools served over stdio with the official ``mcp`` SDK (the ``mcp`` extra, ``mcp>=2``).

Imported only by ``aiinfra mcp``: no other verb pays for the SDK (pydantic, starlette, anyio).
"""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from engine import __version__
from engine.cli.mcp_tools import invoke, tools

INSTRUCTIONS = ("aiinfra: estimates for AI infrastructure from one source of formulas (the book's Appendix B), model and device records, "
                "calculators, decision trees and planners. Results are the CLI's --format json contracts; values are in canonical units "
                "(B, FLOP, s, W, USD, tokens, requests). List ids with model_list, hardware_list, formula_list, tree_list.")


def make(root: str | None = None) -> Server:
    table = {t.name: t for t in tools.build(root)}
    listed = [types.Tool(name=t.name, description=t.description, input_schema=t.schema()) for t in table.values()]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx, params) -> types.CallToolResult:
        tool = table.get(params.name)
        if tool is None:
            return _error(f"aiinfra: error: {params.name}: no such tool (tools: {', '.join(table)})")
        outcome = await anyio.to_thread.run_sync(invoke.call, tool, params.arguments or {}, root)
        if not outcome.ok:
            return _error(outcome.text)
        content = [types.TextContent(type="text", text=outcome.text)]
        if outcome.note:
            content.append(types.TextContent(type="text", text=outcome.note))
        structured = outcome.data if isinstance(outcome.data, dict) else {"result": outcome.data}
        return types.CallToolResult(content=content, structured_content=structured)

    return Server("aiinfra", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def serve(root: str | None = None) -> None:
    server = make(root)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)

