"""``aiinfra forward`` and ``aiinfra generate``: the per-operator ledger of a model.

Both read the model records and operator templates through ``engine.domain.ledger.load_root``
(a cached module, so no YAML is read while the files are unchanged) and the compiled
formulas; neither imports sympy.
"""

from __future__ import annotations

from engine.cli.common import emit, root_of, scan_options
from engine.cli.render import prose_around_tables, table, to_json
from engine.core.humanize import friendly, number
from engine.domain import ledger
from engine.numeric import compiled

COLUMNS = (
    ("name", "operator"), ("shape", "shape"), ("repeats", "x"), ("matrix_flops", "matrix FLOP"),
    ("attention_matrix_flops", "attn FLOP (causal)"), ("rectangular_attention_matrix_flops", "attn FLOP (rect)"),
    ("scalar_flops", "scalar FLOP"), ("special_functions", "special"), ("weight_bytes", "weight B"),
    ("activation_read_bytes", "act read B"), ("activation_write_bytes", "act write B"),
    ("kv_read_bytes", "KV read B"), ("kv_write_bytes", "KV write B"),
)
UNITS = {"parameters": "", "weight_bytes": "B", "kv_bytes_per_token": "B", "kv_bytes_before": "B", "kv_bytes_after": "B",
         "kv_bytes_written": "B", "expert_weight_bytes": "B", "experts_used": "", "kv_read_bytes": "B", "weight_read_bytes": "B",
         "activation_read_bytes": "B", "activation_write_bytes": "B", "history_records_read_per_sequence_per_layer": ""}


def forward(args) -> int:
    root = root_of(args)
    catalog = ledger.load_root(root)
    result = ledger.forward_record(
        catalog.model(args.model), catalog.templates, args.tokens, args.batch, args.history, args.output_head,
        routing_of(args.routing), *storage_bytes(args, root), args.tp, compiled.load(root),
        attention=getattr(args, "attention", "flash"), reports=reports_of(args), quantised=quantised_of(args),
        mla_path=getattr(args, "mla_path", "auto"),
    )
    emit(render(result, args.format))
    return 0


def generate(args) -> int:
    root = root_of(args)
    catalog = ledger.load_root(root)
    result = ledger.generate_record(
        catalog.model(args.model), catalog.templates, args.history, args.steps, args.batch,
        routing_of(args.routing), *storage_bytes(args, root), args.tp, compiled.load(root),
        attention=getattr(args, "attention", "flash"), reports=reports_of(args), quantised=quantised_of(args),
        mla_path=getattr(args, "mla_path", "auto"),
    )
    emit(render(result, args.format))
    return 0


def storage_bytes(args, root) -> tuple:
    """(weight bytes, KV bytes) per element: --weights / --kv-cache FORMAT by name (engine.domain.storage,
    scales included), else --weight-bytes / --kv-bytes as given; a format and a byte count for the same
    thing is refused, as is --weights beside --quantized (which keeps norms and embeddings in BF16)."""
    from engine.core.errors import InputError

    weights, kv = args.weight_bytes, args.kv_bytes
    fmt_w, fmt_kv = getattr(args, "weights", None), getattr(args, "kv_cache", None)
    if fmt_w is not None or fmt_kv is not None:
        from engine.domain import storage

        if fmt_w is not None:
            if str(weights) != "2":
                raise InputError("--weights", "give --weights FORMAT or --weight-bytes P, not both")
            if getattr(args, "quantized", None):
                raise InputError("--weights", "stores every weight in one format; --quantized stores the linear layers only: give one")
            weights = storage.resolve(fmt_w, "--weights", root).bytes
        if fmt_kv is not None:
            if str(kv) != "2":
                raise InputError("--kv-cache", "give --kv-cache FORMAT or --kv-bytes P, not both")
            kv = storage.resolve(fmt_kv, "--kv-cache", root).bytes
    return weights, kv


STORAGE_HELP = {"--weights": "every weight in one storage format instead of --weight-bytes (bf16, fp8, int4_group, nvfp4, mxfp4, ...: "
                             "scales included, FX650)",
                "--kv-cache": "the K/V cache's storage format instead of --kv-bytes (bf16, fp8, nvfp4, ...)"}


# switch -> Ledger.extra report it adds (issue 13); --training is forward's only
SWITCHES = {"--training": "training", "--active-params": "active_parameters", "--residency": "residency",
            "--routing-counts": "routing_counts"}


def reports_of(args) -> tuple:
    return tuple(name for name in ledger.REPORTS if getattr(args, name, False))


def quantised_of(args) -> dict | None:
    fmt = getattr(args, "quantized", None)
    if fmt is None:
        return None
    return {"format": fmt, "scope": getattr(args, "quant_scope", "linear"), "group_size": getattr(args, "quant_group_size", 128)}


