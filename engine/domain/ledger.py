"""The per-operator forward ledger: an operator template, a model record and a scenario.

A template (``knowledge/operators/<family>.yaml``, schema ``engine/kb/schemas/operators.json``)
lists the operators of one forward pass of an architecture family. Every cost is an
expression over names bound from the model record (``symbols``), fixed numbers
(``constants``), named intermediate results (``derived``) and the scenario symbols below.
Expressions go through engine.core.expr's whitelisted parser and engine.core.codegen into one
generated Python module, cached like the compiled formulas; nothing reaches eval.

Totals that an Appendix B record states come from the compiled formulas: F8 (KV bytes per
token), FX73 (its share on one GPU under tensor parallelism), FX70 (sliding-window layers)
and F6 (weight bytes = parameters x bytes per weight). The numeric path never imports sympy.
"""

from __future__ import annotations

import math
import os
import zlib
from collections import namedtuple

from engine.core.errors import ExprError, InputError, KnowledgeError, Problem

# names the engine binds for every template (documented in engine/kb/schemas/operators.json)
SCENARIO_SYMBOLS = ("B", "S", "H", "head_rows", "p_w", "p_kv", "experts_used")
COST_FIELDS = (
    "parameters", "matrix_flops", "attention_matrix_flops", "rectangular_attention_matrix_flops",
    "scalar_flops", "weight_bytes", "activation_read_bytes", "activation_write_bytes",
    "kv_read_bytes", "kv_write_bytes",
)
# the public contract of Ledger.totals (issue 4): exactly these keys, in this order
TOTAL_KEYS = (
    "parameters", "matrix_flops", "attention_matrix_flops", "rectangular_attention_matrix_flops",
    "scalar_flops", "weight_bytes", "kv_bytes_per_token", "kv_bytes_before", "kv_bytes_after",
    "kv_bytes_written", "experts_used", "expert_weight_bytes",
)
OUTPUT_HEADS = ("last", "all", "none")
ROUTINGS = ("balanced", "concentrated")
_PLACEHOLDER = r"\{([^{}]+)\}"  # {expr} in a shape text
_NAME = r"[A-Za-z][A-Za-z0-9_]*"
_OWN = ("engine/domain/ledger.py", "engine/core/expr.py", "engine/core/codegen.py", "engine/kb/knowledge.py", "engine/kb/schemas/operators.json", "engine/kb/schemas/model.json")


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


# ---------------------------------------------------------------------------- templates


_COMPILED: dict[int, Templates] = {}  # templates already compiled in this process, by a hash of their text


class Templates:
    """Compiled operator templates: the generated module and the metadata it carries."""

    def __init__(self, module):
        self.module = module
        self.meta: dict[str, dict] = module.TEMPLATES

    @classmethod
    def from_dicts(cls, operators) -> Templates:
        """Compile ``{id: template}`` (``Knowledge.operators``) or a list of templates."""
        templates = {t["id"]: t for t in operators} if isinstance(operators, list | tuple) else dict(operators)
        memo = zlib.crc32(repr(sorted(templates.items())).encode())
        if memo not in _COMPILED:
            source, problems = generate_source(templates)
            if problems:
                raise KnowledgeError(problems)
            _COMPILED[memo] = cls(_load_source(source, "T"))
        return _COMPILED[memo]

    def for_family(self, family: str) -> tuple[str, dict]:
        for tid, meta in sorted(self.meta.items()):
            if meta["family"] == family:
                return tid, meta
        known = ", ".join(sorted(m["family"] for m in self.meta.values())) or "none"
        raise InputError("--model", f"no operator template serves the family {family!r} (templates for: {known})")

    def run(self, meta: dict, values: dict) -> tuple:
        return getattr(self.module, meta["fn"])(values)


def generate_source(templates: dict[str, dict], models: dict | None = None, places: dict | None = None) -> tuple[str, list[Problem]]:
    """Python source for ``templates`` (and, for the CLI cache, the model records)."""
    import pprint

    from engine.core import codegen

    lines = ['"""Generated by engine.domain.ledger from operator templates. Do not edit."""', "", codegen.PRELUDE]
    table, problems = {}, []
    for i, tid in enumerate(sorted(templates)):
        place = (places or {}).get(tid, "")
        fn_lines, meta, found = _compile_template(tid, templates[tid], f"t_{i}", place)
        problems += found
        lines += fn_lines
        if meta:
            table[tid] = meta
    lines.append("TEMPLATES = " + pprint.pformat(table, width=120, sort_dicts=False))
    lines.append("MODELS = " + pprint.pformat(models or {}, width=120, sort_dicts=False))
    return "\n".join(lines) + "\n", problems


