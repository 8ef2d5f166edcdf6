"""A discrete-event simulation of one serving instance: continuous batching with chunked prefill (issue 27, section 1).

Each engine step runs every decoding request's next token and as many prompt tokens as the step's token budget
leaves (FCFS, a prompt split across steps when it does not fit: chunked prefill); a request's first token comes at
the end of the step that finishes its prompt. Requests are admitted while the K/V pages hold them:

  reserve    (SGLang, TensorRT-LLM's guaranteed-no-evict) a request enters only when its prompt + output tokens fit
             beside those already reserved; nothing is ever evicted
  on-demand  (vLLM) a request enters when its prompt fits in the free pages; as decodes grow and the pages run
             out, the most recently admitted request is preempted, its pages freed, and it is recomputed later

A step's time is the engine's own step model (``engine.measure.serve``'s terms under a calibration): the matrix
kernels bound by their FLOPs (decode and prefill tokens at their efficiencies) or by the weights the step's tokens
route to, the attention kernels by their FLOPs or the K/V they read, TP all-reduces and EP All2All of the step's
tokens, the fixed costs per step, per layer and per MoE layer, and the host's share per sequence in the step (a
prompt counted by its share of tokens in the step).

Clients are closed-loop (a fixed number in flight, each sending its next request when the last one finishes, as
benchmark tools run) or open-loop (Poisson arrivals, gamma arrivals with a coefficient of variation, or a trace of
arrival times). Prompt and output lengths are fixed, uniform in [ratio x L, L] (the benchmark tools' range ratio),
lognormal around L, or a trace. Deterministic for a seed.

Why a plain event loop and not SimPy: the only concurrency is the engine's step clock (requests never block on one
another except through the scheduler's admission), so a process-based simulator adds a generator switch per
request event and nothing the model needs; between events the batch is constant and runs of pure-decode steps are
skipped in one vectorised NumPy evaluation.
"""

from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np

from engine.core.errors import InputError
from engine.core.record import dataclass
from engine.measure.serve import ENGINE_ADMISSION, TOKEN_BUDGET, _per_layer  # noqa: F401  (one budget, admission table and per-layer cost for the closed forms and the simulation)

ADMISSION = ("reserve", "on-demand")
ARRIVALS = ("poisson", "gamma", "trace")
LENGTHS = ("fixed", "uniform", "lognormal", "trace")
SCHEDULES = ("mixed", "prefill-first")


@dataclass(frozen=True, slots=True)
class Result:
    arrive: np.ndarray  # s, per request
    first: np.ndarray  # s, first token
    finish: np.ndarray  # s, last token
    prompt: np.ndarray
    output: np.ndarray
    steps: int
    preemptions: int
    kv_time: np.ndarray  # s, sampled at each event
    kv_used: np.ndarray  # share of the K/V capacity in use at kv_time
    in_system: float  # time-average number of requests in the system (sent, not finished)
    makespan: float

    @property
    def ttft(self) -> np.ndarray:
        return self.first - self.arrive

    @property
    def tpot(self) -> np.ndarray:  # the benchmark tools' TPOT: (E2E - TTFT) / (output - 1), requests with 2+ tokens
        many = self.output > 1
        return (self.finish[many] - self.first[many]) / (self.output[many] - 1)

    @property
    def e2e(self) -> np.ndarray:
        return self.finish - self.arrive

    def summary(self) -> dict:
        out = {}
        for name, v in (("ttft", self.ttft), ("tpot", self.tpot), ("e2e_latency", self.e2e)):
            out[name] = {"mean": float(v.mean()) if len(v) else None,
                         **{f"p{q}": float(np.percentile(v, q)) if len(v) else None for q in (50, 90, 99)}}
        span = self.makespan
        out["request_throughput"] = float(len(self.arrive) / span) if span > 0 else None
        out["output_throughput"] = float(self.output.sum() / span) if span > 0 else None
        out["total_throughput"] = float((self.output.sum() + self.prompt.sum()) / span) if span > 0 else None
        out["preemptions"] = int(self.preemptions)
        out["steps"] = int(self.steps)
        out["kv_peak"] = float(self.kv_used.max()) if len(self.kv_used) else 0.0
        out["in_system"] = self.in_system
        # Little's law on the whole run: time-average in system = throughput x mean E2E
        out["little"] = {"in_system": self.in_system, "rate_x_e2e": float(len(self.arrive) / span * self.e2e.mean()) if span > 0 else None}
        return out


