"""engine.domain.state: persistent bytes per request by layer kind (F8, FX70, FX800, FX801).

Every expected value is hand arithmetic from the shipped model records' config fields, whose
sources (Hugging Face repo and revision) are on the records, written out beside the assert.
"""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.domain import models, state
from engine.domain.model_count import _Evaluator, formula_module

ROOT = shipped_root()
MODELS = models.load_models(ROOT)


def rows(result) -> dict:
    return {r.kind: (r.layers, r.tokens_held, r.bytes_per_request) for r in result.rows}


def test_gqa_every_layer_full():
    # Qwen/Qwen3-8B (revision on the record): 36 layers, 8 KV heads, head_dim 128.
    # F8: 2 x 36 x 8 x 128 x 2 B = 147456 B per token; x 1000 tokens = 147456000 B
    result = state.request_state(models.find(MODELS, "qwen3-8b"), 1000)
    assert rows(result) == {"full_attention": (36, 1000, 147456000)}
    assert result.total == 147456000


def test_fp8_cache_halves_it():
    # same shape, 1 B per element: 147456000 / 2 = 73728000 B
    assert state.request_state(models.find(MODELS, "qwen3-8b"), 1000, kv_bytes=1).total == 73728000


def test_sliding_layers_stop_at_the_window():
    # google/gemma-3-27b-it: 62 layers (10 global, 52 local, window 1024), 16 KV heads, head_dim 128.
    # per layer-token 2 x 16 x 128 x 2 = 8192 B; global 10 x 8192 x 32768 = 2684354560;
    # local 52 x 8192 x 1024 = 436207616; total 3120562176 B (FX70's worked example)
    result = state.request_state(models.find(MODELS, "gemma-3-27b-it"), 32768)
    assert rows(result) == {"full_attention": (10, 32768, 2684354560), "sliding_attention": (52, 1024, 436207616)}
    assert result.total == 3120562176


def test_alternating_sliding_and_full():
    # openai/gpt-oss-20b: 24 layers, 12 sliding (window 128) and 12 full, 8 KV heads, head_dim 64.
    # per layer-token 2 x 8 x 64 x 2 = 2048 B; full 12 x 2048 x 4096 = 100663296; sliding 12 x 2048 x 128 = 3145728
    result = state.request_state(models.find(MODELS, "gpt-oss-20b"), 4096)
    assert rows(result) == {"full_attention": (12, 4096, 100663296), "sliding_attention": (12, 128, 3145728)}
    assert result.total == 103809024


def test_mla_latent():
    # deepseek-ai/DeepSeek-V3: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64.
    # F8 (mla): 61 x (512 + 64) x 2 = 70272 B per token; x 8192 = 575668224 B
    result = state.request_state(models.find(MODELS, "deepseek-v3"), 8192)
    assert rows(result) == {"mla_latent": (61, 8192, 575668224)}


def test_requests_that_fit_beside_the_weights():
    # h100-sxm: 80GB = 80e9 B (datasheet, on the record); Qwen3-8B 8190735360 parameters x 2 B = 16381470720 B;
    # free 63618529280 B; / 147456000 B = 431.4 -> 431 requests (147456000 x 432 = 63700992000 > free)
    result = state.request_state(models.find(MODELS, "qwen3-8b"), 1000)
    fit = state.fit_requests(result, 8190735360, 80e9, "h100-sxm")
    assert fit.weight_bytes == 16381470720
    assert fit.requests == 431


def test_weights_larger_than_memory_are_refused():
    result = state.request_state(models.find(MODELS, "qwen3-8b"), 1000)
    with pytest.raises(InputError) as err:
        state.fit_requests(result, 671026419200, 141e9, "h200", weight_bytes=1)
    assert err.value.field == "--device"


@pytest.mark.parametrize("context", [0, -5, 1.5, True])
def test_bad_context(context):
    with pytest.raises(InputError) as err:
        state.request_state(models.find(MODELS, "qwen3-8b"), context)
    assert err.value.field == "--context"


def test_bad_kv_bytes():
    with pytest.raises(InputError) as err:
        state.request_state(models.find(MODELS, "qwen3-8b"), 10, kv_bytes=0)
    assert err.value.field == "--kv-bytes"


def test_recurrent_state_formulas():
    ev = _Evaluator(formula_module(ROOT))
    # Mamba-2, small shape: state 8 x 4 x 2 = 64; conv width 8 x 4 + 2 x 1 x 2 = 36, x (4 - 1) = 108; (64 + 108) x 4 B = 688
    assert ev("FX800", recurrent_kind="mamba2", mamba_heads=8, mamba_head_dim=4, ssm_state_size=2, mamba_groups=1, conv_kernel=4, state_bytes=4) == 688
    # Gated DeltaNet, small shape: state 4 x 2 x 3 = 24; conv width 2 x 2 x 2 + 4 x 3 = 20, x (3 - 1) = 40; (24 + 40) x 2 B = 128
    assert ev("FX800", recurrent_kind="gated_deltanet", linear_v_heads=4, linear_k_heads=2, linear_k_head_dim=2, linear_v_head_dim=3,
              conv_kernel=3, state_bytes=2) == 128
    # the state does not depend on the context: FX801 = KV + layers x state: 1000 + 3 x 128 = 1384
    assert ev("FX801", kv_bytes_per_request=1000, recurrent_layers=3, recurrent_state_bytes_per_layer=128) == 1384
