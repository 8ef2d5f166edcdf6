"""engine.domain.ledger reports (issue 13): the weight + KV residency floor, eager attention's
score tensor, and routing counts per MoE layer.

Shipped records: Qwen3-8B (Qwen/Qwen3-8B@b968826d: 36 layers, 32 heads, 8 KV heads, head_dim
128; 8190735360 parameters, the Hub count) and Qwen3-30B-A3B (48 layers, 32 heads, 4 KV heads,
128 experts, 8 per token) and DeepSeek-V3 (61 layers, first 3 dense, 128 heads, 256 experts,
8 per token). Expected numbers are hand arithmetic written beside them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.errors import InputError
from engine.domain import ledger
from engine.numeric import compiled

ROOT = Path(__file__).resolve().parents[2]
KV_TOKEN = 2 * 36 * 8 * 128 * 2  # F8 for Qwen3-8B at 2 bytes: 147456 B per token


@pytest.fixture(scope="module")
def catalog():
    return ledger.load_root(ROOT)


@pytest.fixture(scope="module")
def fwd(catalog):
    formulas = compiled.load(ROOT)

    def forward(model, tokens, **kw):
        return ledger.forward_record(catalog.model(model), catalog.templates, tokens, formulas=formulas, **kw)
    return forward


@pytest.fixture(scope="module")
def gen(catalog):
    formulas = compiled.load(ROOT)

    def generate(model, history, steps, **kw):
        return ledger.generate_record(catalog.model(model), catalog.templates, history, steps, formulas=formulas, **kw)
    return generate


def test_residency_floor_decode(fwd):
    r = fwd("qwen3-8b", 1, history=8192, batch=8, reports=("residency",)).extra["residency"]
    weights = 8190735360 * 2  # F6: parameters x 2 bytes
    kv = 8 * 8193 * KV_TOKEN  # every sequence holds 8192 + 1 tokens after the step
    assert r["weight_bytes"] == weights and r["kv_bytes_replica"] == kv and r["kv_bytes_per_gpu"] == kv
    assert r["floor_bytes_replica"] == weights + kv  # FX601
    assert r["floor_bytes_replica"] == 16381470720 + 9664856064  # 26046326784 B = 24.3 GiB
    assert r["context_tokens_per_sequence"] == 8193 and r["sequences"] == 8


def test_residency_floor_under_tp(fwd):
    r = fwd("qwen3-8b", 1, history=1023, tp=2, reports=("residency",)).extra["residency"]
    assert r["weight_bytes_per_gpu"] == 8190735360  # FX302: 16381470720 / 2
    assert r["kv_bytes_per_gpu"] == 1024 * KV_TOKEN // 2  # FX73: 8 KV heads split over 2 GPUs
    assert r["kv_bytes_replica"] == 1024 * KV_TOKEN
    assert r["floor_bytes_per_gpu"] == 8190735360 + 1024 * KV_TOKEN // 2


def test_residency_after_generate(gen):
    r = gen("qwen3-8b", 1000, 24, batch=4, reports=("residency",)).extra["residency"]
    assert r["context_tokens_per_sequence"] == 1024
    assert r["kv_bytes_replica"] == 4 * 1024 * KV_TOKEN


def test_eager_attention_forward(fwd):
    flash = fwd("qwen3-8b", 512, batch=2)
    eager = fwd("qwen3-8b", 512, batch=2, attention="eager")
    e = eager.extra["eager_attention"]
    scores = 2 * 32 * 512 * 512  # B x heads x S x (H + S), the full rectangle
    assert e["score_tensor_elements_per_layer"] == scores
    assert e["score_tensor_bytes_per_layer"] == scores * 2  # 33554432 B at 2-byte activations
    assert e["flash_score_tensor_bytes"] == 0
    assert e["extra_activation_bytes"] == 4 * scores * 2 * 36  # written, read, probabilities written, read; 36 layers
    added = sum(r.activation_read_bytes + r.activation_write_bytes for r in eager.rows) - \
        sum(r.activation_read_bytes + r.activation_write_bytes for r in flash.rows)
    assert added == e["extra_activation_bytes"]
    assert eager.totals["matrix_flops"] == flash.totals["matrix_flops"]  # same work, more traffic
    assert eager.scenario["attention"] == "eager" and "attention" not in flash.scenario
    assert any(a.startswith("Attention is eager") for a in eager.assumptions)


def test_eager_attention_generate(gen):
    flash = gen("qwen3-8b", 100, 10)
    eager = gen("qwen3-8b", 100, 10, attention="eager")
    e = eager.extra["eager_attention"]
    cells = sum(100 + j + 1 for j in range(10))  # call j attends to 100 + j cached tokens and itself: 1055
    assert e["extra_activation_bytes"] == 4 * 2 * 32 * cells * 36
    assert eager.extra["activation_read_bytes"] + eager.extra["activation_write_bytes"] - \
        flash.extra["activation_read_bytes"] - flash.extra["activation_write_bytes"] == e["extra_activation_bytes"]
    assert e["score_tensor_elements_per_layer"] == 32 * 110  # the last call: 109 cached + 1


def test_eager_attention_mla(fwd):
    e = fwd("deepseek-v3", 64, attention="eager").extra["eager_attention"]
    assert e["score_tensor_elements_per_layer"] == 128 * 64 * 64
    assert e["extra_activation_bytes"] == 4 * 2 * 128 * 64 * 64 * 61


def test_bad_attention_mode(fwd):
    with pytest.raises(InputError) as exc:
        fwd("qwen3-8b", 4, attention="naive")
    assert exc.value.field == "--attention" and "flash, eager" in exc.value.message


def test_routing_counts_balanced(fwd):
    c = fwd("qwen3-30b-a3b", 100, reports=("routing_counts",)).extra["routing_counts"]
    assert c["assignments_per_layer"] == 800 and c["moe_layers"] == 48 and not c["per_layer"]
    (h,) = c["histograms"]
    # 800 assignments round 128 experts: 800 = 6 x 128 + 32, so experts 0-31 get 7 tokens, the rest 6
    assert h["counts"] == [7] * 32 + [6] * 96
    assert h["experts_used"] == 128 and h["max_tokens_per_expert"] == 7 and h["min_tokens_per_expert"] == 6
    assert h["mean_tokens_per_expert"] == 800 / 128 and h["max_over_mean"] == 7 / 6.25
    assert h["layers"] == list(range(48))


def test_routing_counts_concentrated_and_decode(fwd, gen):
    h = fwd("qwen3-30b-a3b", 5, routing="concentrated", reports=("routing_counts",)).extra["routing_counts"]["histograms"][0]
    assert h["counts"] == [5] * 8 + [0] * 120 and h["experts_used"] == 8
    c = gen("deepseek-v3", 10, 3, batch=4, reports=("routing_counts",)).extra["routing_counts"]
    assert c["routed_tokens"] == 4 and c["first_moe_layer"] == 3  # one call: 4 sequences x 1 token; layers 0-2 dense
    assert c["histograms"][0]["counts"] == [1] * 32 + [0] * 224  # 4 x 8 assignments


def test_routing_counts_per_layer_histogram(fwd):
    layer = [2] * 8 + [0] * 120  # 2 tokens x top-8 on experts 0-7
    other = [1] * 16 + [0] * 112
    routing = [layer if i % 2 else other for i in range(48)]
    c = fwd("qwen3-30b-a3b", 2, routing=routing, reports=("routing_counts",)).extra["routing_counts"]
    assert c["per_layer"] and len(c["histograms"]) == 48
    assert c["histograms"][1]["layers"] == [1] and c["histograms"][1]["max_over_mean"] == 2 / (16 / 128)
    assert c["histograms"][0]["experts_used"] == 16


def test_routing_counts_need_moe(fwd):
    with pytest.raises(InputError) as exc:
        fwd("qwen3-8b", 4, reports=("routing_counts",))
    assert exc.value.field == "--routing-counts"


def test_quantised_storage_gpt_oss_20b(fwd):
    """gpt-oss model card (arXiv:2508.10925) Table 1 and section 2: MoE weights in MXFP4 (4.25 bits),
    the rest in BF16; checkpoint 12.8 GiB for gpt-oss-20b."""
    q = fwd("gpt-oss-20b", 1, quantised={"format": "mxfp4", "scope": "experts"}).extra["quantised_storage"]
    experts = 24 * 32 * 24891840  # official config.json: per expert 2880 x 5760 + 5760 (gate/up, bias) + 2880 x 2880 + 2880 (down, bias)
    assert q["quantised_parameters"] == experts
    assert q["bytes_per_quantised_value"] == 4.25 / 8  # FX650 mxfp4: 4 bits + one 8-bit scale per 32
    assert q["quantised_element_bytes"] == experts // 2 and q["scale_bytes"] == experts // 32
    assert q["unquantised_bytes"] == 2 * q["unquantised_parameters"]  # norms, embeddings, attention, router at BF16
    assert q["weight_bytes"] == experts * 4.25 / 8 + 2 * q["unquantised_parameters"]  # FX652
    assert abs(q["weight_bytes"] - 12.8 * 2**30) / (12.8 * 2**30) < 0.001, "12.8 GiB checkpoint: +0.06%"


def test_quantised_storage_int4_groups(fwd):
    q = fwd("qwen3-8b", 1, quantised={"format": "int4_group", "group_size": 64}).extra["quantised_storage"]
    linear = 36 * (4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 12288)  # q, k, v, o, MLP: 6945767424
    assert q["quantised_parameters"] == linear
    assert q["bytes_per_quantised_value"] == (4 + 16 / 64) / 8  # FX650 int4_group: FP16 scale per 64 values
    assert q["scale_bytes"] == linear * 2 // 64  # one 2-byte scale per 64 weights
    assert q["unquantised_parameters"] == 8190735360 - linear  # embedding, lm_head, norms stay BF16
    with pytest.raises(InputError) as exc:
        fwd("qwen3-8b", 1, quantised={"format": "int3"})
    assert exc.value.field == "--quantized"
