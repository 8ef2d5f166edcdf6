"""``aiinfra plan serve``: TP x decode batch of one replica against TTFT/TPOT targets, the Pareto
front of throughput per GPU vs per-user tokens/s, and the fewest GPUs meeting the targets.

Per point (compiled formulas, NumPy twins, no sympy):
  weights per GPU  F6 (same precision) / tp (FX302);  KV per token F8 (gqa/mha) split over tp
  memory           weights + batch x (prompt + output) x KV per token per GPU <= F7 usable
  TTFT             FX77 = queue 0 + FX74 (FX30 with the attention term at the prompt length; prefill alone on the replica)
  TPOT             FX78 (standard) of FX75 memory_bound at the mean context prompt + output / 2
  per-user tok/s   1 / TPOT;  throughput per GPU  batch / TPOT / tp (decode only)
The space is small (TP x batch), so it is evaluated at once; no tree-boundary pruning is done.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core.errors import InputError
from engine.plan.evaluate import _Formulas


@dataclass(frozen=True, slots=True)
class ServePlan:
    points: int
    feasible: int
    front: tuple[dict, ...]
    best: dict | None  # highest throughput per GPU meeting the targets
    min_gpus: int | None
    replicas: int | None
    assumptions: tuple[str, ...]
    rows: tuple[dict, ...] = ()  # every point meeting memory and both targets


def _need_positive(value, field: str) -> float:
    if value is None or not value > 0:
        raise InputError(field, f"{value!r} is not a positive number")
    return float(value)


def plan_serve(root, model: str, device: str, *, prompt: int, output: int, ttft: float, tpot: float, demand: float | None = None,
               nvlink_domain: int = 8, max_batch: int = 256, mfu: float | None = None, kv_bytes: float = 2.0) -> ServePlan:
    from engine.domain import presets
    from engine.plan.space import _preset

    for v, f in ((prompt, "--prompt"), (output, "--output"), (ttft, "--ttft"), (tpot, "--tpot"), (max_batch, "--max-batch"), (nvlink_domain, "--nvlink-domain")):
        _need_positive(v, f)
    if demand is not None:
        _need_positive(demand, "--demand")
    mv = _preset(presets, root, model, None, "bf16", "--model")
    dv = _preset(presets, root, None, device, "bf16", "--device")
    if mv.get("attention") not in ("gqa", "mha"):
        raise InputError("--model", f"{model}: plan serve counts GQA/MHA KV caches only (this model's attention is {mv.get('attention')})")
    if mfu is None:
        if "mfu" not in dv:
            raise InputError("--mfu", f"{device} records no measured MFU; give --mfu for the prefill rate")
        mfu = float(dv["mfu"][0])
    f = _Formulas(str(root))
    heads, kvh = int(mv["heads"]), int(mv.get("kv_heads") or mv["heads"])
    tp = np.array([t for t in range(1, nvlink_domain + 1) if heads % t == 0 and kvh % t == 0], dtype=float)
    batch = np.arange(1, max_batch + 1, dtype=float)
    T, B = np.meshgrid(tp, batch, indexing="ij")
    T, B = T.ravel(), B.ravel()
    weights = f("F6", "same", params=float(mv["params"]))
    kv_token = f("F8", mv["attention"], layers=mv["layers"], kv_heads=kvh, heads=heads, head_dim=mv["head_dim"], kv_bytes=kv_bytes)
    memory = f("FX302", weight_bytes=weights, tp_size=T) + B * (prompt + output) * kv_token / T
    fits = memory <= f("F7", hbm_capacity=float(dv["hbm_capacity"]))
    per_token = f("FX30", "include", params_active=float(mv["params_active"]), layers=mv["layers"], seq_len=float(prompt), heads=heads, head_dim=mv["head_dim"])
    prefill = f("FX74", "per_token", infer_flops_per_token=per_token, prompt_tokens=float(prompt), tp_size=T, peak_flops=float(dv["peak_flops"]), mfu=mfu)
    t_first = f("FX77", queue_time=0.0, prefill_time=prefill)
    step = f("FX75", "memory_bound", weight_bytes=weights, tp_size=T, decode_batch=B, context_tokens=prompt + output / 2,
             kv_bytes_per_token_per_gpu=kv_token / T, hbm_bandwidth=float(dv["hbm_bandwidth"]))
    t_token = f("FX78", "standard", decode_step_time=step)
    ok = fits & (t_first <= ttft) & (t_token <= tpot)
    user, per_gpu = 1 / t_token, B / t_token / T
    rows = [dict(tp=int(T[i]), batch=int(B[i]), ttft=float(t_first[i]), tpot=float(t_token[i]), user_tokens_per_s=float(user[i]),
                 tokens_per_s_per_gpu=float(per_gpu[i]), memory=float(memory[i])) for i in np.flatnonzero(ok)]
    front = pareto(rows)
    best = max(rows, key=lambda r: (r["tokens_per_s_per_gpu"], -r["tp"], -r["batch"])) if rows else None
    min_gpus = replicas = None
    if rows:
        def gpus(r):
            return (int(np.ceil(demand / (r["tokens_per_s_per_gpu"] * r["tp"]))) if demand else 1) * r["tp"]

        cheapest = min(rows, key=lambda r: (gpus(r), r["tp"], r["batch"]))
        min_gpus, replicas = gpus(cheapest), gpus(cheapest) // cheapest["tp"]
        best = dict(best, min_gpus_layout=f"TP {cheapest['tp']} x batch {cheapest['batch']} x {replicas} replicas")
    notes = (f"prefill MFU {mfu:g}" + (" (device preset: measured MFU)" if "mfu" in dv else ""),
             "TTFT is one request's prefill alone on its replica (no queueing, no interference with decode)",
             "TPOT at the mean context prompt + output/2; decode memory-bound at peak HBM bandwidth (FX75 memory_bound)",
             "decode has no tensor-parallel communication cost, so throughput per GPU does not fall with TP here",
             "no prefill/decode pool split, no EP, no tree-boundary pruning (every point evaluated)")
    return ServePlan(int(T.size), len(rows), tuple(front), best, min_gpus, replicas, notes, tuple(rows))


def pareto(rows: list[dict]) -> list[dict]:
    """Rows no other row beats on both per-user tokens/s and tokens/s per GPU, by per-user speed."""
    ordered = sorted(rows, key=lambda r: (-r["user_tokens_per_s"], -r["tokens_per_s_per_gpu"], r["tp"], r["batch"]))
    front, best = [], -1.0
    for r in ordered:
        if r["tokens_per_s_per_gpu"] > best:
            front.append(r)
            best = r["tokens_per_s_per_gpu"]
    return front
