"""What ``calc`` fills or says beyond the records' presets, so it agrees with the planners (issue 28).

- ``mfu``/``mbu``: engine.cli.efficiency's one rule (the calibrated value for the device's generation).
- ``sp_degree`` of calc:training-memory: sequence parallelism on with tensor parallelism (sp_degree = tp_size), as
  ``aiinfra plan`` assumes (Megatron-LM's --sequence-parallel with TP; Korthikanti et al. 2022, Eq. 4); --set
  sp_degree=1 turns it off.
- ``expert_reads`` of calc:inference-capacity and calc:energy-per-token: for an MoE model with the batch given
  (batch_rule=given), a decode step reads the dense part and FX1400's expected share of the routed experts (FX132
  routed_share), as plan serve and validate time a step; calc:serving-fleet derives its batch by inverting FX132 in closed
  form (FX134), which a batch-dependent share cannot be, and keeps every expert.
- ``verdict``: a result that does not fit says so before its tables (the failure boundary that decides it).
"""

from __future__ import annotations

SP_SOURCE = ("sequence parallelism on with tensor parallelism (sp_degree = tp_size), as aiinfra plan assumes (Megatron-LM "
             "--sequence-parallel; Korthikanti et al. 2022, Eq. 4); --set sp_degree=1 for off")
# calculator -> (output, comparison, other output or number, what it means): the boundaries that say "does not fit"
FIT = {
    "calc:kv-concurrency": (("kv_budget_per_gpu", "<=", 0.0, "the weights and the engine overhead leave no KV budget on a GPU"),
                            ("max_concurrent_requests", "<", 1.0, "not even one request of this context fits")),
    "calc:training-memory": (("train_memory_bytes_per_gpu", ">", "usable_memory_per_gpu", "the memory per GPU exceeds the usable memory"),),
}


# calculators whose decode step reads FX1400's share of an MoE model's routed experts when the batch is given
ROUTED_CALCULATORS = frozenset({"calc:inference-capacity", "calc:energy-per-token"})
ROUTED_SOURCE = ("an MoE model with the batch given: a decode step reads the dense part and FX1400's expected share of the routed "
                 "experts, 1 - (1 - top_k/n_experts)^batch under balanced routing (FX132 routed_share), as plan serve and validate time a "
                 "step; --set expert_reads=all reads every expert")


def presets(root, calculator: str, device: str | None, precision: str, sets: dict, found: dict) -> dict:
    from engine.cli.efficiency import calc_presets

    out = calc_presets(root, calculator, device, precision, found, frozenset(sets))
    out.update(expert_presets(calculator, sets, found))
    if calculator == "calc:training-memory" and "sp_degree" not in sets:
        tp = _whole(sets.get("tp_size"))
        if tp is not None:
            out["sp_degree"] = (tp, SP_SOURCE)
    return out


def expert_presets(calculator: str, sets: dict, found: dict) -> dict:
    """expert_reads=routed_share for an MoE model (``found``: the presets) in ROUTED_CALCULATORS with the batch given;
    the experts at the model's bytes per weight again where --set bytes_param restates every weight's."""
    def value(key):
        v = found.get(key)
        return v[0] if isinstance(v, tuple) else v

    out = {}
    if value("model_arch") != "moe":
        return out
    if calculator in ROUTED_CALCULATORS and str(sets.get("batch_rule", "given")).strip() == "given":
        out["expert_reads"] = ("routed_share", "preset: " + ROUTED_SOURCE)
    if "bytes_param" in sets and value("expert_storage") == "separate":
        out["expert_storage"] = ("same", "--set bytes_param: every weight, the routed experts too, at the bytes given")
    return out


def _whole(text) -> int | None:
    try:
        value = float(str(text))
    except (TypeError, ValueError):
        return None  # a range or a unit: left to the formula's default
    return int(value) if value.is_integer() and value >= 1 else None


def verdict(result) -> str | None:
    """'DOES NOT FIT: ...' when an output crosses one of the calculator's fit boundaries (FIT), else None."""
    out = result.outputs
    for name, op, other, what in FIT.get(result.calculator, ()):
        if name not in out:
            continue
        limit = out[other].value if isinstance(other, str) and other in out else other
        if isinstance(limit, str):
            continue
        value = out[name].value
        if (op == "<=" and value <= limit) or (op == "<" and value < limit) or (op == ">" and value > limit):
            return f"DOES NOT FIT: {what} ({name} {op} {other if isinstance(other, str) else f'{limit:g}'})"
    return None
