"""``aiinfra kv sequence|pages|tiers``: one sequence's K/V cache over its life, a paged pool stepped through operations,
and a reusable prefix cached in GPU, host, SSD and remote tiers.

The logic is ``engine.domain.kv_sequence``, ``engine.domain.kv_pages`` and ``engine.domain.kv_tiers``; this module parses and prints. Imports
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
TIERS_EXAMPLES = """examples:
  aiinfra kv tiers --model qwen3-8b --device h100-sxm --prefix 8192 --reuse-interval 60s --insert-rate 20000 \\
      --tier gpu:40GB --tier host:512GB --tier ssd:4TB:7GB/s:100us --tier remote:100TB:400Gb/s:1ms
  aiinfra kv tiers --bytes-per-token 147456 --flops-per-token 1.6e10 --peak-flops 989TFLOPS --prefix 8192 \\
      --reuse-interval 10min --insert-rate 20000 --tier gpu:40GB --tier host:512GB:64GB/s --format json
"""


def add_parsers(verbs, Parser, shared) -> None:
    import argparse

    raw = argparse.RawDescriptionHelpFormatter
    kv = verbs.add_parser("kv", help="K/V cache of one sequence over its life, paged blocks (fork, copy-on-write, eviction), and prefix-cache tiers",
                          description="K/V cache accounting from formulas/kv_sequence.yaml (FX1200-FX1225) and the prefix-cache tiers of "
                                      "formulas/offload.yaml (FX1240-FX1247).")
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

    p = actions.add_parser("tiers", help="a reusable prefix in GPU, host, SSD and remote tiers: hit rate per tier, restore against recompute, TTFT",
                           formatter_class=raw, epilog=TIERS_EXAMPLES,
                           description="Cache tiers of one instance, fastest first, each NAME:CAPACITY[:BANDWIDTH[:LATENCY]] (the first, the "
                                       "GPU's HBM, without a bandwidth). For a prefix of P tokens reused every --reuse-interval on average while "
                                       "other K/V enters at --insert-rate: each tier's characteristic time (FX1243), the hit probability within "
                                       "it (FX1244) and its own hit rate (FX1245) under LRU with demotion and Poisson reuse (Che et al. 2002), the "
                                       "restore time (FX1240) against the recompute time (FX1241), the break-even prefix length (FX1242), the "
                                       "load time of a hit (FX1246) and the TTFT (FX1247).")
    p.add_argument("--prefix", required=True, metavar="P", help="tokens of the reusable prefix (a whole number >= 1)")
    p.add_argument("--suffix", default="0", metavar="S", help="new prompt tokens after the prefix, prefilled on a hit too (default 0)")
    p.add_argument("--reuse-interval", required=True, metavar="TIME", help="mean time until the prefix is used again (e.g. 30s, 10min, 2h)")
    p.add_argument("--insert-rate", required=True, metavar="TOKENS/S", help="tokens per second of other K/V entering this instance's "
                                                                           "caches: its missed prompt tokens (FX86's prefill phase), e.g. 20000")
    p.add_argument("--tier", action="append", metavar="SPEC", help="NAME:CAPACITY[:BANDWIDTH[:LATENCY]], fastest first, repeated; e.g. "
                                                                  "gpu:40GB host:512GB:64GB/s ssd:4TB:7GB/s:100us remote:100TB:400Gb/s:1ms. "
                                                                  "A tier named host without a bandwidth takes --device's host link")
    p.add_argument("--device", metavar="ID", help="a device of knowledge/hardware: its dense peak at --precision for the recompute, its host link for a host tier")
    p.add_argument("--precision", default="bf16", metavar="P", help="precision of the device's dense peak (default bf16)")
    p.add_argument("--peak-flops", metavar="FLOPS", help="dense FLOP/s of one card instead of --device (e.g. 989TFLOPS)")
    p.add_argument("--flops-per-token", metavar="FLOP", help="forward FLOPs per token instead of --model's 2 x active parameters (FX30)")
    p.add_argument("--tp", default="1", metavar="N", help="cards of the instance that share the prefill (default 1)")
    p.add_argument("--mfu", default="0.5", metavar="F", help="prefill MFU (default 0.5: compute-bound prefill runs at about 0.4-0.6 of dense "
                                                              "peak, tree prefix-cache-tier)")
    p.add_argument("--queue-time", default="0", metavar="TIME", help="queueing before the prefill (default 0)")
    _bytes_options(p)
    p.add_argument("--bytes-per-token", metavar="B", help="K/V bytes per token instead of --model (e.g. 147456)")
    shared(p, False)
    p.set_defaults(handler=f"{_HERE}:tiers")


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


def tiers(args) -> int:
    from engine.cli.cmd_state import _number
    from engine.cli.common import emit, root_of
    from engine.cli.kv_tiers_render import render
    from engine.core.errors import InputError
    from engine.domain import kv_tiers

    root = root_of(args)
    record = _model(args, root)
    if record is not None and args.bytes_per_token is not None:
        raise InputError("--bytes-per-token", "give either --model or --bytes-per-token")
    if record is None and args.bytes_per_token is None:
        raise InputError("--bytes-per-token", "give --model or --bytes-per-token (the K/V bytes one token adds, F8)")
    notes, device = [], _device(args, root)
    per_token = _number(args.bytes_per_token, "--bytes-per-token") if record is None else _model_bytes(args, record, root)
    flops = _flops(args, record, root)
    peak = _peak(args, device)
    inputs = kv_tiers.Inputs(_count(args.prefix, "--prefix", 1), _count(args.suffix, "--suffix"), per_token, flops, peak,
                             _quantity(args.mfu, "1", "--mfu"), _count(args.tp, "--tp", 1), _quantity(args.insert_rate, "tokens/s", "--insert-rate"),
                             _quantity(args.reuse_interval, "s", "--reuse-interval"), _quantity(args.queue_time, "s", "--queue-time"))
    specs = [_tier(text, device) for text in (args.tier or [])]
    notes += [f"{t.name}: bandwidth {t.source}" for t in specs if t.source]
    from engine.domain.families.evaluate import formula_module

    result = kv_tiers.analyse(inputs, specs, formula_module(root), record["id"] if record else None, device.id if device else None, tuple(notes))
    emit(render(result, args.format or "text"))
    return 0


def _device(args, root):
    if args.device is None:
        return None
    from engine.domain import hardware
    from engine.kb.folders import find_one

    return find_one(root, "hardware", lambda view: hardware.find(view, args.device, "--device"))


def _model_bytes(args, record, root) -> float:
    from engine.domain.model_count import kv_bytes_per_token

    return kv_bytes_per_token(record, root, _kv_bytes(args, root))


def _flops(args, record, root) -> float:
    from engine.core.errors import InputError

    if args.flops_per_token is not None:
        return _quantity(args.flops_per_token, "FLOP/tokens", "--flops-per-token")
    if record is None:
        raise InputError("--flops-per-token", "give --model or --flops-per-token (forward FLOPs of one token, FX30)")
    from engine.domain import models
    from engine.domain.families.evaluate import formula_module
    from engine.domain.kv_sequence import _Formulas

    active = models.parameter_count(record, root)["active"]
    return _Formulas(formula_module(root))("FX30", params_active=active)


def _peak(args, device) -> float:
    from engine.core.errors import InputError

    if args.peak_flops is not None:
        if device is not None:
            raise InputError("--peak-flops", "give either --device or --peak-flops")
        return _quantity(args.peak_flops, "FLOP/s", "--peak-flops")
    if device is None:
        raise InputError("--device", "give --device or --peak-flops (the dense FLOP/s the prefix is recomputed at)")
    from engine.domain import hardware

    return hardware.select_peak(device, args.precision).peak.flops


def _tier(text: str, device):
    from engine.core.errors import InputError
    from engine.domain.kv_tiers import Tier

    parts = text.split(":")
    if len(parts) < 2 or len(parts) > 4 or not parts[0].strip():
        raise InputError("--tier", f"expected NAME:CAPACITY[:BANDWIDTH[:LATENCY]] (e.g. host:512GB:64GB/s), got {text!r}")
    name = parts[0].strip()
    capacity = _quantity(parts[1], "B", f"--tier {name} capacity")
    given = parts[2].strip() if len(parts) > 2 else ""
    latency = _quantity(parts[3], "s", f"--tier {name} latency") if len(parts) > 3 else 0.0
    if given:
        return Tier(name, capacity, _quantity(given, "B/s", f"--tier {name} bandwidth"), latency)
    if name == "host" and device is not None and device.record.get("host_link"):
        link = device.record["host_link"]
        from engine.domain.hardware import quantity

        return Tier(name, capacity, quantity(link["per_direction"], "B/s"), latency,
                    f"{device.short_id}'s host link, {link['name']} {link['per_direction']} per direction")
    return Tier(name, capacity, None, latency)


def _quantity(text: str, unit: str, field: str) -> float:
    from engine.cli.common import one_quantity

    return one_quantity(field, text, unit)


def _model(args, root):
    from engine.core.errors import InputError
    from engine.domain import models

    if args.model is None:
        for flag in ("kv_bytes", "kv_cache"):
            if getattr(args, flag, None) is not None:
                raise InputError("--" + flag.replace("_", "-"), "needs --model")
        return None
    try:
        return models.find_one(root, args.model, "--model")
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
