"""Issue 28, the sweep's known gaps: sliding-window models (Gemma 3, gpt-oss) sized by calc kv-concurrency and
inference-capacity from their records (FX608: the replica's budget from the per-GPU one, over FX70's bytes of one
request), and MLA models (DeepSeek-V3) given their attention width by FX609 instead of asking for head_dim.
Every expected number is hand arithmetic from the config fields in knowledge/models/<id>.yaml and the device records;
none comes from running the engine."""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main

GIB = 2**30
# H100 SXM (knowledge/hardware/h100-sxm.yaml): driver total 79.18 GiB; vLLM's rule (FX72): x 0.9 - 5 GiB engine overhead
H100_USABLE = 0.9 * 79.18 * GIB - 5 * GIB  # 85,018,877,624.32 x 0.9 - 5,368,709,120 = 71,148,280,741.888 B


def calc(argv, capsys):
    code = main(["calc", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "needs a value" not in err
    return json.loads(out)


def test_gemma3_27b_kv_bytes_and_8k_requests_on_one_h100(capsys):
    # knowledge/models/gemma-3-27b-it.yaml config: num_hidden_layers 62, sliding_window_pattern 6 (every sixth layer
    # global: 62 // 6 = 10 global, 52 local), sliding_window 1024, num_key_value_heads 16, head_dim 128; BF16 K/V.
    # F8: 2 x 62 x 16 x 128 x 2 B = 507,904 B per token as if every layer held it; 507,904 / 62 = 8,192 B per layer-token.
    # FX70 at 8192 tokens: 8,192 x (10 x 8,192 + 52 x 1,024) = 8,192 x 135,168 = 1,107,296,256 B per request
    # (4,160,749,568 B = 507,904 x 8,192 if every layer were global).
    # Weights: 27,009,346,304 parameters (the record's count) x 2 B = 54,018,692,608 B.
    # Budget per GPU (FX72): 71,148,280,741.888 - 54,018,692,608 = 17,129,588,133.888 B; at TP 1 FX608 gives the same.
    # Requests (FX71 sliding_window): 17,129,588,133.888 / 1,107,296,256 = 15.47 -> 15 (4 with every layer global),
    # the 15 that `state --model gemma-3-27b-it --device h100-sxm --context 8192` prints.
    data = calc(["kv-concurrency", "--model", "gemma-3-27b-it", "--device", "h100-sxm", "--set", "context_tokens=8192"], capsys)
    out = data["outputs"]
    assert data["inputs"]["kv_layout"]["value"] == "sliding_window"
    assert data["inputs"]["window_layers"]["value"] == 52 and data["inputs"]["sliding_window"]["value"] == 1024
    assert out["kv_bytes_per_token"]["value"] == 507_904
    assert out["kv_budget_per_gpu"]["value"] == pytest.approx(H100_USABLE - 54_018_692_608, rel=1e-12)
    assert out["max_concurrent_requests"]["value"] == 15
    assert "FX608" in data["formulas"] and "FX70" in data["formulas"]


def test_gemma3_27b_at_tp2_counts_both_gpus_budgets(capsys):
    # TP 2: 16 KV heads split 8 per rank, 507,904 / 2 = 253,952 B per token per GPU (FX73).
    # Budget per GPU: 71,148,280,741.888 - 54,018,692,608 / 2 = 44,138,934,437.888 B.
    # FX608: 44,138,934,437.888 x 507,904 / 253,952 = 88,277,868,875.776 B of whole-model K/V for the replica.
    # Requests: 88,277,868,875.776 / 1,107,296,256 = 79.72 -> 79.
    data = calc(["kv-concurrency", "--model", "gemma-3-27b-it", "--device", "h100-sxm", "--set", "tp_size=2",
                 "--set", "context_tokens=8192"], capsys)
    out = data["outputs"]
    assert out["kv_bytes_per_token_per_gpu"]["value"] == 253_952
    assert out["max_concurrent_requests"]["value"] == 79


def test_gpt_oss_120b_8k_requests_on_one_h100(capsys):
    # knowledge/models/gpt-oss-120b.yaml config: 36 layers, layer_types 18 x [sliding_attention, full_attention],
    # sliding_window 128, num_key_value_heads 8, head_dim 64; BF16 K/V. F8: 2 x 36 x 8 x 64 x 2 = 73,728 B per token,
    # 2,048 B per layer-token. FX70 at 8192 tokens: 2,048 x (18 x 8,192 + 18 x 128) = 2,048 x 149,760 = 306,708,480 B.
    # Weights: the record's storage block, MXFP4 experts as the checkpoint ships: 65,248,815,744 B.
    # Budget: 71,148,280,741.888 - 65,248,815,744 = 5,899,464,997.888 B; / 306,708,480 = 19.23 -> 19 (state's 19).
    data = calc(["kv-concurrency", "--model", "gpt-oss-120b", "--device", "h100-sxm", "--set", "context_tokens=8192"], capsys)
    out = data["outputs"]
    assert out["kv_bytes_per_token"]["value"] == 73_728
    assert out["max_concurrent_requests"]["value"] == 19


def test_inference_capacity_sizes_gemma3_from_the_window(capsys):
    # The request's full context is prompt + output (FX136): 2048 + 256 = 2304 tokens, above the 1024 window.
    # FX70: 8,192 x (10 x 2,304 + 52 x 1,024) = 8,192 x 76,288 = 624,951,296 B per request.
    # Budget 17,129,588,133.888 B (as above) / 624,951,296 = 27.41 -> 27 requests (full attention: 507,904 x 2,304
    # = 1,170,210,816 B, 14).
    data = calc(["inference-capacity", "--model", "gemma-3-27b-it", "--device", "h100-sxm", "--set", "prompt_tokens=2048",
                 "--set", "avg_output_tokens=256", "--set", "batch_size=8"], capsys)
    assert data["outputs"]["max_concurrent_requests"]["value"] == 27


def test_inference_capacity_takes_mla_attention_width_from_the_config(capsys):
    # knowledge/models/deepseek-v3.yaml config: 61 layers, 128 heads, qk_nope_head_dim 128, qk_rope_head_dim 64,
    # v_head_dim 128. FX609 (expanded prefill): scores over 128 + 64 = 192 channels per head, values over 128:
    # (192 + 128) / 2 = 160. Active parameters 37,552,297,472 (the record's FX18 count).
    # FX130 at a 2048-token prompt: 2 x 37,552,297,472 x 2,048 = 153,814,210,445,312
    #   + 4 x 61 x 128 x 160 x 2,048^2 / 2 = 4,997,120 x 2,097,152 = 10,479,720,202,240  -> 164,293,930,647,552 FLOPs.
    # H200 (knowledge/hardware/h200.yaml) dense BF16 989.5 TFLOPS, TP 8, mfu 1:
    # prefill_time = 164,293,930,647,552 / (8 x 989.5e12) = 0.0207547 s (0.0210194 s with 192 for both products).
    data = calc(["inference-capacity", "--model", "deepseek-v3", "--device", "h200", "--set", "tp_size=8", "--set", "prompt_tokens=2048",
                 "--set", "avg_output_tokens=256", "--set", "batch_size=8", "--set", "mfu=1"], capsys)
    assert "head_dim" not in data["inputs"]
    assert "FX609" in data["formulas"]
    assert data["outputs"]["prefill_time"]["value"] == pytest.approx(164_293_930_647_552 / (8 * 989.5e12), rel=1e-9)


@pytest.mark.parametrize("model", ["gemma-3-27b-it", "gpt-oss-20b", "deepseek-v3", "kimi-k2-instruct"])
def test_serving_fleet_sizes_window_and_mla_models_without_a_measured_goodput(model, capsys):
    # before: "needs a value for instance_goodput ... or give kv_budget (head_dim) to derive it (FX138)"
    data = calc(["serving-fleet", "--model", model, "--device", "h200", "--set", "qps=10", "--set", "prompt_tokens=2048",
                 "--set", "avg_output_tokens=256", "--set", "ttft_target=2s", "--set", "tpot_target=100ms"], capsys)
    assert data["outputs"]["instance_goodput"]["value"] > 0 and data["outputs"]["n_gpus_required"]["value"] >= 1
