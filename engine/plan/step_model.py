"""The calibrated serving step: one engine step's time from its work terms and the constants ``aiinfra validate`` fits.

One definition for the three places that time a step: ``aiinfra validate`` (engine.measure.serve, which scores it on
published measurements), the request-by-request simulation (engine.measure.simulate) and ``plan serve``'s search
(engine.plan.serve_eval, every TP x EP x batch point at once). It sits here, below engine.measure, because the planner
may not import the measurement layer; the constants reach it as plain numbers.

Work terms (``step_terms``; 100 % of every peak, per sequence where marked):
  cd1  the matrix products' FLOP time of one sequence's token (FX131 over 2 x active parameters, per TP rank)
  ca1  the attention FLOP time of one sequence's token (FX131 of FX30 less cd1)
  kv1  the K/V (and recurrent state) read time of one sequence at the mean context (FX132)
  w_dense, w_expert  the weight bytes per GPU of the dense part and of all routed experts
  ar_n, ar_steps, ar1  FX703's all-reduces per step, a ring's 2 (TP - 1) steps, FX1's wire bytes of one token's message
  ep1  F19's All2All bytes of one token over the MoE layers (EP > 1)
  cp   one prompt's FLOPs per GPU (FX74's numerator over the instance's GPUs)

Step (``decode_parts``) of c sequences per instance, b = c / EP per attention group, q tokens per sequence (1 for a plain
decode step, gamma + 1 for a speculative verify pass):
  matmul     max(b q cd1 / (peak e_decode [e_dequant]), weights the c q tokens route to / (HBM e_hbm))
  attention  max(b q ca1 / (peak e_decode), b kv1 / (HBM e_kv))           (the kernels in turn: the two rooflines add)
  ar         ar_n (ar_steps ar_latency + b q ar1 / (link e_link))          (FX704 with FX50's latency term)
  ep         b q ep1 / (EP link e_link)
  fixed      overhead + layers overhead_layer + MoE layers overhead_moe   (FX78's step_overhead_time, per step)
  seq        c overhead_seq                                                (the engine's host work per sequence)
Prefill of one prompt (``prefill_time``): cp / (peak e_prefill [e_dequant]) + its all-reduces + fixed + overhead_seq.
"""

from __future__ import annotations

# numpy is imported inside the functions: the command line reads PARAMETERS (engine.cli.efficiency) on paths that
# never time a step, and they stay free of it


# the fitted constants the step reads (knowledge/calibration/fitted.json, serve): efficiencies, latencies, overheads
PARAMETERS = ("e_prefill", "e_decode", "e_hbm", "e_kv", "e_link", "ar_latency", "overhead", "overhead_seq", "overhead_layer",
              "overhead_moe", "e_dequant")


def step_terms(s, c0: dict, f, tp, ep, kv_per_token) -> dict:
    """The work terms above for a serving space ``s`` (engine.plan.serve_eval.ServeSpace) with its constants ``c0``, at
    TP ``tp`` and EP ``ep`` (numbers or arrays of the same shape); ``kv_per_token``: the bytes one GPU reads per context
    token of a sequence (engine.plan.serve_eval.read_per_token at ``tp``)."""
    import numpy as np

    tp = np.asarray(tp, dtype=float)
    ep = np.asarray(ep, dtype=float)
    g = tp * ep
    cd_all = f("FX131", decode_batch=1.0, infer_flops_per_token=c0["flops_decode"], tp_size=tp, peak_flops=1.0, mfu=1.0)
    # the matrix products' share (FX30 without its attention term): 2 x active parameters per token, over TP
    lin1 = f("FX131", decode_batch=1.0, infer_flops_per_token=2.0 * s.params_active, tp_size=tp, peak_flops=1.0, mfu=1.0)
    kv1 = f("FX132", weight_bytes=0.0, tp_size=1.0, decode_batch=1.0, context_tokens=c0["ctx"], kv_bytes_per_token_per_gpu=kv_per_token,
            hbm_bandwidth=1.0, mbu=1.0)
    multi = tp > 1
    ar_n = np.where(multi, f("FX703", comm_passes=1, layers=float(s.allreduce_layers or s.layers)), 0.0)
    ar1 = np.where(multi, f("FX1", "allreduce", msg_bytes=f("FX702", batch_tokens=1.0, hidden=float(s.hidden)), ranks=np.maximum(tp, 2.0)), 0.0)
    moe_layers = float((s.moe_layers or s.layers) if s.expert_params else 0)
    if s.expert_params:
        ep1 = np.where(ep > 1, f("F19", comm_passes=1, top_k=float(s.top_k), hidden=float(s.hidden), ep_size=np.maximum(ep, 2.0)) * moe_layers, 0.0)
    else:
        ep1 = np.zeros(np.shape(ep))
    return dict(w_dense=c0["w_dense"] / tp, w_expert=c0["w_expert"] / (tp * ep) if s.expert_params else np.zeros(np.shape(tp)),
                experts=float(s.n_experts) if s.expert_params else 0.0, top_k=float(s.top_k), cd1=lin1, ca1=np.maximum(cd_all - lin1, 0.0), kv1=kv1,
                ar_n=ar_n, ar_steps=2.0 * (tp - 1), ar1=ar1, ep1=ep1, cp=c0["flops_prefill"] * s.prompt / g, prompt=float(s.prompt),
                layers=float(s.layers), moe_layers=moe_layers, peak=s.peak, hbm=s.hbm_bw, link=s.nvlink_bw,
                ep_link=np.where(g <= s.nvlink_domain, s.nvlink_bw, s.scaleout_bw), ep=ep)


