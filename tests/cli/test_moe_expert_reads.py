"""calc inference-capacity and calc energy-per-token read FX1400's share of an MoE model's routed experts when the batch
is given (issue 28: one answer for one question; plan serve and validate already time a step this way).

A decode step reads the dense part whole and of the routed experts those its tokens are routed to: FX1400's expected
share 1 - (1 - k/E)^B under balanced routing. Every number below is hand arithmetic from the models' config.json and
checkpoint records (cited at each case) and the H200 datasheet's 4.8 TB/s; mbu = mfu = 1 and no step overhead, so the
step is the bare roofline and the arithmetic stays short.
"""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main

BARE = ["--set", "mbu=1", "--set", "mfu=1", "--set", "step_overhead_time=0", "--format", "json"]
H200 = 4.8e12  # NVIDIA H200 datasheet: 4.8 TB/s


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def capacity(model: str, capsys, *sets: str) -> dict:
    return run(["calc", "inference-capacity", "--model", model, "--device", "h200", *sets, *BARE], capsys)


# Mixtral-8x7B (mistralai/Mixtral-8x7B-v0.1 config.json: hidden 4096, intermediate 14336, 32 layers, 8 local experts,
# 2 per token, 8 KV heads of 128), BF16: one expert 3 x 4096 x 14336 = 176,160,768 parameters; routed experts
# 32 x 8 x 176,160,768 = 45,097,156,608 x 2 B = 90,194,313,216 B of the 46,702,792,704 x 2 = 93,405,585,408 B (the Hub's
# count); dense part 3,211,272,192 B. K/V: 2 x 32 x 8 x 128 x 2 B = 131,072 B per token.
MIXTRAL_W, MIXTRAL_R, MIXTRAL_KV = 93_405_585_408, 90_194_313_216, 131_072


def test_mixtral_at_batch_4_reads_the_dense_part_and_68_percent_of_its_experts(capsys):
    # batch 4 at 3840 + 256 = 4096 tokens (FX136: the last token's context), TP 1 on one H200
    share = 1 - (6 / 8) ** 4  # FX1400: 1 - 0.31640625 = 0.68359375
    kv = 4 * 4096 * MIXTRAL_KV  # 2,147,483,648 B
    after = (MIXTRAL_W - MIXTRAL_R + share * MIXTRAL_R + kv) / H200  # (3,211,272,192 + 61,656,268,800 + kv) / 4.8e12 = 13.96 ms
    before = (MIXTRAL_W + kv) / H200  # every expert: 19.91 ms
    data = capacity("mixtral-8x7b", capsys, "--set", "batch_size=4", "--set", "prompt_tokens=3840", "--set", "avg_output_tokens=256")
    inputs, outputs = data["inputs"], data["outputs"]
    assert inputs["hbm_bandwidth"]["value"] == H200 and inputs["expert_reads"]["value"] == "routed_share"
    assert "FX1400" in inputs["expert_reads"]["source"] and "--set expert_reads=all" in inputs["expert_reads"]["source"]
    assert outputs["decode_memory_time"]["value"] == pytest.approx(after, rel=1e-12)
    assert outputs["tpot"]["value"] == pytest.approx(after, rel=1e-12)  # memory-bound: 4 x 2 x 12.9e9 FLOP take 0.1 ms
    assert {"FX1401", "FX1402", "FX1403", "FX1400"} <= set(data["formulas"])
    every = capacity("mixtral-8x7b", capsys, "--set", "batch_size=4", "--set", "prompt_tokens=3840", "--set", "avg_output_tokens=256",
                     "--set", "expert_reads=all")
    assert every["outputs"]["decode_memory_time"]["value"] == pytest.approx(before, rel=1e-12)


def test_deepseek_v3_on_h200_at_tp8_batch_8_reads_22_percent_of_its_experts(capsys):
    # DeepSeek-V3 (deepseek-ai/DeepSeek-V3@e815299b config.json: 61 layers, first_k_dense_replace 3, 256 routed experts of
    # 3 x 7168 x 2048 = 44,040,192 parameters, 8 per token; kv_lora_rank 512, qk_rope_head_dim 64). The FP8 checkpoint stores
    # 673,150,611,808 B for its 671,026,419,200 parameters (model record, storage): bytes_param = their ratio. Routed
    # experts 58 x 256 x 44,040,192 = 653,908,770,816 parameters (FX1401: (671,026,419,200 - 37,552,297,472) x 256/248).
    w = 673_150_611_808
    r = 653_908_770_816 * (673_150_611_808 / 671_026_419_200)
    share = 1 - (31 / 32) ** 8  # FX1400 at 8 tokens: 1 - 0.77570 = 0.22430
    kv = 8 * 2304 * (512 + 64) * 61 * 2  # the MLA latent, whole on every rank: 70,272 B per token at 2048 + 256 tokens
    after = ((w - r + share * r) / 8 + kv) / H200  # 4.55 ms
    before = (w / 8 + kv) / H200  # 17.80 ms: every expert, 3.91x
    data = capacity("deepseek-v3", capsys, "--set", "tp_size=8", "--set", "batch_size=8", "--set", "prompt_tokens=2048",
                    "--set", "avg_output_tokens=256")
    assert data["inputs"]["params_active"]["value"] == 671_026_419_200 - 248 * 58 * 44_040_192  # 37,552,297,472
    assert data["outputs"]["decode_memory_time"]["value"] == pytest.approx(after, rel=1e-12)
    assert before / after == pytest.approx(3.92, abs=0.01)