def add_report_options(p, verb: str) -> None:
    """The issue-13 options of ``forward`` and ``generate`` (called by engine.cli.main's parser)."""
    p.add_argument("--attention", choices=ledger.ATTENTIONS, default="flash",
                   help="flash (fused, default: scores never reach memory) or eager (score and probability tensors materialised)")
    p.add_argument("--mla-path", dest="mla_path", choices=ledger.MLA_PATHS, default="auto",
                   help="MLA models: absorbed (W_UK/W_UV folded, attention over the latent), expanded (latent decompressed "
                        "per head) or auto (default: expanded for several new tokens, absorbed for one, as vLLM and SGLang run it)")
    if verb == "forward":
        p.add_argument("--training", action="store_true",
                       help="training FLOPs of this batch from the ledger (forward + 2x backward, causal cells) beside 6ND (F1)")
    p.add_argument("--active-params", dest="active_parameters", action="store_true",
                   help="parameters active per token: shared and dense weights plus top_k / E of the routed experts")
    p.add_argument("--residency", action="store_true", help="bytes that must stay resident: weights + batch x context x KV bytes per token")
    p.add_argument("--routing-counts", dest="routing_counts", action="store_true",
                   help="tokens each routed expert receives, per MoE layer (from --routing)")
    p.add_argument("--quantized", metavar="FORMAT", help="weight bytes with linear layers in a block-scaled format (FX650: nvfp4, mxfp4, "
                   "mxfp6, mxfp8, int4_group, int8_group), scales counted apart, norms and embeddings in BF16")
    p.add_argument("--quant-scope", default="linear", metavar="linear|experts", help="what --quantized stores quantised (default linear)")
    p.add_argument("--quant-group-size", type=int, default=128, metavar="G", help="values per scale of an integer group format (default 128)")


# option -> (attribute, type); the defaults repeat engine/cli/main.py's parser
_OPTIONS = {
    "--model": ("model", str), "--tokens": ("tokens", int), "--history": ("history", int), "--steps": ("steps", int),
    "--batch": ("batch", int), "--output-head": ("output_head", str), "--routing": ("routing", str),
    "--weight-bytes": ("weight_bytes", str), "--kv-bytes": ("kv_bytes", str), "--tp": ("tp", int),
    "--format": ("format", str), "--root": ("root", str), "--attention": ("attention", str), "--mla-path": ("mla_path", str),
    "--quantized": ("quantized", str), "--quant-scope": ("quant_scope", str), "--quant-group-size": ("quant_group_size", int),
    "--weights": ("weights", str), "--kv-cache": ("kv_cache", str),
}
_REQUIRED = {"forward": ("model", "tokens"), "generate": ("model", "history", "steps")}


def fast_args(argv: list[str]):
    """``forward``/``generate`` options read without building the whole parser (argparse
    costs more than the ledger itself); anything unusual returns None and the full parser
    takes over with its messages. For engine.cli.main's fast path."""
    from types import SimpleNamespace

    if not argv or argv[0] not in _REQUIRED:
        return None
    args = SimpleNamespace(verb=argv[0], batch=1, history=0, output_head="last", routing="balanced", weight_bytes="2",
                           kv_bytes="2", tp=1, format="text", root=None, model=None, tokens=None, steps=None, attention="flash", mla_path="auto",
                           quantized=None, quant_scope="linear", quant_group_size=128, weights=None, kv_cache=None,
                           **{name: False for name in SWITCHES.values()})
    allowed = set(_OPTIONS) - ({"--steps"} if argv[0] == "forward" else {"--tokens", "--output-head"})
    switches = set(SWITCHES) - (set() if argv[0] == "forward" else {"--training"})
    pairs = scan_options(argv[1:], allowed, switches)
    if pairs is None:
        return None
    for name, value in pairs:
        if name is None:
            return None
        if name in SWITCHES:
            setattr(args, SWITCHES[name], True)
            continue
        attr, kind = _OPTIONS[name]
        try:
            setattr(args, attr, kind(value))
        except ValueError:
            return None
    if any(getattr(args, k) is None for k in _REQUIRED[argv[0]]) or args.format not in ("text", "json", "md", "csv") \
            or args.output_head not in ledger.OUTPUT_HEADS or args.attention not in ledger.ATTENTIONS or args.mla_path not in ledger.MLA_PATHS:
        return None
    return args


def routing_of(text: str):
    """balanced, concentrated, or the histogram read from a counts.json file."""
    if text in ledger.ROUTINGS:
        return text
    from engine.kb.config_json import read_json

    return read_json(text, "--routing", "balanced, concentrated or a counts.json file")


