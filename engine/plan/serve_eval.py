"""One tile of the serving search, vectorised: every term of a (mode, TP, EP, decode batch) point.

A :class:`ServeSpace` is frozen and picklable (plain numbers, the knowledge root as a string),
so any worker can evaluate any tile of it. Points are numbered in mixed radix over
``SERVE_AXES`` (mode outermost: colocated first, then the prefill/decode split); the number is
the tie-break everywhere.

Per point, decode instance of g = TP x EP GPUs (compiled formulas, NumPy twins, no sympy):
  weights per GPU  F6 (bytes per weight of --weights) of the dense part / TP + F6 of the routed experts / (TP x EP)
  KV per token     F8 over min(TP, KV heads) (FX73: past one KV head per rank the heads are replicated; an MLA latent whole on every rank); sliding-window layers hold at most the window (FX70);
                   each of the EP attention groups holds batch / EP sequences (EP divides the batch)
  memory           weights + batch/EP x FX70 K/V of a request at prompt + output tokens, per GPU <= usable (FX72's vLLM rule: 0.9 x the runtime's total - 5 GiB, as calc kv-concurrency and state)
  decode step      FX75 roofline = max(FX131 compute at MFU, FX132 HBM reads at MBU), context prompt + output/2; a MoE step reads
                   the dense part and FX1400's share of the routed experts (those the batch's tokens route to, balanced routing)
                   + TP all-reduces FX704 = FX703 (2 L) x FX50 ring all-reduce of FX702's message (FX1 wire bytes)
                     over the device's NVLink bandwidth x F20's efficiency
                   + EP All2All (F19 per token, forward) over NVLink when g fits the domain, else scale-out
  colocated        TPOT (FX78) adds the steady chunked-prefill share of a step: batch x prompt / output tokens
                   of FX74 per step; TTFT = FX77 (queue 0) of FX74 at the instance's g GPUs + its TP all-reduces
                   goodput FX138 (decode slots) with FX81 / FX79 at TTFT + (output - 1) x TPOT
  split            decode pool: TPOT = FX78 of the step alone; goodput FX138 with the slot held (output - 1) x TPOT
                   prefill pool: TP from FX151 (smallest that meets TTFT after the KV transfer), FX155 cards
                   per decode instance; TTFT = FX77 (queue = KV transfer F8 x prompt / link) + FX74 + all-reduces
  per GPU          goodput / GPUs (split: decode instance + its share of the prefill pool); per user 1 / TPOT
  speculative      (--speculative) the verify pass FX962 = max((γ + 1) x FX131, FX132) + the TP all-reduces and EP All2All of
                   (γ + 1) x the tokens; v = verify / decode step; TPOT = FX78 speculative (E of FX80, draft cost c) + the
                   chunked-prefill share; speed-up FX960; the roofline batch where it stops paying FX963 (per attention group x EP)
Pruning, before the heavy terms: a batch above (FX134's largest TPOT-meeting batch per attention group + 1) x EP, +1 for float margin, is
never evaluated (TPOT only grows with the batch; with speculation FX134 is asked for TPOT x FX960's speed-up at v = 1, the
most a verify pass that costs at least a plain step can gain); split points the pd-disaggregation tree does not send to
``disaggregate`` (tree walk_many, numeric) are dropped after the step is known.
"""

from __future__ import annotations

import numpy as np

from engine.core.record import dataclass
from engine.plan.evaluate import _Formulas
from engine.plan.speculative import Speculation
from engine.plan.step_model import decode_parts, per_layer, prefill_time, step_terms

MODES = ("colocate", "split")
SERVE_AXES = ("mode", "tp", "ep", "batch")
PRUNE = ("all", "bound", "none")


