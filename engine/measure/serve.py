"""A serving measurement's work terms with its layout pinned, and their times under a calibration.

``terms`` runs once per record (the engine's formulas at 100 % of every peak: FLOPs, bytes, collective
payloads and counts of one pinned instance); ``times`` turns the terms into TTFT, TPOT and throughput
for a vector of calibration parameters, cheaply, so the fit can call it thousands of times.

A record states its layout as the engine does (``instance``: EP lives inside the TP ranks, attention DP splits them into
groups); the terms are those of plan serve's instance of g = TP x EP GPUs, TP the attention TP and EP the attention groups,
holding c requests (the record's concurrency over its replicas, capped by the K/V pages that fit, as engines admit):
  decode step  T_d = max(FX131 matrix FLOPs / (peak x e_decode [x e_dequant]), weight bytes / (HBM x e_hbm))
                     + max(FX30's attention FLOPs / (peak x e_decode), FX132 K/V bytes / (HBM x e_kv))  (kernels in turn)
                     + FX704 TP all-reduces (FX50: 2 (TP-1) steps x latency + FX1 wire bytes / (NVLink x e_link))
                     + EP All2All F19 bytes / (link x e_link) + step overhead (FX78's step_overhead_time)
                     + layers x overhead_layer + MoE layers x overhead_moe (each layer's kernels pay a fixed launch,
                       ramp-up and synchronisation time whatever the batch; a MoE layer's routing, top-k, permutation and
                       grouped-GEMM kernels pay more, fitted per engine: the Python engines' MoE layers cost ~0.8 ms each)
                     + c x overhead_seq (the engine's host work per sequence in the step: scheduling, sampling,
                       detokenising and streaming each request's token, which grows with the batch)
  prefill      T_p = FX74 FLOPs of one prompt / (g x peak x e_prefill [x e_dequant]) + its TP all-reduces
               ([x e_dequant]: weight-only quantisation, weights narrower than the matrix products' precision, runs
               its dequantising kernels at a fitted share of the matrix rate)
  TPOT         FX78: T_d + c x T_p / output (each step carries the chunked prefill share of the batch)
  TTFT         FX77: T_p + queue; queue = T_d / 2 (the running step) + M/D/1 wait of the prefills,
               rho x T_p / (2 (1 - rho)) with rho = X x T_p the prefill share of the GPU time
  throughput   Little's law FX81: X = c / E2E requests/s per instance, E2E = TTFT + (output - 1) x TPOT (FX79)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from engine.core.errors import InputError
from engine.measure.generations import Unmapped
from engine.plan.step_model import decode_step, dequant, per_layer, per_sequence, prefill_time, step_terms


def terms(root, m) -> dict:
    """The record's work terms at 100 % of every peak (Unmapped when the engine cannot run its layout)."""
    from engine.plan.evaluate import _Formulas
    from engine.plan.serve_eval import constants, on_gpu, read_per_token

    lay, w = m.layout, m.workload
    if getattr(m, "speculative", None):
        sp = m.speculative
        stated = "acceptance stated" if ("acceptance" in sp or "accept_length" in sp) else "no acceptance stated"
        raise Unmapped(f"speculative decoding ({sp['method']}, {sp['draft_tokens']} draft tokens, {stated}): validate predicts plain decoding "
                       "only; plan serve --speculative models it with a stated acceptance")
    if lay.get("pp", 1) > 1:
        raise Unmapped("pipeline-parallel serving is not modelled")
    if lay.get("prefill_workers") or lay.get("decode_workers"):
        raise Unmapped("disaggregated prefill/decode pools are not evaluated by validate yet")
    tp, ep, g = instance(lay, m.engine)  # the engine model's attention TP, attention groups and GPUs per instance
    if m.gpus % g:
        raise Unmapped(f"{m.gpus} GPUs are not a multiple of the instance's {g} GPUs")
    replicas = m.gpus // g
    prec = m.precision
    computed = compute_precision(str(root), m.device, prec)
    s = _space(str(root), m.model, m.device, int(w["prompt"]), int(w["output"]), prec.get("weights"), prec.get("kv_cache"), computed)
    if tp not in s.tp:
        raise Unmapped(f"TP {tp} does not divide the model's heads (valid: {', '.join(map(str, s.tp))})")
    f = _Formulas(str(root))
    c0 = constants(s, f)
    w_dense = c0["w_dense"] / tp
    w_expert = c0["w_expert"] / (tp * ep) if s.expert_params else 0.0
    per_req = float(on_gpu(s, c0, "kv_request", tp))
    # the K/V pages the engine's own memory rule leaves (FX72 with the engine's defaults, issue 27 section 4)
    kv = _budget(str(root), m.device, m.engine, w_dense + w_expert, g)
    limit = _limits(str(root), m.device, m.engine, m.engine_version)  # the scheduler's token budget and running cap
    fits = int(max(0.0, kv) // per_req) * ep if per_req > 0 else 10**9
    if fits < 1:
        raise Unmapped("the weights and one request's K/V do not fit this instance")
    # per sequence in the batch (each EP attention group holds c / EP of them): FX131 FLOPs, FX132 K/V bytes, FX702 message,
    # F19's All2All (engine.plan.step_model, the step plan serve's search times the same way)
    st = {k: float(v) for k, v in step_terms(s, c0, f, tp, ep, read_per_token(s, c0, tp)).items()}
    experts = float(_experts(root, m.model)) if s.expert_params else 0.0
    # a closed-loop run of N requests: the client keeps ``clients`` of them in flight (its --max-concurrency; all N when it
    # states none) and starts each one's TTFT clock when it sends it; the engine runs as many as its K/V pages admit, the
    # rest wait in its queue for a slot (solved in times)
    n = 0.0 if w.get("rate") else float(w.get("requests") or 0) / replicas
    want = _concurrency(w, replicas)
    clients = want if want else n
    st.update(fixed=float(clients), rate=float(w.get("rate") or 0) / replicas, fits=float(fits), burst=n, run=float(w.get("requests") or 0) / replicas,
              stat=_STAT.get(m.statistic, -1.0), g=float(g), replicas=float(replicas), output=float(s.output), ctx=float(c0["ctx"]), experts=experts,
              budget=float(limit[0]), max_running=float(limit[1] or 10**9), prefill_first=float(prefill_first(m.engine, m.engine_version)),
              on_demand=float(ENGINE_ADMISSION.get((m.engine or "").lower()) == "on-demand"), dq=float(weight_only(prec, computed)),
              capped=bool(clients and fits < clients))
    return st


def instance(lay: dict, engine: str | None = None) -> tuple[int, int, int]:
    """A record's layout as the engine states it -> (attention TP, attention groups, GPUs per instance) of the engine model,
    whose instance of TP x EP GPUs runs attention in EP groups of TP ranks (each holding its share of the requests) and
    splits the routed experts over all TP x EP GPUs (engine.plan.serve_eval).

    The engines place the expert-parallel group inside the tensor-parallel ranks, not beside them:
      TensorRT-LLM  moe_tensor_parallel_size x moe_expert_parallel_size = tensor_parallel_size; enable_attention_dp runs
                    attention on every rank for its own requests (attention DP = TP, its GEMM weights replicated)
      SGLang        --ep-size equals or divides --tp-size; --enable-dp-attention splits the --tp-size ranks into --dp-size
                    attention groups of tp / dp ranks (attn_tp_size = tp_size // dp_size); releases to 0.4.3 set dp = tp
      vLLM          --enable-expert-parallel spreads the experts over TP x DP ranks; --data-parallel-size runs attention
                    data parallel beside TP (an instance of TP x DP GPUs)
    So an instance is the record's tp GPUs (vLLM: tp x dp with attention_dp), EP does not multiply it, and each GPU holds
    1/tp of the routed experts' weights whatever EP is (experts / EP of the experts, each split tp / EP ways as MoE-TP).
    Without attention DP that is the engine model's TP = tp at EP 1 (the MoE output reduced with the TP all-reduce);
    with it, attention groups of tp / dp ranks (dp unstated: dp = tp, every rank its own requests)."""
    tp, ep, dp = int(lay.get("tp", 1)), int(lay.get("ep", 1)), int(lay.get("dp", 1))
    if not lay.get("attention_dp"):
        if ep > 1 and tp % ep:
            raise Unmapped(f"EP {ep} does not divide TP {tp}: the engines place the expert-parallel ranks inside the TP group")
        return tp, 1, tp
    if (engine or "").lower() == "vllm":  # DP beside TP: an instance of tp x dp GPUs, attention TP tp in dp groups
        return tp, dp, tp * dp
    groups = dp if dp > 1 else tp
    if tp % groups:
        raise Unmapped(f"attention DP {groups} does not divide TP {tp} (the attention groups split the TP ranks)")
    if ep > 1 and tp % ep:
        raise Unmapped(f"EP {ep} does not divide TP {tp}: the engines place the expert-parallel ranks inside the TP group")
    return tp // groups, groups, tp


def engine_layout(tp: int, ep: int, engine: str | None = None) -> dict:
    """plan serve's TP x EP (an instance of TP x EP GPUs, attention in EP groups of TP ranks, experts over all of them) as
    a record states it in the engine's terms; :func:`instance` reads it back as (tp, ep, tp x ep)."""
    if ep <= 1:
        return {"tp": tp}
    if (engine or "").lower() == "vllm":  # --tensor-parallel-size TP --data-parallel-size EP --enable-expert-parallel
        return {"tp": tp, "dp": ep, "ep": tp * ep, "attention_dp": True}
    return {"tp": tp * ep, "dp": ep, "ep": tp * ep, "attention_dp": True}  # SGLang --tp-size TP x EP --dp-size EP --enable-dp-attention


def compute_precision(root: str, device: str, prec: dict) -> str:
    """The matrix products' precision of a record: as stated, else its weights' format where the device has a peak at it,
    else BF16: an engine runs weights narrower than the GPU's tensor cores as weight-only quantisation, dequantised to
    BF16 inside the matrix kernels (vLLM's Marlin and Triton MoE kernels for MXFP4 on Hopper, Ampere and CDNA3, FP8 on
    Ampere), so the bytes are the weights' and the FLOPs run at the BF16 peak."""
    if prec.get("compute"):
        return prec["compute"]
    weights = str(prec.get("weights") or "bf16").strip().lower()
    from engine.domain.storage import COMPUTE_BITS

    if weights not in COMPUTE_BITS or COMPUTE_BITS[weights] >= 16:
        return weights
    return weights if weights in _formats(root, device) else "bf16"


def weight_only(prec: dict, computed: str) -> bool:
    """Whether the record runs weight-only quantisation: weights narrower than the precision its matrix products run at
    (MXFP4 or FP8 weights dequantised to BF16 inside the kernels), whose kernels reach a share of the BF16 matrix rate
    of their own (the fitted e_dequant)."""
    from engine.domain.storage import COMPUTE_BITS

    weights = str(prec.get("weights") or "bf16").strip().lower()
    return weights != computed and COMPUTE_BITS.get(weights, 16) < COMPUTE_BITS.get(computed, 16)


@lru_cache(maxsize=64)
def _formats(root: str, device: str) -> tuple[str, ...]:
    """The precisions and block-scaled formats the device states a dense peak for."""
    from engine.core.errors import InputError
    from engine.domain import hardware
    from engine.kb.knowledge import load_single_folder

    try:
        dev = hardware.find(load_single_folder(root, "hardware"), device, "--device")
    except InputError:
        return ()
    dense = [p for p in dev.peaks if not p.sparse]
    return tuple(sorted({p.precision for p in dense} | {f for p in dense for f in p.formats}))


@lru_cache(maxsize=512)
def _space(root: str, model: str, device: str, prompt: int, output: int, weights, kv_cache, precision: str):
    """plan serve's space for the record at 100 % of every peak (one per model, device, lengths and precisions)."""
    from engine.plan.serve import build_serve

    try:
        return build_serve(root, model, device, prompt=prompt, output=output, ttft=1e9, tpot=1e9, max_batch=1, mfu=1.0, mbu=1.0, weights=weights,
                           kv_cache=kv_cache, precision=precision, allreduce_latency=0.0, split=False, prune="none")
    except InputError as exc:
        raise Unmapped(f"{exc.field}: {exc.message}") from None


def _budget(root: str, device: str, engine, weights: float, world: int) -> float:
    from engine.plan.engine_memory import budget

    try:
        return budget(_device_values(root, device), engine, weights, world).bytes
    except InputError as exc:
        raise Unmapped(f"{exc.field}: {exc.message}") from None


def _limits(root: str, device: str, engine, version) -> tuple[int, int | None]:
    from engine.plan.engine_memory import batch_limits, driver_total

    try:
        total = driver_total(_device_values(root, device))[0]
    except InputError:
        total = 0.0
    return batch_limits(engine, version, total, device)


@lru_cache(maxsize=64)
def _device_values(root: str, device: str) -> dict:
    from engine.domain import presets

    return dict(presets.load(root, None, device))


@lru_cache(maxsize=256)
def _experts(root, model: str) -> int:
    from engine.domain import presets
    from engine.plan.space import _preset

    try:
        mv = _preset(presets, root, model, None, "bf16", "--model")
    except InputError:  # a hybrid's presets come from the table calc kv-concurrency reads (as plan serve takes them)
        mv = _preset(presets, root, model, None, "bf16", "--model", calculator="calc:kv-concurrency")
    return int(mv.get("n_experts") or 0) if mv.get("model_arch") == "moe" else 0


_STAT = {"median": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}  # a latency statistic's quantile (the mean and a single run: -1)


def _concurrency(w: dict, replicas: int) -> float:
    if w.get("rate"):
        return 0.0  # open loop: the requests in flight follow from the rate (Little's law, solved in times)
    if w.get("concurrency"):
        return w["concurrency"] / replicas
    if w.get("batch"):
        return float(w["batch"])
    return 0.0  # unstated: as many as fit (a max-throughput run)


# the step (engine.plan.step_model: one definition for validate, the simulation and plan serve's search)
_step = decode_step
_per_layer = per_layer
_per_sequence = per_sequence
_dequant = dequant


def times(t: dict[str, np.ndarray], p: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """TTFT, TPOT, E2E (s) and throughputs of terms ``t`` under parameters ``p`` (arrays, one entry per record):
    e_prefill, e_decode, e_hbm, e_link, ar_latency (s per ring step), overhead (s per step), overhead_seq (s per
    sequence in a step), e_dequant (the share of the matrix rate weight-only kernels reach), overhead_layer and overhead_moe
    (s per layer and per MoE layer in a step)."""
    prefill = prefill_time(t, p)
    c = np.where(t["fixed"] > 0, t["fixed"], _slots(t))  # the clients in flight (as many as the engine runs when unstated)
    open_loop = t["rate"] > 0
    if open_loop.any():  # c = rate x E2E (FX81), iterated from one request in flight, on the open-loop rows alone
        k = np.flatnonzero(open_loop)
        ts, ps, pre = {n: v[k] for n, v in t.items()}, {n: v[k] for n, v in p.items()}, prefill[k]
        ck = np.ones(len(k))
        # at most what the engine runs at once, and never more than the run's requests: an open loop of N requests
        # offered faster than the engine completes them holds at most N in flight (the rest of its overload is queue)
        top = np.where(ts.get("run", np.zeros(len(k))) > 0, np.minimum(_slots(ts), ts.get("run", np.zeros(len(k)))), _slots(ts))
        for _ in range(12):
            e2e = _closed(ts, ps, ck, pre, burst=False)[0]
            ck = np.clip(0.5 * ck + 0.5 * ts["rate"] * e2e, 1.0, top)
        c = c.copy()
        c[k] = ck
    e2e, ttft, tpot, x = _closed(t, p, c, prefill)
    x = np.where(open_loop, np.minimum(t["rate"], x), x)
    out_tps = x * t["output"]
    return dict(ttft=ttft, tpot=tpot, itl=tpot, e2e_latency=e2e, request_throughput=x * t["replicas"],
                output_throughput=out_tps * t["replicas"], output_throughput_per_gpu=out_tps / t["g"],
                total_throughput_per_gpu=x * (t["output"] + t["prompt"]) / t["g"])


# K/V admission by engine: a request's whole length reserved at admission (SGLang, TensorRT-LLM's guaranteed-no-evict) or
# its pages taken as it grows, with preemption when they run out (vLLM); engine.measure.simulate runs both
ENGINE_ADMISSION = {"vllm": "on-demand", "sglang": "reserve", "tensorrt-llm": "reserve"}


def prefill_first(engine: str | None, version: str | None) -> bool:
    """Whether the engine release runs prompts in steps of their own while decodes wait (SGLang's scheduler, which runs a
    new prefill batch whenever one forms unless --enable-mixed-chunk; vLLM's V0 engine, before 0.8, without chunked
    prefill), rather than mixing prompt chunks into every decode step (vLLM's V1 engine, the default from 0.8.0;
    TensorRT-LLM's in-flight batching). engine.measure.replay explains what it does to a run."""
    import re

    name = (engine or "").lower()
    if name == "sglang":
        return True
    if name == "vllm":
        v = re.match(r"v?(\d+)\.(\d+)", (version or "").strip())
        return bool(v) and (int(v.group(1)), int(v.group(2))) < (0, 8)
    return False


QUANTILES = (np.arange(256) + 0.5) / 256
# the prompt tokens one engine step may carry: vLLM's max_num_batched_tokens, SGLang's chunked_prefill_size on 80-141 GB
# GPUs, TensorRT-LLM's max_num_tokens, 8192 each by default (engine.measure.simulate uses the same); a row's terms carry
# its engine release's own (engine.plan.engine_memory.batch_limits: vLLM V1 on an A100 or a smaller GPU, 2048)
TOKEN_BUDGET = 8192


def _slots(t):
    """The requests the engine runs at once: as many as its K/V pages hold, within its max running requests."""
    return np.minimum(t["fits"], t["max_running"]) if "max_running" in t else t["fits"]


_RANKS: dict = {}
_WIDE = 1 << 40  # above any request index: row r's ranks as r x _WIDE + i form one ascending array over all rows


def _ranks(n: np.ndarray):
    """Per row of a run of n requests: i = ceil(n x QUANTILES) (the request at each quantile, ascending along the row), those
    ranks as one ascending key array over all rows (to count the quantiles at or below a rank, every row at once) and their
    running sums. The same for every call of a fit on one table, so kept (a handful of tables at a time)."""
    key = n.tobytes()
    got = _RANKS.get(key)
    if got is None:
        if len(_RANKS) > 16:
            _RANKS.clear()
        i = np.ceil(np.outer(n, QUANTILES))
        flat = (np.arange(len(n))[:, None] * _WIDE + i.astype(np.int64)).ravel()
        got = _RANKS[key] = (i, flat, np.concatenate([np.zeros((len(n), 1)), np.cumsum(i, axis=1)], axis=1))
    return got


def _below(flat: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Per row, how many of its quantiles' ranks are at most m (a rank is a whole request: at most floor(m))."""
    rows = np.arange(len(m))
    top = np.clip(np.floor(m), -1, _WIDE - 1).astype(np.int64)
    return np.searchsorted(flat, rows * _WIDE + top, side="right") - rows * len(QUANTILES)


def _closed(t, p, clients, prefill, burst=True):
    """A closed loop of ``clients`` requests per instance (the engine runs c = min(clients, fits) of them, the rest wait
    for a K/V slot): E2E, TTFT, TPOT and requests/s (Little's law, FX81)."""
    c = np.minimum(clients, _slots(t))
    step = _step(t, p, c)
    # FX78 with the chunked-prefill share of each step: while one request decodes, each of the c - 1 others starts
    # a new request about once (closed loop, steady state), and its prefill runs inside those steps
    # a step carries at most the engine's token budget of prompt tokens (TOKEN_BUDGET / prompt prompts), however many
    # wait: a burst of short prompts spreads over the steps instead of landing on one request's few tokens
    tpot = step + np.minimum(np.maximum(c - 1, 0) / t["output"], t.get("budget", TOKEN_BUDGET) / t["prompt"]) * prefill
    # a closed loop's request arrives as another finishes, at a step boundary; an open loop's at random, into a running
    # step (half a step on average)
    residual = np.where(t["rate"] > 0, step / 2, 0.0)
    ttft = prefill + residual
    # steady state: an M/D/1 wait for the prefills of the others, rho = X T_p (a closed loop's request never waits for
    # its own client's: the other c - 1 send X (c - 1) / c of the prompts)
    others = np.where(t["rate"] > 0, c, np.maximum(c - 1, 0))
    for _ in range(3):
        e2e = ttft + (t["output"] - 1) * tpot
        rho = np.minimum(others / e2e * prefill, 0.95)
        ttft = prefill + residual + rho * prefill / (2 * (1 - rho))
    e2e = ttft + (t["output"] - 1) * tpot
    x = c / e2e  # requests/s the engine completes (FX81 over the requests it runs)
    # the clients beyond the engine's c wait in its queue: by Little's law on that queue, q = clients - c requests
    # ahead drain at X per second, a wait of q / X before a slot frees
    slot = np.maximum(clients - c, 0.0) / x
    steady = ttft - prefill + slot
    # a benchmark of N requests sends its first `clients` at once into an idle engine: request i <= c waits for the
    # i - 1 prefills before it; request c < i <= clients for the (i - c)-th slot to free; later ones (sent as earlier ones finish) wait the
    # steady-state time. The statistic the source reports (mean, median, a percentile) is taken over the N requests.
    n = t["burst"]
    run = np.flatnonzero((n >= 1) & burst)
    stat = t.get("stat", np.full(len(c), -1.0))
    queued = steady.copy()  # a row with no burst waits the steady-state time at every quantile: its mean and quantiles are that
    if len(run):  # the per-request waits over the run's quantiles, only for the rows that have them (the fit calls this often)
        cr, sr, top, pr, xr = c[run], steady[run], np.maximum(clients[run], 1), prefill[run], x[run]
        i, flat, cum = _ranks(np.maximum(n[run], 1))
        # along a row the ranks ascend, so the quantiles split into three runs: the first wave's prefills ((i - 1) T_p, i <= c),
        # the clients waiting for a slot ((i - c) / X, c < i <= clients) and the steady-state requests after them; the mean
        # is those runs' sums (running sums of the ranks), with no per-quantile array
        last = _below(flat, top)
        first = np.minimum(_below(flat, cr), last)
        rows = np.arange(len(run))
        wave, slot = cum[rows, first], cum[rows, last] - cum[rows, first]
        queued[run] = (pr * (wave - first) + (slot - cr * (last - first)) / xr + (len(QUANTILES) - last) * sr) / len(QUANTILES)
        q = stat[run] >= 0
        if q.any():  # a median or percentile: the rows' waits in full, sorted
            iq, cq = i[q], cr[q][:, None]
            wait = np.where(iq <= top[q][:, None], np.where(iq <= cq, (iq - 1) * pr[q][:, None], (iq - cq) / xr[q][:, None]), sr[q][:, None])
            k = np.clip(np.round(stat[run][q] * len(QUANTILES) - 0.5), 0, len(QUANTILES) - 1).astype(int)
            queued[run[q]] = np.take_along_axis(np.sort(wait, axis=1), k[:, None], 1)[:, 0]
    ttft = prefill + queued
    e2e = ttft + (t["output"] - 1) * tpot
    return e2e, ttft, tpot, x
