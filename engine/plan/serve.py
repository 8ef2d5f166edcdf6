"""``aiinfra plan serve``: TP (x EP for MoE) x decode batch, co-located or split into prefill and
decode pools, against TTFT/TPOT targets; the Pareto front of throughput per GPU vs per-user
tokens/s, and the fewest GPUs (replicas by FX87) that carry a demand.

The terms of each point are in engine.plan.serve_eval; this module reads the model and device,
picks the split's prefill TP (FX151), runs the tiles on an executor (each tile reduced to its
front and its cheapest fleet on the worker) and merges them by the same total order as serial.
"""

from __future__ import annotations

import numpy as np

from engine.core.errors import InputError
from engine.core.record import dataclass, field
from engine.plan.evaluate import _Formulas
from engine.plan.serve_eval import MODES, PRUNE, SPEC_KEYS, ServeSpace, constants, evaluate, on_gpu, usable_at


@dataclass(frozen=True, slots=True)
class ServePlan:
    points: int
    feasible: int
    front: tuple[dict, ...]
    best: dict | None  # highest throughput per GPU meeting the targets
    min_gpus: int | None
    replicas: int | None
    assumptions: tuple[str, ...]
    rows: tuple[dict, ...] = ()  # every point meeting memory and both targets (keep_rows only)
    pinned: tuple[dict, ...] = ()  # with --tp, --ep and --batch all given: that point, co-located and split, whether or not it meets the targets
    cheapest: dict | None = None
    pruned_bound: int = 0
    pruned_tree: int = 0  # split points the pd-disaggregation tree rules out (pruned_early of them before evaluation)
    tree_leaves: dict = field(default_factory=dict)  # the leaves of the points ruled out after evaluation
    pruned_early: int = 0
    early_conditions: tuple[str, ...] = ()  # the tree's branch conditions decided before evaluation
    tp_prefill: int = 0
    tiles: int = 1
    executor: str = "serial"
    speculative: dict | None = None  # --speculative: the draft, E (FX80), c, the ideal and the best draft length (Speculation.as_dict)
    step_model: str = "roofline"  # calibrated (engine.plan.step_model, validate's step) or roofline (the book's FX75)
    reach: dict | None = None  # where no point meets the targets: the lowest TTFT and TPOT of the layouts that fit, or the least memory (reach())


def _need_positive(value, field: str) -> float:
    if value is None or isinstance(value, bool) or not value > 0:
        raise InputError(field, f"{value!r} is not a positive number")
    return float(value)


def _divisors(n: int, cap: int) -> tuple[int, ...]:
    return tuple(t for t in range(1, min(n, cap) + 1) if n % t == 0)


MAX_BATCH = 1 << 16  # decode batch sizes tried: 65,536 requests, past what the memory of any instance holds

