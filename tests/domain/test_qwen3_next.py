"""Qwen3-Next-80B-A3B as a model record: a Gated DeltaNet / gated-attention hybrid counted exactly.

The config is Qwen/Qwen3-Next-80B-A3B-Instruct's config.json as copied verbatim in
NVIDIA-NeMo/Megatron-Bridge tests/unit_tests/models/qwen/test_qwen3_next_bridge.py at
00d5e5f66f99fb4ae1749c437667b868b31b68bf. The expected totals come from the checkpoint: a
third-party inspection of the downloaded checkpoint lists every tensor with its shape and counts
81,324,862,720 parameters including the multi-token-prediction module; the MTP module's tensors
(mtp.fc [2048, 4096], one full-attention MoE layer, three [2048] norms) add up by hand to
1,650,471,424, so the language model holds 79,674,391,296. Everything else is hand arithmetic on
those tensor shapes, written beside each assertion.
"""

from __future__ import annotations

import copy
import json

import pytest

from engine.cli.main import main
from engine.core.errors import InputError
from engine.domain import state
from engine.domain.models import import_config, kv_bytes_per_token, parameter_count
from engine.domain.presets import model_values

CONFIG = {
    "architectures": ["Qwen3NextForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "decoder_sparse_step": 1,
    "eos_token_id": 151645, "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048,
    "initializer_range": 0.02, "intermediate_size": 5120, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128, "max_position_embeddings": 262144,
    "mlp_only_layers": [], "model_type": "qwen3_next", "moe_intermediate_size": 512, "norm_topk_prob": True,
    "num_attention_heads": 16, "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 48, "num_key_value_heads": 2,
    "output_router_logits": False, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06, "rope_scaling": None,
    "rope_theta": 10000000, "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": 512, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
}
CHECKPOINT_ALL = 81_324_862_720       # every tensor of the checkpoint, MTP included
MTP = 2048 * 4096 + (27_263_488 + 1_614_809_088 + 2 * 2048) + 3 * 2048   # mtp.fc + one full-attention MoE layer + 3 norms
LANGUAGE_MODEL = CHECKPOINT_ALL - MTP


@pytest.fixture(scope="module")
def record():
    return import_config(copy.deepcopy(CONFIG), "qwen3-next-80b-a3b", "Qwen/Qwen3-Next-80B-A3B-Instruct", params=LANGUAGE_MODEL)


def test_the_checkpoint_total_less_its_mtp_module_is_reproduced_exactly(record):
    assert MTP == 1_650_471_424 and LANGUAGE_MODEL == 79_674_391_296
    assert record["parameters"]["total"] == LANGUAGE_MODEL
    counted = parameter_count(record)
    assert counted["total"] == LANGUAGE_MODEL
    assert counted["formulas"] == ["FX882", "FX881", "FX14", "FX15", "FX16", "FX883", "FX884"]


def test_the_parts_follow_the_checkpoint_tensor_shapes(record):
    parts = parameter_count(record)["parts"]
    # 12 full-attention layers: q_proj [8192, 2048] (query + output gate), k/v_proj [512, 2048], o_proj [2048, 4096], q/k norms [256]
    assert parts["attention"] == 12 * (8192 * 2048 + 2 * 512 * 2048 + 2048 * 4096 + 2 * 256)
    # 36 Gated DeltaNet layers: in_proj_qkvz [12288, 2048], in_proj_ba [64, 2048], conv1d [8192, 1, 4], A_log [32], dt_bias [32],
    # norm [128], out_proj [2048, 4096]
    assert parts["linear_attention"] == 36 * (12288 * 2048 + 64 * 2048 + 8192 * 4 + 32 + 32 + 128 + 2048 * 4096)
    # 48 MoE blocks: 512 experts + 1 shared expert of 3 x [512, 2048], router [512, 2048], shared_expert_gate [1, 2048]
    assert parts["mlp"] == 48 * (513 * 3 * 512 * 2048 + 512 * 2048 + 2048)
    assert parts["norms"] == 48 * 2 * 2048 + 2048 and parts["embeddings"] == 2 * 151936 * 2048


def test_active_parameters(record):
    # 10 routed experts + the shared one per layer instead of 513: 48 x 502 x 3 x 512 x 2048 fewer than the total
    active = parameter_count(record)["active"]
    assert active == LANGUAGE_MODEL - 48 * 502 * 3 * 512 * 2048 == 3_874_929_408
    assert active - 2 * 151936 * 2048 == 3_252_599_552  # without embedding and LM head: the model card's "3B activated"


def test_layer_kinds_and_kv_per_token(record):
    d = record["derived"]
    assert (d["family"], d["attention"], d["attention_layers"], d["linear_attention"]["layers"]) == ("hybrid_moe", "gqa", 12, 36)
    # only the 12 full-attention layers keep K/V: 12 x 2 (K and V) x 2 KV heads x 256 x 2 B
    assert kv_bytes_per_token(record, kv_bytes=2) == 12 * 2 * 2 * 256 * 2 == 24576


def test_state_of_a_request_from_the_record_equals_the_config_reading(record):
    from tests.domain.test_arch_refusals import QWEN3_NEXT

    ours, theirs = state.request_state(record, 32768), state.hybrid_state(QWEN3_NEXT, 32768)
    assert (ours.total, ours.rows) == (theirs.total, theirs.rows)
    assert ours.total == 24576 * 32768 + 36 * 1097728  # FX801's Qwen3-Next example: 844824576 B


def test_layer_types_must_agree_with_the_layer_count():
    cfg = dict(CONFIG, layer_types=["linear_attention"] * 47)
    with pytest.raises(InputError, match="layer_types: expected 48 entries"):
        import_config(cfg, "x")
    cfg = dict(CONFIG, layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 12)
    assert import_config(cfg, "x")["parameters"]["total"] == LANGUAGE_MODEL  # the parsed form gives the same model


def test_a_shared_expert_of_another_width_is_refused():
    with pytest.raises(InputError) as info:
        import_config(dict(CONFIG, shared_expert_intermediate_size=768), "x")
    assert str(info.value).startswith("shared_expert_intermediate_size: 768 is not a multiple of moe_intermediate_size 512")


def test_calculators_other_than_kv_concurrency_refuse_the_hybrid_by_name(record):
    with pytest.raises(InputError) as info:
        model_values(record, None)
    assert info.value.field == "--model" and "is a hybrid (36 linear_attention (Gated DeltaNet) : 12 full_attention)" in info.value.message


def test_shipped_record_and_cli(capsys, tmp_path):
    assert main(["model", "show", "qwen3-next-80b-a3b", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["computed"]["total"] == LANGUAGE_MODEL and shown["computed"]["reproduces_reference"] is True
    assert main(["calc", "inference-capacity", "--model", "qwen3-next-80b-a3b", "--device", "h100-sxm"]) == 2
    err = capsys.readouterr().err
    assert "is a hybrid" in err and "calc kv-concurrency sizes hybrids" in err and err.count("\n") == 1
    assert main(["forward", "--model", "qwen3-next-80b-a3b", "--tokens", "8", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["template"] == "operators:hybrid_moe"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    assert main(["model", "import", str(path), "--id", "q", "--params", str(LANGUAGE_MODEL), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "q.yaml").exists()


# ------------------------------------------------------------------ the forward ledger (knowledge/operators/hybrid_moe.yaml)

# the `run` fixture (the forward ledger with the shipped templates) is in tests/domain/conftest.py


def test_ledger_stores_the_checkpoint_parameters(record, run):
    result = run(record, 4)
    assert result.totals["parameters"] == LANGUAGE_MODEL and result.warnings == []
    assert result.template == "operators:hybrid_moe"


def test_decode_step_by_hand(record, run):
    """One decode step (B = 1, S = 1) after 32,768 cached tokens: the 12 attention layers read their K/V
    (2 KV heads x 256, BF16), the 36 Gated DeltaNet layers read and write their state (32 x 128 x 128) and
    their convolution window (3 x 8192), and attention costs 2 x 16 heads x 256 x 32,769 cells per product."""
    rows = {r.name: r for r in run(record, 1, history=32768).rows}
    assert rows["attention_qk"].kv_read_bytes == 12 * 32768 * 512 * 2
    assert rows["attention_qk"].attention_matrix_flops == 12 * 2 * 16 * 256 * 32769
    assert rows["gdn_recurrence"].kv_read_bytes == rows["gdn_recurrence"].kv_write_bytes == 36 * 32 * 128 * 128 * 2
    assert rows["gdn_conv"].kv_read_bytes == 36 * 3 * 8192 * 2
    assert rows["gdn_recurrence"].matrix_flops == 36 * 3 * 2 * 32 * 128 * 128   # 3 MACs per state element
    assert rows["gdn_in_proj"].matrix_flops == 36 * 2 * 2048 * (2 * 16 * 128 + 2 * 32 * 128 + 2 * 32)
    assert rows["q_proj"].matrix_flops == 12 * 2 * 2048 * 2 * 16 * 256            # query and output gate
    assert rows["expert_up_proj"].matrix_flops == 48 * 2 * 10 * 2048 * 512         # 10 routed experts


def test_prefill_reads_no_state(record, run):
    rows = {r.name: r for r in run(record, 16).rows}
    assert rows["gdn_recurrence"].kv_read_bytes == 0 and rows["gdn_conv"].kv_read_bytes == 0
    assert rows["gdn_recurrence"].kv_write_bytes == 36 * 32 * 128 * 128 * 2


def test_kv_concurrency_sizes_the_hybrid(capsys):
    """Qwen3-Next-80B-A3B at 32,768 tokens on 4 H100s (vLLM's budget: 79.18 GiB driver total x 0.9 - weights / 4 - 5 GiB):
    K/V of the 12 attention layers, 2 x 12 x 2 x 256 x 2 = 24,576 B per token, 12,288 per GPU (2 KV heads over 4 ranks);
    the 36 Gated DeltaNet layers' state, 36 x 1,097,728 = 39,518,208 B per request (FX800), a quarter per GPU.
    Budget 79.18 x 2^30 x 0.9 - 79,674,391,296 x 2 / 4 - 5,368,709,120 = 31,311,085,094 B;
    per request 12,288 x 32,768 + 9,879,552 = 412,532,736 B; 75.9 -> 75 requests (77 without the state)."""
    from engine.cli.main import main

    assert main(["calc", "kv-concurrency", "--model", "qwen3-next-80b-a3b", "--device", "h100-sxm", "--set", "tp_size=4",
                 "--set", "context_tokens=32768", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    inputs, outputs = data["inputs"], data["outputs"]
    assert (inputs["layers"]["value"], inputs["kv_layout"]["value"]) == (12, "hybrid")
    assert inputs["recurrent_state_bytes_per_request"]["value"] == 36 * 1_097_728 == 39_518_208
    assert outputs["kv_bytes_per_token_per_gpu"]["value"] == 12_288
    assert outputs["kv_budget_per_gpu"]["value"] == pytest.approx(79.18 * 2**30 * 0.9 - 79_674_391_296 * 2 / 4 - 5 * 2**30)
    assert outputs["max_concurrent_requests"]["value"] == 75
