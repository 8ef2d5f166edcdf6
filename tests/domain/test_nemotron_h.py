"""Nemotron-H-8B as a model record: a Mamba-2 / attention / MLP hybrid counted exactly.

The config is nvidia/Nemotron-H-8B-Base-8K's config.json as copied in NVIDIA-NeMo/Megatron-Bridge
tests/unit_tests/models/nemotronh/test_nemotron_h_bridge.py at 03c781b8662d87b0522d402f2bcbb30bc928f9c9
(less the test's own n_routed_experts = None). The expected total, 8,100,852,736, is the count a
third-party parameter inventory of the loaded model reports (named_parameters); every part is hand
arithmetic on the shapes that inventory lists, written beside each assertion.
"""

from __future__ import annotations

import copy

import pytest

from engine.core.errors import InputError
from engine.domain import state
from engine.domain.models import import_config, kv_bytes_per_token, parameter_count
from engine.domain.presets import model_values

CONFIG = {
    "architectures": ["NemotronHForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "attention_head_dim": 128,
    "auto_map": {"AutoConfig": "configuration_nemotron_h.NemotronHConfig", "AutoModelForCausalLM": "modeling_nemotron_h.NemotronHForCausalLM"},
    "bos_token_id": 1, "chunk_size": 128, "conv_kernel": 4, "eos_token_id": 2, "expand": 2, "hidden_act": "relu2", "hidden_dropout": 0.0,
    "hidden_size": 4096, "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-", "initializer_range": 0.02,
    "intermediate_size": 21504, "layer_norm_epsilon": 1e-05, "mamba_head_dim": 64, "mamba_hidden_act": "silu", "mamba_num_heads": 128,
    "mamba_proj_bias": False, "max_position_embeddings": 8192, "mlp_bias": False, "mlp_hidden_act": "relu2", "model_type": "nemotron_h",
    "n_groups": 8, "num_attention_heads": 32, "num_hidden_layers": 52, "num_key_value_heads": 8, "num_logits_to_keep": 1,
    "pad_token_id": 0, "rescale_prenorm_residual": True, "residual_in_fp32": False, "rms_norm_eps": 1e-05, "ssm_state_size": 128,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.48.0.dev0", "use_bias": False, "use_cache": True,
    "use_conv_bias": True, "use_mamba_kernels": True, "vocab_size": 131072,
}
INVENTORY_TOTAL = 8_100_852_736


@pytest.fixture(scope="module")
def record():
    return import_config(copy.deepcopy(CONFIG), "nemotron-h-8b", "nvidia/Nemotron-H-8B-Base-8K", params=INVENTORY_TOTAL)


def test_the_inventory_total_is_reproduced_exactly(record):
    counted = parameter_count(record)
    assert counted["total"] == counted["active"] == INVENTORY_TOTAL  # dense: every parameter runs for every token
    assert counted["formulas"] == ["FX885", "FX10", "FX11", "FX14", "FX886"]


def test_the_parts_follow_the_listed_shapes(record):
    parts = parameter_count(record)["parts"]
    # 24 Mamba-2 mixers: in_proj 18560 x 4096, conv1d over 10240 channels of kernel 4 plus bias, A_log/D/dt_bias 128 each,
    # norm 8192, out_proj 4096 x 8192
    assert parts["mamba"] == 24 * (18560 * 4096 + 10240 * 4 + 10240 + 3 * 128 + 8192 + 4096 * 8192)
    # 4 attention blocks (layers 7, 18, 29, 40): q and o 4096 x 4096, k and v 1024 x 4096
    assert parts["attention"] == 4 * (2 * 4096 * 4096 + 2 * 1024 * 4096)
    assert parts["mlp"] == 24 * 2 * 21504 * 4096          # up and down, squared ReLU, no gate
    assert parts["norms"] == 53 * 4096                     # one per block and the final norm
    assert parts["embeddings"] == 2 * 131072 * 4096        # embedding and output head, untied


def test_derived_layout(record):
    d = record["derived"]
    assert (d["family"], d["attention_layers"], d["mlp_layers"], d["mamba"]["layers"]) == ("hybrid", 4, 24, 24)
    assert (d["mlp"], d["activation"], d["position"], d["norms_per_layer"]) == ("plain", "relu2", "none", 1)
    # K/V in the 4 attention blocks only: 4 x 2 x 8 KV heads x 128 x 2 B
    assert kv_bytes_per_token(record, kv_bytes=2) == 4 * 2 * 8 * 128 * 2 == 16384


def test_state_of_a_request(record):
    result = state.request_state(record, 8192)
    # FX801's Nemotron-H example: K/V 16384 x 8192 = 134217728 B plus 24 Mamba-2 states of 2158592 B
    assert result.total == 16384 * 8192 + 24 * 2158592 == 186023936
    assert state.request_state(record, 8192, state_bytes=4).total == 16384 * 8192 + 24 * 2 * 2158592


def test_patterns_and_biases_the_count_does_not_hold_are_refused():
    with pytest.raises(InputError, match="hybrid_override_pattern: expected 52 characters"):
        import_config(dict(CONFIG, hybrid_override_pattern="M*-" * 17), "x")
    with pytest.raises(InputError, match="hybrid_override_pattern: a hybrid needs both"):
        import_config(dict(CONFIG, hybrid_override_pattern="M-" * 26), "x")
    with pytest.raises(InputError) as info:
        import_config(dict(CONFIG, use_conv_bias=False), "x")
    assert info.value.field == "use_conv_bias"


def test_calculators_refuse_the_hybrid(record):
    with pytest.raises(InputError) as info:
        model_values(record, None)
    assert "is a hybrid (24 Mamba-2 : 4 attention : 24 MLP blocks" in info.value.message


def test_kv_concurrency_presets_the_attention_layers_and_the_state(record):
    # FX801's worked example: 4 attention layers with K/V, 24 Mamba-2 layers of 2,158,592 B of state each (BF16)
    values = model_values(record, None, "calc:kv-concurrency")
    assert values["layers"][0] == 4 and values["kv_layout"][0] == "hybrid"
    assert values["recurrent_state_bytes_per_request"][0] == 24 * 2_158_592 == 51_806_208


def test_ledger_decode_step_by_hand(record):
    """One decode step after 8,191 cached tokens: 4 attention blocks read their K/V (8 KV heads x 128, BF16), 24
    Mamba-2 blocks read and write their state (128 heads x 64 x 128) and convolution window (3 x 10240)."""
    from engine.core.paths import shipped_root
    from engine.domain import ledger
    from engine.numeric import compiled

    catalog = ledger.load_root(shipped_root())
    result = ledger.forward_record(record, catalog.templates, 1, history=8191, formulas=compiled.load(shipped_root()))
    rows = {r.name: r for r in result.rows}
    assert result.totals["parameters"] == INVENTORY_TOTAL and result.warnings == [] and result.template == "operators:hybrid"
    assert rows["attention_qk"].kv_read_bytes == 4 * 8191 * 1024 * 2
    assert rows["mamba_scan"].kv_read_bytes == rows["mamba_scan"].kv_write_bytes == 24 * 128 * 64 * 128 * 2
    assert rows["mamba_conv"].kv_read_bytes == 24 * 3 * 10240 * 2
    assert rows["mamba_scan"].matrix_flops == 24 * 2 * 2 * 128 * 64 * 128          # 2 MACs per state element
    assert rows["mamba_in_proj"].matrix_flops == 24 * 2 * 4096 * 18560
    assert rows["mlp_up_proj"].matrix_flops == 24 * 2 * 4096 * 21504
    assert result.totals["kv_bytes_per_token"] == 16384
