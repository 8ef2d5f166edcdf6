"""``aiinfra state --model ID --context N [--device D]``: persistent bytes per request by layer kind.

The logic is ``engine.domain.state``; this module parses and prints. Imports stay inside the
handler so building the parser stays cheap.
"""

from __future__ import annotations

_HERE = "engine.cli.cmd_state"
_COLUMNS = [("kind", "layer kind"), ("layers", "layers"), ("tokens_held", "tokens held"), ("bytes_per_request", "bytes per request"),
            ("shown", "per request"), ("formula", "formula")]
EXAMPLES = """examples:
  aiinfra state --model qwen3-8b --context 32768
  aiinfra state --model gemma-3-27b-it --context 131072 --device h100-sxm --kv-cache fp8
  aiinfra state --model llama-3.1-70b --context 32768 --device b200 --weights nvfp4 --kv-cache fp8
  aiinfra state --model deepseek-v3 --context 8192 --device h200 --weight-bytes 1 --format json
  aiinfra state --model qwen3-next-80b-a3b --context 262144 --device h200 --tp 2
  aiinfra state --config Nemotron-H-8B-Base-8K/config.json --context 8192 --state-bytes 4
"""


def add_parsers(verbs, Parser, shared) -> None:
    import argparse

    p = verbs.add_parser("state", help="persistent bytes per request by layer kind (KV, MLA latent, recurrent state), and requests per device",
                         formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES,
                         description="Per layer kind of a model (full attention, sliding-window attention, MLA latent, sparse-attention indexer keys, recurrent state): the layers, "
                                     "the tokens each keeps, and the bytes one request holds at --context tokens (F8, FX70, FX801); with --device, "
                                     "how many such requests fit in the device's memory less the weights.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", metavar="ID", help="a model of knowledge/models (e.g. qwen3-8b)")
    src.add_argument("--config", metavar="FILE", help="a hybrid config.json (qwen3_next or nemotron_h), whose state is read without a model record")
    p.add_argument("--context", metavar="N", required=True, help="tokens in the request's context (a whole number >= 1)")
    p.add_argument("--device", metavar="ID", help="a device of knowledge/hardware (e.g. h100-sxm): requests that fit beside the weights")
    kv = p.add_mutually_exclusive_group()
    kv.add_argument("--kv-bytes", metavar="B", help="bytes per cached K/V element (default 2, BF16; 1 for FP8)")
    kv.add_argument("--kv-cache", metavar="FORMAT", help="the K/V cache's storage format instead of --kv-bytes (bf16, fp8, int8, nvfp4, "
                                                       "mxfp8, ...: scales included, FX650)")
    p.add_argument("--state-bytes", metavar="B", help="bytes per recurrent-state element of linear-attention or Mamba layers (default: 4 where "
                                                    "the config keeps the state in float32, mamba_ssm_dtype, else 2, BF16)")
    p.add_argument("--tp", metavar="N", default="1", help="GPUs of one tensor-parallel replica for --device (default 1): each holds "
                                                          "1/N of the weights, its share of every request's K/V heads (FX73), "
                                                          "the whole MLA latent, 1/N of a recurrent state")
    w = p.add_mutually_exclusive_group()
    w.add_argument("--weight-bytes", metavar="B", help="bytes per weight for --device (default: the record's stored weight bytes where it has "
                                                      "them, e.g. gpt-oss-20b's MXFP4 experts; else 2, BF16)")
    w.add_argument("--weights", metavar="FORMAT", help="every weight in one storage format for --device instead of --weight-bytes (fp8, "
                                                     "int4_group, nvfp4, mxfp4, ...: scales included, FX650)")
    shared(p, False)
    p.set_defaults(handler=f"{_HERE}:run")


def run(args) -> int:
    from engine.cli.common import emit, root_of
    from engine.core.errors import InputError
    from engine.domain import models, state

    root = root_of(args)
    context = _whole(args.context, "--context")
    kv_bytes = _storage(args.kv_cache, "--kv-cache", root) if getattr(args, "kv_cache", None) else \
        _number(args.kv_bytes if args.kv_bytes is not None else "2", "--kv-bytes")
    tp = _whole(args.tp, "--tp")
    if args.config:
        if tp != 1:
            raise InputError("--tp", "applies with --device and --model")
        if args.device:
            raise InputError("--device", "needs --model: a hybrid config's parameters are not counted exactly yet, so the weights' bytes are unknown")
        config = _read_config(args.config)
        if isinstance(config.get("text_config"), dict):  # a multimodal wrapper (Qwen3.5): the language model's config
            config = config["text_config"]
        given = args.state_bytes
        size = _number(given, "--state-bytes") if given is not None else state.default_state_bytes(config)
        result = state.hybrid_state(config, context, kv_bytes, size, root)
        emit(_render(result, None, getattr(args, "format", "text") or "text"))
        return 0
    try:
        record = models.find_one(root, args.model, "--model")
    except InputError as exc:
        raise InputError("--model", exc.message) from None
    result = state.request_state(record, context, kv_bytes, root, None if args.state_bytes is None else _number(args.state_bytes, "--state-bytes"))
    fit = None
    if args.device:
        from engine.domain import hardware
        from engine.kb.folders import find_one

        dev = find_one(root, "hardware", lambda view: hardware.find(view, args.device, "--device"))
        if getattr(args, "weights", None):
            from engine.domain import storage

            fmt = storage.resolve(args.weights, "--weights", root)
            total = record["parameters"]["total"]
            weights, source = total * fmt.bytes, f"{total} parameters x {fmt.source('--weights')}"
        else:
            given = None if args.weight_bytes is None else _number(args.weight_bytes, "--weight-bytes")
            weights, source = state.weight_storage(record, given)
        usable, rule = serving_memory(dev)
        fit = state.fit_requests(result, record["parameters"]["total"], usable, dev.short_id, stored_bytes=weights, source=source,
                                 tp=tp, request_bytes_per_gpu=state.per_gpu_bytes(record, result, tp, root), memory_rule=rule)
    elif tp != 1:
        raise InputError("--tp", "needs --device: the split applies to the requests that fit beside the weights")
    elif getattr(args, "weights", None) or args.weight_bytes is not None:
        raise InputError("--weights" if getattr(args, "weights", None) else "--weight-bytes", "needs --device: the weights are sized against a device's memory")
    emit(_render(result, fit, getattr(args, "format", "text") or "text"))
    return 0