@dataclass(frozen=True, slots=True)
class ServeSpace:
    root: str
    prompt: int
    output: int
    ttft: float
    tpot: float
    # model
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    attention: str
    params: float
    params_active: float
    expert_params: float
    top_k: int
    kv_bytes: float
    # device
    hbm: float
    hbm_bw: float
    peak: float
    nvlink_bw: float
    scaleout_bw: float
    nvlink_domain: int
    mfu: float
    mbu: float
    allreduce_latency: float  # FX50 step latency per ring step
    kv_link_bw: float
    demand: float  # output tokens/s the fleet serves (one decode instance's goodput where none is given)
    waterline: float
    # prefill pool of the split (chosen once: it does not depend on the decode point)
    tp_prefill: int  # 0 when no TP meets the TTFT target after the KV transfer
    # axes
    modes: tuple[str, ...]
    tp: tuple[int, ...]
    ep: tuple[int, ...]
    batch: tuple[int, ...]
    prune: str = "all"
    bytes_param: float = 2.0  # bytes per stored weight (F6's p; --weights)
    precision: str = "bf16"  # the matrix path of peak (--precision)
    weights: str = "bf16"  # the weights' storage format, for the notes
    kv_cache: str = "bf16"  # the K/V cache's storage format, for the notes
    # MLA (attention == "mla"): the latent per token and layer, replicated on every TP rank (FX73)
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    # the head width FX30's attention term takes for prefill and decode (0: head_dim); MLA prefill runs
    # expanded ((nope + rope + v) / 2: QK over nope + rope, PV over v), decode absorbed ((2 r + rope) / 2)
    attn_dim_prefill: float = 0.0
    attn_dim_decode: float = 0.0
    # sliding-window layers (FX70): window_layers of the layers keep at most sliding_window tokens
    window_layers: int = 0
    sliding_window: int = 0
    moe_layers: int = 0  # layers with routed experts (0: all), for the EP All2All
    n_experts: int = 0  # routed experts per MoE layer (0: dense), for FX1400's share of them a step reads
    # a checkpoint stored in a block-scaled format (the record's storage block, gpt-oss's MXFP4 experts): bytes per
    # routed-expert weight and the stored total, the dense part being the rest (0: bytes_param for everything)
    bytes_param_expert: float = 0.0
    stored_weight_bytes: float = 0.0
    # hybrids (Gated DeltaNet, Mamba-2, KDA beside attention): attn_layers of the layers hold K/V and FX30's attention
    # term (0: all), recurrent_layers keep FX800's fixed state per request, split over TP by heads
    attn_layers: int = 0
    recurrent_layers: int = 0
    state_bytes_layer: float = 0.0
    allreduce_layers: float = 0.0  # FX703's layers (0: layers); Nemotron-H's one all-reduce per block: blocks / 2
    # DeepSeek Sparse Attention: FX888's indexer keys per token (whole on every rank, as the latent), FX920's indexer
    # FLOPs over the whole context, the main attention and its latent reads over the top-k entries only
    index_bytes_per_token: float = 0.0
    index_heads: int = 0
    index_head_dim: int = 0
    index_topk: int = 0
    recurrent_kind: str = ""  # gated_deltanet | kda | mamba2, for the notes
    state_element_bytes: float = 0.0  # bytes per recurrent-state element (4 where the config keeps it in float32), for the notes
    usable_memory: float = 0.0  # per GPU for weights and K/V: FX72's vLLM rule, 0.9 x the runtime's total - 5 GiB (0: F7 of hbm)
    spec: Speculation | None = None  # --speculative: draft length, acceptance, E (FX80) and draft cost; None = plain decoding
    # weight-only quantisation (weights narrower than the matrix products): the calibrated e_dequant the mfu above already
    # carries (mfu = the prefill efficiency x e_dequant, as validate's step model has it); 0 when not applied
    dequant: float = 0.0
    # the calibrated step (engine.plan.step_model) as (constant, value) pairs from knowledge/calibration/fitted.json for the
    # device's generation and the engine (plan serve --engine); () = the book's FX75 roofline at mfu / mbu with FX50 rings
    step: tuple[tuple[str, float], ...] = ()
    # the engine whose default memory rule gives the K/V budget (engine.plan.engine_memory: vllm, sglang, tensorrt-llm;
    # plan serve --engine) from the runtime's total per GPU; "" = FX72's vLLM rule in usable_memory
    memory_rule: str = ""
    gpu_total: float = 0.0

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.modes), len(self.tp), len(self.ep), len(self.batch))

    @property
    def size(self) -> int:
        a, b, c, d = self.shape
        return a * b * c * d


