"""A training measurement's work terms with its layout pinned, and its step time under a calibration.

Per optimizer step of B sequences of S tokens on N GPUs (DP = N / (TP x PP x CP); EP inside DP as Megatron
carves it):
  FLOPs per token   3 x FX30 (forward with the attention term at S; backward twice the forward), x 4/3 with
                    full recomputation (one more forward)
  compute           B x S x FLOPs per token / N / (peak x e_train), stretched by F13's pipeline bubble
                    (m = B / (DP x micro-batch) micro-batches; interleaved with V chunks)
  TP all-reduces    4 per layer and micro-batch (two forward, two backward) of FX702's message (micro-batch x S / CP
                    tokens), FX1 ring wire bytes over NVLink x e_link, on the critical path
  EP All2All        F19 with 2 passes per MoE layer and micro-batch (dispatch and combine, forward and backward) over
                    NVLink inside the device's NVLink domain (8, 72 for an NVL72 rack), else the 50 GB/s scale-out NIC, x e_link
  routed experts    their FLOPs at a grouped-GEMM efficiency x / (x + x_half), x the tokens one expert gets per micro-batch
  elementwise       kappa bytes per hidden element per layer and token (forward and backward) through HBM, SP-split over TP;
                    a MoE layer moves 1 + k copies of each token (permute and unpermute around the experts)
  exposed           the share of that communication time (at the links' nominal bandwidth) not hidden behind compute
                    (Megatron overlaps TP with sequence-parallel GEMMs and EP All2All with the other micro-batch's compute)
  predicted         step time; tokens/s per GPU = B S / (N x step); model TFLOP/s per GPU = that x FLOPs per token
                    (without recomputation); MFU = that / dense peak
"""

from __future__ import annotations

import numpy as np

from engine.core.errors import InputError
from engine.measure.generations import Unmapped, nvlink_domain
from engine.measure.kernels import SCALEOUT


def terms(root, m) -> dict:
    from engine.domain import presets
    from engine.plan.evaluate import _Formulas
    from engine.plan.space import _preset

    lay, w = m.layout, m.workload
    tp, pp, cp, ep, vp = (int(lay.get(k, 1)) for k in ("tp", "pp", "cp", "ep", "vp"))
    if m.gpus % (tp * pp * cp):
        raise Unmapped(f"{m.gpus} GPUs are not a multiple of TP x PP x CP = {tp * pp * cp}")
    dp = m.gpus // (tp * pp * cp)
    seq = int(w["seq"])
    gb = lay.get("global_batch")
    mb = int(lay.get("micro_batch", 1))
    if not gb:
        raise Unmapped("the global batch is not stated")
    prec = (m.precision.get("compute") or "bf16").lower()
    try:
        mv = _preset(presets, root, m.model, None, "bf16", "--model")
        dv = _preset(presets, root, None, m.device, prec, "--device")
    except InputError as exc:
        raise Unmapped(f"{exc.field}: {exc.message}") from None
    if "peak_flops" not in dv:
        raise Unmapped(f"{m.device} records no dense {prec} peak")
    if mv.get("attention") not in ("gqa", "mha", "mla"):
        raise Unmapped(f"{m.model}: attention {mv.get('attention')} is not counted by the training terms")
    f = _Formulas(str(root))
    heads, layers, hidden = float(mv["heads"]), float(mv["layers"]), float(mv["hidden"])
    width = float(mv.get("head_dim") or hidden / heads)
    if mv["attention"] == "mla":
        width = (float(mv["qk_nope_head_dim"]) + float(mv["qk_rope_head_dim"]) + float(mv["v_head_dim"])) / 2
    fwd = float(f("FX30", "include", params_active=float(mv["params_active"]), layers=layers, seq_len=float(seq), heads=heads, head_dim=width))
    per_token = 3 * fwd
    recompute = lay.get("recompute", "selective")
    work = per_token * (4 / 3 if recompute == "full" else 1.0)
    micro = gb / (dp * mb)
    if micro < 1 or micro != int(micro):
        raise Unmapped(f"global batch {gb} is not a whole number of micro-batches of {mb} over DP {dp}")
    variant = "interleaved" if vp > 1 else "non_interleaved"
    bubble = float(f("F13", variant, pp_size=float(pp), n_micro_batches=float(micro), virtual_stages=float(vp))) if pp > 1 else 0.0
    tokens_mb = mb * seq / cp
    stage_layers = np.ceil(layers / pp)
    ar_wire = float(f("FX1", "allreduce", msg_bytes=f("FX702", batch_tokens=tokens_mb, hidden=hidden), ranks=float(tp))) if tp > 1 else 0.0
    tp_bytes = 4 * stage_layers * micro * ar_wire
    ep_bytes = 0.0
    experts = int(mv.get("n_experts") or 0) if mv.get("model_arch") == "moe" else 0
    if experts and ep > 1:
        moe_layers = stage_layers * (1 - float(mv.get("n_dense_layers") or 0) / layers)
        ep_bytes = moe_layers * micro * float(f("F19", comm_passes=2, top_k=float(mv["top_k"]), hidden=hidden, ep_size=float(ep))) * tokens_mb
    link = float(dv.get("nominal_bandwidth") or SCALEOUT)
    # the routed experts' share of the FLOPs (k of E experts per token, each the same size) and the tokens one expert's
    # grouped GEMM gets per micro-batch (every EP rank's micro-batch routed over E experts)
    expert_share, per_expert, copies = 0.0, 0.0, 1.0
    if experts:
        copies = 1.0 + float(mv["top_k"]) * (1 - float(mv.get("n_dense_layers") or 0) / layers)  # MoE layers permute k copies of each token
        n_exp = (float(mv["params"]) - float(mv["params_active"])) * experts / (experts - float(mv["top_k"]))
        expert_share = 2 * n_exp * float(mv["top_k"]) / experts / fwd
        per_expert = tokens_mb * ep * float(mv["top_k"]) / experts
    token_layers = gb * seq * layers / (dp * cp * pp)  # token-layer passes on one GPU per step
    return dict(flops=gb * seq * work / m.gpus, peak=float(dv["peak_flops"]), bubble=bubble, tp_bytes=tp_bytes, ep_bytes=ep_bytes, link=link,
                expert_share=expert_share, per_expert=per_expert, elementwise=token_layers * hidden * copies / tp, hbm=float(dv.get("hbm_bandwidth") or 1e12),
                ep_link=link if tp * ep <= nvlink_domain(m.device) else SCALEOUT, tokens=gb * seq / m.gpus, per_token=per_token)


def times(t, p) -> dict:
    # grouped-GEMM efficiency of the routed experts falls with the tokens each expert gets: x / (x + x_half)
    grouped = np.where(t["per_expert"] > 0, t["per_expert"] / (t["per_expert"] + p["x_half"]), 1.0)
    matmul = t["flops"] * ((1 - t["expert_share"]) + t["expert_share"] / grouped) / (t["peak"] * p["e_train"])
    elementwise = p["kappa"] * t["elementwise"] / t["hbm"]  # norms, activations, residuals, RoPE: bytes per hidden element per layer
    compute = (matmul + elementwise) / (1 - t["bubble"])
    step = compute + p["exposed"] * (t["tp_bytes"] / t["link"] + t["ep_bytes"] / t["ep_link"])
    tps = t["tokens"] / step
    return dict(step_time=step, tokens_per_gpu_per_s=tps, model_tflops_per_gpu=tps * t["per_token"], mfu=tps * t["per_token"] / t["peak"])
