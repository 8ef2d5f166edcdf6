"""The per-operator forward ledger: an operator template, a model record and a scenario.

The templates and their compiled module are ``engine.domain.ledger_templates``; the
record's symbols, the scenario options and routing are read by ``engine.domain.ledger_inputs``.
This module runs a pass (``forward_record``) or G decode calls (``generate_record``) and
sums the rows into a Ledger.

Totals that an Appendix B record states come from the compiled formulas: F8 (KV bytes per
token), FX73 (its share on one GPU under tensor parallelism), FX70 (sliding-window layers)
and F6 (weight bytes = parameters x bytes per weight). The numeric path never imports sympy.
"""

from __future__ import annotations

from collections import namedtuple

from engine.core.errors import InputError
from engine.domain.ledger_inputs import (  # noqa: F401  (OUTPUT_HEADS, ROUTINGS, bind: public through this module)
    OUTPUT_HEADS,
    ROUTINGS,
    _constants,
    _count,
    _experts_used,
    _number,
    _show,
    _size,
    bind,
    routing_counts,
)
from engine.domain.ledger_templates import (  # noqa: F401  (public through this module)
    COST_FIELDS,
    SCENARIO_SYMBOLS,
    Catalog,
    Templates,
    generate_source,
    load_root,
    template_problems,
)

ATTENTIONS = ("flash", "eager")  # --attention: fused (nothing materialised) or eager (scores and probabilities through memory)
# --mla-path of an MLA model: auto (what engines run: expanded for a pass of several new tokens, absorbed
# for one), absorbed, or expanded (knowledge/operators/mla_moe.yaml, scenario symbol mla_expanded)
MLA_PATHS = ("auto", "absorbed", "expanded")
DSA_ASSUMPTION = ("DeepSeek Sparse Attention: each layer's lightning indexer scores every cached token (FP8 keys, FX888) and the "
                  "MLA attention runs over the top index_topk only (min(index_topk, position) tokens per query); kv_bytes_per_token "
                  "includes the indexer keys beside the latent, and the latent read is at most min(H, S x index_topk) tokens per sequence.")
MLA_PATH_ASSUMPTIONS = {
    "absorbed": ("MLA path absorbed (what engines run for decode): W_UK is folded into each head's query and W_UV applied "
                 "after attention, so scores are taken over the cached latent plus the RoPE key and probabilities over the latent "
                 "(DeepSeek-V2 section 2.1.2)."),
    "expanded": ("MLA path expanded (what engines run for prefill, vLLM and SGLang): kv_b_proj decompresses the latent of every "
                 "attended token, cached and new, into per-head K_nope and V, and multi-head attention runs with "
                 "qk_nope + qk_rope per head for scores and v_head_dim for values."),
}
# the optional reports (--training, --active-params, --residency, --routing-counts), each one key of Ledger.extra
REPORTS = ("training", "active_parameters", "residency", "routing_counts")

# the public contract of Ledger.totals (issue 4): exactly these keys, in this order
TOTAL_KEYS = (
    "parameters", "matrix_flops", "attention_matrix_flops", "rectangular_attention_matrix_flops",
    "scalar_flops", "weight_bytes", "kv_bytes_per_token", "kv_bytes_before", "kv_bytes_after",
    "kv_bytes_written", "experts_used", "expert_weight_bytes",
)

_ROW_FIELDS = ("name", "kind", "shape", "repeats", *COST_FIELDS[:5], "special_functions", *COST_FIELDS[5:], "formulas", "note")


class Row(namedtuple("Row", _ROW_FIELDS)):
    """One operator of the pass; every number is the total over ``repeats`` occurrences.

    The row's matrix_flops include its attention_matrix_flops; weight_bytes are the weight
    bytes it reads in this pass (gathered embedding rows, the experts actually used).
    """

    __slots__ = ()

    def to_json(self) -> dict:
        out = self._asdict()
        out["special_functions"] = dict(self.special_functions)
        out["formulas"] = list(self.formulas)
        return out