def decode(space: ServeSpace, start: int, stop: int) -> dict[str, np.ndarray]:
    index = np.arange(start, stop, dtype=np.int64)
    rest, out = index.copy(), {}
    for axis, n in zip(reversed(SERVE_AXES), reversed(space.shape), strict=True):
        rest, i = np.divmod(rest, n)
        out[axis] = i
    return {"mode": out["mode"], "tp": np.asarray(space.tp, dtype=float)[out["tp"]], "ep": np.asarray(space.ep, dtype=float)[out["ep"]],
            "batch": np.asarray(space.batch, dtype=float)[out["batch"]], "index": index}


def _allreduce(f: _Formulas, s: ServeSpace, tokens, tp):
    """FX704: FX703 (2 L, forward) all-reduces of FX702's message, each an FX50 ring all-reduce."""
    msg = f("FX702", batch_tokens=tokens, hidden=float(s.hidden))
    eff = f.default("F20", "bandwidth_efficiency")
    one = f("FX50", "allreduce", ranks=tp, step_latency=s.allreduce_latency, collective_wire_bytes=f("FX1", "allreduce", msg_bytes=msg, ranks=tp),
            eff_bandwidth=s.nvlink_bw * eff)
    return f("FX704", tp_allreduce_count=f("FX703", comm_passes=1, layers=float(s.allreduce_layers or s.layers)), collective_time=one)


def _terms(s: ServeSpace, c: dict, f: _Formulas, tp, ep) -> dict:
    """engine.plan.step_model's work terms at TP x EP, weight-only quantisation marked as the search applies it."""
    t = step_terms(s, c, f, tp, ep, read_per_token(s, c, tp))
    t["dq"] = 1.0 if s.dequant else 0.0
    return t


def constants(s: ServeSpace, f: _Formulas | None = None) -> dict:
    """Terms that do not depend on the point (per-token FLOPs and KV, the split's prefill pool)."""
    f = f or _Formulas(s.root)
    L, a, d = float(s.attn_layers or s.layers), float(s.heads), float(s.head_dim)  # L: the layers with K/V and attention
    ctx = s.prompt + s.output / 2
    kv = f("F8", s.attention, layers=L, kv_heads=float(s.kv_heads), heads=a, head_dim=d, kv_bytes=s.kv_bytes,
           kv_lora_rank=float(s.kv_lora_rank), qk_rope_head_dim=float(s.qk_rope_head_dim))

    def cache(n: float) -> float:  # FX70: K/V bytes of one request at n tokens (sliding layers hold at most the window)
        return float(f("FX70", kv_bytes_per_token=kv, layers=L, window_layers=float(s.window_layers), context_tokens=n,
                       sliding_window=float(s.sliding_window or n)))

    def request(n: float) -> float:  # with DSA's indexer keys (FX888) for every cached token
        return cache(n) + s.index_bytes_per_token * n

    def attended(n: float) -> float:  # tokens a query attends, averaged over the layers (DSA: the top-k)
        return min(n, s.index_topk) if s.index_topk else cache(n) / kv

    def flops(n: float, width: float) -> float:  # FX30 at the attended tokens, plus FX920's indexer over all n
        out = float(f("FX30", "include", params_active=s.params_active, layers=L, seq_len=attended(n), heads=a, head_dim=width or d))
        if s.index_topk:
            out += float(f("FX920", layers=L, seq_len=n, index_heads=float(s.index_heads), index_head_dim=float(s.index_head_dim)))
        return out

    # a decode step reads, per sequence, the K/V it attends (DSA: the top-k latents) and every indexer key
    read = kv * attended(ctx) + s.index_bytes_per_token * ctx if s.index_topk else cache(ctx)
    out = dict(kv_token=kv, ctx=ctx, usable=s.usable_memory or f("F7", hbm_capacity=s.hbm), kv_request=request(s.prompt + s.output), kv_prompt=request(s.prompt),
               kv_token_mean=read / ctx,  # bytes per context token at the mean context, what a decode step reads per token
               flops_prefill=flops(s.prompt, s.attn_dim_prefill), flops_decode=flops(ctx, s.attn_dim_decode),
               w_dense=f("F6", "same", params=s.params - s.expert_params, bytes_param=s.bytes_param))
    # FX801: a hybrid's recurrent state, the same at any length (its K/V part is kv_request/kv_prompt)
    out["state"] = float(f("FX801", kv_bytes_per_request=0.0, recurrent_layers=float(s.recurrent_layers),
                           recurrent_state_bytes_per_layer=s.state_bytes_layer)) if s.recurrent_layers else 0.0
    out["handover"] = out["kv_prompt"] + out["state"]  # what a split moves per request: the prompt's K/V and the state
    out["transfer"] = out["handover"] / s.kv_link_bw
    out["w_expert"] = f("F6", "same", params=s.expert_params, bytes_param=s.bytes_param_expert or s.bytes_param) if s.expert_params else 0.0
    if s.stored_weight_bytes:  # FX652: the record's stored total, the routed experts at their format, the rest what remains
        out["w_dense"] = s.stored_weight_bytes - out["w_expert"]
    if s.tp_prefill:
        tpp = float(s.tp_prefill)
        if s.step:  # the calibrated prefill of one prompt on the prefill pool's TP instance
            out["prefill_split"] = float(prefill_time(_terms(s, out, f, tpp, 1.0), dict(s.step)))
        else:
            out["prefill_split"] = f("FX74", "per_token", infer_flops_per_token=out["flops_prefill"], prompt_tokens=float(s.prompt), tp_size=tpp,
                                     peak_flops=s.peak, mfu=s.mfu) + _allreduce(f, s, float(s.prompt), tpp)
        out["ttft_split"] = f("FX77", queue_time=out["transfer"], prefill_time=out["prefill_split"])
    return out


