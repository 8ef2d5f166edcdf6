"""plan serve beyond dense GQA (#15): sliding-window layers, MLA latents and checkpoints stored in a
block-scaled format are sized as such, never as a full K/V cache or BF16 weights. Figures from the
official configs the model records cite, with the arithmetic shown."""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.plan.serve import build_serve, notes
from engine.plan.serve_eval import constants, kv_share

ROOT = shipped_root()


def _space(model, device="h100-sxm", **kw):
    return build_serve(ROOT, model, device, prompt=4096, output=512, ttft=2.0, tpot=0.05, mfu=0.4, **kw)


def test_sliding_window_layers_hold_the_window():
    # google/gemma-3-27b-it: 62 layers, every 6th global (10), 52 sliding with a 1024-token window,
    # 16 KV heads x 128: 2 x 16 x 128 x 2 B = 8,192 B per layer and token. A request at 4096 + 512 tokens:
    # 10 x 4608 x 8192 + 52 x 1024 x 8192 = 377,487,360 + 436,207,616 = 813,694,976 B (FX70),
    # where a full cache would be 62 x 4608 x 8192 = 2,340,421,632 B
    s = _space("gemma-3-27b-it")
    assert (s.window_layers, s.sliding_window) == (52, 1024)
    c = constants(s)
    assert c["kv_token"] == 62 * 8192
    assert c["kv_request"] == 813_694_976
    assert c["kv_prompt"] == 10 * 4096 * 8192 + 52 * 1024 * 8192
    assert any("sliding window" in n for n in notes(s))


def test_mla_latent_replicated_and_attention_widths():
    # deepseek-ai/DeepSeek-V3: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128,
    # v_head_dim 128, 128 heads. Latent per token: 61 x (512 + 64) x 2 B = 70,272 B, whole on every TP rank
    s = _space("deepseek-v3", "h200", weights="fp8", precision="fp8")
    c = constants(s)
    assert c["kv_token"] == 70_272
    assert kv_share(s, 8) == 1.0
    # FX30's attention term 2 x 2 L s a d: absorbed decode QK over r + rope and PV over r -> d = (2 x 512 + 64) / 2 = 544;
    # expanded prefill QK over nope + rope and PV over v -> d = (128 + 64 + 128) / 2 = 160
    assert (s.attn_dim_decode, s.attn_dim_prefill) == (544, 160)
    ctx = 4096 + 512 / 2
    assert c["flops_decode"] - 2 * s.params_active == pytest.approx(2 * 2 * 61 * ctx * 128 * 544, rel=1e-12)
    assert c["flops_prefill"] - 2 * s.params_active == pytest.approx(2 * 2 * 61 * 4096 * 128 * 160, rel=1e-12)
    # 3 dense layers (first_k_dense_replace) carry no All2All
    assert s.moe_layers == 58


def test_gpt_oss_weights_as_stored():
    # openai/gpt-oss-20b: routed experts in MXFP4 (4 + 8/32 bits = 0.53125 B), the rest BF16; the record's
    # stored total 13,761,264,768 B = 19,110,297,600 x 0.53125 + 1,804,459,584 x 2 (model card Table 1: 12.8 GiB)
    s = _space("gpt-oss-20b")
    c = constants(s)
    assert c["w_dense"] + c["w_expert"] == 13_761_264_768
    assert s.bytes_param_expert == 0.53125
    assert c["w_expert"] == pytest.approx(s.expert_params * 0.53125, rel=1e-12)
    # --weights overrides the stored format: every weight at FP8's 1 B
    c8 = constants(_space("gpt-oss-20b", weights="fp8", precision="fp8"))
    assert c8["w_dense"] + c8["w_expert"] == pytest.approx(s.params * 1.0, rel=1e-12)


@pytest.mark.parametrize("model", ["qwen3-next-80b-a3b", "deepseek-v3.2", "nemotron-h-8b"])
def test_hybrids_and_sparse_attention_refused_by_name(model):
    with pytest.raises(InputError) as exc:
        _space(model, "h200")
    assert exc.value.field == "--model" and model in exc.value.message