class Ledger:
    """The account of one forward pass (or, from ``generate``, of G decode calls).

    ``totals`` has exactly the keys of TOTAL_KEYS; ``extra`` holds what only ``generate``
    reports. A plain class rather than a dataclass: the CLI's start-up time matters here.
    """

    __slots__ = ("model", "template", "scenario", "rows", "totals", "special_functions", "formulas", "assumptions", "warnings", "extra")

    def __init__(self, model: str, template: str, scenario: dict, rows: list, totals: dict, special_functions: dict,
                 formulas: list, assumptions: list, warnings: list, extra: dict | None = None):
        self.model, self.template, self.scenario, self.rows, self.totals = model, template, scenario, rows, totals
        self.special_functions, self.formulas, self.assumptions, self.warnings = special_functions, formulas, assumptions, warnings
        self.extra = extra if extra is not None else {}

    def to_json(self) -> dict:
        out = {"model": self.model, "scenario": self.scenario, "rows": [r.to_json() for r in self.rows], "totals": self.totals}
        if self.extra:
            out["extra"] = self.extra
        out.update(special_functions=self.special_functions, template=self.template, formulas=self.formulas,
                   assumptions=self.assumptions, warnings=self.warnings)
        return out


# ---------------------------------------------------------------------------- the ledger


class _Pass:
    """What one model and scenario fix before any history is chosen (shared by forward and generate)."""

    def __init__(self, record, templates, batch, routing, weight_bytes, kv_bytes, tp, formulas, attention="flash", mla_path="auto"):
        from engine.core.paths import shipped_root
        from engine.numeric import compiled

        self.record = record
        self.templates = templates if isinstance(templates, Templates) else Templates.from_dicts(templates)
        self.formulas = formulas if formulas is not None else compiled.load(shipped_root())
        self.batch = _count(batch, "--batch", 1)
        self.tp = _count(tp, "--tp", 1)
        if attention not in ATTENTIONS:
            raise InputError("--attention", f"expected one of {', '.join(ATTENTIONS)}, got {attention!r}")
        self.eager = int(attention == "eager")
        from engine.domain.families import FAMILIES, Use, refuse, shape_of

        self.shape = shape_of(record)
        self.mla_path = _mla_path(self.shape, mla_path)
        self.p_w, self.p_kv = _size(weight_bytes, "--weight-bytes"), _size(kv_bytes, "--kv-bytes")
        if self.shape.family in FAMILIES:  # a family no module holds has no template either: for_family names it
            refuse(Use.LEDGER, self.shape)  # DeepSeek-V4, Kimi K3 and layer-wise models have no operator template
        self.tid, self.meta = self.templates.for_family(record["derived"]["family"])
        values, self.notes = bind(record, self.tid, self.meta)
        values.update(_constants(self.meta, self.formulas))
        self.values = values
        self.routing = routing
        self.kv = _Kv(record, self, self.p_kv, self.tp)

    def formula(self, fid: str, given: dict):
        """The output of formula ``fid`` for ``given`` inputs, from its compiled function.

        The function is called directly instead of through engine.numeric.evaluate, which would
        import the unit parser (about a tenth of this command's start-up) only to read
        numbers that are already numbers. Inputs not given take the record's defaults.
        """
        meta = self.formulas.FORMULAS[fid]
        selector = meta["selector"]
        variant = meta["variants"][given.get(selector, meta["symbols"][selector]["default"]) if selector else ""]
        args = [given[n] if n in given else meta["symbols"][n]["default"][0] for n in variant["inputs"]]
        return _number(float(getattr(self.formulas, variant["fn"])(*args)))

    def raw(self, tokens: int, history: int, head_rows: int) -> tuple[tuple, float, str]:
        """The template's per-occurrence values, the experts used per MoE layer, and the routing's name."""
        used, label = _experts_used(self.routing, self.values, self.batch * tokens)
        values = dict(self.values, B=self.batch, S=tokens, H=history, head_rows=head_rows, p_w=self.p_w, p_kv=self.p_kv, experts_used=used,
                      eager=self.eager, mla_expanded=self.expanded(tokens))
        return self.templates.run(self.meta, values), used, label

    def expanded(self, tokens: int) -> int:
        """1 when this pass runs MLA attention expanded (knowledge/operators/mla_moe.yaml), else 0."""
        return int(self.path(tokens) == "expanded")

    def path(self, tokens: int) -> str | None:
        """The MLA path of a pass of ``tokens`` new tokens per sequence (None for other attention)."""
        if self.mla_path == "auto":
            return "expanded" if tokens > 1 else "absorbed"
        return self.mla_path