def usable_at(s: ServeSpace, c: dict, w_gpu, g):
    """Bytes per GPU for the weights and K/V of an instance of ``g`` GPUs holding ``w_gpu`` of weights on each: FX72's
    vLLM rule (a constant) or, under ``memory_rule``, that engine's own K/V budget (engine.plan.engine_memory) plus the
    weights (SGLang's reserve grows with the instance; TensorRT-LLM gives 0.9 of what the weights leave)."""
    if not s.memory_rule or not s.gpu_total:
        return c["usable"]
    from engine.plan.engine_memory import kv_budget

    budget, _ = kv_budget(s.memory_rule, s.gpu_total, w_gpu, g)
    return budget + w_gpu


def kv_share(s: ServeSpace, tp):
    """The share of a request's K/V one TP rank holds (FX73): 1 / min(TP, KV heads) (past one KV head per rank the engines
    replicate the heads: vLLM's QKVParallelLinear keeps max(1, kv_heads / TP) per rank with TP / kv_heads replicas, TensorRT-LLM
    replicates the K/V cache when its heads are fewer than the ranks), the whole MLA latent."""
    return 1.0 if s.attention == "mla" else 1.0 / np.minimum(tp, s.kv_heads)


def on_gpu(s: ServeSpace, c: dict, key: str, tp):
    """One request's bytes on each GPU of its TP group: the K/V of ``key`` by FX73's share, the recurrent state
    split by heads (TP divides them)."""
    return c[key] * kv_share(s, tp) + c["state"] / tp


def read_per_token(s: ServeSpace, c: dict, tp):
    """FX132's bytes per context token a decode step reads for one sequence on each GPU: its K/V at the mean
    context, plus the recurrent state read and written back once per step, spread over that context."""
    return c["kv_token_mean"] * kv_share(s, tp) + 2 * c["state"] / (tp * c["ctx"])


def read_weights(s: ServeSpace, c: dict, tp, ep, f: _Formulas, tokens):
    """Weight bytes per GPU a step reads when it routes ``tokens`` tokens through the instance: the dense part, and of
    the routed experts FX1400's expected share (those at least one token is routed to, balanced routing)."""
    dense = c["w_dense"] / tp
    if not (s.expert_params and s.n_experts):
        return dense + c["w_expert"] / (tp * ep)
    share = f("FX1400", top_k=float(s.top_k), n_experts=float(s.n_experts), routed_tokens=np.asarray(tokens, dtype=float))
    return dense + c["w_expert"] / (tp * ep) * share


