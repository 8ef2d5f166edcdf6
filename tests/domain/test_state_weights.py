"""``aiinfra state --device``: the weights' bytes come from the record's storage block where it has one.

gpt-oss-20b's checkpoint stores its routed experts in MXFP4 (OpenAI, gpt-oss-120b & gpt-oss-20b
Model Card, arXiv:2508.10925, section 2; checkpoint 12.8 GiB in Table 1); every other record is
taken at 2 B per parameter (BF16) unless --weight-bytes says otherwise. Expected values are hand
arithmetic written beside each assertion.
"""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main
from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.domain import models, state
from engine.domain.model_count import _Evaluator, formula_module

ROOT = shipped_root()
MODELS = models.load_models(ROOT)
GPT_OSS = models.find(MODELS, "gpt-oss-20b")

# 24 layers x 32 experts x (2880 x 5760 + 2880 x 2880) expert weight values; the rest of the 20914757184
EXPERT_VALUES = 24 * 32 * (2880 * 5760 + 2880 * 2880)
REST = 20914757184 - EXPERT_VALUES
# MXFP4: 4 bits + one 8-bit scale per 32 values = 4.25 bits = 0.53125 B; rest BF16 2 B
STORED = EXPERT_VALUES * 17 // 32 + REST * 2


def test_hand_arithmetic():
    assert EXPERT_VALUES == 19110297600 and REST == 1804459584
    assert STORED == 10152345600 + 3608919168 == 13761264768
    assert round(STORED / 2**30, 1) == 12.8   # the model card's checkpoint size


def test_the_record_storage_is_what_fx650_and_fx652_give():
    storage = GPT_OSS["storage"]
    ev = _Evaluator(formula_module(ROOT))
    per_value = ev.module.FORMULAS["FX650"]
    from engine.numeric.evaluate import evaluate

    (fmt,) = (o.value for o in evaluate(per_value, ev.module, {"storage_format": storage["quantised_format"]}).outputs.values())
    assert fmt == 0.53125
    mixed = evaluate(ev.module.FORMULAS["FX652"], ev.module, {"format_bytes": fmt, "quantised_params": storage["quantised_parameters"],
                                                               "params": GPT_OSS["parameters"]["total"], "bytes_unquantised": storage["unquantised_bytes"]})
    (value,) = (o.value for o in mixed.outputs.values())
    assert value == storage["weight_bytes"] == STORED


def test_record_storage_is_used_and_named():
    weights, source = state.weight_storage(GPT_OSS)
    assert weights == STORED
    assert "stored weights" in source and "mxfp4" in source


def test_weight_bytes_given_overrides_the_record():
    weights, source = state.weight_storage(GPT_OSS, 2)
    assert weights == 20914757184 * 2 and "--weight-bytes" in source


def test_a_record_without_storage_takes_the_bf16_default():
    # Qwen3-8B: 8190735360 parameters (on the record) x 2 B
    weights, source = state.weight_storage(models.find(MODELS, "qwen3-8b"))
    assert weights == 16381470720 and "the checkpoint's BF16" in source and "no storage block" in source


def test_bad_weight_bytes():
    with pytest.raises(InputError) as err:
        state.weight_storage(GPT_OSS, -1)
    assert err.value.field == "--weight-bytes"


def test_cli_gpt_oss_on_h100(capsys):
    # h100-sxm: the runtime's 79.18 GiB (record, driver_total) under FX72's vLLM rule (issue 28: the convention of calc
    # kv-concurrency and plan serve): 0.9 x 85,018,877,624.32 - 5 x 2**30 = 71,148,280,741.89 B usable;
    # free 71,148,280,741.89 - 13,761,264,768 = 57,387,015,973.89 B; one request at 4096 tokens is
    # 103809024 B (tests/domain/test_state.py: 12 x 2048 x 4096 + 12 x 2048 x 128); / 103809024 = 552.8 -> 552
    assert main(["state", "--model", "gpt-oss-20b", "--context", "4096", "--device", "h100-sxm"]) == 0
    out = capsys.readouterr().out
    assert "552 requests" in out and "weights: the record's stored weights" in out
    # at --weight-bytes 2: 71,148,280,741.89 - 41829514368 = 29,318,766,373.89; / 103809024 = 282.4 -> 282
    assert main(["state", "--model", "gpt-oss-20b", "--context", "4096", "--device", "h100-sxm", "--weight-bytes", "2", "--format", "json"]) == 0
    fit = json.loads(capsys.readouterr().out)["device"]
    assert fit["weight_bytes"] == 41829514368 and fit["requests"] == 282 and "--weight-bytes" in fit["weight_source"]
