"""plan serve beyond dense GQA (#15): sliding-window layers, MLA latents and checkpoints stored in a
block-scaled format are sized as such, never as a full K/V cache or BF16 weights. Figures from the
official configs the model records cite, with the arithmetic shown."""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.plan.serve import build_serve, notes, plan_serve
from engine.plan.serve_eval import constants, kv_share, on_gpu

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


def test_gated_deltanet_hybrid_state_beside_the_attention_layers():
    # Qwen/Qwen3.5-35B-A3B (config.json at the record's revision): 40 layers, 10 full attention (every 4th) with 2 KV heads
    # of 256, 30 Gated DeltaNet layers of 16 key / 32 value heads of 128, conv kernel 4, mamba_ssm_dtype float32 (4 B).
    # FX800 per layer: state 32 x 128 x 128 x 4 B = 2,097,152 B, conv (4 - 1) x (2 x 16 x 128 + 32 x 128) x 4 B = 98,304 B,
    # so 30 x 2,195,456 = 65,863,680 B per request at any length; K/V 10 x 2 x 2 x 256 x 2 B = 20,480 B per token
    s = _space("qwen3.5-35b-a3b", "h200")
    c = constants(s)
    assert (s.layers, s.attn_layers, s.recurrent_layers) == (40, 10, 30)
    assert c["state"] == 65_863_680 and c["kv_token"] == 20_480
    assert c["kv_request"] == (4096 + 512) * 20_480  # the attention layers' K/V only
    assert c["handover"] == 4096 * 20_480 + 65_863_680  # a split moves the prompt's K/V and the state
    # TP divides the 16 heads and the 16 / 32 recurrent heads, and divides the 2 KV heads or is a multiple of them (past one
    # KV head per rank vLLM replicates them, FX73): 1, 2, 4 or 8 within the NVLink domain of 8
    assert s.tp == (1, 2, 4, 8)
    # FX30's attention term in the 10 attention layers only: 2 x 2 x 10 x s x 16 x 256
    assert c["flops_prefill"] - 2 * s.params_active == pytest.approx(2 * 2 * 10 * 4096 * 16 * 256, rel=1e-12)
    assert any(n.startswith("hybrid: 30 Gated DeltaNet layers") for n in notes(s))


def test_hybrid_point_by_hand():
    # one co-located point of Qwen3.5-35B-A3B on H100 (80 GB, 3.35 TB/s): TP 2, EP 1, batch 4. N = 34,660,610,688 parameters
    # (the record's checkpoint total, tests/domain/test_model_revisions.py), all on the instance in BF16 at EP 1
    r = plan_serve(ROOT, "qwen3.5-35b-a3b", "h100-sxm", prompt=4096, output=512, ttft=2.0, tpot=0.2, mfu=0.4, max_batch=4, max_ep=1,
                   prune="none", split=False)
    row = next(x for x in r.rows if (x["tp"], x["ep"], x["batch"]) == (2, 1, 4))
    n, kv, state = 34_660_610_688, 20_480, 65_863_680
    # memory per GPU: half the weights, 4 requests of (4608 tokens of K/V + the state), each halved over TP 2
    assert row["memory"] == pytest.approx(2 * n / 2 + 4 * (4608 * kv + state) / 2, rel=1e-12)
    # FX132 reads per step: half the dense weights and of the routed experts FX1400's share the 4 tokens route to, 4 sequences'
    # K/V at the mean context 4096 + 256, the state read and written. Routed experts (config: 40 layers x 256 experts of
    # 3 x 2048 x 512) = 32,212,254,720 parameters, the dense rest 34,660,610,688 - 32,212,254,720 = 2,448,355,968; top 8 of
    # 256 at 4 tokens: 1 - (31/32)^4 = 1 - 0.88073825836181640625 = 0.11926174163818359375 of the experts
    routed = 40 * 256 * 3 * 2048 * 512
    share = 1 - (31 / 32) ** 4
    reads = (2 * (n - routed) / 2 + 2 * routed * share / 2 + 4 * (4352 * kv + 2 * state) / 2) / 3.35e12
    compute = 4 * 2 * n / (2 * 989.4e12 * 0.4)  # FX131 as if every parameter were active (about 3B are): still below the reads
    assert compute < reads and row["step"] == pytest.approx(reads, rel=1e-12)