def bound(s: ServeSpace, tp, ep, c: dict, f: _Formulas) -> np.ndarray:
    """FX134 (tpot_target): the largest batch whose step (FX131 and FX132 alone) meets the TPOT target,
    per (TP, EP), as (floor + 1) x EP sequences per instance. Every evaluated TPOT is at least that step, so no batch
    above it can meet the target."""
    # the fewest weights any batch of the layout reads (a batch holds at least EP sequences, one per attention group), so
    # the step is never overestimated and the bound never prunes a batch that could meet the target
    w_gpu = read_weights(s, c, tp, ep, f, ep)
    target = s.tpot * (s.spec.ideal_speedup if s.spec else 1.0)  # speculative TPOT >= step x (γ c + 1) / E, so step <= TPOT x FX960(v = 1)
    mfu, mbu = s.mfu, s.mbu
    if s.step:  # the calibrated step is at least max(all FLOPs at e_decode, all reads at the larger of e_hbm and e_kv) + its fixed cost
        p = dict(s.step)
        mfu, mbu = p["e_decode"], max(p["e_hbm"], p["e_kv"])
        fixed = p["overhead"] + per_layer(dict(layers=float(s.layers), moe_layers=float((s.moe_layers or s.layers) if s.expert_params else 0)), p)
        if not s.spec and target > fixed:
            target -= fixed
    per_group = f("FX134", "tpot_target", hbm_bandwidth=s.hbm_bw, mbu=mbu, tpot_target=target, weight_bytes=w_gpu, tp_size=1.0,
                  context_tokens=c["ctx"], kv_bytes_per_token_per_gpu=read_per_token(s, c, tp), peak_flops=s.peak * tp, mfu=mfu,
                  infer_flops_per_token=c["flops_decode"], max_concurrent_requests=float(max(s.batch)))
    return (np.asarray(per_group, dtype=float) + 1) * ep  # batch / EP <= x < floor(x) + 1 per attention group