class StepModel:
    """The time of one engine step from the serving terms ``t`` and parameters ``p`` (plain floats)."""

    def __init__(self, t: dict, p: dict):
        g = lambda k: float(np.asarray(t[k]).reshape(-1)[0])  # noqa: E731
        q = lambda k: float(np.asarray(p[k]).reshape(-1)[0])  # noqa: E731
        self.ep = g("ep")
        self.experts, self.top_k = g("experts"), g("top_k")
        self.w_dense, self.w_expert = g("w_dense"), g("w_expert")
        dq = q("e_dequant") ** g("dq") if "e_dequant" in p and "dq" in t else 1.0  # weight-only kernels' share of the matrix rate
        self.dec = g("cd1") / (g("peak") * q("e_decode") * dq)  # s per decode token's matrix FLOPs
        self.pre = g("cp") / g("prompt") / (g("peak") * q("e_prefill") * dq)  # s per prompt token's FLOPs
        self.att = g("ca1") / g("ctx") / (g("peak") * q("e_decode"))  # s per attended context token (FLOPs)
        self.kv = g("kv1") / g("ctx") / (g("hbm") * q("e_kv"))  # s per context token's K/V read
        self.hbm = g("hbm") * q("e_hbm")
        self.ar_fixed = g("ar_n") * g("ar_steps") * q("ar_latency")
        self.ar_tok = g("ar_n") * g("ar1") / (g("link") * q("e_link"))
        self.ep_tok = g("ep1") / (g("ep_link") * q("e_link"))
        # the step's fixed cost: per step, and per layer and MoE layer as the closed form counts it (one rule for both)
        self.overhead = q("overhead") + float(np.asarray(_per_layer(t, p)).reshape(-1)[0])
        self.per_seq = q("overhead_seq") if "overhead_seq" in p else 0.0  # host time per sequence in a step
        self.prompt = g("prompt")

    def one(self, nd: float, ctx_sum: float, pf: float) -> float:
        """``__call__`` for plain floats (the event loop's common case, without NumPy's per-call cost)."""
        ep = self.ep
        tokens = (nd + pf) / ep
        weights = self.w_dense + self.w_expert * ((1 - (1 - self.top_k / self.experts) ** (nd + pf)) if self.experts > 0 else 1.0)
        matmul = max(nd / ep * self.dec + pf / ep * self.pre, weights / self.hbm)
        attention = ctx_sum / ep * max(self.att, self.kv)
        ar = self.ar_fixed + tokens * self.ar_tok if self.ar_tok > 0 else 0.0
        return matmul + attention + ar + tokens * self.ep_tok + self.overhead + (nd + pf / self.prompt) * self.per_seq

    def __call__(self, nd, ctx_sum, pf):
        """Seconds for a step of ``nd`` decoding requests holding ``ctx_sum`` context tokens and ``pf`` prompt tokens
        (scalars, or NumPy arrays of equal shape)."""
        ep = self.ep
        tokens = (nd + pf) / ep
        if self.experts > 0:
            touched = 1 - (1 - self.top_k / self.experts) ** (nd + pf)
            weights = self.w_dense + self.w_expert * touched
        else:
            weights = self.w_dense + self.w_expert
        matmul = np.maximum(nd / ep * self.dec + pf / ep * self.pre, weights / self.hbm)
        attention = np.maximum(ctx_sum / ep * self.att, ctx_sum / ep * self.kv)
        ar = np.where(self.ar_tok > 0, self.ar_fixed + tokens * self.ar_tok, 0.0)
        return matmul + attention + ar + tokens * self.ep_tok + self.overhead + (nd + pf / self.prompt) * self.per_seq