def render(result: ledger.Ledger, fmt: str) -> str:
    if fmt == "json":
        return to_json(result.to_json())
    rows = [r.to_json() for r in result.rows]
    if fmt == "csv":
        for r in rows:
            r["special_functions"] = ";".join(f"{k}={v}" for k, v in r["special_functions"].items())
        return table(rows, COLUMNS, "csv")
    md = fmt == "md"
    for r in rows:
        r.update({k: number(r[k]) for k, _ in COLUMNS[3:] if k != "special_functions"})
        r["special_functions"] = ", ".join(f"{k} {number(v)}" for k, v in r["special_functions"].items())
    # a narrow terminal keeps the operator, its repeats, matrix FLOPs and the bytes it reads; the rest go in this order
    # (JSON, CSV and Markdown keep every column)
    drop = ("rectangular_attention_matrix_flops", "special_functions", "shape", "kv_write_bytes", "activation_write_bytes", "scalar_flops",
            "attention_matrix_flops", "activation_read_bytes")
    lines = [("## " if md else "") + headline(result), "", table(rows, COLUMNS, "md" if md else "text", droppable=drop), ""]
    lines.append("### Totals" if md else "Totals")
    items = list(result.totals.items()) + [(k, v) for k, v in result.extra.items() if k != "steps" and not isinstance(v, dict)]
    lines += [_total(k, v, md) for k, v in items]
    if result.special_functions:
        lines.append(("- " if md else "  ") + "special functions: " + ", ".join(f"{k} {number(v)}" for k, v in result.special_functions.items()))
    for name, report in result.extra.items():
        if isinstance(report, dict):
            lines += ["", ("### " if md else "") + REPORT_TITLES.get(name, name)] + _report(report, md)
    lines += ["", "### Formulas" if md else "Formulas", ("- " if md else "  ") + ", ".join(result.formulas)]
    lines += ["", "### Assumptions" if md else "Assumptions"] + [f"- {a}" for a in result.assumptions]
    if result.warnings:
        lines += ["", "### Warnings" if md else "Warnings"] + [f"- {w}" for w in result.warnings]
    return "\n".join(lines if md else prose_around_tables(lines))


def headline(result: ledger.Ledger) -> str:
    s = result.scenario
    if "steps" in s:
        what = f"{s['steps']} decode calls of {s['batch']} sequence(s) after a {s['history']}-token prompt (shapes of the first call)"
    else:
        what = f"forward of {s['batch']} sequence(s) x {s['tokens']} new tokens over {s['history']} cached, output head {s['output_head']}"
    return (f"{result.model} ({result.template}): {what}; routing {s['routing']}; bytes per element: weights {number(s['weight_bytes'])}, "
            f"KV {number(s['kv_bytes'])}, activations {number(s['activation_bytes'])}; TP {s['tp']} (KV totals per GPU)")


REPORT_TITLES = {"training": "Training FLOPs (ledger) beside 6ND", "active_parameters": "Active parameters per token",
                 "residency": "Residency floor (weights + KV)", "routing_counts": "Routing counts per MoE layer",
                 "eager_attention": "Eager attention: materialised scores",
                 "quantised_storage": "Quantised storage (scales apart, norms BF16)"}
_BYTES = ("bytes",)
_PLAIN = ("tokens", "sequences", "sequence_length", "params", "parameters", "stored", "routed", "active", "shared", "experts", "top_k",
          "layers", "assignments", "counts", "ratio", "over", "share", "elements", "first_moe_layer", "per_layer")


def _report(report: dict, md: bool, indent: str = "  ") -> list[str]:
    """One report as name = value lines; lists of histograms shortened, notes as prose."""
    lead = "- " if md else indent
    out = []
    for k, v in report.items():
        if k in ("notes", "note", "rule") or isinstance(v, str):
            texts = v if isinstance(v, list) else [v]
            out += [f"{lead}{k}: {text}" for text in texts]
        elif isinstance(v, dict):
            out.append(f"{lead}{k}:")
            out += _report(v, md, indent + "  ")
        elif isinstance(v, list):
            out += [f"{lead}{k}[{i}]: " + _histogram(h) for i, h in enumerate(v)] if v and isinstance(v[0], dict) else \
                   [f"{lead}{k} = {_short(v)}"]
        elif v is None or isinstance(v, bool):
            out.append(f"{lead}{k} = {v}")
        else:
            unit = "B" if any(w in k for w in _BYTES) else "" if any(w in k for w in _PLAIN) else "FLOP"
            extra = friendly(v, unit) if unit else ""
            out.append(f"{lead}{k} = {number(v)}{' ' + unit if unit else ''}" + (f"  ({extra})" if extra else ""))
    return out


def _histogram(h: dict) -> str:
    layers = h["layers"]
    where = f"layer {layers[0]}" if len(layers) == 1 else f"layers {layers[0]}-{layers[-1]}"
    return (f"{where}: {h['experts_used']} experts used, tokens per expert max {h['max_tokens_per_expert']}, min {h['min_tokens_per_expert']}, "
            f"mean {number(h['mean_tokens_per_expert'])} (max/mean {number(h['max_over_mean'])}); counts {_short(h['counts'])}")


def _short(values: list) -> str:
    text = ", ".join(str(x) for x in values[:16])
    return f"[{text}{', ...' if len(values) > 16 else ''}] ({len(values)})" if len(values) > 16 else f"[{text}]"


def _total(name: str, value, md: bool) -> str:
    unit = UNITS.get(name, "FLOP")
    extra = friendly(value, unit) if unit else ""
    text = f"{name} = {number(value)}{' ' + unit if unit else ''}" + (f"  ({extra})" if extra else "")
    return f"- {text}" if md else f"  {text}"
