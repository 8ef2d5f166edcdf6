"""``aiinfra mcp``: the server started as a subprocess and driven over stdio by the official SDK's client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _cli_json(*argv: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "engine", *argv, "--format", "json"], capture_output=True, text=True, cwd=REPO, check=True)
    return json.loads(done.stdout)


def _session(calls):
    """Start ``python -m engine mcp``, run ``calls(client)`` on it, return what it returns."""
    anyio = pytest.importorskip("anyio")
    mcp = pytest.importorskip("mcp")
    params = mcp.StdioServerParameters(command=sys.executable, args=["-m", "engine", "mcp"], cwd=str(REPO))
    out = {}

    async def main():
        async with mcp.Client(params, read_timeout_seconds=120) as client:
            out["value"] = await calls(client)

    # in a thread of its own: an event loop another test left running in this thread (Playwright's sync API in the
    # browser tests) would make anyio.run refuse to start here
    import threading

    errors = []

    def run():
        try:
            anyio.run(main)
        except BaseException as exc:  # noqa: BLE001  (raised again in the test's thread)
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if errors:
        raise errors[0]
    return out["value"]


def test_the_sdk_client_lists_calls_and_gets_the_cli_json_and_errors():
    async def calls(client):
        listed = await client.list_tools()
        kv = await client.call_tool("calc_kv_concurrency", {"model": "qwen3-8b", "device": "h100-sxm", "context_tokens": 8192})
        f8 = await client.call_tool("formula_eval", {"id": "F8", "inputs": {"attention": "gqa", "layers": 36, "kv_heads": 8, "head_dim": 128,
                                                                             "kv_bytes": 2}})
        bad = await client.call_tool("calc_kv_concurrency", {"model": "qwen3-8b", "device": "h100-sxm", "context_tokens": "lots"})
        walk = await client.call_tool("tree_walk", {"id": "pd-disaggregation"})
        return listed, kv, f8, bad, walk

    listed, kv, f8, bad, walk = _session(calls)
    tools = {t.name: t for t in listed.tools}
    for name in ("formula_show", "formula_eval", "formula_solve", "calc_kv_concurrency", "calc_training_memory", "tree_walk", "plan",
                 "plan_serve", "model_show", "hardware_show", "validate"):
        assert name in tools, name
    kv_schema = tools["calc_kv_concurrency"].input_schema["properties"]
    assert "qwen3-8b" in kv_schema["model"]["enum"] and "h100-sxm" in kv_schema["device"]["enum"]
    assert kv_schema["attention"]["enum"] == ["mha", "gqa", "mqa", "mla"] and kv_schema["attention"]["default"] == "gqa"

    # the same JSON as `aiinfra calc kv-concurrency ... --format json`
    assert not kv.is_error
    cli = _cli_json("calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "context_tokens=8192")
    assert json.loads(kv.content[0].text) == cli
    assert kv.structured_content == cli

    # F8, Qwen3-8B (Qwen/Qwen3-8B config.json): 36 layers x 8 KV heads x 128 head_dim x 2 (K and V) x 2 B = 147456 B per token
    assert not f8.is_error
    assert json.loads(f8.content[0].text)["outputs"]["kv_bytes_per_token"]["value"] == 36 * 8 * 128 * 2 * 2 == 147456

    # bad input: the CLI's one-line error, as a tool error
    assert bad.is_error
    assert bad.content[0].text == ("aiinfra: error: --set context_tokens: 'lots' is not a number with an optional unit "
                                   "(expected e.g. 80GiB, 3.35TB/s, 1h..3h, 40±10%)")

    # a walk with inputs missing returns the questions still open
    assert not walk.is_error
    opened = json.loads(walk.content[0].text)
    assert opened["status"] == "open" and opened["questions"][0]["name"] == "latency_slo"
    assert opened["questions"][0]["values"] == ["interactive", "offline"]


def test_without_the_sdk_the_verb_says_how_to_install_it_and_exits_2():
    probe = "import sys; sys.modules['mcp'] = None; from engine.cli.main import main; sys.exit(main(['mcp']))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == "aiinfra mcp needs the MCP SDK: pip install 'aiinfra[mcp]' (or pip install 'mcp>=2,<3')\n"


def test_other_verbs_and_the_tool_list_do_not_import_the_sdk():
    probe = ("import sys, io, contextlib; from engine.cli.main import main\n"
             "for argv in (['formula', 'eval', 'F8', '--set', 'layers=36'], ['calc', 'kv-concurrency', '--help'], ['plan', '--help'],\n"
             "             ['tree', 'list'], ['mcp', '--list']):\n"
             "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
             "        main(argv)\n"
             "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types', 'pydantic'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    assert done.stdout.strip() == "[]", done.stderr


def test_llms_txt_names_every_tool_the_server_lists():
    from engine.cli.mcp_tools import llms_txt, tools

    text = llms_txt.render()
    assert text.startswith("# aiinfra\n\n> ")
    for tool in tools.build():
        assert f"- `{tool.name}(" in text, tool.name
    assert '{"mcpServers": {"aiinfra": {"command": "aiinfra", "args": ["mcp"]}}}' in text
