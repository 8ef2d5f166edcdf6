"""engine.domain.ledger reports (issue 13): training FLOPs beside 6ND, and active parameters.

The shipped records are used: Qwen3-8B (Qwen/Qwen3-8B@b968826d config.json: 36 layers, hidden
4096, 32 heads, 8 KV heads, head_dim 128, intermediate 12288, vocab 151936, untied),
Qwen3-30B-A3B (48 layers, hidden 2048, 32 heads, 4 KV heads, head_dim 128, 128 experts, 8 per
token, expert width 768, vocab 151936, untied) and DeepSeek-V3 (deepseek-ai/DeepSeek-V3@e815299b:
61 layers, first 3 dense with intermediate 18432, hidden 7168, 128 heads, q_lora 1536, kv_lora
512, rope 64, nope 128, v 128, 256 experts, 8 per token, 1 shared, expert width 2048, vocab
129280, router bias). Every expected number is hand arithmetic written beside it, or a
published figure named beside it with the deviation allowed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.errors import InputError
from engine.domain import ledger
from engine.numeric import compiled

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def catalog():
    return ledger.load_root(ROOT)


@pytest.fixture(scope="module")
def run(catalog):
    formulas = compiled.load(ROOT)

    def forward(model, tokens, **kw):
        return ledger.forward_record(catalog.model(model), catalog.templates, tokens, formulas=formulas, **kw)
    return forward


# Qwen3-8B, hand arithmetic: weights of the matrix products of one layer
Q8_LAYER = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 12288  # q, k, v, o, gate/up/down = 192937984
Q8_HEAD = 151936 * 4096  # lm_head (untied) = 622329856; the embedding table is the same size
Q8_MATMUL_PARAMS = 36 * Q8_LAYER + Q8_HEAD  # 7568097280
Q8_TOTAL = 8190735360  # Hugging Face Hub safetensors count of Qwen/Qwen3-8B (the record's parameters.total)
Q8_NORMS = 36 * (2 * 4096 + 2 * 128) + 4096  # input/post-attention norms, q/k norms, final norm = 308224


def test_training_flops_from_the_ledger_qwen3_8b(run):
    S = 4096
    t = run("qwen3-8b", S, reports=("training",)).extra["training"]
    cells = S * (S + 1) // 2  # causal cells per head, diagonal included
    attn = 36 * 2 * (2 * 32 * 128 * cells)  # QK and PV per layer, FMA = 2
    rect = 36 * 2 * (2 * 32 * 128 * S * S)
    forward = 2 * S * Q8_MATMUL_PARAMS + attn
    assert t["tokens"] == S and t["forward_attention_matrix_flops"] == attn
    assert t["forward_matrix_flops"] == forward
    assert t["training_flops"] == 3 * forward  # forward + 2 x backward (FX860)
    assert t["training_flops_rectangular"] == 3 * (2 * S * Q8_MATMUL_PARAMS + rect)
    assert t["params_active"] == Q8_TOTAL  # a dense model: every stored weight
    assert t["six_nd"] == 6 * Q8_TOTAL * S  # F1 / Kaplan et al. 2020: C = 6ND
    # the difference, term by term: attention (absent from 6ND), the embedding gather (in N, no product), norms (in N, no product)
    assert t["difference_terms"] == {"attention": 3 * attn, "embedding": -6 * Q8_HEAD * S, "norm": -6 * Q8_NORMS * S}
    assert t["difference"] == 3 * forward - 6 * Q8_TOTAL * S
    assert sum(t["difference_terms"].values()) == t["difference"]
    assert Q8_TOTAL == Q8_MATMUL_PARAMS + Q8_HEAD + Q8_NORMS  # the decomposition closes: N = matrix weights + embedding + norms


def test_rectangular_training_flops_are_palm_appendix_b(run):
    """PaLM Appendix B's per-token model FLOPs, 6N + 12·L·H·Q·T (H heads, Q head size, T sequence
    length), with N the weights that do a matrix product: F1's attention variant (whose record
    cites PaLM) equals the ledger's rectangular count exactly."""
    S, B = 2048, 2
    t = run("qwen3-8b", S, batch=B, reports=("training",)).extra["training"]
    per_token = 6 * Q8_MATMUL_PARAMS + 12 * 36 * 32 * 128 * S  # hand arithmetic, PaLM's form
    assert t["training_flops_rectangular"] == per_token * B * S
    # F1 include with every stored parameter adds the embedding and the norms back
    assert t["six_nd_with_attention"] == (6 * Q8_TOTAL + 12 * 36 * 32 * 128 * S) * B * S


