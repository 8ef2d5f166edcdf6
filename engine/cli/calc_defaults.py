"""What ``calc`` fills or says beyond the records' presets, so it agrees with the planners (issue 28).

- ``mfu``/``mbu``: engine.cli.efficiency's one rule (the calibrated value for the device's generation).
- ``sp_degree`` of calc:training-memory: sequence parallelism on with tensor parallelism (sp_degree = tp_size), as
  ``aiinfra plan`` assumes (Megatron-LM's --sequence-parallel with TP; Korthikanti et al. 2022, Eq. 4); --set
  sp_degree=1 turns it off.
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


def presets(root, calculator: str, device: str | None, precision: str, sets: dict, found: dict) -> dict:
    from engine.cli.efficiency import calc_presets

    out = calc_presets(root, calculator, device, precision, found, frozenset(sets))
    if calculator == "calc:training-memory" and "sp_degree" not in sets:
        tp = _whole(sets.get("tp_size"))
        if tp is not None:
            out["sp_degree"] = (tp, SP_SOURCE)
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
