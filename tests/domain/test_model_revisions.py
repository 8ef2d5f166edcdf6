"""The current-architecture records (issue #15) name the Hub repository and revision their totals belong to.

Each total below is the exact language-model parameter count a checkpoint audit states for that repository and
revision (third-party inspections of the downloaded checkpoints; the Hub itself was not reachable here), and the
engine must reproduce it from the config alone (parameter_count).
"""

from __future__ import annotations

import pytest

from engine.core.paths import shipped_root
from engine.domain.models import load_models, parameter_count

PINNED = [
    # record, repository, revision, exact total, where the total is stated
    ("qwen3-next-80b-a3b", "Qwen/Qwen3-Next-80B-A3B-Instruct", "9c7f2fbe84465e40164a94cc16cd30b6999b0cc7", 79_674_391_296,
     "checkpoint inspection: 81,324,862,720 stored, less the MTP module's 1,650,471,424"),
    ("qwen3.5-35b-a3b", "Qwen/Qwen3.5-35B-A3B", "59d61f3ce65a6d9863b86d2e96597125219dc754", 34_660_610_688,
     "checkpoint inspection: 35,951,822,704 stored, less MTP 844,640,768 and the vision tower 446,571,248; "
     "a second audit states text parameters 34,660,610,688"),
    ("nemotron-h-8b", "nvidia/Nemotron-H-8B-Base-8K", "253e00241ff77421b6d811c971e9cee1b2d824ad", 8_100_852_736,
     "third-party count of the checkpoint, re-derived from the listed shapes"),
    ("kimi-linear-48b-a3b", "moonshotai/Kimi-Linear-48B-A3B-Instruct", "e1df551a447157d4658b573f9a695d57658590e9", 49_122_681_728,
     "checkpoint audit at that revision: 'exact total parameters 49,122,681,728'"),
    ("deepseek-v3.2", "deepseek-ai/DeepSeek-V3.2", "a7e62ac04ecb2c0a54d736dc46601c5606cf10a6", 671_877_944_064,
     "checkpoint inspection: 685,396,921,376 stored, less MTP 13,477,385,728 and FP8 scales 41,591,584"),
    ("deepseek-v4-flash", "deepseek-ai/DeepSeek-V4-Flash", "60d8d70770c6776ff598c94bb586a859a38244f1", 284_332_240_471,
     "index total_size 159,609,485,896 B reproduced to the byte with the MTP block (tests/domain/test_deepseek_v4.py)"),
    ("kimi-k3", "moonshotai/Kimi-K3", "9f62e4e9fffbd0a83ddd60e1c209d828994b3569", 2_779_484_478_208,
     "index total_size 1,560,860,324,864 B reproduced to the byte with the vision tower and projector (tests/domain/test_kimi_k3.py)"),
]


@pytest.fixture(scope="module")
def models():
    return load_models(shipped_root())


@pytest.mark.parametrize("mid, repo, revision, total, where", PINNED, ids=[p[0] for p in PINNED])
def test_record_names_the_revision_and_reproduces_its_total(models, mid, repo, revision, total, where):
    record = models[f"model:{mid}"]
    assert (record["source"]["repo"], record["source"]["revision"]) == (repo, revision)
    assert record["parameters"]["total"] == total and record["parameters"]["matches"] == "checkpoint", where
    assert parameter_count(record)["total"] == total, where


def test_the_reconciliations_are_exact():
    # the stored totals less what the language model does not hold (hand arithmetic on the audits' figures)
    assert 81_324_862_720 - 1_650_471_424 == 79_674_391_296
    assert 35_951_822_704 - 844_640_768 - 446_571_248 == 34_660_610_688
    assert 685_396_921_376 - 13_477_385_728 - 41_591_584 == 671_877_944_064


def test_qwen3_6_has_the_inventoried_qwen3_5_shape(models):
    """Qwen/Qwen3.6-35B-A3B@995ad96e: the published config inventory lists hidden 2048, 40 layers, full attention every
    fourth layer, 256 experts top-8 of width 512 with a shared expert of 512, Gated DeltaNet 16 key / 32 value heads of
    128, vocab 248320, mamba_ssm_dtype float32; a port audits 30 Gated DeltaNet + 10 gated GQA layers."""
    record = models["model:qwen3.6-35b-a3b"]
    cfg, d = record["config"], record["derived"]
    assert record["source"]["revision"] == "995ad96eacd98c81ed38be0c5b274b04031597b0"
    assert (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"], cfg["mamba_ssm_dtype"]) == (2048, 40, 248320, "float32")
    assert (d["attention_layers"], d["linear_attention"]["layers"]) == (10, 30)
    assert (d["linear_attention"]["key_heads"], d["linear_attention"]["value_heads"]) == (16, 32)
    assert (d["moe"]["experts"], d["moe"]["experts_per_token"], d["moe"]["expert_intermediate_size"]) == (256, 8, 512)
    # no Qwen3.6 checkpoint count was found: the total is computed, and equals the same-shape Qwen3.5-35B-A3B's
    assert record["parameters"]["matches"] == "computed"
    assert parameter_count(record)["total"] == 34_660_610_688