def _mla_path(shape, path: str) -> str | None:
    if path not in MLA_PATHS:
        raise InputError("--mla-path", f"expected one of {', '.join(MLA_PATHS)}, got {path!r}")
    if shape.dsa:  # sparse MLA runs absorbed (MQA form) in prefill and decode alike
        if path == "expanded":
            raise InputError("--mla-path", f"{shape.id} uses DeepSeek Sparse Attention, which runs MLA absorbed "
                                           "(the MQA form over the selected latents) in prefill and decode; expanded does not apply")
        return "absorbed"
    if shape.attention == "mla":
        return path
    if path != "auto":
        raise InputError("--mla-path", f"applies to MLA models only; {shape.id} uses {shape.attention} attention")
    return None


class _Kv:
    """KV totals from F8 (per token), FX73 (one GPU's share) and FX70 (windowed layers)."""

    def __init__(self, record, ctx: _Pass, p_kv, tp):
        shape = ctx.shape
        self.ctx = ctx
        given = shape.f8(p_kv)  # F8 over a hybrid's K/V layers only
        self.replica = ctx.formula("F8", given)
        self.per_gpu = ctx.formula("FX73", shape.fx73(self.replica, tp))
        dsa = shape.dsa
        self.index_keys = ctx.formula("FX888", {"layers": shape.layers, "index_head_dim": dsa["index_head_dim"]}) if dsa else 0
        self.replica, self.per_gpu = self.replica + self.index_keys, self.per_gpu + self.index_keys  # indexer keys: replicated, like the latent
        self.window = shape.window if shape.window.get("windowed_layers") else None
        self.layers = shape.layers
        self.used = ["F8", "FX73"] + (["FX70"] if self.window else []) + (["FX888"] if dsa else [])

    def per_request(self, context: int):
        """Bytes one sequence holds on one GPU after ``context`` tokens."""
        if context == 0:
            return 0
        if self.window is None:
            return self.per_gpu * context
        return self.ctx.formula("FX70", {"kv_bytes_per_token": self.per_gpu, "layers": self.layers, "context_tokens": context,
                                         "window_layers": self.window["windowed_layers"], "sliding_window": self.window["window"]})


def forward_record(record: dict, operators, tokens: int, batch: int = 1, history: int = 0, output_head: str = "last",
                   routing="balanced", weight_bytes=2.0, kv_bytes=2.0, tp: int = 1, formulas=None, attention: str = "flash",
                   reports=(), quantised: dict | None = None, mla_path: str = "auto") -> Ledger:
    """The ledger of one forward pass of ``record`` (a model record dict).

    ``operators``: Templates, or ``{id: template}`` as in ``Knowledge.operators``; ``routing``:
    balanced, concentrated, or a histogram (a list of E token counts, or one list per MoE
    layer); ``formulas``: a compiled formula module (default: the shipped formulas); ``attention``:
    flash (fused) or eager (score tensors materialised); ``reports``: names from REPORTS, each
    added to ``Ledger.extra`` (engine.domain.ledger_reports); ``mla_path``: one of MLA_PATHS
    (auto: expanded when tokens > 1, absorbed for one token, as engines run MLA).
    """
    ctx = _Pass(record, operators, batch, routing, weight_bytes, kv_bytes, tp, formulas, attention, mla_path)
    wanted = _reports_wanted(reports, REPORTS)
    tokens = _count(tokens, "--tokens", 1)
    history = _count(history, "--history", 0)
    if output_head not in OUTPUT_HEADS:
        raise InputError("--output-head", f"expected one of {', '.join(OUTPUT_HEADS)}, got {output_head!r}")
    head_rows = {"last": ctx.batch, "all": ctx.batch * tokens, "none": 0}[output_head]
    raw, used, label = ctx.raw(tokens, history, head_rows)
    rows = [_row(op, r[0], [r[0] * v for v in r[1:11]], [r[0] * v for v in r[11]], r[12])
            for op, r in zip(ctx.meta["operators"], raw, strict=True) if r[0]]
    kv = (ctx.batch * ctx.kv.per_request(history), ctx.batch * ctx.kv.per_request(history + tokens), ctx.batch * tokens * ctx.kv.per_gpu)
    scenario = _scenario(ctx, tokens, tokens=tokens, history=history, output_head=output_head, head_rows=head_rows, routing=label)
    result = _ledger(ctx, rows, scenario, used, kv, history + tokens, tokens)
    _add_reports(ctx, result, wanted, tokens, history, ctx.batch * tokens, quantised)
    return result