def template_problems(templates: dict[str, dict], places: dict | None = None) -> list[Problem]:
    """Every expression problem of the templates (for ``aiinfra check``)."""
    return generate_source(templates, places=places)[1]


def _compile_template(tid: str, t: dict, fn: str, place: str) -> tuple[list[str], dict, list[Problem]]:
    import re

    from engine.core import codegen
    from engine.core.expr import parse

    problems: list[Problem] = []
    declared = [("symbols", n) for n in t["symbols"]] + [("constants", n) for n in t.get("constants", {})] + [("derived", d["name"]) for d in t.get("derived", [])]
    for where, name in declared:  # names become Python identifiers in the generated code: check them even without the schema
        if not re.fullmatch(_NAME, str(name)):
            problems.append(Problem(place, tid, f"{where}.{name}", "is not a name (expected a letter, then letters, digits or _)"))
    if problems:
        return [], {}, problems
    inputs = list(t["symbols"]) + list(t.get("constants", {})) + list(SCENARIO_SYMBOLS)
    for name in set(t["symbols"]) & set(t.get("constants", {})) | set(t["symbols"]) & set(SCENARIO_SYMBOLS) | set(t.get("constants", {})) & set(SCENARIO_SYMBOLS):
        problems.append(Problem(place, tid, f"symbols.{name}", "is declared twice (symbols, constants and the scenario symbols share one namespace)"))
    local = {n: f"s_{n}" for n in inputs}

    def code(text, path: str) -> str:
        try:
            return codegen.to_python(parse(str(text), frozenset(local)), local)
        except ExprError as exc:
            problems.append(Problem(place, tid, path, exc.reason))
            return "0.0"

    body = [f"def {fn}(v):"] + [f"    s_{n} = v[{n!r}]" for n in inputs]
    for j, d in enumerate(t.get("derived", [])):
        if d["name"] in local:
            problems.append(Problem(place, tid, f"derived[{j}].name", f"{d['name']!r} is already a name of this template"))
        expr = code(d["expr"], f"derived[{j}].expr")
        local[d["name"]] = f"s_{d['name']}"
        body.append(f"    s_{d['name']} = {expr}")
    ops, seen = [], set()
    body.append("    return (")
    for k, op in enumerate(t["operators"]):
        if op["name"] in seen:
            problems.append(Problem(place, tid, f"operators[{k}].name", f"{op['name']!r} appears twice"))
        seen.add(op["name"])
        values = [code(op["repeats"], f"operators[{k}].repeats")]
        for f in COST_FIELDS:
            if f == "weight_bytes" and f not in op:
                values.append(f"({values[1]}) * s_p_w")  # each stored weight read once per pass
            else:
                values.append(code(op.get(f, 0), f"operators[{k}].{f}"))
        special = dict(op.get("special", {}))
        specials = [code(special[s], f"operators[{k}].special.{s}") for s in special]
        parts = re.split(_PLACEHOLDER, op["shape"])
        shapes = [code(p, f"operators[{k}].shape") for p in parts[1::2]]
        body.append(f"        ({', '.join(values)}, ({''.join(s + ', ' for s in specials)}), ({''.join(s + ', ' for s in shapes)})),")
        ops.append({"name": op["name"], "kind": op["kind"], "shape_text": parts[0::2], "special": list(special),
                    "formulas": list(op.get("formulas", [])), "note": op.get("note", ""), "routed_experts": bool(op.get("routed_experts"))})
    body.append("    )")
    meta = {"id": tid, "family": t["family"], "name": t["name"], "fn": fn, "symbols": t["symbols"],
            "constants": t.get("constants", {}), "assumptions": list(t.get("assumptions", [])),
            "sources": list(t["sources"]), "operators": ops}
    return body + [""], meta, problems


