"""A serving measurement's work terms with its layout pinned, and their times under a calibration.

``terms`` runs once per record (the engine's formulas at 100 % of every peak: FLOPs, bytes, collective
payloads and counts of one pinned instance); ``times`` turns the terms into TTFT, TPOT and throughput
for a vector of calibration parameters, cheaply, so the fit can call it thousands of times.

Per instance of g = TP x EP GPUs holding c requests (the record's concurrency over its DP replicas,
capped by the K/V pages that fit, as engines admit):
  decode step  T_d = max(FX131 FLOPs / (peak x e_decode), FX132 bytes / (HBM x e_hbm))
                     + FX704 TP all-reduces (FX50: 2 (TP-1) steps x latency + FX1 wire bytes / (NVLink x e_link))
                     + EP All2All F19 bytes / (link x e_link) + step overhead (FX78's step_overhead_time)
  prefill      T_p = FX74 FLOPs of one prompt / (g x peak x e_prefill) + its TP all-reduces
  TPOT         FX78: T_d + c x T_p / output (each step carries the chunked prefill share of the batch)
  TTFT         FX77: T_p + queue; queue = T_d / 2 (the running step) + M/D/1 wait of the prefills,
               rho x T_p / (2 (1 - rho)) with rho = X x T_p the prefill share of the GPU time
  throughput   Little's law FX81: X = c / E2E requests/s per instance, E2E = TTFT + (output - 1) x TPOT (FX79)
"""

from __future__ import annotations

import numpy as np

from engine.core.errors import InputError
from engine.measure.generations import Unmapped

FIELDS = ("c", "g", "replicas", "output", "prompt", "cd", "bd", "ar_n", "ar_steps", "ar_wire", "ar_wire_p", "ep_bytes", "cp", "peak", "hbm", "link", "ep_link")


