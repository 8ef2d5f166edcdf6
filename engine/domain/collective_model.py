"""A model's view of one collective (``aiinfra collective ... --model ID --tokens N``).

Two budgets per forward pass, each attached to a scheduled ``CollectiveResult``:

- tensor parallel (ring or tree allreduce, ``--tp T``): FX702 the message of one Megatron
  all-reduce (tokens × hidden × bytes per activation), FX703 its 2L calls per forward pass
  (Shoeybi et al. 2019 section 3: two per layer), FX704 their time;
- expert parallel (all-to-all, ``--ranks E``): the send buffer of one dispatch (or combine)
  is tokens × top_k × hidden × bytes, of which FX707 (= FX1 all2all) leaves the rank; FX708
  counts a dispatch and a combine per MoE layer, FX709 their time.

The model's numbers (hidden size, layers, top-k, dense first layers) come from its record's
config, with the record's repo and revision named beside them.
"""

from __future__ import annotations

from engine.domain import collective as C

TP_FORMULAS = ("FX702", "FX703", "FX704")
EP_FORMULAS = ("FX707", "FX708", "FX709")


def tp_message_bytes(module, tokens: int, hidden: int, act_bytes: float) -> float:
    """FX702: one Megatron TP all-reduce message, tokens × hidden × bytes per activation."""
    return C._value(module, "FX702", {"batch_tokens": tokens, "hidden": hidden, "bytes_act": float(act_bytes)})


def ep_send_bytes(tokens: int, top_k: int, hidden: int, act_bytes: float) -> float:
    """The send buffer M of one dispatch: every token's hidden vector once per routed expert.

    FX1's All2All convention (M is the send buffer, 1/E of it local), so FX1 × M = FX707.
    """
    return float(tokens * top_k * hidden) * float(act_bytes)


def _per_pass(result: C.CollectiveResult, module, fid: str, count_symbol: str, count: float) -> dict | None:
    one = result.outputs.get("collective_time")
    if one is None or one["value"] <= 0:
        return None
    return C._out(C._value(module, fid, {count_symbol: count, "collective_time": one["value"]}), "s", fid)


def _mark_inputs(result: C.CollectiveResult, model: dict, tokens: int, act_bytes: float, ranks_from: str, recipe: str) -> None:
    result.inputs["ranks"]["source"] = f"{ranks_from} of {model['id']}"
    result.inputs["msg_bytes"]["source"] = f"{recipe}: {tokens} tokens x {'top_k ' + str(model['top_k']) + ' x ' if model.get('top_k') else ''}hidden {model['hidden']} x {act_bytes:g} B ({model['source']})"


def with_tp_budget(result: C.CollectiveResult, module, model: dict, tokens: int, act_bytes: float) -> C.CollectiveResult:
    """Attach the forward pass's TP budget: FX703 2L all-reduces, FX704 their time (with a bandwidth).

    ``model`` holds id, hidden, layers and source (where the numbers were read).
    """
    count = C._value(module, "FX703", {"layers": model["layers"], "comm_passes": 1})
    _mark_inputs(result, {**model, "top_k": None}, tokens, act_bytes, "--tp (the TP group)", "FX702")
    result.model_budget = {
        "kind": "tensor-parallel all-reduce",
        "model": model["id"], "hidden": model["hidden"], "layers": model["layers"], "source": model["source"],
        "tokens": tokens, "tp": result.setup.ranks, "bytes_act": act_bytes,
        "msg_bytes": C._out(result.setup.msg_bytes, "B", "FX702"),
        "allreduces_per_forward": C._out(count, "1", "FX703"),
        "time_per_allreduce": result.outputs.get("collective_time"),
        "time_per_forward": _per_pass(result, module, "FX704", "tp_allreduce_count", count),
        "formulas": list(TP_FORMULAS),
        "assumptions": ["Megatron-LM (Shoeybi et al. 2019, section 3): 2 all-reduces per transformer layer in the forward pass (after attention and after the MLP), 2 more in the backward pass; embedding and output-layer collectives are not counted.",
                        "Every all-reduce carries the whole tokens × hidden activation; none overlaps compute."],
    }
    return result


def with_ep_budget(result: C.CollectiveResult, module, model: dict, tokens: int, act_bytes: float) -> C.CollectiveResult:
    """Attach the forward pass's MoE budget: FX707 bytes per phase, FX708 2 calls per MoE layer, FX709 their time.

    ``model`` holds id, hidden, layers, top_k, moe_layers and source.
    """
    ranks = result.setup.ranks
    phase = C._value(module, "FX707", {"batch_tokens": tokens, "top_k": model["top_k"], "hidden": model["hidden"],
                                       "bytes_act": float(act_bytes), "ep_size": ranks})
    count = C._value(module, "FX708", {"moe_layers": model["moe_layers"], "comm_passes": 1})
    _mark_inputs(result, model, tokens, act_bytes, "--ranks (the EP group)", "send buffer")
    result.model_budget = {
        "kind": "expert-parallel dispatch + combine all-to-all",
        "model": model["id"], "hidden": model["hidden"], "layers": model["layers"], "moe_layers": model["moe_layers"],
        "top_k": model["top_k"], "source": model["source"], "tokens": tokens, "ep": ranks, "bytes_act": act_bytes,
        "msg_bytes": C._out(result.setup.msg_bytes, "B", "tokens x top_k x hidden x bytes"),
        "phase_bytes": C._out(phase, "B", "FX707"),
        "alltoalls_per_forward": C._out(count, "1", "FX708"),
        "time_per_alltoall": result.outputs.get("collective_time"),
        "time_per_forward": _per_pass(result, module, "FX709", "moe_a2a_count", count),
        "token_assignments": _assignments(result, model, tokens, act_bytes),
        "formulas": list(EP_FORMULAS),
        "assumptions": ["GShard (Lepikhin et al. 2020): one dispatch and one combine all-to-all per MoE layer in the forward pass, both with the same bytes (give --act-bytes for the phase; DeepSeek-V3 dispatches in FP8 and combines in BF16).",
                        "Uniform routing unless --routing says otherwise: (E − 1)/E of each rank's k copies per token leave it (FX707 = FX1 all2all); no per-node de-duplication, no dropped tokens; dense first layers run no all-to-all."],
    }
    return result


def _assignments(result: C.CollectiveResult, model: dict, tokens: int, act_bytes: float) -> dict:
    """The dispatch seen as token-to-expert assignments: every token goes to top_k experts, each assignment one
    hidden vector of ``act_bytes`` per element, so the traffic matrix divided by hidden x act_bytes counts them
    per source and destination rank; a destination rank holds experts / ranks experts."""
    ranks, per_vector = result.setup.ranks, model["hidden"] * act_bytes
    matrix = [[cell / per_vector for cell in row] for row in (result.matrix or [])]
    received = [sum(row[j] for row in matrix) for j in range(ranks)] if matrix else []
    mean = tokens * model["top_k"]  # per rank, sent and (balanced) received
    return {
        "bytes_per_assignment": per_vector,
        "sent_per_rank": mean,
        "matrix": matrix,
        "received_per_rank": received,
        "max_over_mean_received": (max(received) / mean) if received else None,
        "experts": model.get("experts"),
        "experts_per_rank": (model["experts"] / ranks) if model.get("experts") else None,
        "note": "assignments = tokens x top_k per rank; entry i->j = bytes rank i addresses to rank j / (hidden x bytes per element); "
                "the diagonal stays local",
    }