def generate_record(record: dict, operators, history: int, steps: int, batch: int = 1, routing="balanced",
                    weight_bytes=2.0, kv_bytes=2.0, tp: int = 1, formulas=None, attention: str = "flash", reports=(),
                    quantised: dict | None = None, mla_path: str = "auto") -> Ledger:
    """Totals over ``steps`` decode calls after a ``history``-token prompt (the prefill excluded).

    Call j (0-based) adds one token per sequence over history + j cached tokens and computes
    the output head for it. Every ledger number is piecewise affine in the history, so the
    sum is taken in closed form over stretches checked to be affine, term by term elsewhere.
    Shapes are those of the first call. ``reports``: as for forward_record, less training (a
    training step has no decode calls); routing counts are those of one call. ``mla_path``: as for
    forward_record (auto is absorbed here: one new token per call).
    """
    ctx = _Pass(record, operators, batch, routing, weight_bytes, kv_bytes, tp, formulas, attention, mla_path)
    wanted = _reports_wanted(reports, REPORTS[1:])
    history = _count(history, "--history", 0)
    steps = _count(steps, "--steps", 1)
    first, used, label = ctx.raw(1, history, ctx.batch)

    def flat(h: int) -> list:  # every operator's totals over its repeats, in one vector
        raw = ctx.raw(1, h, ctx.batch)[0]
        return [r[0] * v for r in raw for v in (*r[1:11], *r[11])]

    total, rows, i = _sum_range(flat, history, history + steps - 1), [], 0
    for op, r in zip(ctx.meta["operators"], first, strict=True):
        n = 10 + len(r[11])
        if r[0]:  # parameters are stored once, not once per call
            rows.append(_row(op, r[0], [r[0] * r[1], *total[i + 1:i + 10]], total[i + 10:i + n], r[12]))
        i += n
    kv = (ctx.batch * ctx.kv.per_request(history), ctx.batch * ctx.kv.per_request(history + steps), ctx.batch * steps * ctx.kv.per_gpu)
    scenario = _scenario(ctx, 1, history=history, steps=steps, tokens_per_step=1, output_head="last", head_rows=ctx.batch, routing=label)
    ledger = _ledger(ctx, rows, scenario, used, kv, history + steps, 1)
    ledger.extra.update({
        "steps": steps,
        "history_records_read_per_sequence_per_layer": steps * history + steps * (steps - 1) // 2,
        "kv_read_bytes": _number(sum(r.kv_read_bytes for r in rows)),
        "weight_read_bytes": _number(sum(r.weight_bytes for r in rows)),
        "activation_read_bytes": _number(sum(r.activation_read_bytes for r in rows)),
        "activation_write_bytes": _number(sum(r.activation_write_bytes for r in rows)),
    })
    _add_reports(ctx, ledger, wanted, 1, history, ctx.batch, quantised)
    return ledger


def _sum_range(f, lo: int, hi: int) -> list:
    """f(lo) + ... + f(hi) for vectors whose entries are piecewise affine in h.

    A stretch counts as affine when every entry lies on the chord through its two ends at the
    middle, and its first and last steps have the chord's slope (a kink of a concave or convex
    entry breaks one of these); it is then summed in closed form, otherwise split in two. The
    slope is taken from the ends, never from one step: past 2^53 a single step of a large float
    is lost to rounding, and a test on it would split every stretch down to single terms.
    """
    n = hi - lo + 1
    if n <= 16:  # integral terms are summed as ints, so a sum past 2^53 stays exact
        out = [_number(v) for v in f(lo)]
        for h in range(lo + 1, hi + 1):
            out = [a + _number(b) for a, b in zip(out, f(h), strict=True)]
        return out
    mid = (lo + hi) // 2
    a, a1, m, b1, b = f(lo), f(lo + 1), f(mid), f(hi - 1), f(hi)
    span = hi - lo
    if all(_on_chord(x, x1, w, y, z, span, mid - lo) for x, x1, w, y, z in zip(a, a1, m, b1, b, strict=True)):
        return [_affine_sum(x, z, n) for x, z in zip(a, b, strict=True)]
    left, right = _sum_range(f, lo, mid), _sum_range(f, mid + 1, hi)
    return [p + q for p, q in zip(left, right, strict=True)]