def evaluate(s: ServeSpace, start: int, stop: int, f: _Formulas | None = None) -> dict:
    """Every term of the points start..stop-1 that survive the pruning, and the pruned counts."""
    f = f or _Formulas(s.root)
    c = constants(s, f)
    p = decode(s, start, stop)
    keep = p["batch"] % p["ep"] == 0  # each EP attention group holds whole sequences (a layout rule, not pruning)
    pruned_bound = 0
    if s.prune in ("all", "bound"):
        over = keep & (p["batch"] > bound(s, p["tp"], p["ep"], c, f) + 1)
        pruned_bound, keep = int(over.sum()), keep & ~over
    if s.tp_prefill == 0:  # no prefill pool meets TTFT: the split is infeasible, not pruned
        keep &= p["mode"] == 0
    pruned_early, early_edges = 0, ()
    if s.prune == "all" and keep.any() and (p["mode"][keep] == 1).any():
        ruled, early_edges = tree_early(s, c, {k: v[keep] for k, v in p.items()}, f)
        pruned_early = int(ruled.sum())
        keep[np.flatnonzero(keep)[ruled]] = False
    p = {k: v[keep] for k, v in p.items()}
    tp, ep, B, split = p["tp"], p["ep"], p["batch"], p["mode"] == 1
    g = tp * ep
    w_gpu = c["w_dense"] / tp + c["w_expert"] / (tp * ep)
    kv_gpu = read_per_token(s, c, tp)  # per context token at the mean context, per GPU
    memory = w_gpu + B / ep * on_gpu(s, c, "kv_request", tp)
    usable = usable_at(s, c, w_gpu, g)
    compute = f("FX131", decode_batch=B / ep, infer_flops_per_token=c["flops_decode"], tp_size=tp, peak_flops=s.peak, mfu=s.mfu)

    def weight_reads(tokens):  # FX132 with the weights a step routing ``tokens`` tokens through the instance reads
        return f("FX132", weight_bytes=read_weights(s, c, tp, ep, f, tokens), tp_size=1.0, decode_batch=B / ep, context_tokens=c["ctx"],
                 kv_bytes_per_token_per_gpu=kv_gpu, hbm_bandwidth=s.hbm_bw, mbu=s.mbu)

    cal = dict(s.step)
    if cal:  # the calibrated step (engine.plan.step_model), as validate scores it on the published measurements
        t = _terms(s, c, f, tp, ep)
        parts = decode_parts(t, cal, B)
        step, tp_comm, ep_comm, overhead = parts["matmul"] + parts["attention"], parts["ar"], parts["ep"], parts["fixed"] + parts["seq"]
    else:  # the book's FX75 roofline at mfu / mbu, FX50 rings, F20's All2All
        reads = weight_reads(B)
        step = f("FX75", "roofline", decode_compute_time=compute, decode_memory_time=reads)
        tp_comm = _allreduce(f, s, B / ep, tp)
        if s.expert_params:
            ep_bw = np.where(g <= s.nvlink_domain, s.nvlink_bw, s.scaleout_bw)
            ep_bytes = f("F19", comm_passes=1, top_k=float(s.top_k), hidden=float(s.hidden), ep_size=ep) * B / ep * (s.moe_layers or s.layers)
            ep_comm = f("F20", "nominal_discount", comm_bytes=ep_bytes, nominal_bandwidth=ep_bw, bandwidth_efficiency=f.default("F20", "bandwidth_efficiency"),
                        comm_latency=0.0)
        else:
            ep_comm = np.zeros(B.shape)
        overhead = np.zeros(B.shape)
    core = step + tp_comm + ep_comm
    decode_step = core + overhead
    chunk = f("FX74", "per_token", infer_flops_per_token=c["flops_prefill"], prompt_tokens=B * s.prompt / s.output, tp_size=g, peak_flops=s.peak, mfu=s.mfu)
    tpot = f("FX78", "standard", decode_step_time=np.where(split, core, core + chunk), step_overhead_time=overhead)
    spec = {}
    if s.spec is not None:  # the same step, drafted and verified: TPOT by FX78 speculative plus the chunked-prefill share
        if cal:  # the verify pass: the calibrated step with gamma + 1 tokens per sequence (each reads its K/V once)
            x = decode_parts(t, cal, B, float(s.spec.draft_len + 1))
            verify = (x["matmul"] + x["attention"]) + x["ar"] + x["ep"] + (x["fixed"] + x["seq"])  # summed as the plain step is
        else:
            verify = None
        spec = speculative_terms(f, s, c, tp, ep, B, compute, None if cal else weight_reads((s.spec.draft_len + 1) * B), decode_step, ep_comm, verify)
        spec["tpot_plain"] = tpot
        tpot = spec["spec_tpot_decode"] + np.where(split, 0.0, chunk)
    prefill_colo = _prefill_colo(f, s, c, tp, g)
    ttft = np.where(split, c.get("ttft_split", np.inf), f("FX77", queue_time=0.0, prefill_time=prefill_colo))
    e2e = f("FX79", ttft=np.where(split, 0.0, ttft), output_len=float(s.output), tpot=tpot)
    goodput = f("FX138", "decode_slots", qps=1.0, avg_output_tokens=float(s.output), decode_batch=B, concurrency=f("FX81", qps=1.0, e2e_latency=e2e))
    prefill_gpus = np.where(split, f("FX155", prefill_flop_rate=goodput / s.output * s.prompt * c["flops_prefill"], peak_flops=s.peak, mfu=s.mfu), 0.0)
    per_gpu = goodput / (g + prefill_gpus)
    ok = (memory <= usable) & (ttft <= s.ttft) & (tpot <= s.tpot)
    # fleet for the demand: FX87 instances of the decode instance, and (split) of the prefill pool
    demand = s.demand if s.demand else goodput * s.waterline  # no demand: one replica's goodput at the waterline, i.e. one replica
    inst = f("FX87", token_demand=demand, instance_goodput=goodput, waterline=s.waterline)
    gpus = inst * g
    if s.tp_prefill:
        per_prefill = s.tp_prefill * s.peak * s.mfu / c["flops_prefill"]  # prompt tokens/s of one prefill instance (FX74 rate)
        prompt_demand = f("FX86", "prefill", qps=demand / s.output, avg_input_tokens=float(s.prompt))
        prefill_inst = f("FX87", token_demand=prompt_demand, instance_goodput=per_prefill, waterline=s.waterline)
        gpus = gpus + np.where(split, prefill_inst * s.tp_prefill, 0.0)
    else:
        prefill_inst = 0.0
    out = dict(index=p["index"], mode=p["mode"], tp=tp, ep=ep, batch=B, memory=memory, step=step, tp_comm=tp_comm, ep_comm=ep_comm, overhead=overhead, tpot=tpot, ttft=ttft, usable=np.broadcast_to(usable, B.shape),
               goodput=goodput, per_gpu=per_gpu, user=1 / tpot, gpus=gpus, instances=inst, prefill_instances=np.where(split, prefill_inst, 0.0), ok=ok)
    out.update({k: np.broadcast_to(np.asarray(v, dtype=float), B.shape) for k, v in spec.items() if k in SPEC_KEYS})
    pruned_tree, leaves = 0, {}
    if s.prune == "all" and split.any():
        leaf = np.asarray(tree_leaves(s, c, prefill_colo[split], decode_step[split], gpus[split]))
        ruled = np.zeros(split.shape, dtype=bool)
        ruled[np.flatnonzero(split)] = leaf != "disaggregate"
        pruned_tree = int(ruled.sum())
        leaves = {str(k): int(v) for k, v in zip(*np.unique(leaf[leaf != "disaggregate"], return_counts=True), strict=True)}
        out = {k: v[~ruled] for k, v in out.items()}
    out["pruned_bound"], out["pruned_tree"], out["tree_leaves"], out["points"] = pruned_bound, pruned_tree, leaves, stop - start
    out["pruned_early"], out["early_edges"] = pruned_early, early_edges
    return out