def test_gpt_oss_experts_are_read_as_the_mxfp4_they_are_stored_in(capsys):
    # gpt-oss-120b's checkpoint (openai/gpt-oss-120b; model record storage): 114,661,785,600 routed-expert values in MXFP4
    # (4 + 8/32 bits = 0.53125 B, OCP MX v1.0) = 60,914,073,600 B and 2,167,371,072 other parameters in BF16 = 4,334,742,144 B;
    # 65,248,815,744 B in all. Given the experts' own count, batch 16 on one H200 at 1024 + 64 tokens, 128 experts, top 4:
    # FX1400 = 1 - (31/32)^16 = 0.398290; K/V 2 x 36 layers x 8 KV heads x 64 x 2 B = 73,728 B per token (every layer at the
    # full context, FX132's bound for the sliding-window layers)
    share = 1 - (124 / 128) ** 16
    kv = 16 * 1088 * 73_728
    after = (4_334_742_144 + share * 60_914_073_600 + kv) / H200
    data = capacity("gpt-oss-120b", capsys, "--set", "batch_size=16", "--set", "prompt_tokens=1024", "--set", "avg_output_tokens=64",
                    "--set", "routed_expert_params=114661785600")
    inputs = data["inputs"]
    assert inputs["expert_storage"]["value"] == "separate" and inputs["bytes_param_expert"]["value"] == 0.53125
    assert data["outputs"]["weight_bytes"]["value"] == pytest.approx(65_248_815_744, rel=1e-12)
    assert data["outputs"]["decode_memory_time"]["value"] == pytest.approx(after, rel=1e-12)


def test_weights_given_in_one_format_store_the_experts_in_it_too(capsys):
    # --weights fp8 on gpt-oss-120b: every weight 1 B, the routed experts too (FX1402 same), so with the record's
    # 114,661,785,600 routed-expert values they take 114,661,785,600 x 1 B (not the checkpoint's MXFP4 0.53125 B)
    data = capacity("gpt-oss-120b", capsys, "--weights", "fp8", "--set", "batch_size=1", "--set", "prompt_tokens=100",
                    "--set", "avg_output_tokens=28", "--set", "routed_expert_params=114661785600", "--explain")
    assert data["inputs"]["bytes_param"]["value"] == 1 and data["inputs"]["expert_storage"]["value"] == "same"
    assert {s["id"]: s["value"] for s in data["explain"]}["FX1402"] == 114_661_785_600


def test_energy_per_token_reads_the_same_share(capsys):
    # Mixtral at batch 4, 3840 + 256 tokens, as above: the step energy-per-token times is inference-capacity's
    share = 1 - (6 / 8) ** 4
    step = (MIXTRAL_W - MIXTRAL_R + share * MIXTRAL_R + 4 * 4096 * MIXTRAL_KV) / H200
    data = run(["calc", "energy-per-token", "--model", "mixtral-8x7b", "--device", "h200", "--set", "batch_size=4", "--set", "prompt_tokens=3840",
                "--set", "avg_output_tokens=256", *BARE], capsys)
    assert data["inputs"]["expert_reads"]["value"] == "routed_share"
    assert data["outputs"]["decode_step_time"]["value"] == pytest.approx(step, rel=1e-12)


def test_a_dense_model_and_a_derived_batch_read_every_weight(capsys):
    # Qwen3-8B is dense: FX132 reads every weight, as before (the golden JSON holds its numbers)
    data = capacity("qwen3-8b", capsys, "--set", "batch_size=8", "--set", "prompt_tokens=1024", "--set", "avg_output_tokens=64")
    assert data["inputs"]["expert_reads"]["value"] == "all" and "FX1400" not in data["formulas"]
    # an MoE model whose batch comes from a TPOT target (FX134 inverts FX132 in closed form): every expert
    data = capacity("mixtral-8x7b", capsys, "--set", "batch_rule=tpot_target", "--set", "tpot_target=50ms", "--set", "prompt_tokens=1024",
                    "--set", "avg_output_tokens=64")
    assert data["inputs"]["expert_reads"]["value"] == "all" and "FX1400" not in data["formulas"]
    data = run(["calc", "serving-fleet", "--model", "mixtral-8x7b", "--device", "h200", "--set", "qps=5", "--set", "prompt_tokens=1024",
                "--set", "avg_output_tokens=64", "--set", "ttft_target=2s", "--set", "tpot_target=50ms", "--format", "json"], capsys)
    assert data["inputs"]["expert_reads"]["value"] == "all" and "FX1400" not in data["formulas"]