def _load_source(source: str, prefix: str):
    """Import generated ``source`` through engine.numeric.compiled's cache folder (named by its hash)."""
    from engine.numeric import compiled

    key = f"{prefix}{zlib.crc32(source.encode()):08x}{zlib.adler32(source.encode()):08x}"
    return compiled.module(key, lambda: source)


# ---------------------------------------------------------------------------- a root, fast


class Catalog:
    """The model records and compiled templates of a root, read from the cache when it is current."""

    def __init__(self, module):
        self.templates = Templates(module)
        self.models: dict[str, dict] = module.MODELS

    def model(self, text: str) -> dict:
        from engine.core.suggest import known

        ident = text.strip().lower()
        ident = ident if ident.startswith("model:") else f"model:{ident}"
        if ident not in self.models:
            names = sorted(m.split(":", 1)[1] for m in self.models)
            raise InputError("--model", f"no model {text!r} ({known(ident.split(':', 1)[1], names, 'none shipped')})")
        return self.models[ident]


def load_root(root) -> Catalog:
    """Models and templates of ``root``: a cached module keyed by the files' contents.

    On a miss the root is loaded and checked (schema and template expressions); any
    problem in knowledge/models or knowledge/operators is raised as a KnowledgeError.
    """
    from engine.numeric import compiled

    return Catalog(compiled.module("L" + _root_hash(root), lambda: _root_source(root)))


def _root_hash(root) -> str:
    from engine.numeric import compiled

    return compiled.files_key(root, (os.path.join("knowledge", "models"), os.path.join("knowledge", "operators")), _OWN)


def _root_source(root) -> str:
    from engine.kb.knowledge import Knowledge

    k = Knowledge.load(root, strict=False)
    mine = ("knowledge/models/", "knowledge/operators/")
    problems = [p for p in k.problems if p.place.startswith(mine) or p.place == str(root)]
    places = {tid: k.places.get(tid, "") for tid in k.operators}
    source, found = generate_source(k.operators, k.models, places)
    if problems or found:
        raise KnowledgeError(problems + found)
    return source


# ---------------------------------------------------------------------------- binding


def bind(record: dict, tid: str, meta: dict) -> tuple[dict, list[str]]:
    """Values of the template's symbols for ``record``, and one note listing the defaults taken."""
    values, defaults = {}, []
    mid = record.get("id", "?")
    for name, spec in meta["symbols"].items():
        paths = spec["from"] if isinstance(spec["from"], list) else [spec["from"]]
        value = next((v for v in (_lookup(record, p) for p in paths) if v is not None), None)
        if value is None:
            if "default" not in spec:
                raise InputError("--model", f"{mid}: {paths[0]} is not stated; {tid} needs it for {name} ({spec['desc']})")
            values[name] = spec["default"]
            defaults.append(f"{name} = {spec['default']}")
        elif "equals" in spec:
            allowed = spec.get("allowed")
            if allowed and value not in allowed:
                raise InputError("--model", f"{mid}: {paths[0]} is {value!r}, which {tid} does not count (it knows {', '.join(allowed)})")
            wanted = spec["equals"] if isinstance(spec["equals"], list) else [spec["equals"]]
            values[name] = 1 if value in wanted else 0
        elif isinstance(value, bool):
            values[name] = int(value)
        elif isinstance(value, int | float):
            values[name] = value
        else:
            raise InputError("--model", f"{mid}: {paths[0]} is {value!r}, expected a number for {name} in {tid}")
    window = _lookup(record, "derived.sliding_window.windowed_layers")
    if window and "windowed_layers" not in meta["symbols"]:
        raise InputError("--model", f"{mid} has {window} sliding-window layers, which {tid} does not count")
    notes = [f"Not stated by {mid}, so the template's defaults: {', '.join(defaults)}."] if defaults else []
    return values, notes


def _lookup(record: dict, path: str):
    node = record
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _constants(meta: dict, formulas) -> dict:
    out = {}
    for name, spec in meta["constants"].items():
        if "value" in spec:
            out[name] = spec["value"]
        else:
            out[name] = formulas.FORMULAS[spec["formula"]]["symbols"][spec["symbol"]]["default"][0]
    return out


# ---------------------------------------------------------------------------- scenario and routing