SPEC_KEYS = ("tpot_plain", "spec_verify_ratio", "spec_speedup", "spec_breakeven_batch")


def speculative_terms(f: _Formulas, s: ServeSpace, c: dict, tp, ep, B, compute, reads, decode_step, ep_comm, verify=None) -> dict:
    """A draft-and-verify iteration at each point: the verify pass (FX962 on the roofline, its TP all-reduces and EP
    All2All carrying (γ + 1) x the tokens; ``reads``: FX132 with the weights those tokens route to), v = verify / plain step, the decode part of TPOT (FX78 speculative), the
    speed-up of the decode step (FX960) and the roofline break-even batch of the layout (FX963)."""
    sp = s.spec
    k1 = sp.draft_len + 1
    if verify is None:  # (the calibrated step passes its own verify pass)
        verify = (f("FX962", spec_draft_len=float(sp.draft_len), decode_compute_time=compute, decode_memory_time=reads)
                  + _allreduce(f, s, k1 * B / ep, tp) + k1 * ep_comm)
    v = verify / decode_step
    common = dict(spec_draft_len=float(sp.draft_len), draft_cost_ratio=sp.draft_cost, verify_cost_ratio=v, spec_tokens_per_step=sp.tokens_per_step)
    return dict(spec_verify_ratio=v, spec_tpot_decode=f("FX78", "speculative", decode_step_time=decode_step, **common),
                spec_speedup=f("FX960", **{k: common[k] for k in ("spec_tokens_per_step", "spec_draft_len", "draft_cost_ratio", "verify_cost_ratio")}),
                spec_breakeven_batch=breakeven(s, c, f, tp, ep))


def breakeven(s: ServeSpace, c: dict, f: _Formulas, tp, ep) -> np.ndarray:
    """FX963 per (TP, EP): the decode batch of one instance above which speculation is slower on the roofline (FX131,
    FX132 as the search counts them: each attention group decodes batch / EP sequences on TP GPUs), so per group times
    EP; 0 (never pays) and -1 (pays at every batch) pass through."""
    sp = s.spec
    w_gpu = c["w_dense"] / tp + c["w_expert"] / (tp * ep)
    per_group = f("FX963", spec_tokens_per_step=sp.tokens_per_step, spec_draft_len=float(sp.draft_len), draft_cost_ratio=sp.draft_cost,
                  ridge_intensity=f("FX37", peak_flops=s.peak, hbm_bandwidth=s.hbm_bw), weight_bytes=w_gpu * tp, mfu=s.mfu, mbu=s.mbu,
                  infer_flops_per_token=c["flops_decode"], tp_size=tp, context_tokens=c["ctx"], kv_bytes_per_token_per_gpu=read_per_token(s, c, tp))
    per_group = np.asarray(per_group, dtype=float)
    return np.where(per_group > 0, per_group * ep, per_group)