def lengths(kind: str, mean: int, n: int, rng, *, ratio: float = 1.0, sigma: float = 0.0, trace=None, field: str = "--lengths") -> np.ndarray:
    """n token counts: fixed, uniform in [ratio x mean, mean], lognormal with median ``mean``, or a trace."""
    if kind == "fixed":
        return np.full(n, int(mean), dtype=np.int64)
    if kind == "uniform":
        if not 0 < ratio <= 1:
            raise InputError(field, f"range ratio {ratio!r} is not in (0, 1]")
        return rng.integers(max(1, int(math.ceil(ratio * mean))), int(mean) + 1, size=n)
    if kind == "lognormal":
        if not sigma > 0:
            raise InputError(field, f"lognormal sigma {sigma!r} is not positive")
        return np.maximum(1, np.round(mean * np.exp(sigma * rng.standard_normal(n)))).astype(np.int64)
    if kind == "trace":
        arr = np.asarray(trace, dtype=np.int64)
        if arr.ndim != 1 or len(arr) < n or (arr[:n] < 1).any():
            raise InputError(field, f"the trace needs at least {n} positive token counts")
        return arr[:n]
    raise InputError(field, f"{kind!r} is not a length distribution (known: {', '.join(LENGTHS)})")


def arrivals(kind: str, rate: float, n: int, rng, *, cv: float = 1.0, trace=None) -> np.ndarray:
    """n arrival times (s) of an open loop: Poisson at ``rate``/s, gamma with coefficient of variation ``cv``, or a trace."""
    if kind == "trace":
        arr = np.asarray(trace, dtype=float)
        if arr.ndim != 1 or len(arr) < n or (np.diff(arr[:n]) < 0).any():
            raise InputError("--arrival", f"the trace needs at least {n} non-decreasing arrival times")
        return arr[:n] - arr[0]
    if not rate > 0:
        raise InputError("--rate", f"{rate!r} is not a positive request rate")
    if kind == "poisson":
        gaps = rng.exponential(1.0 / rate, size=n)
    elif kind == "gamma":
        if not cv > 0:
            raise InputError("--cv", f"{cv!r} is not a positive coefficient of variation")
        shape = 1.0 / cv**2
        gaps = rng.gamma(shape, 1.0 / (rate * shape), size=n)
    else:
        raise InputError("--arrival", f"{kind!r} is not an arrival process (known: {', '.join(ARRIVALS)})")
    gaps[0] = 0.0
    return np.cumsum(gaps)