def _count(value, option: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InputError(option, f"expected a whole number >= {least}, got {value!r}")
    return value


def _size(value, option: str) -> float:
    """Bytes per element: a number, or text read like --set (``2``, ``1B``, ``4bit``)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            value = _quantity(value, option)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise InputError(option, f"expected bytes per element > 0 (e.g. 2, 1, 0.5 or 4bit), got {value!r}")
    return _number(float(value))


def _quantity(text: str, option: str) -> float:
    from engine.core.errors import UnitError
    from engine.core.units import parse_quantity

    try:
        q = parse_quantity(text, "B")
    except UnitError as exc:
        raise InputError(option, f"{exc.text!r} {exc.message}") from None
    if q.is_range:
        raise InputError(option, f"expected one size in bytes, got the range {text!r}")
    return q.value


def _experts_used(routing, values: dict, routed_tokens: int) -> tuple[float, str]:
    """Routed experts with at least one token, per MoE layer (a per-layer histogram: the mean)."""
    experts, top_k = values.get("experts"), values.get("top_k")
    if experts is None:
        if isinstance(routing, list):
            raise InputError("--routing", "a routing histogram needs an MoE model; this model has no routed experts")
        return 0, "none (no routed experts)"
    experts, top_k = int(experts), int(top_k)
    if routing == "balanced":  # token i takes experts (i*k + j) mod E: the assignments cover min(E, T*k)
        return min(experts, routed_tokens * top_k), "balanced"
    if routing == "concentrated":  # every token takes the same k experts
        return top_k, "concentrated"
    if not isinstance(routing, list):
        raise InputError("--routing", f"expected balanced, concentrated or a histogram (a JSON list), got {routing!r}")
    moe_layers = int(values["layers"]) - int(values.get("dense_layers", 0))
    layers = routing if routing and all(isinstance(h, list) for h in routing) else [routing]
    if len(layers) not in (1, moe_layers):
        raise InputError("--routing", f"expected one histogram (used by every MoE layer) or {moe_layers} (one per MoE layer), got {len(layers)}")
    used = [_check_histogram(h, experts, top_k, routed_tokens, i if len(layers) > 1 else None) for i, h in enumerate(layers)]
    return sum(used) / len(used), "histogram" if len(layers) == 1 else "per-layer histogram"


def _check_histogram(counts, experts: int, top_k: int, tokens: int, layer: int | None) -> int:
    where = "" if layer is None else f"layer {layer}: "
    if not isinstance(counts, list) or len(counts) != experts:
        raise InputError("--routing", f"{where}expected a list of {experts} token counts (one per routed expert), got {_short(counts)}")
    for e, c in enumerate(counts):
        if isinstance(c, bool) or not isinstance(c, int) or c < 0:
            raise InputError("--routing", f"{where}expert {e}: expected a whole number of tokens >= 0, got {c!r}")
        if c > tokens:
            raise InputError("--routing", f"{where}expert {e}: {c} tokens, but only {tokens} are routed and top-k picks distinct experts")
    if sum(counts) != tokens * top_k:
        raise InputError("--routing", f"{where}the counts sum to {sum(counts)}, expected tokens x top-k = {tokens} x {top_k} = {tokens * top_k}")
    return sum(1 for c in counts if c > 0)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------------------- the ledger


class _Pass:
    """What one model and scenario fix before any history is chosen (shared by forward and generate)."""

    def __init__(self, record, templates, batch, routing, weight_bytes, kv_bytes, tp, formulas):
        from engine.core.paths import shipped_root
        from engine.numeric import compiled

        self.record = record
        self.templates = templates if isinstance(templates, Templates) else Templates.from_dicts(templates)
        self.formulas = formulas if formulas is not None else compiled.load(shipped_root())
        self.batch = _count(batch, "--batch", 1)
        self.tp = _count(tp, "--tp", 1)
        self.p_w, self.p_kv = _size(weight_bytes, "--weight-bytes"), _size(kv_bytes, "--kv-bytes")
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
        values = dict(self.values, B=self.batch, S=tokens, H=history, head_rows=head_rows, p_w=self.p_w, p_kv=self.p_kv, experts_used=used)
        return self.templates.run(self.meta, values), used, label


class _Kv:
    """KV totals from F8 (per token), FX73 (one GPU's share) and FX70 (windowed layers)."""

    def __init__(self, record, ctx: _Pass, p_kv, tp):
        cfg, der = record["config"], record["derived"]
        self.ctx = ctx
        attention, heads = der["attention"], cfg["num_attention_heads"]
        given = {"attention": attention, "layers": cfg["num_hidden_layers"], "kv_bytes": p_kv}
        if attention == "mla":
            given.update(kv_lora_rank=der["mla"]["kv_lora_rank"], qk_rope_head_dim=der["mla"]["qk_rope_head_dim"])
        else:
            given["head_dim"] = der.get("head_dim") or cfg.get("head_dim")
            given["heads" if attention == "mha" else "kv_heads"] = heads if attention == "mha" else cfg.get("num_key_value_heads", 1)
        if attention == "mqa":
            given.pop("kv_heads")
        self.replica = ctx.formula("F8", given)
        share = {"attention": attention, "kv_bytes_per_token": self.replica, "tp_size": tp}
        if attention in ("mha", "gqa"):
            share.update({k: v for k, v in given.items() if k in ("heads", "kv_heads")})
        self.per_gpu = ctx.formula("FX73", share)
        window = der.get("sliding_window") or {}
        self.window = window if window.get("windowed_layers") else None
        self.layers = cfg["num_hidden_layers"]
        self.used = ["F8", "FX73"] + (["FX70"] if self.window else [])

    def per_request(self, context: int):
        """Bytes one sequence holds on one GPU after ``context`` tokens."""
        if context == 0:
            return 0
        if self.window is None:
            return self.per_gpu * context
        return self.ctx.formula("FX70", {"kv_bytes_per_token": self.per_gpu, "layers": self.layers, "context_tokens": context,
                                         "window_layers": self.window["windowed_layers"], "sliding_window": self.window["window"]})


def forward_record(record: dict, operators, tokens: int, batch: int = 1, history: int = 0, output_head: str = "last",
                   routing="balanced", weight_bytes=2.0, kv_bytes=2.0, tp: int = 1, formulas=None) -> Ledger:
    """The ledger of one forward pass of ``record`` (a model record dict).

    ``operators``: Templates, or ``{id: template}`` as in ``Knowledge.operators``; ``routing``:
    balanced, concentrated, or a histogram (a list of E token counts, or one list per MoE
    layer); ``formulas``: a compiled formula module (default: the shipped formulas).
    """
    ctx = _Pass(record, operators, batch, routing, weight_bytes, kv_bytes, tp, formulas)
    tokens = _count(tokens, "--tokens", 1)
    history = _count(history, "--history", 0)
    if output_head not in OUTPUT_HEADS:
        raise InputError("--output-head", f"expected one of {', '.join(OUTPUT_HEADS)}, got {output_head!r}")
    head_rows = {"last": ctx.batch, "all": ctx.batch * tokens, "none": 0}[output_head]
    raw, used, label = ctx.raw(tokens, history, head_rows)
    rows = [_row(op, r[0], [r[0] * v for v in r[1:11]], [r[0] * v for v in r[11]], r[12])
            for op, r in zip(ctx.meta["operators"], raw, strict=True) if r[0]]
    kv = (ctx.batch * ctx.kv.per_request(history), ctx.batch * ctx.kv.per_request(history + tokens), ctx.batch * tokens * ctx.kv.per_gpu)
    scenario = _scenario(ctx, tokens=tokens, history=history, output_head=output_head, head_rows=head_rows, routing=label)
    return _ledger(ctx, rows, scenario, used, kv, history + tokens)


def generate_record(record: dict, operators, history: int, steps: int, batch: int = 1, routing="balanced",
                    weight_bytes=2.0, kv_bytes=2.0, tp: int = 1, formulas=None) -> Ledger:
    """Totals over ``steps`` decode calls after a ``history``-token prompt (the prefill excluded).

    Call j (0-based) adds one token per sequence over history + j cached tokens and computes
    the output head for it. Every ledger number is piecewise affine in the history, so the
    sum is taken in closed form over stretches checked to be affine, term by term elsewhere.
    Shapes are those of the first call.
    """
    ctx = _Pass(record, operators, batch, routing, weight_bytes, kv_bytes, tp, formulas)
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
    scenario = _scenario(ctx, history=history, steps=steps, tokens_per_step=1, output_head="last", head_rows=ctx.batch, routing=label)
    ledger = _ledger(ctx, rows, scenario, used, kv, history + steps)
    ledger.extra.update({
        "steps": steps,
        "history_records_read_per_sequence_per_layer": steps * history + steps * (steps - 1) // 2,
        "kv_read_bytes": _number(sum(r.kv_read_bytes for r in rows)),
        "weight_read_bytes": _number(sum(r.weight_bytes for r in rows)),
        "activation_read_bytes": _number(sum(r.activation_read_bytes for r in rows)),
        "activation_write_bytes": _number(sum(r.activation_write_bytes for r in rows)),
    })
    return ledger


def _sum_range(f, lo: int, hi: int) -> list:
    """f(lo) + ... + f(hi) for vectors whose entries are piecewise affine in h.

    A stretch counts as affine when every entry has the same slope at both ends and lies on
    that line at the middle and the far end (a kink of a concave or convex entry breaks
    one of these); it is then summed in closed form, otherwise split in two.
    """
    n = hi - lo + 1
    if n <= 16:
        out = f(lo)
        for h in range(lo + 1, hi + 1):
            out = [a + b for a, b in zip(out, f(h), strict=True)]
        return out
    mid = (lo + hi) // 2
    a, a1, m, b1, b = f(lo), f(lo + 1), f(mid), f(hi - 1), f(hi)
    slopes = [y - x for x, y in zip(a, a1, strict=True)]
    if all(_close(z - y, s) and _close(x + s * (hi - lo), z) and _close(x + s * (mid - lo), w)
           for x, s, w, y, z in zip(a, slopes, m, b1, b, strict=True)):
        return [_affine_sum(x, s, n) for x, s in zip(a, slopes, strict=True)]
    left, right = _sum_range(f, lo, mid), _sum_range(f, mid + 1, hi)
    return [p + q for p, q in zip(left, right, strict=True)]


def _close(x, y) -> bool:
    return x == y or abs(x - y) <= 1e-12 * max(abs(x), abs(y))


def _affine_sum(first, slope, n: int):
    """first + (first + slope) + ... over n terms; exact integers when both are integral."""
    if float(first).is_integer() and float(slope).is_integer():
        return int(first) * n + int(slope) * (n * (n - 1) // 2)
    return first * n + slope * n * (n - 1) / 2


def _row(op: dict, repeats, costs: list, specials: list, shape_values: tuple) -> Row:
    """A Row from per-pass totals; its matrix FLOPs include its attention products."""
    costs = [_number(c) for c in costs]
    costs[1] = _number(costs[1] + costs[2])
    special = {name: _number(v) for name, v in zip(op["special"], specials, strict=True) if v}
    text = op["shape_text"]
    shape = text[0] + "".join(_show(v) + t for v, t in zip(shape_values, text[1:], strict=True))
    return Row(op["name"], op["kind"], shape, _number(repeats), *costs[:5], special, *costs[5:], tuple(op["formulas"]), op["note"])


def _ledger(ctx: _Pass, rows: list[Row], scenario: dict, used, kv: tuple, context: int) -> Ledger:
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
    return Ledger(ctx.record.get("id", "?"), ctx.tid, scenario, rows, totals, special, formulas,
                  ctx.meta["assumptions"] + ctx.notes, _warnings(ctx, totals, context))


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


def _scenario(ctx: _Pass, **items) -> dict:
    return {"batch": ctx.batch, **items, "weight_bytes": ctx.p_w, "kv_bytes": ctx.p_kv, "activation_bytes": ctx.values.get("p_act"),
            "tp": ctx.tp, "kv_totals": f"KV totals are per GPU at tensor parallelism {ctx.tp}; rows are the whole model"}


def _formula_order(fid: str):
    return (fid.startswith("FX"), int(fid.lstrip("FX")))


def _number(x):
    """Integral floats as ints (exact below 2**53; above, the float's own value)."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**63:
        return int(x)
    return x


def _show(x) -> str:
    x = _number(x)
    return str(x) if isinstance(x, int) else f"{x:g}"


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
