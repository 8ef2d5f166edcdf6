"""The forward ledger's optional reports (issue 13): training FLOPs beside 6ND, routed-expert
active parameters, the weight + KV residency floor, routing counts and eager attention's
score tensor. Each function takes the ``_Pass`` and the finished Ledger and returns one
JSON-ready dict for ``Ledger.extra``; formula records used are named under ``_formulas``.

Formulas: FX860 (training FLOPs = forward + 2 x backward), F1 (6ND, with or without the
attention term of PaLM Appendix B), FX302 (weights per GPU), FX601 (weights + batch KV).
"""

from __future__ import annotations

from engine.domain.ledger_inputs import _number
from engine.domain.ledger_inputs import routing_counts as _routing_counts

EAGER_ASSUMPTION = ("Attention is eager (unfused): each layer writes its score tensor (heads x B x S x (H+S) elements at p_act, "
                    "the causal mask applied to the full rectangle), softmax reads it and writes the probabilities, and the "
                    "probability-value product reads them; K and V of the cached tokens are read once per sequence as before.")


def _template(ctx, B: int, S: int, H: int, head_rows: int) -> list:
    """Rows (repeats, costs...) of a pass that needs no routing check: parameters and FLOPs
    do not depend on which experts receive the tokens."""
    values = dict(ctx.values, B=B, S=S, H=H, head_rows=head_rows, p_w=ctx.p_w, p_kv=ctx.p_kv, experts_used=0, eager=ctx.eager,
                  mla_expanded=ctx.expanded(S))
    return list(zip(ctx.meta["operators"], ctx.templates.run(ctx.meta, values), strict=True))


def _routed_share(ctx) -> float:
    experts, top_k = ctx.values.get("experts"), ctx.values.get("top_k")
    return 1.0 if not experts else top_k / experts


def _active(ctx) -> dict:
    """Parameters one token passes through: every stored row, the routed experts' rows scaled by top_k / E."""
    share = _routed_share(ctx)
    stored = routed = embedding = 0
    for op, r in _template(ctx, 1, 1, 0, 1):
        n = r[0] * r[1]
        stored += n
        routed += n if op["routed_experts"] else 0
        embedding += n if op["kind"] == "embedding" else 0
    active = stored - routed + routed * share
    tied = bool(ctx.values.get("tied"))
    return {"stored": _number(stored), "routed_expert_parameters": _number(routed), "routed_share": _number(share),
            "routed_active": _number(routed * share), "shared_and_dense": _number(stored - routed),
            "active": _number(active), "embedding_parameters": _number(embedding),
            "active_excluding_input_embedding": _number(active - (0 if tied else embedding))}


def active_parameters(ctx, result, tokens, history, routed_tokens) -> dict:
    out = _active(ctx)
    top_k, experts = ctx.values.get("top_k"), ctx.values.get("experts")
    out["rule"] = ("every stored weight except the routed experts' counts once; the routed experts count top_k / E of "
                   f"their weights ({_number(top_k)} of {_number(experts)})" if experts else "a dense model: every stored weight is active")
    out["note"] = ("active counts the input embedding table although its lookup is a gather, not a matrix product (model cards "
                   "differ: Qwen's count it, DeepSeek-V3's README_WEIGHTS counts the output head but not the embedding); "
                   "active_excluding_input_embedding leaves it out (a tied table is kept: the output head uses it)")
    return out