def decode_parts(t, p, c, q=1.0) -> dict:
    """The step's parts (s) for ``c`` sequences per instance, ``q`` tokens each (see the module's table)."""
    import numpy as np

    b = c / t["ep"]
    touched = np.where(t["experts"] > 0, 1 - (1 - t["top_k"] / np.maximum(t["experts"], 1)) ** (c * q), 1.0)
    weights = t["w_dense"] + t["w_expert"] * touched
    matmul = np.maximum(b * q * t["cd1"] / (t["peak"] * p["e_decode"] * dequant(t, p)), weights / (t["hbm"] * p["e_hbm"]))
    attention = np.maximum(b * q * t["ca1"] / (t["peak"] * p["e_decode"]), b * t["kv1"] / (t["hbm"] * p["e_kv"]))
    ar = t["ar_n"] * (t["ar_steps"] * p["ar_latency"] + b * q * t["ar1"] / (t["link"] * p["e_link"]))
    ep = b * q * t["ep1"] / (t["ep_link"] * p["e_link"])
    return dict(matmul=matmul, attention=attention, ar=ar, ep=ep, fixed=p["overhead"] + per_layer(t, p), seq=c * per_sequence(p))


def decode_step(t, p, c):
    """FX75's decode step of ``c`` sequences per instance under the calibration: the sum of :func:`decode_parts`."""
    x = decode_parts(t, p, c)
    return x["matmul"] + x["attention"] + x["ar"] + x["ep"] + p["overhead"] + per_layer(t, p) + x["seq"]  # validate's order of the sum


def prefill_time(t, p):
    """One prompt's prefill on the instance: its FLOPs at e_prefill (x e_dequant), its TP all-reduces, the step's fixed costs."""
    return (t["cp"] / (t["peak"] * p["e_prefill"] * dequant(t, p)) + t["ar_n"] * (t["ar_steps"] * p["ar_latency"] + t["prompt"] * t["ar1"] / (t["link"] * p["e_link"]))
            + p["overhead"] + per_layer(t, p) + per_sequence(p))


def per_layer(t, p):
    """The step's fixed cost per layer: overhead_layer x layers (each layer's kernels pay a launch, ramp-up and
    synchronisation time whatever the batch, so a 126-layer model pays it 4 times as often as a 32-layer one) plus
    overhead_moe x MoE layers (routing, top-k, token permutation and the grouped expert GEMMs: several more kernels per
    layer, and the engines' MoE paths differ most); 0 under a calibration without them."""
    out = p["overhead_layer"] * t["layers"] if "overhead_layer" in p and "layers" in t else 0.0
    return out + (p["overhead_moe"] * t["moe_layers"] if "overhead_moe" in p and "moe_layers" in t else 0.0)


def per_sequence(p):
    """The engine's host time per sequence in a step (scheduling, sampling, detokenising and streaming each request's
    token: overhead_seq), 0 under a calibration without it."""
    return p["overhead_seq"] if "overhead_seq" in p else 0.0


def dequant(t, p):
    """The weight-only kernels' share of the matrix rate: e_dequant on a weight-only row (terms' dq = 1), else 1."""
    return p["e_dequant"] ** t["dq"] if "e_dequant" in p and "dq" in t else 1.0
