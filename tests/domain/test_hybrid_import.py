"""Hybrid configs (Qwen3-Next, Nemotron-H): their per-request state is read from the config
(engine.domain.state.hybrid_state: F8, FX800, FX801). Both import as model records from their
whole configs (tests/domain/test_qwen3_next.py, test_nemotron_h.py); the partial configs here do not.

The configs are the copies cited in tests/domain/test_arch_refusals.py, with the Nemotron-H
fields the state needs (n_groups, conv_kernel, attention_head_dim) from the same file:
NVIDIA-NeMo/Megatron-Bridge tests/unit_tests/models/nemotronh/test_nemotron_h_bridge.py at
03c781b8662d87b0522d402f2bcbb30bc928f9c9. The Hugging Face repositories themselves were not
reachable, so neither architecture's parameter total could be checked against its checkpoint.
"""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.domain.models import import_config
from engine.domain.state import hybrid_state
from tests.domain.test_arch_refusals import NEMOTRON_H, QWEN3_NEXT

NEMOTRON_H_8B = {**NEMOTRON_H, "n_groups": 8, "conv_kernel": 4, "attention_head_dim": 128}


def test_a_partial_nemotron_h_config_names_the_missing_field():
    with pytest.raises(InputError) as err:
        import_config(NEMOTRON_H_8B, "x")
    assert str(err.value) == "vocab_size: expected a whole number >= 1, got None"


def test_a_partial_qwen3_next_config_names_the_missing_field():
    # the state needs only the layer pattern; a record needs the MoE widths too
    with pytest.raises(InputError) as err:
        import_config(QWEN3_NEXT, "x")
    assert str(err.value) == "moe_intermediate_size: expected a whole number >= 1, got None"


def kinds(result) -> dict:
    return {r.kind: (r.layers, r.bytes_per_request) for r in result.rows}


def test_qwen3_next_state():
    # 48 layers, full_attention_interval 4: layers 4, 8, ..., 48 are full (12), 36 linear_attention.
    # KV: 12 x 2 x 2 KV heads x 256 x 2 B = 24576 B per token, x 32768 = 805306368 B.
    # Gated DeltaNet per layer: (32 x 128 x 128 + 3 x (2 x 16 x 128 + 32 x 128)) x 2 = (524288 + 24576) x 2 = 1097728 B;
    # x 36 = 39518208 B. Total 844824576 B.
    result = hybrid_state(QWEN3_NEXT, 32768)
    assert kinds(result) == {"full_attention": (12, 805306368), "recurrent": (36, 39518208)}
    assert result.total == 844824576


def test_recurrent_state_does_not_grow_with_the_context():
    # at 1 token: KV 24576 B; the state is the same 39518208 B
    result = hybrid_state(QWEN3_NEXT, 1)
    assert kinds(result) == {"full_attention": (12, 24576), "recurrent": (36, 39518208)}


def test_nemotron_h_state():
    # pattern of 52: 24 'M', 4 '*', 24 '-'. KV: 4 x 2 x 8 x 128 x 2 = 16384 B per token, x 8192 = 134217728 B.
    # Mamba-2 per layer: (128 x 64 x 128 + 3 x (128 x 64 + 2 x 8 x 128)) x 2 = (1048576 + 30720) x 2 = 2158592 B;
    # x 24 = 51806208 B. Total 186023936 B.
    result = hybrid_state(NEMOTRON_H_8B, 8192)
    assert kinds(result) == {"full_attention": (4, 134217728), "recurrent": (24, 51806208)}
    assert result.total == 186023936


def test_fp32_state():
    # the same Mamba-2 layer with a float32 state: 1079296 x 4 = 4317184 B, x 24 = 103612416 B
    result = hybrid_state(NEMOTRON_H_8B, 8192, state_bytes=4)
    assert kinds(result)["recurrent"] == (24, 103612416)


@pytest.mark.parametrize("cfg, field", [
    ({**NEMOTRON_H_8B, "hybrid_override_pattern": "M*"}, "hybrid_override_pattern"),
    ({**QWEN3_NEXT, "linear_num_value_heads": 0}, "linear_num_value_heads"),
    ({**QWEN3_NEXT, "model_type": "llama"}, "model_type"),
    ({key: v for key, v in NEMOTRON_H_8B.items() if key != "n_groups"}, "n_groups"),
])
def test_bad_config(cfg, field):
    with pytest.raises(InputError) as err:
        hybrid_state(cfg, 10)
    assert err.value.field == field