def simulate(step: StepModel, prompt: np.ndarray, output: np.ndarray, *, capacity: float, concurrency: int | None = None,
             arrive: np.ndarray | None = None, token_budget: int = TOKEN_BUDGET, max_running: int | None = None,
             admission: str = "reserve", schedule: str = "mixed") -> Result:
    """Run the requests (``prompt``/``output`` token counts) through one instance holding ``capacity`` K/V tokens.

    Closed loop: ``concurrency`` clients, each sending the next request when its last one finishes (arrive is then
    computed). Open loop: ``arrive`` gives each request's arrival time."""
    n = len(prompt)
    prompt = np.asarray(prompt, dtype=np.int64)
    output = np.asarray(output, dtype=np.int64)
    if schedule not in SCHEDULES:
        raise InputError("--schedule", f"{schedule!r} is not a step schedule (known: {', '.join(SCHEDULES)})")
    if admission not in ADMISSION:
        raise InputError("--admission", f"{admission!r} is not an admission policy (known: {', '.join(ADMISSION)})")
    if (prompt + output > capacity).any():
        raise InputError("capacity", f"a request of {int((prompt + output).max())} tokens does not fit the {capacity:.0f} K/V tokens of the instance")
    if token_budget < 1:
        raise InputError("--token-budget", f"{token_budget!r} is not a positive token count")
    P, OUT = prompt.tolist(), output.tolist()
    closed = arrive is None
    if closed and not (concurrency and concurrency >= 1):
        raise InputError("--concurrency", "a closed loop needs a positive concurrency")
    cap_running = max_running or n
    t_arr = [0.0] * n if closed else np.asarray(arrive, dtype=float).tolist()
    first = [math.nan] * n
    finish = [math.nan] * n
    generated = [0] * n  # tokens produced so far (the first one at the end of its prompt)
    pending = deque()  # sent, not admitted (FCFS; preempted requests go back to its front)
    nxt = 0  # the next request to send
    now = 0.0
    if closed:
        for _ in range(min(concurrency, n)):
            t_arr[nxt] = 0.0
            pending.append(nxt)
            nxt += 1
    prefill = deque()  # [index, prompt tokens still to run, tokens to recompute] admitted, prompt not finished
    decode = []  # heap of (finish step, admission serial, index)
    dec_set = {}  # index -> (start step, serial) of decoding requests
    ctx_sum = 0  # context tokens of the decoding requests
    used = 0  # K/V tokens held (on-demand) or reserved (reserve)
    serial = 0
    step_no = 0  # decode steps run (a prompt-only step of prefill-first is not one)
    prompt_steps = 0
    preempted = 0
    kv_t, kv_u = [], []
    area = 0.0  # integral of the requests in the system over time
    in_sys = len(pending)
    done = 0
    held = {}  # index -> tokens reserved or held for it

    def admit():
        nonlocal used, serial
        while pending and len(prefill) + len(dec_set) < cap_running:
            i = pending[0]
            need_now = P[i] + generated[i]
            need = P[i] + OUT[i] if admission == "reserve" else need_now
            if used + need > capacity:
                break
            pending.popleft()
            used += need
            held[i] = need
            serial += 1
            prefill.append([i, need_now, serial])

    while done < n:
        if not closed:  # open loop: requests that arrived by now
            while nxt < n and t_arr[nxt] <= now:
                pending.append(nxt)
                area += now - t_arr[nxt]  # in the system since it arrived, inside the step that just ran
                nxt += 1
                in_sys += 1
        admit()
        nd = len(dec_set)
        if not prefill and nd == 0:
            if closed or nxt >= n:
                if pending:
                    raise InputError("capacity", "a request cannot be admitted into an empty instance")
                break
            area += in_sys * (t_arr[nxt] - now)
            now = t_arr[nxt]  # idle until the next arrival
            continue
        # the prompt tokens this step carries (FCFS over the admitted prompts); prefill-first: a step with prompts
        # to run carries prompts alone, the decodes wait for it
        first_pf = schedule == "prefill-first" and bool(prefill)
        budget = token_budget if first_pf else max(token_budget - nd, 0)
        pf = 0
        finished_prefill = []
        for item in prefill:
            if budget <= 0:
                break
            take = min(item[1], budget)
            item[1] -= take
            budget -= take
            pf += take
            if item[1] == 0:
                finished_prefill.append(item)
        if pf == 0 and nd > 0 and not prefill:
            # pure decode: run the steps up to the next finish (and, open loop, the next arrival; on-demand, a full cache)
            k = decode[0][0] - step_no
            if admission == "on-demand" and nd:
                k = min(k, max(1, int((capacity - used) // nd)))
            if k > 1:
                j = np.arange(k)
                dts = step(nd, ctx_sum + nd * j, 0)
                ends = now + np.cumsum(dts)
                if not closed and nxt < n:
                    hit = int(np.searchsorted(ends, t_arr[nxt], side="left"))
                    k = min(k, hit + 1)
                    ends = ends[:k]
                k = max(int(k), 1)
                area += in_sys * (ends[k - 1] - now)
                now = float(ends[k - 1])
                step_no += k
                ctx_sum += nd * k
                if admission == "on-demand":
                    used += nd * k
                kv_t.append(now)
                kv_u.append(used / capacity)
                dn = _retire(decode, dec_set, step_no, finish, now)
                if dn:
                    done, in_sys, used, ctx_sum, nxt = _after(dn, done, in_sys, used, ctx_sum, nxt, closed, n, pending, t_arr, now, P, OUT, held, admission)
                continue
        if first_pf:  # a prompt-only step: no decode token (step_no counts decode steps, so every finish step moves on)
            dt = step.one(0, 0, pf)
            area += in_sys * dt
            now += dt
            prompt_steps += 1
        else:
            dt = step.one(nd, ctx_sum, pf)
            area += in_sys * dt
            now += dt
            step_no += 1
            ctx_sum += nd
            if admission == "on-demand":
                used += nd
        ended = []
        for item in finished_prefill:
            prefill.remove(item)
            i = item[0]
            if math.isnan(first[i]):  # the prompt's last chunk gives the first token (a recomputed one gives none)
                first[i] = now
                generated[i] = 1
                if admission == "on-demand":
                    used += 1
            ctx = P[i] + generated[i]
            ctx_sum += ctx
            remaining = OUT[i] - generated[i]
            if remaining <= 0:  # a one-token output ends with its prompt
                finish[i] = now
                ended.append(i)
                continue
            dec_set[i] = (step_no, item[2], int(generated[i]))  # generated at step s: the third + (s - the first)
            heapq.heappush(decode, (step_no + remaining, item[2], i))
        dn = ended + _retire(decode, dec_set, step_no, finish, now)
        if dn:
            done, in_sys, used, ctx_sum, nxt = _after(dn, done, in_sys, used, ctx_sum, nxt, closed, n, pending, t_arr, now, P, OUT, held, admission)
        if admission == "on-demand" and used > capacity:  # out of pages: preempt the latest admitted
            while used > capacity and dec_set:
                i = max(dec_set, key=lambda r: dec_set[r][1])
                start, ser, base = dec_set.pop(i)
                generated[i] = base + step_no - start
                decode[:] = [e for e in decode if e[2] != i]
                heapq.heapify(decode)
                ctx = P[i] + generated[i]
                ctx_sum -= ctx
                used -= ctx
                held.pop(i, None)
                pending.appendleft(i)
                preempted += 1
        kv_t.append(now)
        kv_u.append(used / capacity)
    finish_a, first_a = np.array(finish), np.array(first)
    makespan = float(np.nanmax(finish_a)) if n else 0.0
    return Result(arrive=np.array(t_arr), first=first_a, finish=finish_a, prompt=prompt, output=output, steps=step_no + prompt_steps, preemptions=preempted,
                  kv_time=np.array(kv_t), kv_used=np.array(kv_u), in_system=area / makespan if makespan > 0 else 0.0, makespan=makespan)


def _retire(decode, dec_set, step_no, finish, now) -> list:
    """Pop the decoding requests whose last token came at ``step_no``."""
    out = []
    while decode and decode[0][0] <= step_no:
        _, _, i = heapq.heappop(decode)
        if i not in dec_set:
            continue
        dec_set.pop(i)
        finish[i] = now
        out.append(i)
    return out


def _after(dn, done, in_sys, used, ctx_sum, nxt, closed, n, pending, t_arr, now, prompt, output, held, admission):
    for i in dn:
        ctx = prompt[i] + output[i]
        ctx_sum -= ctx
        h = held.pop(i)
        used -= ctx if admission == "on-demand" else h
        done += 1
        in_sys -= 1
        if closed and nxt < n:
            t_arr[nxt] = now
            pending.append(nxt)
            nxt += 1
            in_sys += 1
    return done, in_sys, used, ctx_sum, nxt
