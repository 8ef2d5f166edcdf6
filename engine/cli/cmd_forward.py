"""``aiinfra forward`` and ``aiinfra generate``: the per-operator ledger of a model.

Both read the model records and operator templates through ``engine.domain.ledger.load_root``
(a cached module, so no YAML is read while the files are unchanged) and the compiled
formulas; neither imports sympy.
"""

from __future__ import annotations

from engine.cli.common import emit, root_of, scan_options
from engine.cli.render import table, to_json
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
        routing_of(args.routing), args.weight_bytes, args.kv_bytes, args.tp, compiled.load(root),
    )
    emit(render(result, args.format))
    return 0


def generate(args) -> int:
    root = root_of(args)
    catalog = ledger.load_root(root)
    result = ledger.generate_record(
        catalog.model(args.model), catalog.templates, args.history, args.steps, args.batch,
        routing_of(args.routing), args.weight_bytes, args.kv_bytes, args.tp, compiled.load(root),
    )
    emit(render(result, args.format))
    return 0


# option -> (attribute, type); the defaults repeat engine/cli/main.py's parser
_OPTIONS = {
    "--model": ("model", str), "--tokens": ("tokens", int), "--history": ("history", int), "--steps": ("steps", int),
    "--batch": ("batch", int), "--output-head": ("output_head", str), "--routing": ("routing", str),
    "--weight-bytes": ("weight_bytes", str), "--kv-bytes": ("kv_bytes", str), "--tp": ("tp", int),
    "--format": ("format", str), "--root": ("root", str),
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
                           kv_bytes="2", tp=1, format="text", root=None, model=None, tokens=None, steps=None)
    allowed = set(_OPTIONS) - ({"--steps"} if argv[0] == "forward" else {"--tokens", "--output-head"})
    pairs = scan_options(argv[1:], allowed)
    if pairs is None:
        return None
    for name, value in pairs:
        if name is None:
            return None
        attr, kind = _OPTIONS[name]
        try:
            setattr(args, attr, kind(value))
        except ValueError:
            return None
    if any(getattr(args, k) is None for k in _REQUIRED[argv[0]]) or args.format not in ("text", "json", "md", "csv") \
            or args.output_head not in ledger.OUTPUT_HEADS:
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
    lines = [("## " if md else "") + headline(result), "", table(rows, COLUMNS, "md" if md else "text"), ""]
    lines.append("### Totals" if md else "Totals")
    items = list(result.totals.items()) + [(k, v) for k, v in result.extra.items() if k != "steps"]
    lines += [_total(k, v, md) for k, v in items]
    if result.special_functions:
        lines.append(("- " if md else "  ") + "special functions: " + ", ".join(f"{k} {number(v)}" for k, v in result.special_functions.items()))
    lines += ["", "### Formulas" if md else "Formulas", ("- " if md else "  ") + ", ".join(result.formulas)]
    lines += ["", "### Assumptions" if md else "Assumptions"] + [f"- {a}" for a in result.assumptions]
    if result.warnings:
        lines += ["", "### Warnings" if md else "Warnings"] + [f"- {w}" for w in result.warnings]
    return "\n".join(lines)


def headline(result: ledger.Ledger) -> str:
    s = result.scenario
    if "steps" in s:
        what = f"{s['steps']} decode calls of {s['batch']} sequence(s) after a {s['history']}-token prompt (shapes of the first call)"
    else:
        what = f"forward of {s['batch']} sequence(s) x {s['tokens']} new tokens over {s['history']} cached, output head {s['output_head']}"
    return (f"{result.model} ({result.template}): {what}; routing {s['routing']}; bytes per element: weights {number(s['weight_bytes'])}, "
            f"KV {number(s['kv_bytes'])}, activations {number(s['activation_bytes'])}; TP {s['tp']} (KV totals per GPU)")


def _total(name: str, value, md: bool) -> str:
    unit = UNITS.get(name, "FLOP")
    extra = friendly(value, unit) if unit else ""
    text = f"{name} = {number(value)}{' ' + unit if unit else ''}" + (f"  ({extra})" if extra else "")
    return f"- {text}" if md else f"  {text}"
