"""A tool call run as the CLI runs it: ``engine.cli.main.main(argv)`` in this process, stdout and
stderr captured. A result is the command's ``--format json`` text; an error is the CLI's own
one-line message (exit 2), returned to the client as a tool error, never raised."""

from __future__ import annotations

import contextlib
import io
import json
import threading
from dataclasses import dataclass

from engine.core.errors import AiinfraError

_LOCK = threading.Lock()  # sys.stdout is one per process: one command at a time


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    text: str  # the JSON text, or the error line(s)
    data: object = None  # the parsed JSON of a result
    note: str = ""  # what the command wrote on stderr beside a result (warnings)


def cli(argv: list[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``aiinfra ARGV`` run in-process."""
    from engine.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with _LOCK, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def call(tool, arguments: dict | None, root: str | None = None) -> Outcome:
    """Run ``tool`` with ``arguments``; the tree walk's missing inputs come back as open questions."""
    try:
        argv = tool.argv(arguments)
    except AiinfraError as exc:
        return Outcome(False, f"aiinfra: error: {exc}")
    if root is not None:
        argv += ["--root", root]
    code, out, err = cli(argv)
    if code != 0:
        if tool.kind == "tree_walk":
            opened = open_questions(arguments or {}, root)
            if opened is not None:
                return _result(json.dumps(opened, indent=1, ensure_ascii=False), "")  # the CLI's line is its "message"
        return Outcome(False, err.strip() or f"aiinfra: exit {code}")
    return _result(out, err.strip(), tool.keep)


def _result(text: str, note: str, keep: tuple[str, ...] = ()) -> Outcome:
    data = json.loads(text)
    if keep and isinstance(data, dict):
        data = {k: v for k, v in data.items() if k in keep}
        text = json.dumps(data, indent=1, ensure_ascii=False)
    return Outcome(True, text, data, note)


def open_questions(arguments: dict, root: str | None) -> dict | None:
    """``{"status": "open", "tree", "message", "questions": [...]}`` when the walk stops for inputs it lacks,
    else None (the error was of another kind: the CLI's line stands)."""
    from types import SimpleNamespace

    from engine.cli.cmd_tree import _presets
    from engine.cli.common import parse_sets, root_of
    from engine.trees.walk import MissingInputs, runner

    args = SimpleNamespace(root=root, model=arguments.get("model"), device=arguments.get("device"),
                           precision=arguments.get("precision") or "bf16")
    try:
        base = root_of(args)
        run = runner(base, str(arguments.get("id", "")))
        sets = [f"{k}={v!r}" if isinstance(v, float) else f"{k}={v}" for k, v in (arguments.get("inputs") or {}).items()]
        run.walk(parse_sets(sets), None, _presets(args, base))
    except MissingInputs as exc:
        return {"status": "open", "tree": run.tree.id, "message": str(exc),
                "questions": [_question(run, m) for m in exc.missing]}
    except Exception:
        return None
    return None


def _question(run, missing) -> dict:
    name = missing.field.removeprefix("--set ")
    info = run.symbols.info(name) if name in run.symbols.names() else {}
    default = info.get("default")
    return {"name": name, "unit": info.get("unit", ""), "values": info.get("values", []), "description": info.get("desc", ""),
            "default": default[0] if isinstance(default, list) else default, "message": missing.message}