def training(ctx, result, tokens, history, routed_tokens) -> dict:
    """Training FLOPs of one step over batch x tokens from this ledger's matrix products, beside 6ND."""
    B, S = ctx.batch, tokens
    D = B * S
    share = _routed_share(ctx)
    mat = attn = rect = active = 0
    terms: dict = {}
    per_forward = ctx.formula("FX860", {"forward_matrix_flops": 1.0})  # training FLOPs per forward FLOP (3)
    for op, r in _template(ctx, B, S, 0, D):
        rep = r[0]
        if not rep:
            continue
        params = rep * r[1] * (share if op["routed_experts"] else 1)
        m, a, ra = rep * r[2], rep * r[3], rep * r[4]
        mat, attn, rect, active = mat + m, attn + a, rect + ra, active + params
        gap = per_forward * m - 6 * params * D  # this row's matrix work against 6 x its active parameters x D
        if gap:
            terms[op["kind"]] = terms.get(op["kind"], 0) + gap
    train = ctx.formula("FX860", {"forward_matrix_flops": mat + attn})
    train_rect = ctx.formula("FX860", {"forward_matrix_flops": mat + rect})
    six = ctx.formula("F1", {"params_active": active, "train_tokens": D})
    out = {"tokens": D, "sequences": B, "sequence_length": S,
           "forward_matrix_flops": _number(mat + attn), "forward_attention_matrix_flops": _number(attn),
           "forward_rectangular_attention_matrix_flops": _number(rect),
           "training_flops": _number(train), "training_flops_rectangular": _number(train_rect),
           "params_active": _number(active), "six_nd": six}
    if share != 1:  # MoE: 6ND with every stored expert, the count the book warns against (F1 wants N_eff)
        stored = sum(r[0] * r[1] for _, r in _template(ctx, 1, 1, 0, 1))
        out["six_nd_stored_parameters"] = ctx.formula("F1", {"params_active": stored, "train_tokens": D})
    notes = ["The training pass is this batch with no cache (history 0) and logits for every token, whatever --history and "
             "--output-head say; backward = 2 x forward for every matrix product (FX860); recomputation and the optimizer are not counted.",
             "training_flops counts causal attention cells as the ledger does (S(S+1)/2 per head and sequence, diagonal included); "
             "training_flops_rectangular counts every query against every key, the convention of F1's attention term and PaLM Appendix B."]
    if ctx.record["derived"].get("attention") == "mla":
        out["six_nd_with_attention"] = None
        notes.append("six_nd_with_attention is left out for MLA: F1's attention term assumes one head width for QK and PV "
                     "(here qk_nope + qk_rope for scores and v_head_dim for values in the expanded form; the latent widths in the absorbed form).")
    else:
        out["six_nd_with_attention"] = ctx.formula("F1", {"attention_flops": "include", "params_active": active, "train_tokens": D,
                                                          "layers": ctx.values["layers"], "seq_len": S, "heads": ctx.values["heads"],
                                                          "head_dim": ctx.values["head_dim"]})
        if ctx.values.get("windowed_layers"):
            notes.append("six_nd_with_attention counts every layer over the full sequence; the ledger's windowed layers attend to the window only.")
    out["training_over_six_nd"] = _number(train / six)
    out["difference"] = _number(train - six)
    out["difference_terms"] = {"attention": _number(per_forward * attn), **{k: _number(v) for k, v in terms.items()}}
    notes.append("difference = training_flops - six_nd = the attention term (3 x the causal attention products, absent from 6ND) "
                 "+ per kind of operator, 3 x its matrix FLOPs - 6 x its active parameters x D: embedding (a gather: its parameters "
                 "are in N but do no matrix product, negative), norm (parameters without a matrix product, negative), output "
                 "(a tied head does a product with parameters counted once under the embedding, positive), matmul (biases are "
                 "parameters outside the product, negative).")
    out["per_token"] = {"training_flops": _number(train / D), "six_n": _number(six / D)}
    out["notes"] = notes
    result.extra["_formulas"] = (*result.extra.get("_formulas", ()), "FX860", "F1")
    return out


def residency(ctx, result, tokens, history, routed_tokens) -> dict:
    """Bytes that must stay resident: the weights and the KV of every sequence at its final context."""
    weights = result.totals["weight_bytes"]
    kv_gpu = result.totals["kv_bytes_after"]
    kv_replica = kv_gpu * ctx.kv.replica / ctx.kv.per_gpu if ctx.kv.per_gpu else 0
    per_gpu_weights = ctx.formula("FX302", {"weight_bytes": weights, "tp_size": ctx.tp})
    s = result.scenario
    context = s["history"] + s.get("steps", s.get("tokens", 0))
    result.extra["_formulas"] = (*result.extra.get("_formulas", ()), "FX302", "FX601")
    return {"context_tokens_per_sequence": context, "sequences": ctx.batch,
            "weight_bytes": weights, "kv_bytes_replica": _number(kv_replica),
            "floor_bytes_replica": ctx.formula("FX601", {"weight_bytes": weights, "batch_kv_bytes": kv_replica}),
            "weight_bytes_per_gpu": per_gpu_weights, "kv_bytes_per_gpu": kv_gpu,
            "floor_bytes_per_gpu": _number(per_gpu_weights + kv_gpu),
            "note": ("weights (F6: stored parameters x bytes per weight, split evenly over TP by FX302) + KV of every sequence at "
                     "its final context (F8, FX73 per GPU, FX70 for windowed layers); activations, the engine's workspace, "
                     "quantisation scales and paged-block rounding are not included")}


def routing_counts(ctx, result, tokens, history, routed_tokens) -> dict:
    out = _routing_counts(ctx.routing, ctx.values, routed_tokens)
    out["routing"] = result.scenario["routing"]
    return out


