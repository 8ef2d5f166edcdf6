"""A training measurement's work terms with its layout pinned, and its step time under a calibration.

Per optimizer step of B sequences of S tokens on N GPUs (DP = N / (TP x PP x CP); EP inside DP as Megatron
carves it):
  FLOPs per token   3 x FX30 (forward with the attention term at S; backward twice the forward), x 4/3 with
                    full recomputation (one more forward)
  compute           B x S x FLOPs per token / N / (peak x e_train), stretched by F13's pipeline bubble
                    (m = B / (DP x micro-batch) micro-batches; interleaved with V chunks)
  TP all-reduces    4 per layer and micro-batch (two forward, two backward) of FX702's message (micro-batch x S / CP
                    tokens), FX1 ring wire bytes over NVLink x e_link, on the critical path
  EP All2All        4 per MoE layer and micro-batch (dispatch and combine, forward and backward), F19's bytes over
                    NVLink inside the domain, else the 50 GB/s scale-out NIC, x e_link
  predicted         step time; tokens/s per GPU = B S / (N x step); model TFLOP/s per GPU = that x FLOPs per token
                    (without recomputation); MFU = that / dense peak
"""

from __future__ import annotations

import numpy as np

from engine.core.errors import InputError
from engine.measure.generations import Unmapped
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
        ep_bytes = 4 * moe_layers * micro * float(f("F19", comm_passes=1, top_k=float(mv["top_k"]), hidden=hidden, ep_size=float(ep))) * tokens_mb
    link = float(dv.get("nominal_bandwidth") or SCALEOUT)
    return dict(flops=gb * seq * work / m.gpus, peak=float(dv["peak_flops"]), bubble=bubble, tp_bytes=tp_bytes, ep_bytes=ep_bytes, link=link,
                ep_link=link if tp * ep <= 8 else SCALEOUT, tokens=gb * seq / m.gpus, per_token=per_token)


def times(t, p) -> dict:
    compute = t["flops"] / (t["peak"] * p["e_train"]) / (1 - t["bubble"])
    step = compute + t["tp_bytes"] / (t["link"] * p["e_link"]) + t["ep_bytes"] / (t["ep_link"] * p["e_link"])
    tps = t["tokens"] / step
    return dict(step_time=step, tokens_per_gpu_per_s=tps, model_tflops_per_gpu=tps * t["per_token"], mfu=tps * t["per_token"] / t["peak"])
