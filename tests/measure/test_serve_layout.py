"""A serving record's layout as the engines state it (issues 26/27), by hand arithmetic from config.json and the docs.

The engines place expert parallel inside the tensor-parallel ranks: TensorRT-LLM's moe_tensor_parallel_size x
moe_expert_parallel_size = tensor_parallel_size (docs, features/parallel-strategy), SGLang's --ep-size divides --tp-size
and --enable-dp-attention splits the --tp-size ranks into --dp-size attention groups (attn_tp_size = tp_size // dp_size,
srt/layers/dp_attention.py), vLLM's --enable-expert-parallel spreads the experts over TP x DP ranks. So an instance is
tp GPUs, EP does not multiply it, and each GPU holds 1/tp of the routed experts.

Qwen3-235B-A22B (knowledge/models/qwen3-235b-a22b.yaml, config.json): 94 layers, hidden 4096, 128 experts of
moe_intermediate 1536 (gate, up, down: 3 x 4096 x 1536 = 18,874,368 each), 64 query heads, 4 K/V heads of 128; 235,093,634,560
parameters in all. Routed experts: 94 x 128 x 18,874,368 = 227,096,395,776; the rest (attention, embeddings, routers,
norms): 235,093,634,560 - 227,096,395,776 = 7,997,238,784.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.domain import measurements
from engine.measure import serve
from engine.measure.generations import Unmapped

ROOT = Path(__file__).resolve().parents[2]
EXPERTS = 94 * 128 * 3 * 4096 * 1536
REST = 235_093_634_560 - EXPERTS


@pytest.fixture(scope="module")
def rows():
    found, _ = measurements.load(ROOT)
    return {m.id: m for m in found}


@pytest.mark.parametrize(("layout", "engine", "want"), [
    ({"tp": 8, "ep": 4}, "tensorrt-llm", (8, 1, 8)),  # moe_ep 4 x moe_tp 2 = tp 8: one instance of 8 GPUs, attention TP 8
    ({"tp": 8, "ep": 8, "attention_dp": True}, "tensorrt-llm", (1, 8, 8)),  # enable_attention_dp: every rank its own requests
    ({"tp": 4, "ep": 4, "dp": 4, "attention_dp": True}, "sglang", (1, 4, 4)),  # --tp 4 --dp 4 --enable-dp-attention
    ({"tp": 8, "dp": 2, "attention_dp": True}, "sglang", (4, 2, 8)),  # attn_tp_size = 8 // 2 = 4
    ({"tp": 48, "ep": 48, "dp": 48, "attention_dp": True}, "sglang", (1, 48, 48)),  # LMSYS's large-scale EP decode
    ({"tp": 2, "dp": 4, "ep": 8, "attention_dp": True}, "vllm", (2, 4, 8)),  # vLLM: DP beside TP, experts over 2 x 4
    ({"tp": 8}, "vllm", (8, 1, 8)),
])
def test_the_instance_is_the_tp_ranks(layout, engine, want):
    assert serve.instance(layout, engine) == want


def test_ep_must_divide_tp():
    with pytest.raises(Unmapped, match="EP 3 does not divide TP 8"):
        serve.instance({"tp": 8, "ep": 3}, "tensorrt-llm")


def test_trtllm_ep_inside_tp_holds_an_eighth_of_every_weight(rows):
    # dstack's DeepSeek-R1 on 8 H200 under TensorRT-LLM, tp 8 ep 4: one instance of the 8 GPUs (no longer 32), each holding
    # 1/8 of the weights: DeepSeek-V3's 671,026,419,200 parameters (deepseek-v3.yaml) at the record's FP8, 1 B each, / 8 =
    # 83,878,302,400 B per GPU; the MoE output is reduced with the TP all-reduce (no All2All term)
    t = serve.terms(ROOT, rows["meas:dstack-deepseek-r1-h200-mi300x-online/h200-trt-llm-c4-o800-mean-ttft"])
    assert (t["g"], t["ep"], t["replicas"]) == (8, 1, 1)
    assert t["w_dense"] + t["w_expert"] == pytest.approx(83_878_302_400, rel=1e-9)
    assert t["ep1"] == 0


def test_trtllm_attention_dp_replicates_attention_and_splits_the_experts(rows):
    # TensorRT-LLM's Qwen3-235B-A22B on 8 H200, tp 8 ep 8 with attention DP, FP8 weights (1 B each): attention and the
    # other non-expert weights whole on every GPU (the docs: attention DP replicates all GEMM weights), 7,997,238,784 B;
    # the routed experts over the 8, 227,096,395,776 / 8 = 28,387,049,472 B; 8 attention groups of one GPU each
    t = serve.terms(ROOT, rows["meas:trtllm-perf-overview-v1.0-qwen3-235b-a22b/h200-tp8-128-128"])
    assert (t["g"], t["ep"], t["replicas"]) == (8, 8, 1)
    assert t["w_expert"] == pytest.approx(28_387_049_472, rel=1e-6)
    assert t["w_dense"] == pytest.approx(REST, rel=1e-6)


def test_qwen3_235b_at_tp8_replicates_its_four_kv_heads(rows):
    # vLLM runs TP 8 over 64 query heads and 4 K/V heads by keeping one K/V head per rank (8 / 4 = 2 copies of each):
    # K/V per token per GPU = 2 (K, V) x 94 layers x 1 head x 128 x 2 B (BF16) = 48,128 B, the same as at TP 4
    # (4 / 4 = 1 head per rank); the whole token holds 2 x 94 x 4 x 128 x 2 = 192,512 B
    from engine.plan.serve import build_serve
    from engine.plan.serve_eval import constants, kv_share

    s = build_serve(ROOT, "qwen3-235b-a22b", "h100-sxm", prompt=1000, output=100, ttft=10.0, tpot=1.0, mfu=0.5, split=False)
    assert 8 in s.tp and 4 in s.tp
    kv = constants(s)["kv_token"]
    assert kv == pytest.approx(192_512, rel=1e-12)
    assert kv * kv_share(s, 8) == pytest.approx(48_128, rel=1e-12)
    assert kv * kv_share(s, 4) == pytest.approx(48_128, rel=1e-12)
    assert kv * kv_share(s, 2) == pytest.approx(96_256, rel=1e-12)
    # the published TP 8 rows map now (GPUStack, vLLM 0.11 on 8 H100, BF16)
    t = serve.terms(ROOT, rows["meas:gpustack-perflab-qwen3-235b-a22b-h100/baseline-32k-mean-ttft"])
    assert (t["g"], t["ep"]) == (8, 1)


def test_mxfp4_on_hopper_runs_weight_only_at_the_bf16_peak(rows):
    # gpt-oss's MXFP4 experts on an H100 (no FP4 tensor cores): vLLM dequantises them to BF16 in its Marlin / Triton MoE
    # kernels, so the products run at the H100's dense BF16 peak, 989.4 TFLOP/s (Hopper whitepaper), while the weights
    # keep their MXFP4 bytes; a B200 states an MXFP4 peak and keeps it
    assert serve.compute_precision(str(ROOT), "h100-sxm", {"weights": "mxfp4"}) == "bf16"
    assert serve.compute_precision(str(ROOT), "b200", {"weights": "mxfp4"}) == "mxfp4"
    assert serve.compute_precision(str(ROOT), "a100-sxm-80gb", {"weights": "fp8"}) == "bf16"  # Ampere: FP8 weight-only (Marlin)
    assert serve.compute_precision(str(ROOT), "h100-sxm", {"weights": "fp8"}) == "fp8"
    assert serve.compute_precision(str(ROOT), "h100-sxm", {"weights": "mxfp4", "compute": "fp8"}) == "fp8"  # as stated
    t = serve.terms(ROOT, rows["meas:gpustack-perflab-gpt-oss-120b-h100/baseline-32k-mean-ttft"])
    assert t["peak"] == pytest.approx(989.4e12, rel=1e-12)


def test_plan_serve_states_the_replication_and_the_weight_only_products():
    from engine.plan.serve import build_serve, notes

    s = build_serve(ROOT, "qwen3-235b-a22b", "h100-sxm", prompt=1000, output=100, ttft=10.0, tpot=1.0, mfu=0.5, split=False)
    assert any(n.startswith("K/V heads: TP above the 4 K/V heads replicates them") for n in notes(s))
    # gpt-oss-120b as its checkpoint stores it (MXFP4 experts) at plan serve's default --precision bf16 on an H100
    s = build_serve(ROOT, "gpt-oss-120b", "h100-sxm", prompt=1000, output=100, ttft=10.0, tpot=1.0, mfu=0.5, split=False)
    assert s.precision == "bf16" and s.bytes_param_expert == pytest.approx(4.25 / 8)  # MXFP4: 4 bits + an 8-bit scale per 32
    assert any(n.startswith("weight-only quantisation: weights stored narrower than the bf16 products") for n in notes(s))


@pytest.mark.parametrize("engine", ["sglang", "tensorrt-llm", "vllm", None])
@pytest.mark.parametrize(("tp", "ep"), [(1, 1), (4, 1), (1, 8), (2, 4)])
def test_plan_serves_tp_x_ep_round_trips_through_the_engines_terms(engine, tp, ep):
    # plan serve's TP 2 x EP 4 is an instance of 8 GPUs: attention in 4 groups of 2 ranks, the experts over all 8
    # (SGLang --tp-size 8 --dp-size 4 --enable-dp-attention; vLLM --tensor-parallel-size 2 --data-parallel-size 4)
    assert serve.instance(serve.engine_layout(tp, ep, engine), engine) == (tp, ep, tp * ep)


def test_a_backend_beside_the_release_default_is_a_series_of_its_own(rows):
    # dstack's TensorRT-LLM rows ran `trtllm-serve --backend pytorch` of 0.17.post1.dev (the row's launch note), the PyTorch
    # preview, not the TensorRT engines of the same release that NVIDIA's v0.17 performance overview measured: their step
    # overheads are fitted apart (tensorrt-llm-pytorch-0.17 beside tensorrt-llm-0.17)
    from engine.measure.calibrate import _engine

    dstack = rows["meas:dstack-deepseek-r1-h200-mi300x-online/h200-trt-llm-c4-o800-mean-ttft"]
    assert dstack.backend == "pytorch"
    assert _engine(dstack) == "tensorrt-llm-pytorch-0.17"
    overview = next(m for m in rows.values() if m.source == "meas:trtllm-perf-overview-v0.17")
    assert overview.backend is None and _engine(overview) == "tensorrt-llm-0.17"