def test_training_ignores_history_and_output_head(run):
    a = run("qwen3-8b", 128, reports=("training",)).extra["training"]
    b = run("qwen3-8b", 128, history=999, output_head="none", reports=("training",)).extra["training"]
    assert a == b


QWEN3_30B_ACTIVE = (48 * (2048 * 4096 + 2 * 2048 * 512 + 4096 * 2048  # q, k, v, o
                          + 2 * 128 + 2 * 2048  # q/k norms, two hidden norms
                          + 2048 * 128  # router
                          + 8 * 3 * 2048 * 768)  # 8 of 128 experts, gate/up/down
                    + 2 * 151936 * 2048 + 2048)  # embedding, lm_head, final norm = 3353032704


def test_active_parameters_qwen3_30b_a3b(run):
    a = run("qwen3-30b-a3b", 1, reports=("active_parameters",)).extra["active_parameters"]
    assert a["active"] == QWEN3_30B_ACTIVE
    assert a["stored"] == 30532122624  # Hub safetensors count (the record's parameters.total)
    assert a["routed_expert_parameters"] == 48 * 128 * 3 * 2048 * 768
    assert a["routed_share"] == 8 / 128
    # Qwen3-30B-A3B model card (also vLLM-Ascend's Qwen3-30B-A3B tutorial, docs.vllm.ai): 30.5B total, 3.3B activated
    assert abs(a["active"] - 3.3e9) / 3.3e9 < 0.02, "published 3.3B activated: the card rounds down (3.353B, +1.6%)"
    assert a["active_excluding_input_embedding"] == QWEN3_30B_ACTIVE - 151936 * 2048


DSV3_ATTN = (7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512  # q_a, q_a_norm, q_b, kv_a, kv_a_norm
             + 128 * 128 * 512 + 128 * 512 * 128 + 128 * 128 * 7168)  # W_UK, W_UV (kv_b_proj), o = 187107328
DSV3_ACTIVE = (61 * (DSV3_ATTN + 2 * 7168)  # attention and the two hidden norms of every layer
               + 3 * 3 * 7168 * 18432  # 3 dense MLPs
               + 58 * (7168 * 256 + 256 + 3 * 7168 * 2048 + 8 * 3 * 7168 * 2048)  # router + bias, shared expert, 8 routed
               + 2 * 129280 * 7168 + 7168)  # embedding, lm_head, final norm = 37552297472


def test_active_parameters_deepseek_v3(run):
    a = run("deepseek-v3", 1, reports=("active_parameters",)).extra["active_parameters"]
    assert a["active"] == DSV3_ACTIVE
    assert a["stored"] == 671026419200  # the record's language-model total (Hub count less the MTP module)
    # DeepSeek-V3 README (deepseek-ai/DeepSeek-V3@8189242e): 671B total, 37B activated per token
    assert abs(a["active"] - 37e9) / 37e9 < 0.02, "37B activated: +1.5%"
    # README_WEIGHTS.md (HF commits 108e1e0 and 32950e4): activation parameters 36.6B including the output head,
    # i.e. without the input embedding table (0.9B)
    assert a["active_excluding_input_embedding"] == DSV3_ACTIVE - 129280 * 7168
    assert abs(a["active_excluding_input_embedding"] - 36.6e9) / 36.6e9 < 0.001, "36.6B: +0.07%"


def test_moe_training_uses_active_parameters(run):
    t = run("qwen3-30b-a3b", 256, reports=("training",)).extra["training"]
    assert t["params_active"] == QWEN3_30B_ACTIVE
    assert t["six_nd"] == 6 * QWEN3_30B_ACTIVE * 256
    assert t["six_nd_stored_parameters"] == 6 * 30532122624 * 256
    cells = 256 * 257 // 2
    assert t["difference_terms"]["attention"] == 3 * 48 * 2 * 2 * 32 * 128 * cells
    assert sum(t["difference_terms"].values()) == t["difference"]  # routed experts: 3 x 2 x T x k x h x f = 6 x (k/E of E h f) x T


def test_mla_training_has_no_palm_term(run):
    t = run("deepseek-v3", 16, reports=("training",)).extra["training"]
    assert t["six_nd_with_attention"] is None
    assert t["params_active"] == DSV3_ACTIVE


def test_reports_are_off_by_default_and_checked(run):
    assert run("qwen3-8b", 4).extra == {}
    with pytest.raises(InputError) as exc:
        run("qwen3-8b", 4, reports=("bogus",))
    assert exc.value.field == "--bogus"