def terms(root, m) -> dict:
    """The record's work terms at 100 % of every peak (Unmapped when the engine cannot run its layout)."""
    from engine.plan.evaluate import _Formulas
    from engine.plan.serve import build_serve
    from engine.plan.serve_eval import constants, on_gpu, read_per_token

    lay, w = m.layout, m.workload
    if lay.get("pp", 1) > 1:
        raise Unmapped("pipeline-parallel serving is not modelled")
    if lay.get("prefill_workers") or lay.get("decode_workers"):
        raise Unmapped("disaggregated prefill/decode pools are not evaluated by validate yet")
    tp, ep = int(lay.get("tp", 1)), int(lay.get("ep", 1))
    dp = int(lay.get("dp", 1))
    if lay.get("attention_dp") and ep > 1 and tp > 1 and dp == 1:
        raise Unmapped("attention data parallel inside a TP group is not modelled")
    g = tp * ep
    if m.gpus % g:
        raise Unmapped(f"{m.gpus} GPUs are not a multiple of TP x EP = {g}")
    replicas = m.gpus // g
    prec = m.precision
    try:
        s = build_serve(root, m.model, m.device, prompt=int(w["prompt"]), output=int(w["output"]), ttft=1e9, tpot=1e9, max_batch=1,
                        mfu=1.0, mbu=1.0, weights=prec.get("weights"), kv_cache=prec.get("kv_cache"), precision=prec.get("compute", prec.get("weights", "bf16")),
                        allreduce_latency=0.0, split=False, prune="none")
    except InputError as exc:
        raise Unmapped(f"{exc.field}: {exc.message}") from None
    if tp not in s.tp:
        raise Unmapped(f"TP {tp} does not divide the model's heads (valid: {', '.join(map(str, s.tp))})")
    f = _Formulas(str(root))
    c0 = constants(s, f)
    w_gpu = c0["w_dense"] / tp + (c0["w_expert"] / (tp * ep) if s.expert_params else 0.0)
    per_req = float(on_gpu(s, c0, "kv_request", tp))
    fits = int(max(0.0, (c0["usable"] - w_gpu)) // per_req) * ep if per_req > 0 else 10**9
    if fits < 1:
        raise Unmapped("the weights and one request's K/V do not fit this instance")
    want = _concurrency(w, replicas)
    c = float(min(want, fits)) if want else float(fits)
    b = c / ep  # sequences per attention group
    cd = float(f("FX131", decode_batch=b, infer_flops_per_token=c0["flops_decode"], tp_size=float(tp), peak_flops=1.0, mfu=1.0))
    bd = float(f("FX132", weight_bytes=w_gpu, tp_size=1.0, decode_batch=b, context_tokens=c0["ctx"], kv_bytes_per_token_per_gpu=float(read_per_token(s, c0, tp)),
                 hbm_bandwidth=1.0, mbu=1.0))
    ar_n = float(f("FX703", comm_passes=1, layers=float(s.allreduce_layers or s.layers))) if tp > 1 else 0.0
    ar_wire = float(f("FX1", "allreduce", msg_bytes=f("FX702", batch_tokens=b, hidden=float(s.hidden)), ranks=float(tp))) if tp > 1 else 0.0
    ar_wire_p = float(f("FX1", "allreduce", msg_bytes=f("FX702", batch_tokens=float(s.prompt), hidden=float(s.hidden)), ranks=float(tp))) if tp > 1 else 0.0
    ep_bytes = 0.0
    if s.expert_params and ep > 1:
        ep_bytes = float(f("F19", comm_passes=1, top_k=float(s.top_k), hidden=float(s.hidden), ep_size=float(ep))) * b * (s.moe_layers or s.layers)
    cp = float(c0["flops_prefill"] * s.prompt / g)  # FX74's FLOPs of one prompt per GPU of the instance
    return dict(c=c, g=float(g), replicas=float(replicas), output=float(s.output), prompt=float(s.prompt), cd=cd, bd=bd, ar_n=ar_n,
                ar_steps=2.0 * (tp - 1), ar_wire=ar_wire, ar_wire_p=ar_wire_p, ep_bytes=ep_bytes, cp=cp, peak=s.peak, hbm=s.hbm_bw,
                link=s.nvlink_bw, ep_link=s.nvlink_bw if g <= s.nvlink_domain else s.scaleout_bw,
                capped=bool(want and fits < want), fits=fits)


def _concurrency(w: dict, replicas: int) -> float:
    if w.get("concurrency"):
        return w["concurrency"] / replicas
    if w.get("batch"):
        return float(w["batch"])
    return 0.0  # unstated: as many as fit (a max-throughput run)


def times(t: dict[str, np.ndarray], p: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """TTFT, TPOT, E2E (s) and throughputs of terms ``t`` under parameters ``p`` (arrays, one entry per record):
    e_prefill, e_decode, e_hbm, e_link, ar_latency (s per ring step), overhead (s per step)."""
    ar = t["ar_n"] * (t["ar_steps"] * p["ar_latency"] + t["ar_wire"] / (t["link"] * p["e_link"]))
    ar_p = t["ar_n"] * (t["ar_steps"] * p["ar_latency"] + t["ar_wire_p"] / (t["link"] * p["e_link"]))
    ep = t["ep_bytes"] / (t["ep_link"] * p["e_link"])
    step = np.maximum(t["cd"] / (t["peak"] * p["e_decode"]), t["bd"] / (t["hbm"] * p["e_hbm"])) + ar + ep + p["overhead"]
    prefill = t["cp"] / (t["peak"] * p["e_prefill"]) + ar_p + p["overhead"]
    tpot = step + t["c"] * prefill / t["output"]
    # closed loop: X = c / E2E; rho = X T_p; E2E = TTFT + (output - 1) TPOT, TTFT = T_p + step/2 + rho T_p / (2 (1 - rho)); two fixed-point passes
    ttft = prefill + step / 2
    for _ in range(3):
        e2e = ttft + (t["output"] - 1) * tpot
        rho = np.minimum(t["c"] / e2e * prefill, 0.95)
        ttft = prefill + step / 2 + rho * prefill / (2 * (1 - rho))
    e2e = ttft + (t["output"] - 1) * tpot
    x = t["c"] / e2e  # requests/s per instance
    out_tps = x * t["output"]
    return dict(ttft=ttft, tpot=tpot, itl=tpot, e2e_latency=e2e, request_throughput=x * t["replicas"],
                output_throughput=out_tps * t["replicas"], output_throughput_per_gpu=out_tps / t["g"],
                total_throughput_per_gpu=x * (t["output"] + t["prompt"]) / t["g"])