# what a split point's pd-disaggregation inputs are before its batch terms are computed: the prompt, its K/V and
# the link are constants of the search, the co-located prefill depends on TP x EP alone (the rest need the batch)
EARLY = ("prompt_tokens", "kv_bytes_per_token", "kv_link_bandwidth", "tpot_slo", "prefill_time")


def _prefill_colo(f: _Formulas, s: ServeSpace, c: dict, tp, g):
    """FX74's prefill of one prompt on the co-located instance of g GPUs, with its TP all-reduces (the calibrated
    prefill under a calibrated step)."""
    if s.step:
        return prefill_time(_terms(s, c, f, tp, g / tp), dict(s.step))
    return f("FX74", "per_token", infer_flops_per_token=c["flops_prefill"], prompt_tokens=float(s.prompt), tp_size=g, peak_flops=s.peak,
             mfu=s.mfu) + _allreduce(f, s, float(s.prompt), tp)


def tree_early(s: ServeSpace, c: dict, p: dict, f: _Formulas) -> tuple[np.ndarray, tuple[str, ...]]:
    """The split points ruled out before evaluation: on every route of the pd-disaggregation tree to
    'disaggregate', some edge decided by EARLY inputs alone fails (the transfer boundary, prompt x F8 / link =
    prefill time, is one: beyond it the tree says transfer-bound whatever the batch). Returns the mask over
    ``p``'s points and the conditions of the edges used."""
    from engine.trees.runner import runner

    tree = runner(s.root, "pd-disaggregation")
    routes = tree.routes_to("disaggregate", {"latency_slo": "interactive"})
    early = [[e for e in route if tree.edge_symbols(e) <= set(EARLY) | set(tree.tree.parameters)] for route in routes]
    split = p["mode"] == 1
    ruled = np.zeros(split.shape, dtype=bool)
    if not any(early) or not split.any():
        return ruled, ()
    tp, g = p["tp"][split], p["tp"][split] * p["ep"][split]
    n = len(tp)
    columns = dict(prompt_tokens=np.full(n, float(s.prompt)), kv_bytes_per_token=np.full(n, c["handover"] / s.prompt),
                   kv_link_bandwidth=np.full(n, s.kv_link_bw), tpot_slo=np.full(n, s.tpot), prefill_time=_prefill_colo(f, s, c, tp, g))
    reach = np.zeros(n, dtype=bool)
    for edges in early:
        holds = np.ones(n, dtype=bool)
        for e in edges:
            holds &= tree.edge_holds(e, columns)
        reach |= holds
    ruled[np.flatnonzero(split)] = ~reach
    texts = tuple(dict.fromkeys(tree.tree.nodes[n].branches[i].when if i is not None else f"{n}: otherwise" for edges in early for n, i in edges))
    return ruled, texts


def tree_leaves(s: ServeSpace, c: dict, prefill_time, decode_step, serving_gpus) -> list[str]:
    """The pd-disaggregation tree's leaf for each split point (its numeric walk_many, no sympy)."""
    from engine.trees.runner import runner

    n = len(prefill_time)
    columns = dict(prefill_time=prefill_time, decode_step_time=decode_step, tpot_slo=np.full(n, s.tpot), serving_gpus=serving_gpus,
                   prompt_tokens=np.full(n, float(s.prompt)), kv_bytes_per_token=np.full(n, c["handover"] / s.prompt), kv_link_bandwidth=np.full(n, s.kv_link_bw))
    return runner(s.root, "pd-disaggregation").walk_many({"latency_slo": "interactive"}, columns)
