"""``aiinfra kv sequence|pages``: one sequence's K/V cache over its life, and a paged pool stepped through operations.

The logic is ``engine.domain.kv_sequence`` and ``engine.domain.kv_pages``; this module parses and prints. Imports
stay inside the handlers so building the parser stays cheap.
"""

from __future__ import annotations

_HERE = "engine.cli.cmd_kv"
SEQUENCE_EXAMPLES = """examples:
  aiinfra kv sequence --prompt 8192 --steps 1024 --prefix-hit 6144 --model qwen3-8b
  aiinfra kv sequence --prompt 4 --steps 3                       # counts only, small enough to check by hand
  aiinfra kv sequence --prompt 32768 --steps 512 --model llama-3.1-70b --kv-cache fp8 --format json
"""
PAGES_EXAMPLES = """examples:
  aiinfra kv pages create:a:17 fork:a:b fork:a:c append:a:1 append:b:16 cancel:c
  aiinfra kv pages create:p:7 fork:p:s1 append:p:1 append:s1:1 --block-size 4      # Kwon et al. 2023 Figure 8
  aiinfra kv pages create:a:40 cancel:a create:b:20 --capacity-pages 3 --model qwen3-8b --format md
"""


def add_parsers(verbs, Parser, shared) -> None:
    import argparse

    raw = argparse.RawDescriptionHelpFormatter
    kv = verbs.add_parser("kv", help="K/V cache of one sequence over its life, and paged blocks (fork, copy-on-write, eviction)",
                          description="K/V cache accounting from formulas/kv_sequence.yaml (FX1200-FX1225).")
    actions = kv.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    actions.required = True
    p = actions.add_parser("sequence", help="records read and appended, pairs visible, capacity; a prefix hit; the no-cache recompute",
                           formatter_class=raw, epilog=SEQUENCE_EXAMPLES,
                           description="A P-token prompt (its first C tokens a prefix hit), then G one-token decode calls: K/V records read (FX1200) "
                                       "and appended (FX1201), the final capacity (FX1202), the (query, key) pairs visible (FX1203), the prefill's "
                                       "rows and pairs and what the hit saves (FX1204-FX1206: rows and pairs, not capacity), the no-cache recompute "
                                       "(FX1207, FX1208); with --model, the bytes (FX1209-FX1211) for its attention and the MHA/MQA counterfactuals.")
    p.add_argument("--prompt", required=True, metavar="P", help="prompt tokens (a whole number >= 1)")
    p.add_argument("--steps", required=True, metavar="G", help="one-token decode calls after the prompt (a whole number >= 0)")
    p.add_argument("--prefix-hit", default="0", metavar="C", help="leading prompt tokens found in a prefix cache (0 to P; default 0)")
    _bytes_options(p)
    p.add_argument("--bytes-per-token", metavar="B", help="K/V bytes per token instead of --model (e.g. 147456)")
    shared(p, False)
    p.set_defaults(handler=f"{_HERE}:sequence")

    p = actions.add_parser("pages", help="a paged K/V pool through create, fork, append and cancel: the page table after each",
                           formatter_class=raw, epilog=PAGES_EXAMPLES,
                           description="Steps a pool of fixed-size pages (vLLM's blocks) through operations and prints, after each, every "
                                       "sequence's block table, its internal waste (FX1220, FX1221), the live pages with their reference counts, "
                                       "the tokens copied on write, and the free queue in eviction order (tail pages first freed, head first evicted). "
                                       "Operations: create:ID:TOKENS, fork:PARENT:ID, append:ID:TOKENS, cancel:ID.")
    p.add_argument("ops", nargs="+", metavar="OP", help="create:ID:TOKENS | fork:PARENT:ID | append:ID:TOKENS | cancel:ID")
    p.add_argument("--block-size", default="16", metavar="N", help="tokens per page (default 16, vLLM's --block-size on CUDA)")
    p.add_argument("--capacity-pages", metavar="N", help="pages in the pool (default: unbounded); an operation needing more is rejected")
    _bytes_options(p)
    shared(p, False)
    p.set_defaults(handler=f"{_HERE}:pages")


def _bytes_options(p) -> None:
    p.add_argument("--model", metavar="ID", help="a model of knowledge/models: its K/V bytes per token (F8) for the bytes")
    kv = p.add_mutually_exclusive_group()
    kv.add_argument("--kv-bytes", metavar="B", help="bytes per cached K/V element with --model (default 2, BF16)")
    kv.add_argument("--kv-cache", metavar="FORMAT", help="the K/V cache's storage format with --model (fp8, ...: scales included, FX650)")


def sequence(args) -> int:
    from engine.cli.cmd_state import _number, _whole
    from engine.cli.common import emit, root_of
    from engine.core.errors import InputError
    from engine.domain import kv_sequence

    root = root_of(args)
    prompt = _whole(args.prompt, "--prompt")
    steps = _count(args.steps, "--steps")
    hit = _count(args.prefix_hit, "--prefix-hit")
    record = _model(args, root)
    if record is not None and args.bytes_per_token is not None:
        raise InputError("--bytes-per-token", "give either --model or --bytes-per-token")
    per_token = None if args.bytes_per_token is None else _number(args.bytes_per_token, "--bytes-per-token")
    result = kv_sequence.sequence(prompt, steps, hit, record=record, kv_bytes=_kv_bytes(args, root), kv_bytes_per_token=per_token, root=root)
    from engine.cli.kv_render import render_sequence

    emit(render_sequence(result, args.format or "text"))
    return 0


def pages(args) -> int:
    from engine.cli.common import emit, root_of
    from engine.domain import kv_pages

    root = root_of(args)
    block = _count(args.block_size, "--block-size", 1)
    capacity = None if args.capacity_pages is None else _count(args.capacity_pages, "--capacity-pages", 1)
    record = _model(args, root)
    per_token = None
    if record is not None:
        from engine.domain.model_count import kv_bytes_per_token

        per_token = kv_bytes_per_token(record, root, _kv_bytes(args, root))
    from engine.domain.families.evaluate import formula_module

    module = formula_module(root)
    steps = kv_pages.run(args.ops, block, capacity, module)
    from engine.cli.kv_render import render_pages

    emit(render_pages(steps, block, capacity, record["id"] if record else None, per_token, module, args.format or "text"))
    return 0


def _model(args, root):
    from engine.core.errors import InputError
    from engine.domain import models

    if args.model is None:
        for flag in ("kv_bytes", "kv_cache"):
            if getattr(args, flag, None) is not None:
                raise InputError("--" + flag.replace("_", "-"), "needs --model")
        return None
    try:
        return models.find(models.load_models(root), args.model, "--model")
    except InputError as exc:
        raise InputError("--model", exc.message) from None


def _kv_bytes(args, root) -> float:
    from engine.cli.cmd_state import _number, _storage

    if getattr(args, "kv_cache", None):
        return _storage(args.kv_cache, "--kv-cache", root)
    return _number(args.kv_bytes if args.kv_bytes is not None else "2", "--kv-bytes")


def _count(text: str, field: str, low: int = 0) -> int:
    from engine.core.errors import InputError

    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low:
        raise InputError(field, f"expected a whole number >= {low}, got {text!r}")
    return value
