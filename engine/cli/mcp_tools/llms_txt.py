"""The site's ``llms.txt`` (llmstxt.org): what the project is and the MCP tools ``aiinfra mcp`` serves,
written from the same tool table the server lists (engine.cli.mcp_tools.tools)."""

from __future__ import annotations

PATH = "llms.txt"

HEAD = """# aiinfra

> The quantitative core of AI-infrastructure engineering as one-source data: formulas keyed to the
> book's Appendix B (F1..F22, extensions FX..), model and device records, calculators, decision
> trees and planners. The CLI, the Python API, this site and the MCP server compute from the same records.

An assistant reaches the engine through `aiinfra mcp`, a Model Context Protocol server over stdio
(install the extra: `pip install 'aiinfra[mcp]'`). Client configuration:

```json
{"mcpServers": {"aiinfra": {"command": "aiinfra", "args": ["mcp"]}}}
```

Each tool is a CLI command: its result is the command's `--format json` output (values in
canonical units: B, FLOP, s, W, J, USD, tokens, requests; `low`/`high` for ranges), and bad input
returns the CLI's one-line error as a tool error. Quantities are numbers in the unit shown, or
strings with a unit (`80GiB`, `3.35TB/s`, `200ms`) or a range (`1..3`, `8192+-10%`).
`aiinfra mcp --list` prints every tool's JSON schema.

## Tools
"""


def render(root: str | None = None) -> str:
    from engine.cli.mcp_tools.tools import build

    lines = [HEAD]
    for tool in build(root):
        schema = tool.schema()
        required = set(schema.get("required", []))
        args = ", ".join(f"{n}{'' if n in required else '?'}" for n in schema["properties"])
        lines.append(f"- `{tool.name}({args})`: {tool.description}")
    lines.append("")
    lines.append("## Examples")
    lines.append("")
    lines.append('- `formula_eval({"id": "F8", "inputs": {"attention": "gqa", "layers": 36, "kv_heads": 8, "head_dim": 128, "kv_bytes": 2}})`: '
                 "147456 B of K/V per token (Qwen3-8B, BF16).")
    lines.append('- `calc_kv_concurrency({"model": "qwen3-8b", "device": "h100-sxm", "context_tokens": 8192})`: requests one H100 holds.')
    lines.append('- `tree_walk({"id": "pd-disaggregation"})`: `{"status": "open", "questions": [...]}`, the inputs to give next.')
    return "\n".join(lines) + "\n"