def _on_chord(x, x1, w, y, z, span: int, at: int) -> bool:
    """Whether an entry with ends x (at 0) and z (at span) has the chord's slope on its first (x -> x1) and
    last (y -> z) step and lies on the chord at ``at`` (within float rounding of the entry's size)."""
    if x == x1 == w == y == z:
        return True
    slope = (z - x) / span
    tol = 1e-12 * max(abs(x), abs(z), abs(w)) + 1e-12 * abs(slope)
    return abs(x1 - x - slope) <= tol and abs(z - y - slope) <= tol and abs(x + slope * at - w) <= tol


def _affine_sum(first, last, n: int):
    """first + ... + last over n terms of an arithmetic progression. Exact integers when the first term is
    integral and the slope is an integer read through the rounding of a large last term (past 2^53 a
    float end is off by its ulp; the slope (last - first) / (n - 1) is off by that over n - 1)."""
    if float(first).is_integer() and abs(first) < 2**53:
        slope = (last - first) / (n - 1)
        step = round(slope)
        if abs(slope - step) <= 1e-15 * max(abs(first), abs(last)) / (n - 1) + 1e-12:
            return int(first) * n + step * (n * (n - 1) // 2)
    return (first + last) * n / 2


def _row(op: dict, repeats, costs: list, specials: list, shape_values: tuple) -> Row:
    """A Row from per-pass totals; its matrix FLOPs include its attention products."""
    costs = [_number(c) for c in costs]
    costs[1] = _number(costs[1] + costs[2])
    special = {name: _number(v) for name, v in zip(op["special"], specials, strict=True) if v}
    text = op["shape_text"]
    shape = text[0] + "".join(_show(v) + t for v, t in zip(shape_values, text[1:], strict=True))
    return Row(op["name"], op["kind"], shape, _number(repeats), *costs[:5], special, *costs[5:], tuple(op["formulas"]), op["note"])


def _ledger(ctx: _Pass, rows: list[Row], scenario: dict, used, kv: tuple, context: int, tokens: int) -> Ledger:
    totals = {k: _number(sum(getattr(r, k) for r in rows)) for k in TOTAL_KEYS[:5]}
    routed = {op["name"] for op in ctx.meta["operators"] if op["routed_experts"]}
    totals.update(
        weight_bytes=ctx.formula("F6", {"params": totals["parameters"], "bytes_param": ctx.p_w}),
        kv_bytes_per_token=ctx.kv.per_gpu, kv_bytes_before=_number(kv[0]), kv_bytes_after=_number(kv[1]),
        kv_bytes_written=_number(kv[2]), experts_used=_number(used),
        expert_weight_bytes=_number(sum(r.weight_bytes for r in rows if r.name in routed)),
    )
    special: dict = {}
    for r in rows:
        for name, v in r.special_functions.items():
            special[name] = _number(special.get(name, 0) + v)
    formulas = sorted({f for r in rows for f in r.formulas} | {"F6", *ctx.kv.used}, key=_formula_order)
    path = [MLA_PATH_ASSUMPTIONS[ctx.path(tokens)]] if ctx.mla_path else []
    if ctx.kv.index_keys:
        path.append(DSA_ASSUMPTION)
    return Ledger(ctx.record.get("id", "?"), ctx.tid, scenario, rows, totals, special, formulas,
                  ctx.meta["assumptions"] + path + ctx.notes, _warnings(ctx, totals, context))


def _warnings(ctx: _Pass, totals: dict, context: int) -> list[str]:
    out = []
    stated = ctx.record.get("parameters") or {}
    if stated.get("total"):
        tol = stated.get("rel_tol", 0) if stated.get("matches") == "paper_rounded" else 0
        if abs(totals["parameters"] - stated["total"]) > tol * stated["total"]:
            out.append(f"the operators store {totals['parameters']} parameters, the record's official total is {stated['total']} "
                       f"({stated.get('reference', 'no reference given')}): the template leaves some of this model's weights out")
    limit = ctx.record["config"].get("max_position_embeddings")
    if isinstance(limit, int) and not isinstance(limit, bool) and context > limit:
        out.append(f"{context} tokens of context exceed the model's max_position_embeddings ({limit})")
    return out


def _scenario(ctx: _Pass, new_tokens: int, **items) -> dict:
    out = {"batch": ctx.batch, **items, "weight_bytes": ctx.p_w, "kv_bytes": ctx.p_kv, "activation_bytes": ctx.values.get("p_act"),
           "tp": ctx.tp, "kv_totals": f"KV totals are per GPU at tensor parallelism {ctx.tp}; rows are the whole model"}
    if ctx.eager:  # only when asked, so the default scenario keeps its keys
        out["attention"] = "eager"
    if ctx.mla_path:  # MLA models only: the path decides the attention rows
        out["mla_path"] = ctx.path(new_tokens)
    return out


def _reports_wanted(reports, allowed) -> tuple:
    names = (reports,) if isinstance(reports, str) else tuple(reports)
    for name in names:
        if name not in allowed:
            raise InputError("--" + str(name).replace("_", "-"), f"is not a report of this command (expected one of {', '.join(allowed)})")
    return names


def _add_reports(ctx: _Pass, result: Ledger, wanted: tuple, tokens: int, history: int, routed_tokens: int, quantised=None) -> None:
    """The optional outputs, the eager-attention score tensor whenever attention is eager, and
    quantised storage when ``quantised`` ({format, scope, group_size}) is given."""
    if not wanted and not ctx.eager and not quantised:
        return
    from engine.domain import ledger_reports

    if ctx.eager:
        result.extra["eager_attention"] = ledger_reports.eager_attention(ctx, result, tokens, history)
        result.assumptions = [a for a in result.assumptions if not a.startswith("Attention is")] + [ledger_reports.EAGER_ASSUMPTION]
    for name in REPORTS:
        if name in wanted:
            result.extra[name] = getattr(ledger_reports, name)(ctx, result, tokens, history, routed_tokens)
    if quantised:
        result.extra["quantised_storage"] = ledger_reports.quantised_storage(ctx, result, quantised)
    result.formulas = sorted(set(result.formulas) | set(result.extra.pop("_formulas", ())), key=_formula_order)


def _formula_order(fid: str):
    return (fid.startswith("FX"), int(fid.lstrip("FX")))


# ---------------------------------------------------------------------------- with a Knowledge


def forward(knowledge, model_id: str, tokens: int, batch: int = 1, history: int = 0, output_head: str = "last",
            routing="balanced", weight_bytes=2.0, kv_bytes=2.0, tp: int = 1) -> Ledger:
    """The ledger of one forward pass of ``model_id`` from a loaded Knowledge."""
    from engine.numeric import compiled

    record = _model(knowledge, model_id)
    return forward_record(record, knowledge.operators, tokens, batch, history, output_head, routing, weight_bytes, kv_bytes, tp,
                          compiled.load(knowledge.root))


def generate(knowledge, model_id: str, history: int, steps: int, batch: int = 1, routing="balanced",
             weight_bytes=2.0, kv_bytes=2.0, tp: int = 1) -> Ledger:
    """Totals over ``steps`` decode calls of ``model_id`` after a ``history``-token prompt."""
    from engine.numeric import compiled

    record = _model(knowledge, model_id)
    return generate_record(record, knowledge.operators, history, steps, batch, routing, weight_bytes, kv_bytes, tp,
                           compiled.load(knowledge.root))


def _model(knowledge, model_id: str) -> dict:
    from engine.core.suggest import known

    ident = model_id.strip().lower()
    ident = ident if ident.startswith("model:") else f"model:{ident}"
    if ident not in knowledge.models:
        names = sorted(m.split(":", 1)[1] for m in knowledge.models)
        raise InputError("--model", f"no model {model_id!r} ({known(ident.split(':', 1)[1], names)})")
    return knowledge.models[ident]