def build_serve(root, model: str, device: str, *, prompt: int, output: int, ttft: float, tpot: float, demand: float | None = None, qps: float | None = None,
                nvlink_domain: int = 8, max_batch: int = 256, max_ep: int = 64, mfu: float | None = None, mbu: float = 1.0, kv_bytes: float = 2.0,
                weights: str | None = None, kv_cache: str | None = None, precision: str = "bf16", allreduce_latency: float | None = None, kv_link_bandwidth: float | None = None, waterline: float | None = None,
                split: bool = True, prune: str = "all", pin: dict | None = None, speculative: dict | None = None,
                dequant: float | None = None, step: dict | None = None, engine: str | None = None) -> ServeSpace:
    from engine.domain import presets
    from engine.plan.space import SCALEOUT_BANDWIDTH, _preset

    for v, name in ((prompt, "--prompt"), (output, "--output"), (ttft, "--ttft"), (tpot, "--tpot"), (max_batch, "--max-batch"),
                    (nvlink_domain, "--nvlink-domain"), (max_ep, "--max-ep"), (mbu, "--mbu"), (kv_bytes, "--kv-bytes")):
        _need_positive(v, name)
    for v, name in ((prompt, "--prompt"), (output, "--output"), (max_batch, "--max-batch"), (nvlink_domain, "--nvlink-domain"), (max_ep, "--max-ep")):
        if not isinstance(v, int) or isinstance(v, bool):
            raise InputError(name, f"{v!r} is not a positive integer")
    if max_batch > MAX_BATCH:  # every batch 1..max_batch is a point of the space (#24: 1e9 exhausted memory)
        raise InputError("--max-batch", f"{max_batch:,} is more decode batch sizes than one search takes; expected at most {MAX_BATCH:,}")
    if mbu > 1:
        raise InputError("--mbu", f"{mbu!r} is not in (0, 1]")
    if demand is not None and qps is not None:
        raise InputError("--qps", "give --demand (output tokens/s) or --qps (requests/s), not both")
    if qps is not None:
        demand = _need_positive(qps, "--qps") * output  # FX86 decode: qps x output tokens
    elif demand is not None:
        _need_positive(demand, "--demand")
    if prune not in PRUNE:
        raise InputError("--prune", f"{prune!r} is not one of {', '.join(PRUNE)}")
    from engine.domain import storage

    precision = str(precision).strip().lower()
    w_fmt = storage.resolve(weights or "bf16", "--weights", root)
    from engine.domain import models

    try:
        record = models.find_one(root, model, "--model")
    except InputError as exc:
        raise InputError("--model", exc.message) from None
    stored = {} if weights else _stored_weights(record, root)
    weights_label = stored.pop("weights", w_fmt.name)
    bytes_param = stored.pop("bytes_param", w_fmt.bytes)
    if kv_cache is not None:
        kv_bytes = storage.resolve(kv_cache, "--kv-cache", root).bytes
    storage.check_compute(w_fmt, precision)
    from engine.domain.families import Use, family_of, refuse, shape_of

    shape = shape_of(record)
    family = family_of(shape)
    refuse(Use.SERVE, shape)  # DeepSeek-V4's compressed attention, a layer-wise model
    # a hybrid's or DSA's values come from the table calc kv-concurrency reads (HYBRID_CALCULATORS): a hybrid's attention
    # layers as layers with its recurrent state per request, DSA's indexer keys per token (FX888)
    table = "calc:kv-concurrency" if family.refusal(Use.CALCULATORS, shape) else None
    mv = _preset(presets, root, model, None, "bf16", "--model", calculator=table)
    hybrid = family.serving_terms(shape, mv)  # a hybrid's layers and recurrent state, DSA's indexer
    dv = _preset(presets, root, None, device, precision, "--device")
    if mv.get("attention") not in ("gqa", "mha", "mla"):
        raise InputError("--model", f"{model}: plan serve counts GQA/MHA/MLA K/V caches only (this model's attention is {mv.get('attention')})")
    experts = int(mv.get("n_experts") or 0) if mv.get("model_arch") == "moe" else 0
    mla = mv["attention"] == "mla"
    if mla:  # the latent (F8 mla) and FX30's attention widths: expanded prefill, absorbed decode
        r, rope, nope, v = (int(mv[k]) for k in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"))
        shape = dict(head_dim=v, kv_lora_rank=r, qk_rope_head_dim=rope, attn_dim_prefill=(nope + rope + v) / 2, attn_dim_decode=(2 * r + rope) / 2)
    else:
        shape = dict(head_dim=int(mv["head_dim"]))
    if mv.get("kv_layout") == "sliding_window":
        shape.update(window_layers=int(mv["window_layers"]), sliding_window=int(mv["sliding_window"]))
    layers = int(hybrid.get("layers", mv["layers"]))
    shape.update({k: v for k, v in hybrid.items() if k != "layers"})
    if experts and mv.get("n_dense_layers"):
        shape["moe_layers"] = layers - int(mv["n_dense_layers"])
    for need, what in (("peak_flops", f"dense {precision} peak"), ("hbm_capacity", "memory capacity"), ("hbm_bandwidth", "memory bandwidth"),
                       ("nominal_bandwidth", "scale-up interconnect bandwidth (interconnect.per_direction) for the TP all-reduces")):
        if need not in dv:
            raise InputError("--device", f"{device} records no {what} to plan with")
    if mfu is None:
        if "mfu" not in dv:
            raise InputError("--mfu", f"{device} records no measured MFU at {precision}; give --mfu for the prefill rate")
        mfu = float(dv["mfu"][0])
    elif not 0 < mfu <= 1:
        raise InputError("--mfu", f"{mfu!r} is not in (0, 1]")
    f = _Formulas(str(root))
    if allreduce_latency is None:
        allreduce_latency = float(f.default("FX50", "step_latency"))
    elif allreduce_latency < 0:
        raise InputError("--allreduce-latency", f"{allreduce_latency!r} is not a non-negative time")
    if waterline is None:
        waterline = float(f.default("FX87", "waterline"))
    elif not 0 < waterline <= 1:
        raise InputError("--waterline", f"{waterline!r} is not in (0, 1]")
    kv_link = SCALEOUT_BANDWIDTH if kv_link_bandwidth is None else _need_positive(kv_link_bandwidth, "--kv-link-bandwidth")
    from engine.plan.engine_memory import kv_budget

    if "gpu_memory_total" not in dv:
        raise InputError("--device", f"{device} records no usable memory total and none can be derived")
    usable, _ = kv_budget("vllm", float(dv["gpu_memory_total"]), 0.0)  # one capacity convention: calc kv-concurrency's and state's
    rule = ""
    if engine is not None:  # --engine: that engine's own memory rule (engine.plan.engine_memory), as validate admits requests
        rule = kv_budget(engine, 1.0, 0.0)[1]
        if rule not in ("vllm", "sglang", "tensorrt-llm"):
            raise InputError("--engine", f"{engine!r} is not an engine with a memory rule (expected vllm, sglang or tensorrt-llm)")
    heads, kvh = int(mv["heads"]), int(mv.get("kv_heads") or mv["heads"])
    params, active = float(mv["params"]), float(mv["params_active"])
    top_k, expert_params = 0, 0.0
    if experts:
        top_k = int(mv["top_k"])
        expert_params = (params - active) * experts / (experts - top_k)  # every routed expert the same size (as space.build)
    # TP splits the query heads; past one K/V head per rank the K/V heads are replicated (FX73; vLLM's QKVParallelLinear
    # asserts TP % kv_heads == 0 there and keeps TP / kv_heads replicas of each, TensorRT-LLM replicates the K/V cache), so
    # TP divides the query heads and either divides the K/V heads or is a multiple of them (a recurrent layer's heads divide)
    tp = tuple(t for t in _divisors(heads, nvlink_domain) if (kvh % t == 0 or t % kvh == 0) and all(n % t == 0 for n in shape.pop("state_heads", ())))
    base = dict(root=str(root), prompt=prompt, output=output, ttft=float(ttft), tpot=float(tpot), layers=layers, hidden=int(mv["hidden"]),
                heads=heads, kv_heads=kvh, attention=mv["attention"], params=params, params_active=active,
                expert_params=expert_params, top_k=top_k, n_experts=experts, kv_bytes=float(kv_bytes), hbm=float(dv["hbm_capacity"]), hbm_bw=float(dv["hbm_bandwidth"]),
                usable_memory=float(usable), memory_rule=rule, gpu_total=float(dv["gpu_memory_total"]), peak=float(dv["peak_flops"]), nvlink_bw=float(dv["nominal_bandwidth"]), scaleout_bw=SCALEOUT_BANDWIDTH, nvlink_domain=nvlink_domain,
                mfu=float(mfu), mbu=float(mbu), allreduce_latency=float(allreduce_latency), kv_link_bw=float(kv_link),
                demand=float(demand) if demand else 0.0, waterline=waterline, tp_prefill=0,
                modes=MODES if split and output >= 2 else MODES[:1], tp=tp, ep=_divisors(experts, max_ep) if experts else (1,),
                batch=tuple(range(1, max_batch + 1)), prune=prune, **shape, **stored, bytes_param=bytes_param, precision=precision, weights=weights_label,
                kv_cache=kv_cache.strip().lower() if kv_cache else ("bf16" if kv_bytes == 2 else "as given"))
    if speculative is not None:  # parse's fields; an MTP module is sized from the model (FX965, FX964)
        from engine.plan import speculative as spec

        base["spec"] = spec.resolve(f, speculative, dict(params_active=active, layers=layers, hidden=mv.get("hidden"),
                                                         vocab_size=mv.get("vocab_size"), tie_embeddings=mv.get("tie_embeddings")))
    if pin:
        base.update(_pinned_axes(base, pin, experts, model))
    if dequant is not None and weight_only(base["bytes_param_expert"] if base.get("bytes_param_expert") else base["bytes_param"], precision):
        if not 0 < dequant <= 1:
            raise InputError("e_dequant", f"{dequant!r} is not in (0, 1]")
        base.update(mfu=float(mfu) * dequant, dequant=float(dequant))  # the weight-only kernels' share of the matrix rate
    if step:  # the calibrated step (engine.plan.step_model): every constant it reads, as plain numbers
        from engine.plan.step_model import PARAMETERS

        missing = [k for k in PARAMETERS if k not in step]
        if missing:
            raise InputError("step", f"lacks {', '.join(missing)} (expected engine.plan.step_model.PARAMETERS)")
        base["step"] = tuple((k, float(step[k])) for k in PARAMETERS)
    space = ServeSpace(**base)
    if len(space.modes) > 1:
        space = ServeSpace(**dict(base, tp_prefill=_prefill_tp(space, f)))
    return space


PIN_FLAGS = {"tp": "--tp", "ep": "--ep", "batch": "--batch"}


def _pinned_axes(base: dict, pin: dict, experts: int, model: str) -> dict:
    """The serving axes reduced to the pinned values (``pin``: tp, ep, batch -> value), each checked against the rules the
    search applies: TP divides the heads and recurrent heads, and divides or is a multiple of the K/V heads, within the NVLink domain, EP divides the experts
    (1 for a dense model), EP divides the batch (each attention group holds whole sequences)."""
    out = {}
    for axis, value in pin.items():
        if value is None:
            continue
        flag = PIN_FLAGS.get(axis)
        if flag is None:
            raise InputError(axis, f"is not a serving axis (expected one of {', '.join(PIN_FLAGS)})")
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(flag, f"{value!r} is not a positive integer")
        if axis == "tp" and value not in base["tp"]:
            raise InputError(flag, f"{value} is not a valid TP for {model}: it must divide the heads, and divide the K/V heads or be a multiple of "
                                   f"them (replicated past one per rank), within the NVLink domain "
                                   f"(valid: {', '.join(map(str, base['tp']))})")
        if axis == "ep" and value > 1 and (not experts or experts % value):
            raise InputError(flag, f"{value} does not divide {model}'s {experts} routed experts" if experts else f"{model} has no routed experts (EP is 1)")
        out[axis] = (value,)
    if "batch" in out and out.get("ep", base["ep"])[0] > 1 and len(out.get("ep", ())) == 1 and out["batch"][0] % out["ep"][0]:
        raise InputError("--batch", f"{out['batch'][0]} is not a multiple of EP {out['ep'][0]} (each attention group holds whole sequences)")
    return out


def _stored_weights(record: dict, root) -> dict:
    """A record whose checkpoint stores the routed experts in a block-scaled format (its storage block, FX652):
    their bytes per value (FX650) and the stored total; a checkpoint stored otherwise (FP8 with block scales): its
    bytes per parameter, scales included; {} for a BF16 checkpoint (then --weights, default BF16)."""
    from engine.domain import storage

    block = record.get("storage") or {}
    if not block:
        return {}
    if not block.get("quantised_format"):  # FP8 with block scales (DeepSeek-V3, Kimi K2): the checkpoint's bytes per parameter
        from engine.domain.state import checkpoint_text

        return {"bytes_param": block["weight_bytes"] / record["parameters"]["total"], "weights": checkpoint_text(record)}
    fmt = storage.resolve(block["quantised_format"], "--model", root)
    return {"bytes_param_expert": fmt.bytes, "stored_weight_bytes": float(block["weight_bytes"]), "weights": f"as stored in the checkpoint, {fmt.name} experts"}


def _prefill_tp(s: ServeSpace, f: _Formulas) -> int:
    """The split's prefill TP: from FX151's power of two (the TTFT after the KV transfer) upwards, the first
    valid TP whose prefill with its all-reduces meets TTFT and whose weights and one prompt's KV fit (0: none)."""
    c = constants(s, f)
    queue = c["transfer"]
    if queue >= s.ttft:
        return 0
    need = float(f("FX151", prefill_flops=c["flops_prefill"] * s.prompt, ttft_target=s.ttft, queue_time=queue, peak_flops=s.peak, mfu=s.mfu))
    for t in s.tp:
        if t < need:
            continue
        trial = constants(ServeSpace(**{**{k: getattr(s, k) for k in s.__slots__}, "tp_prefill": t}), f)
        w = (c["w_dense"] + c["w_expert"]) / t
        fits = w + on_gpu(s, c, "kv_prompt", t) <= usable_at(s, c, w, float(t))
        if fits and trial["ttft_split"] <= s.ttft:
            return t
    return 0


ROW_KEYS = ("tp", "ep", "batch", "ttft", "tpot", "memory", "usable", "step", "tp_comm", "ep_comm", "overhead", "goodput")


def _row(t: dict, i: int, s: ServeSpace) -> dict:
    r = {"index": int(t["index"][i]), "mode": MODES[int(t["mode"][i])]}
    for k in ROW_KEYS:
        r[k] = float(t[k][i])
    for k in ("tp", "ep", "batch"):
        r[k] = int(r[k])
    r["gpus_per_instance"] = r["tp"] * r["ep"]
    r["tp_prefill"] = s.tp_prefill if r["mode"] == "split" else 0
    r["user_tokens_per_s"], r["tokens_per_s_per_gpu"] = float(t["user"][i]), float(t["per_gpu"][i])
    r["fleet_gpus"], r["replicas"], r["prefill_instances"] = int(t["gpus"][i]), int(t["instances"][i]), int(t["prefill_instances"][i])
    if s.spec is not None:  # the decode step's speed-up (FX960), its verify cost v and the layout's roofline break-even batch (FX963)
        r.update({k: float(t[k][i]) for k in SPEC_KEYS})
        r["spec_pays"] = r["spec_speedup"] > 1
    return r


def _order(r: dict) -> tuple:
    return (-r["user_tokens_per_s"], -r["tokens_per_s_per_gpu"], r["index"])


def tile(args: tuple) -> dict:
    """One tile reduced on its worker: its Pareto front, its best and cheapest rows, the counts."""
    s, start, stop, keep_rows = args
    t = evaluate(s, start, stop)
    ok = np.flatnonzero(t["ok"])
    rows = [_row(t, i, s) for i in ok]
    out = dict(points=t["points"], feasible=len(rows), pruned_bound=t["pruned_bound"], pruned_tree=t["pruned_tree"] + t["pruned_early"], tree_leaves=t["tree_leaves"],
               pruned_early=t["pruned_early"], early_conditions=t["early_edges"],
               front=pareto(rows), best=min(rows, key=_best_key, default=None), cheapest=min(rows, key=_cheap_key, default=None))
    out["rows"] = rows if keep_rows else []
    return out


def _best_key(r: dict) -> tuple:
    return (-r["tokens_per_s_per_gpu"], r["index"])


def _cheap_key(r: dict) -> tuple:
    return (r["fleet_gpus"], -r["tokens_per_s_per_gpu"], r["index"])


def plan_serve(root, model: str, device: str, *, executor: str = "serial", workers: int | None = None, tile_size: int = 1_000_000,
               keep_rows: bool = True, **options) -> ServePlan:
    from engine.plan.executor import map_tiles, tiles

    s = build_serve(root, model, device, **options)
    pinned = _evaluate_pinned(s) if len(s.tp) == 1 and len(s.ep) == 1 and len(s.batch) == 1 else ()
    work = [(s, a, b, keep_rows) for a, b in tiles(s.size, tile_size)]
    parts = map_tiles(tile, work, executor, workers)
    merged_leaves: dict = {}
    for p in parts:
        for k, v in p["tree_leaves"].items():
            merged_leaves[k] = merged_leaves.get(k, 0) + v
    front = pareto([r for p in parts for r in p["front"]])
    best = min((p["best"] for p in parts if p["best"]), key=_best_key, default=None)
    cheapest = min((p["cheapest"] for p in parts if p["cheapest"]), key=_cheap_key, default=None)
    rows = sorted((r for p in parts for r in p["rows"]), key=lambda r: r["index"])
    return ServePlan(reach=reach(s) if best is None else None, points=sum(p["points"] for p in parts), feasible=sum(p["feasible"] for p in parts), front=tuple(front), best=best,
                     min_gpus=cheapest["fleet_gpus"] if cheapest else None, replicas=cheapest["replicas"] if cheapest else None,
                     assumptions=notes(s), rows=tuple(rows), cheapest=cheapest, pruned_bound=sum(p["pruned_bound"] for p in parts),
                     pruned_tree=sum(p["pruned_tree"] for p in parts), tree_leaves=merged_leaves,
                     pruned_early=sum(p["pruned_early"] for p in parts), early_conditions=next((p["early_conditions"] for p in parts if p["early_conditions"]), ()), tp_prefill=s.tp_prefill, tiles=len(work),
                     executor=str(executor), pinned=pinned, speculative=s.spec.as_dict() if s.spec is not None else None,
                     step_model="calibrated" if s.step else "roofline")


def _evaluate_pinned(s: ServeSpace) -> tuple[dict, ...]:
    """The pinned point in each mode with every term, evaluated without pruning and whatever the targets say."""
    from engine.core.record import replace

    full = replace(s, prune="none")
    t = evaluate(full, 0, full.size)
    out = []
    for i in range(len(t["index"])):
        row = _row(t, i, full)
        row["meets"] = {"memory": bool(t["memory"][i] <= t["usable"][i]), "ttft": bool(t["ttft"][i] <= s.ttft), "tpot": bool(t["tpot"][i] <= s.tpot)}
        row["memory_bytes"] = float(t["memory"][i])
        out.append(row)
    return tuple(out)


def reach(s: ServeSpace) -> dict:
    """What the layouts reach where none meets the targets: the lowest TTFT and the lowest TPOT over the points that fit
    in memory (``ttft``, ``tpot``: a row each, None where nothing fits), and the point of least memory per GPU
    (``memory``, its ``usable`` beside). Every term grows with the batch, so each (TP, EP) is evaluated at its smallest
    batch alone, without pruning (the FX134 bound drops every batch of a layout that misses the TPOT target)."""
    from engine.core.record import replace

    smallest = sorted({min(b for b in s.batch if b % e == 0) for e in s.ep if any(b % e == 0 for b in s.batch)})
    sub = replace(s, prune="none", batch=tuple(smallest))
    t = evaluate(sub, 0, sub.size)
    fits = np.flatnonzero(t["memory"] <= t["usable"])

    def lowest(key: str, among) -> dict | None:
        return _row(t, min(among, key=lambda i: (t[key][i], t["index"][i])), sub) if len(among) else None

    every = np.arange(len(t["index"]))
    least = lowest("memory", every)
    return {"ttft": lowest("ttft", fits), "tpot": lowest("tpot", fits), "memory": least, "usable": least["usable"] if least else float(constants(sub)["usable"])}


def weight_only(bytes_per_weight: float, precision: str) -> bool:
    """Whether weights of ``bytes_per_weight`` (the routed experts' where stored apart) run as weight-only quantisation
    under matrix products at ``precision``: narrower than the products, so dequantised inside the kernels."""
    from engine.domain.storage import COMPUTE_BITS

    return precision in COMPUTE_BITS and bytes_per_weight < COMPUTE_BITS[precision] / 8 * 0.95


def _memory_note(s: ServeSpace) -> str:
    from engine.plan.engine_memory import SOURCES

    return (f"memory per GPU: the K/V of the batch within the budget {s.memory_rule}'s default memory rule leaves of the runtime's "
            f"{s.gpu_total / 2**30:.2f} GiB after the weights (engine.plan.engine_memory, as validate admits requests; "
            f"{SOURCES[s.memory_rule]})")


def notes(s: ServeSpace) -> tuple[str, ...]:
    from engine.plan.space import SCALEOUT_SOURCE

    stored = f"{s.stored_weight_bytes:,.0f} B in all, routed experts {s.bytes_param_expert:g} B per weight (FX650), the rest as stored, FX652" \
        if s.stored_weight_bytes else f"{s.bytes_param:g} B per weight, F6"
    out = [f"precision: weights {s.weights} ({stored}), K/V cache {s.kv_cache} ({s.kv_bytes:g} B per element, F8), "
           f"matrix products at the device's dense {s.precision} peak {s.peak / 1e12:g} TFLOP/s (FX651: three separate choices)",
           (f"MFU {s.mfu:g} for prefill and the chunked-prefill share (FX74); the decode step is the calibrated step above"
            if s.step else f"MFU {s.mfu:g} for prefill and decode compute (FX74, FX131); MBU {s.mbu:g} for the decode HBM reads (FX132; 1 = datasheet bandwidth)"),
           _memory_note(s) if s.memory_rule else
           f"memory per GPU: weights + K/V of the batch within {s.usable_memory / 2**30:.2f} GiB usable (FX72, vLLM's rule: 0.9 x the runtime's "
           "total less 5 GiB engine overhead; the convention of calc kv-concurrency and state)" if s.usable_memory else
           "memory per GPU: weights + K/V of the batch within F7's usable share of the nominal capacity",
           "TTFT is one request's prefill alone (no queueing); co-located TPOT carries the steady chunked-prefill share of each step "
           "(batch x prompt / output tokens of FX74 per step)",
           ("decode step: the calibrated step at the mean context prompt + output/2 (TPOT = FX78 with its fixed and per-sequence costs as "
            "step_overhead_time); TP all-reduces FX702-FX704 (2 L per pass) with the calibrated latency and link share; TTFT the calibrated prefill"
            if s.step else
            f"decode step FX75 roofline at the mean context prompt + output/2; TP all-reduces FX702-FX704 (2 L per pass) as FX50 rings over NVLink "
            f"{s.nvlink_bw / 1e9:g} GB/s x F20 efficiency, step latency {s.allreduce_latency * 1e6:g} us per ring step"
            + (" (FX50's default, the book calculator's; give --allreduce-latency from nccl-tests)" if abs(s.allreduce_latency - 20e-6) < 1e-15 else " (given)")),
           f"fleet: FX87 replicas at waterline {s.waterline:g} for " + (f"{s.demand:g} output tokens/s" if s.demand else "one replica's goodput (no --demand/--qps)"),
           "goodput per replica FX138 (decode slots, Little's law FX81 with FX79's end-to-end latency)"]
    narrow = s.bytes_param_expert or s.bytes_param  # the routed experts' bytes per weight where the checkpoint stores them apart
    if weight_only(narrow, s.precision):
        rate = (f"at e_dequant {s.dequant:.3f} of the {s.precision} matrix rate (calibrated, knowledge/calibration/fitted.json; the MFU "
                f"above is the prefill efficiency x e_dequant, as validate's step model has it)") if s.dequant else f"at the {s.precision} peak x MFU"
        out.append(f"weight-only quantisation: weights stored narrower than the {s.precision} products are read at their stored bytes and "
                   f"dequantised to {s.precision} inside the matrix kernels (vLLM's Marlin and Triton MoE kernels run MXFP4 and FP8 this way "
                   f"on GPUs without those tensor cores), so FLOPs run {rate}")
    if s.attention != "mla" and max(s.tp) > s.kv_heads:
        out.append(f"K/V heads: TP above the {s.kv_heads} K/V heads replicates them (FX73; vLLM keeps TP / {s.kv_heads} copies of each, "
                   f"TensorRT-LLM replicates the cache): one K/V head per rank, the K/V bytes per GPU stop falling at TP {s.kv_heads}")
    if s.attention == "mla":
        out.append(f"MLA: the latent ({s.kv_lora_rank} + {s.qk_rope_head_dim} per layer, F8) is held whole on every TP rank (FX73); FX30's attention "
                   f"term at width {s.attn_dim_prefill:g} for the expanded prefill ((nope + rope + v) / 2) and {s.attn_dim_decode:g} for the "
                   "absorbed decode ((2 r + rope) / 2)")
    if s.recurrent_layers:
        kind = {"gated_deltanet": "Gated DeltaNet", "kda": "KDA", "mamba2": "Mamba-2"}.get(s.recurrent_kind, s.recurrent_kind)
        per_request = s.recurrent_layers * s.state_bytes_layer
        elements = s.recurrent_layers * s.state_bytes_layer / s.state_element_bytes
        share = 7 * elements / (2 * (s.params_active + 2 * (s.attn_layers or s.layers) * (s.prompt + s.output / 2) * s.heads * s.head_dim))
        out.append(f"hybrid: {s.recurrent_layers} {kind} layers keep FX800's state, {per_request:,.0f} B per request at {s.state_element_bytes:g} B "
                   f"per element (FX801), whatever the length, split over TP by heads; read and written back once per decode step (FX132) "
                   f"and moved with the prompt's K/V in a split; K/V and FX30's attention term in the {s.attn_layers} attention layers only; "
                   f"the state updates' own FLOPs (about 7 per state element per token, {share:.1%} of a decode token's FX30 here) are not counted")
    if s.allreduce_layers:
        out.append(f"TP all-reduces: one per block of the {s.layers} (Mamba-2, attention and MLP blocks each end in one), FX703 at "
                   f"{s.allreduce_layers:g} layers")
    if s.index_topk:
        out.append(f"DeepSeek Sparse Attention: every layer's indexer caches FX888's {s.index_bytes_per_token:g} B per token beside the latent "
                   f"(both whole on every TP rank) and scores the whole context (FX920: {s.index_heads} heads of {s.index_head_dim}, counted at the "
                   f"same rate as the rest though it runs in FP8); the main attention (FX30's term) and its latent reads cover the top "
                   f"{s.index_topk} tokens only")
    if s.window_layers:
        out.append(f"sliding window: {s.window_layers} of {s.layers} layers keep at most {s.sliding_window} tokens (FX70), in memory, "
                   "reads, attention FLOPs and the split's K/V transfer")
    if s.expert_params:
        out.append("MoE: instance = TP x EP GPUs, EP attention groups each hold batch / EP sequences; a decode step reads the routed "
                   f"experts its batch's tokens route to, FX1400's expected share 1 - (1 - {s.top_k}/{s.n_experts})^batch of them (balanced "
                   "routing: a few at batch 1, nearly all at a large batch; every expert is held in memory); All2All F19 forward over NVLink inside the domain, else 50 GB/s scale-out. In the engines' "
                   "terms this is tensor parallel TP x EP with attention data parallel over EP groups of TP ranks and the experts over all "
                   "of them (SGLang --tp-size TP x EP --dp-size EP --enable-dp-attention; TensorRT-LLM tensor_parallel_size TP x EP with "
                   "enable_attention_dp when TP is 1). An engine's expert parallel without attention DP (TensorRT-LLM moe_expert_parallel_size "
                   "x moe_tensor_parallel_size = tensor_parallel_size, SGLang --ep-size dividing --tp-size, vLLM --enable-expert-parallel at "
                   "data parallel 1) is plan serve's TP = the engine's tensor parallel size at EP 1: the same weights and K/V per GPU, "
                   "the MoE output reduced with the TP all-reduce")
    if len(s.modes) > 1:
        pool = f"prefill pool TP {s.tp_prefill}" if s.tp_prefill else "no prefill TP meets TTFT, so no split point does"
        out.append(f"split: {pool} (FX151 then the first valid TP meeting TTFT), sized by FX155 "
                   f"(fluid, per GPU) and FX87 (fleet); KV transfer prompt x F8 / {s.kv_link_bw / 1e9:g} GB/s is TTFT queue time"
                   + (f" ({SCALEOUT_SOURCE})" if s.kv_link_bw == 50e9 else ""))
    if s.spec is not None:
        out.extend(speculative_notes(s))
    out.append({"all": "pruning: batches above FX134's bound are not evaluated; split points the pd-disaggregation tree does not send to "
                       "'disaggregate' are dropped (a recommendation, not a bound: --prune bound keeps them): a route's edges that the "
                       "prompt, its K/V, the link and the TP x EP prefill decide (the transfer boundary prompt x F8 / link = prefill time) "
                       "before the batch terms are computed, the rest by the tree's numeric walk after",
                "bound": "pruning: batches above FX134's bound only (it never changes the result)",
                "none": "no pruning: every point evaluated"}[s.prune])
    return tuple(out)


def speculative_notes(s: ServeSpace) -> list[str]:
    sp = s.spec
    out = [f"speculative decoding: {sp.describe()} ({sp.draft_cost_source}); E = {sp.tokens_per_step:.4g} tokens per target step (FX80), "
           f"at most {sp.ideal_speedup:.3g}x where verifying is free (FX960, v = 1)"
           + (f"; at α {sp.acceptance[0]:g} and c {sp.draft_cost:.4g} the best draft length is γ = {sp.optimal_draft_len} "
              f"({sp.optimal_speedup:.3g}x, FX960 at v = 1 over γ = 1..16, α taken the same at every position"
              + (", i.e. that many sequential MTP modules" if sp.method == "mtp" else "") + ")" if sp.optimal_draft_len else ""),
           f"speculative TPOT per layout: FX78 speculative, (step x (γ c + v)) / E, plus the chunked-prefill share; the verify pass scores "
           f"γ + 1 = {sp.draft_len + 1} positions per sequence: FX962 = max({sp.draft_len + 1} x FX131, FX132) plus the TP all-reduces and "
           f"EP All2All of {sp.draft_len + 1} x the tokens, v = verify / plain step (1 while memory-bound, up to {sp.draft_len + 1} when "
           "compute-bound); spec x = FX960's speed-up of the decode step; speculation stays on at every batch (an engine may switch it off "
           "above a queue size, e.g. vLLM's speculative disable-by-batch-size)",
           "speculative break-even: FX963 on the roofline (FX131, FX132; communication left out) gives the batch of each layout above "
           "which the verify pass costs more than the draft saves; the draft's weights and K/V are not counted in memory"]
    return out


def pareto(rows: list[dict]) -> list[dict]:
    """Rows no other row beats on both per-user tokens/s and tokens/s per GPU, by per-user speed
    (ties: the lower point number first)."""
    ordered = sorted(rows, key=lambda r: (-r["user_tokens_per_s"], -r["tokens_per_s_per_gpu"], r.get("index", 0), r.get("tp", 0), r.get("batch", 0)))
    front, best = [], -1.0
    for r in ordered:
        if r["tokens_per_s_per_gpu"] > best:
            front.append(r)
            best = r["tokens_per_s_per_gpu"]
    return front


@dataclass(frozen=True, slots=True)
class MaxQps:
    """``plan serve --max-qps --gpus N``: the highest request rate N GPUs sustain within the targets."""
    gpus: int
    max_qps: float | None  # requests/s; None where no layout meets the targets within N GPUs
    layout: dict | None  # the row (plan serve's keys) with replicas, prefill_instances, gpus_used, per-replica goodput
    binding: str | None
    plan: ServePlan
    assumptions: tuple[str, ...]
    waterline: float = 0.7  # FX87's, as the fleet sizing uses it


def _capacity(row: dict, gpus: int, waterline: float, output: int, prompt: int, per_prefill: float) -> tuple[float, int, int]:
    """The request rate one layout sustains on ``gpus`` GPUs, FX87 inverted: n replicas carry a demand D while
    ceil(D / (goodput x waterline)) <= n, i.e. D <= n x goodput x waterline; qps = D / output (FX86). A split layout
    shares the GPUs between decode replicas (g each) and prefill instances (tp_prefill each, carrying
    qps x prompt <= p x per_prefill x waterline): the best whole split. Returns (qps, replicas, prefill instances)."""
    g = row["gpus_per_instance"]
    most = gpus // g
    if most < 1:
        return 0.0, 0, 0
    decode = lambda n: n * row["goodput"] * waterline / output  # noqa: E731
    if row["mode"] != "split":
        return decode(most), most, 0
    tpp = row["tp_prefill"]
    best = (0.0, 0, 0)
    for n in range(most, 0, -1):
        p = (gpus - n * g) // tpp if tpp else 0
        if p < 1:
            continue
        q = min(decode(n), p * per_prefill * waterline / prompt)
        if q > best[0]:
            best = (q, n, p)
        if decode(n) <= best[0]:  # fewer replicas only lower the decode side
            break
    return best


def max_qps(root, model: str, device: str, gpus: int, **options) -> MaxQps:
    """Over every layout plan serve finds meeting memory, TTFT and TPOT (pruned as ``prune`` says): replicas that fit
    in ``gpus`` x each replica's FX138 goodput x the FX87 waterline, in requests/s; ties: fewer GPUs used, then the
    point number."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise InputError("--gpus", f"{gpus!r} is not a positive integer")
    for flag, key in (("--demand", "demand"), ("--qps", "qps")):
        if options.get(key) is not None:
            raise InputError(flag, "--max-qps finds the request rate; give --gpus, not a demand")
    run = {k: options.pop(k) for k in ("executor", "workers", "tile_size") if k in options}
    s = build_serve(root, model, device, **options)
    r = plan_serve(root, model, device, keep_rows=True, **run, **options)
    c = constants(s)
    per_prefill = s.tp_prefill * s.peak * s.mfu / c["flops_prefill"] if s.tp_prefill else 0.0  # prompt tokens/s, as evaluate's FX74 rate
    best, key = None, None
    for row in r.rows:
        q, n, p = _capacity(row, gpus, s.waterline, s.output, s.prompt, per_prefill)
        if n < 1:
            continue
        used = n * row["gpus_per_instance"] + p * row["tp_prefill"]
        k = (-q, used, row["index"])
        if key is None or k < key:
            best, key = dict(row, replicas=n, prefill_instances=p, gpus_used=used, per_prefill=per_prefill), k
    binding = None
    if best is not None:
        best["qps"] = -key[0]
        best["output_tokens_per_s"] = best["qps"] * s.output
        binding = _binding(best, s, best["usable"])
    waterline = (f"capacity: FX87 inverted at waterline {s.waterline:g} (the fleet sizing's): n replicas carry a demand while "
                 f"ceil(demand / (goodput x {s.waterline:g})) <= n, so max_qps = replicas x FX138 goodput x {s.waterline:g} / {s.output} output tokens "
                 "(FX86); replicas = the whole instances that fit in --gpus (a split layout: the best division between decode replicas and "
                 "prefill instances, the prompt rate within their FX74 rate x the waterline); ties: fewer GPUs, then the point number")
    return MaxQps(gpus=gpus, max_qps=best["qps"] if best else None, layout=best, binding=binding, plan=r,
                  assumptions=(waterline, *r.assumptions), waterline=s.waterline)


def _binding(row: dict, s: ServeSpace, usable: float) -> str:
    """The target nearest its limit at the chosen layout (largest share used), with the share; for a split layout the
    pool that caps the rate."""
    shares = {"TPOT": (row["tpot"] / s.tpot, f"{1e3 * row['tpot']:.2f} ms of {1e3 * s.tpot:g} ms"),
              "TTFT": (row["ttft"] / s.ttft, f"{1e3 * row['ttft']:.1f} ms of {1e3 * s.ttft:g} ms"),
              "memory": (row["memory"] / usable, f"{row['memory'] / 2**30:.2f} GiB of {usable / 2**30:.2f} GiB per GPU")}
    name, (share, text) = max(shares.items(), key=lambda kv: kv[1][0])
    out = f"{name} ({text}, {share:.1%})"
    if row["mode"] == "split":
        decode = row["replicas"] * row["goodput"] * s.waterline / s.output
        out += "; the rate is capped by the " + ("decode replicas" if decode <= row["qps"] * (1 + 1e-12) else "prefill pool")
    return out