def test_mamba_hybrid_all_reduces_once_per_block():
    # nvidia/Nemotron-H-8B-Base-8K: 52 blocks (24 Mamba-2, 4 attention, 24 MLP), hidden 4096, each block ends in one
    # TP all-reduce: 52 per decode step, not 2 x 52. At TP 2, batch 8: FX702's message 8 x 4096 x 2 B = 65,536 B, an FX50
    # ring 2 (2 - 1) x 20 us + 2 x 65,536 x (2 - 1) / 2 / (450 GB/s x 0.7)
    r = plan_serve(ROOT, "nemotron-h-8b", "h100-sxm", prompt=1024, output=256, ttft=2.0, tpot=0.2, mfu=0.4, max_batch=8, prune="none",
                   split=False)
    row = next(x for x in r.rows if (x["tp"], x["batch"]) == (2, 8))
    one = 2 * 1 * 20e-6 + 2 * 65_536 * 1 / 2 / (450e9 * 0.7)
    assert row["tp_comm"] == pytest.approx(52 * one, rel=1e-12)
    # FX800 Mamba-2 per layer: 128 heads x 64 x 128 state x 2 B = 2,097,152 B, conv 3 x (8192 + 2 x 8 x 128) x 2 B = 61,440 B:
    # 24 x 2,158,592 = 51,806,208 B per request; TP must divide the 128 heads and the 8 groups (and 32 heads, 8 KV heads)
    s = build_serve(ROOT, "nemotron-h-8b", "h100-sxm", prompt=1024, output=256, ttft=2.0, tpot=0.2, mfu=0.4)
    assert constants(s)["state"] == 51_806_208 and s.tp == (1, 2, 4, 8)


def test_kda_hybrid_latent_replicated_state_split():
    # moonshotai/Kimi-Linear-48B-A3B-Instruct: 27 layers, 7 MLA (kv_lora_rank 512 + rope 64: 7 x 576 x 2 B = 8,064 B per
    # token, whole on every rank, FX73) and 20 KDA layers (FX800: 22,446,080 B per request, split over TP by heads)
    s = _space("kimi-linear-48b-a3b", "h200")
    c = constants(s)
    assert (c["kv_token"], c["state"]) == (8_064, 22_446_080)
    assert on_gpu(s, c, "kv_request", 4) == pytest.approx(4608 * 8_064 + 22_446_080 / 4, rel=1e-12)


def test_deepseek_sparse_attention_top_k_and_indexer():
    # deepseek-ai/DeepSeek-V3.2 config.json: 61 layers, the V3 latent (512 + 64: 61 x 576 x 2 B = 70,272 B per token), an
    # indexer of 64 heads x 128 per layer caching one FP8 key + FP32 scale per token (FX888: 61 x 132 = 8,052 B), top-k 2048
    s = build_serve(ROOT, "deepseek-v3.2", "h200", prompt=32768, output=1024, ttft=5.0, tpot=0.05, mfu=0.4, weights="fp8", precision="fp8")
    c = constants(s)
    assert (s.index_topk, s.index_heads, s.index_head_dim, s.index_bytes_per_token) == (2048, 64, 128, 8052)
    assert c["kv_request"] == (70_272 + 8_052) * (32768 + 1024)  # = 2,646,724,608 B: latent and indexer keys for every token
    assert kv_share(s, 8) == 1.0  # both whole on every TP rank
    ctx = 32768 + 1024 / 2  # 33,280
    # a decode step reads the top 2048 latents and every indexer key: 70,272 x 2048 + 8,052 x 33,280 B per sequence
    assert c["kv_token_mean"] * ctx == pytest.approx(70_272 * 2048 + 8_052 * 33_280, rel=1e-12)
    # FX30's attention term over the 2048 selected tokens (absorbed width 544), FX920's indexer over the whole context
    assert c["flops_decode"] - 2 * s.params_active == pytest.approx(4 * 61 * 2048 * 128 * 544 + 2 * 61 * 33_280 * 64 * 129, rel=1e-12)
    assert c["flops_prefill"] - 2 * s.params_active == pytest.approx(4 * 61 * 2048 * 128 * 160 + 2 * 61 * 32_768 * 64 * 129, rel=1e-12)
    assert any(n.startswith("DeepSeek Sparse Attention") for n in notes(s))


def test_compressed_attention_refused_by_name():
    with pytest.raises(InputError) as exc:
        _space("deepseek-v4-flash", "h200")
    assert exc.value.field == "--model" and "deepseek-v4-flash" in exc.value.message