def serving_memory(dev) -> tuple[float, str]:
    """(bytes, how) one GPU of ``dev`` gives weights and requests under the convention of every serving command
    (calc kv-concurrency's defaults, plan serve): FX72's vLLM rule, the runtime's total x gpu_memory_utilization 0.9
    less the engine's 5 GiB overhead (engine.plan.engine_memory), the total measured or derived (engine.domain.usable_memory)."""
    from engine.core.errors import InputError
    from engine.plan.engine_memory import OVERHEAD, kv_budget

    total = dev.driver_total
    if total is None:
        raise InputError("--device", f"{dev.short_id} records no usable memory total and none can be derived")
    usable, _ = kv_budget("vllm", total.bytes, 0.0)
    return usable, (f"FX72, vLLM's rule: 0.9 x {total.label} {_gib(total.bytes)} - {OVERHEAD / 2**30:g} GiB engine overhead, "
                    "as calc kv-concurrency and plan serve budget")


def _read_config(path: str) -> dict:
    from engine.core.errors import InputError
    from engine.kb.config_json import read_json

    data = read_json(path, "--config", "a config.json object")  # the bounded reader: regular files, size, depth, duplicate keys
    if not isinstance(data, dict):
        raise InputError("--config", f"{path!r} holds no JSON object")
    return data


def _storage(text: str, field: str, root) -> float:
    from engine.domain import storage

    return storage.resolve(text, field, root).bytes


def _whole(text: str, field: str) -> int:
    from engine.core.errors import InputError

    try:
        value = int(text)
    except ValueError:
        raise InputError(field, f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise InputError(field, f"expected a whole number >= 1, got {text!r}")
    return value


def _number(text: str, field: str) -> float:
    import math

    from engine.core.errors import InputError

    try:
        value = float(text)
    except ValueError:
        raise InputError(field, f"expected a positive number of bytes, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(field, f"expected a positive number of bytes, got {text!r}")
    return value


def _gib(n: float) -> str:
    return f"{n / 2**30:.3f} GiB"


def _render(result, fit, fmt: str) -> str:
    from engine.cli.render import table, to_json

    if fmt == "json":
        data = result.to_json()
        if fit:
            data["device"] = fit.__dict__
        return to_json(data)
    rows = [dict(r.__dict__, shown=_gib(r.bytes_per_request)) for r in result.rows]
    rows.append(dict(kind="total", layers=sum(r.layers for r in result.rows if r.kind != "indexer_keys"), tokens_held="", bytes_per_request=result.total,
                     shown=_gib(result.total), formula="FX801"))
    head = f"{result.model.split(':', 1)[-1]}: persistent bytes of one request at {result.context_tokens} tokens (K/V {result.kv_bytes:g} B per element)"
    lines = [f"## {head}" if fmt == "md" else head, "", table(rows, _COLUMNS, "md" if fmt == "md" else "text")]
    if fit:
        if fit.tp > 1:
            lines += ["", f"TP {fit.tp}: per {fit.device}, {_gib(fit.memory_bytes)} usable - weights {_gib(fit.weight_bytes)} (1/{fit.tp}) = "
                          f"{_gib(fit.free_bytes)} free; each request holds {fit.request_bytes_per_gpu:.0f} B on every GPU "
                          f"(K/V heads sharded per FX73, MLA latent replicated, recurrent heads split): "
                          f"{fit.requests} request{'' if fit.requests == 1 else 's'} per replica of {fit.tp} GPUs",
                      f"weights: {fit.weight_source}"]
        else:
            lines += ["", f"{fit.device}: {_gib(fit.memory_bytes)} usable - weights {_gib(fit.weight_bytes)} = {_gib(fit.free_bytes)} free; "
                          f"{fit.requests} request{'' if fit.requests == 1 else 's'} of {result.total} B fit", f"weights: {fit.weight_source}"]
        lines.append(f"usable: {fit.memory_rule}")
    return "\n".join(lines).rstrip("\n")
