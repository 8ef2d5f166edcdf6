"""Qwen3.5-35B-A3B as a model record: the Qwen3-Next hybrid layout inside a vision-language wrapper.

The config is the transformers-parsed Qwen3_5MoeConfig a third-party inspection of the downloaded checkpoint
prints, beside its module tree and every tensor's shape; that inspection counts 35,951,822,704 parameters for
the language model, its multi-token-prediction layer and the vision tower together. The split below is hand
arithmetic on the listed shapes.
"""

from __future__ import annotations

import json

import pytest

from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.domain import state
from engine.domain.models import import_config, load_models, parameter_count

INSPECTED = 35_951_822_704
ATTENTION = 8192 * 2048 + 2 * 512 * 2048 + 2048 * 4096 + 2 * 256          # q (with gate), k, v, o, q/k norms
GDN = 8192 * 2048 + 4096 * 2048 + 2 * 32 * 2048 + 8192 * 4 + 32 + 32 + 128 + 2048 * 4096   # in_proj_qkv/z/a/b, conv, A_log, dt_bias, norm, out
MOE = 256 * 3 * 512 * 2048 + 256 * 2048 + 3 * 512 * 2048 + 2048          # fused experts, router, shared expert, its gate
MTP = 2048 * 4096 + ATTENTION + MOE + 2 * 2048 + 3 * 2048
VISION_BLOCK = 3456 * 1152 + 3456 + 1152 * 1152 + 1152 + 4304 * 1152 + 4304 + 1152 * 4304 + 1152 + 4 * 1152
VISION = 27 * VISION_BLOCK + (1152 * 3 * 2 * 16 * 16 + 1152) + 2304 * 1152 + 2 * 1152 + (4608 * 4608 + 4608) + (2048 * 4608 + 2048)


@pytest.fixture(scope="module")
def record():
    return load_models(shipped_root())["model:qwen3.5-35b-a3b"]


def test_the_inspected_total_splits_into_language_model_mtp_and_vision(record):
    language_model = 10 * ATTENTION + 30 * GDN + 40 * (MOE + 2 * 2048) + 2 * 248320 * 2048 + 2048
    assert (MTP, VISION) == (844_640_768, 446_571_248)
    assert language_model + MTP + VISION == INSPECTED
    assert parameter_count(record)["total"] == language_model == 34_660_610_688
    assert record["parameters"]["matches"] == "checkpoint"


def test_wrapper_and_layout(record):
    d = record["derived"]
    assert (d["family"], d["attention_layers"], d["linear_attention"]["layers"], d["moe"]["experts"]) == ("hybrid_moe", 10, 30, 256)
    assert record["config"]["model_type"] == "qwen3_5_moe_text" and "vision_config" not in record["config"]
    assert "vision tower" in record["notes"] and "mtp_num_hidden_layers = 1" in record["notes"]


def test_state_in_float32_as_mamba_ssm_dtype_says(record):
    # K/V of 10 attention layers: 10 x 2 x 2 x 256 x 2 B per token; 30 Gated DeltaNet states at 4 B per element
    result = state.request_state(record, 262_144, state_bytes=4)
    assert result.total == 10 * 2 * 2 * 256 * 2 * 262_144 + 30 * (32 * 128 * 128 + 3 * 8192) * 4 == 5_434_572_800


def test_attention_without_the_output_gate_is_refused(record):
    text = dict(record["config"], attn_output_gate=False)
    with pytest.raises(InputError) as info:
        import_config(json.loads(json.dumps({"model_type": "qwen3_5_moe", "text_config": text})), "x")
    assert info.value.field == "attn_output_gate"


def test_ledger_keeps_the_state_in_float32(record):
    from engine.domain import ledger
    from engine.numeric import compiled

    catalog = ledger.load_root(shipped_root())
    result = ledger.forward_record(record, catalog.templates, 1, history=100, formulas=compiled.load(shipped_root()))
    rows = {r.name: r for r in result.rows}
    assert result.totals["parameters"] == 34_660_610_688 and result.warnings == []
    # 30 Gated DeltaNet layers, 32 x 128 x 128 state elements at 4 B (mamba_ssm_dtype float32)
    assert rows["gdn_recurrence"].kv_read_bytes == 30 * 32 * 128 * 128 * 4


def test_state_bytes_default_follow_mamba_ssm_dtype(record, capsys, tmp_path):
    # no --state-bytes: FP32 from the config (30 x (32 x 128 x 128 + 3 x 8192) x 4 = 65,863,680 B of state)
    assert state.request_state(record, 1).rows[-1].bytes_per_request == 30 * (32 * 128 * 128 + 3 * 8192) * 4
    assert state.request_state(record, 1, state_bytes=2).rows[-1].bytes_per_request == 30 * (32 * 128 * 128 + 3 * 8192) * 2
    from engine.cli.main import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "qwen3_5_moe", "text_config": record["config"]}))
    assert main(["state", "--config", str(path), "--context", "1", "--format", "json"]) == 0
    rows = {r["kind"]: r["bytes_per_request"] for r in json.loads(capsys.readouterr().out)["layer_kinds"]}
    assert rows["recurrent"] == 65_863_680