def eager_attention(ctx, result, tokens, history) -> dict:
    """The score tensor eager attention materialises, and the traffic it adds over the pass."""
    v = ctx.values
    B, heads, p_act = ctx.batch, v["heads"], v["p_act"]
    layers, windowed, window = v["layers"], v.get("windowed_layers", 0), v.get("window", 0)
    steps = result.scenario.get("steps")
    if steps is None:  # one pass of `tokens` new tokens over `history` cached ones
        full_cells = B * tokens * (history + tokens)
        win_cells = B * tokens * (max(min(history, window - 1), 0) + tokens)
        last = full_cells
    else:  # call j adds one token over history + j cached ones
        full_cells = B * (steps * (history + 1) + steps * (steps - 1) // 2)
        win_cells = B * (steps + _sum_min(history, history + steps - 1, window - 1)) if windowed else 0
        last = B * (history + steps)
    traffic = 4 * p_act * heads * ((layers - windowed) * full_cells + windowed * win_cells)
    return {"mode": "eager", "score_tensor_elements_per_layer": _number(heads * last),
            "score_tensor_bytes_per_layer": _number(heads * last * p_act), "flash_score_tensor_bytes": 0,
            "extra_activation_bytes": _number(traffic),
            "note": ("the largest score tensor one full-attention layer holds (heads x B x S x (H+S) at p_act; in generate the last "
                     "call's); a probability tensor of the same size follows it. extra_activation_bytes: scores written, read by "
                     "softmax, probabilities written and read by the PV product (4 passes), over every layer and call; "
                     "FlashAttention keeps both on chip (0). Frameworks that upcast the softmax to FP32 hold a 4-byte copy as well.")}


def _sum_min(lo: int, hi: int, cap: int) -> int:
    """sum of min(x, cap) for x = lo..hi (cap >= 0)."""
    if hi < lo:
        return 0
    if hi <= cap:
        return (lo + hi) * (hi - lo + 1) // 2
    if lo >= cap:
        return cap * (hi - lo + 1)
    return (lo + cap) * (cap - lo + 1) // 2 + cap * (hi - cap)


QUANT_SCOPES = ("linear", "experts")


def quantised_storage(ctx, result, spec: dict) -> dict:
    """Weight bytes when the linear layers (or only the routed experts) are stored in a block-scaled
    format (FX650, scales included) and everything else stays at 2 bytes (FX652): norms,
    embeddings, the output head and the router are kept in BF16 as quantised checkpoints keep them."""
    from engine.core.errors import InputError

    meta = ctx.formulas.FORMULAS["FX650"]["symbols"]
    fmt, scope, group = spec.get("format"), spec.get("scope", "linear"), spec.get("group_size", 128)
    if fmt not in meta["storage_format"]["values"]:
        raise InputError("--quantized", f"expected one of {', '.join(meta['storage_format']['values'])}, got {fmt!r}")
    if scope not in QUANT_SCOPES:
        raise InputError("--quant-scope", f"expected one of {', '.join(QUANT_SCOPES)}, got {scope!r}")
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise InputError("--quant-group-size", f"expected a whole number >= 1, got {group!r}")
    quantised = stored = 0
    for op, r in _template(ctx, 1, 1, 0, 1):
        n = r[0] * r[1]
        stored += n
        linear = op["kind"] == "matmul" and op["name"] != "router"
        if op["routed_experts"] if scope == "experts" else linear:
            quantised += n
    per_value = ctx.formula("FX650", {"storage_format": fmt, "quant_group_size": group})
    total = ctx.formula("FX652", {"format_bytes": per_value, "quantised_params": quantised, "params": stored, "bytes_unquantised": 2})
    elements = _number(quantised * _ELEMENT_BYTES[fmt])
    result.extra["_formulas"] = (*result.extra.get("_formulas", ()), "FX650", "FX652")
    return {"format": fmt, "scope": scope, "group_size": group if fmt.endswith("_group") else None,
            "bytes_per_quantised_value": per_value, "quantised_parameters": _number(quantised),
            "unquantised_parameters": _number(stored - quantised), "quantised_element_bytes": elements,
            "scale_bytes": _number(quantised * per_value - elements), "unquantised_bytes": _number(2 * (stored - quantised)),
            "weight_bytes": total, "weight_bytes_bf16": _number(2 * stored),
            "note": ("quantised: every matrix-product weight except the router and the output head (scope linear) or the routed "
                     "experts only (scope experts), at FX650's bytes per value with the group or block scales included; the rest "
                     "(norms, embeddings, output head, router, biases outside those rows) at 2 bytes (BF16); --weight-bytes does not apply here")}


# bytes of one stored element without its scales (FX650's first term: 4, 4, 6, 8, 4 and 8 bits)
_ELEMENT_BYTES = {"nvfp4": 0.5, "mxfp4": 0.5, "mxfp6": 0.75, "mxfp8": 1.0, "int4_group": 0.5, "int8_group": 1.0}
