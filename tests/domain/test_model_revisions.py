"""The current-architecture records (issue #15) name the Hub repository and revision their totals belong to.

Each total below is the exact language-model parameter count a checkpoint audit or index states for that repository
and revision (third-party inspections of the downloaded checkpoints, or the index total_size they quote; the Hub
itself was not reachable here), and the engine must reproduce it from the config alone (parameter_count).
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
    ("qwen3.6-35b-a3b", "Qwen/Qwen3.6-35B-A3B", "995ad96eacd98c81ed38be0c5b274b04031597b0", 34_660_610_688,
     "index total_size 71,903,645,408 B, all BF16: 35,951,822,704 stored, less MTP 844,640,768 and the vision tower "
     "446,571,248; a header-reading capacity report at that revision states base text bytes 69,321,221,376"),
    ("gpt-oss-20b", "openai/gpt-oss-20b", "6cee5e81ee83917806bbde320786a8fb61efebee", 20_914_757_184,
     "Hub safetensors metadata at that revision: 21,511,953,984 stored elements less the 597,196,800 MXFP4 scales "
     "(tests/domain/test_arch_gpt_oss.py)"),
    ("gpt-oss-120b", "openai/gpt-oss-120b", "b5c939de8f754692c1647ca79fbf85e8c1e70f8a", 116_829_156_672,
     "Hub safetensors count at that revision (huggingface/huggingface.js parse-safetensors-metadata.spec.ts @00d37b2d): "
     "BF16 2,167,371,072 + U8 114,661,785,600, scales excluded (tests/domain/test_arch_gpt_oss_120b.py)"),
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


def test_qwen3_6_index_total_size_is_the_bf16_checkpoint():
    # Qwen/Qwen3.6-35B-A3B@995ad96e: model.safetensors.index.json metadata.total_size 71,903,645,408 B; the Hub's
    # safetensors.total 35,951,822,704 (see the record's reference). Two bytes per element, so no F32 tensor.
    assert 2 * 35_951_822_704 == 71_903_645_408
    # the split by hand (the record's outside_lm): MTP = mtp.fc 2048 x 4096 + a gated-attention layer (q_proj with
    # its gate 2048 x 8192, k_proj and v_proj 2048 x 512, o_proj 4096 x 2048, q/k norms 2 x 256) + its MoE block
    # (256 experts of 3 x 512 x 2048, router 256 x 2048, shared expert 3 x 512 x 2048, shared gate 2048) + 5 norms
    attention = 2048 * 8192 + 2 * 2048 * 512 + 4096 * 2048 + 2 * 256
    moe = 256 * 3 * 512 * 2048 + 256 * 2048 + 3 * 512 * 2048 + 2048
    assert (attention, moe) == (27_263_488, 808_978_432)
    assert 2048 * 4096 + attention + moe + 5 * 2048 == 844_640_768
    # vision: 27 blocks (qkv, proj, fc1, fc2 with biases, two LayerNorms with bias), patch_embed, pos_embed, merger
    block = (3456 * 1152 + 3456) + (1152 * 1152 + 1152) + (4304 * 1152 + 4304) + (1152 * 4304 + 1152) + 4 * 1152
    merger = 2 * 1152 + (4608 * 4608 + 4608) + (2048 * 4608 + 2048)
    assert (block, merger) == (15_239_504, 30_679_808)
    assert 27 * block + (1152 * 3 * 2 * 16 * 16 + 1152) + 2304 * 1152 + merger == 446_571_248
    assert 35_951_822_704 - 844_640_768 - 446_571_248 == 34_660_610_688
    # the capacity report's split of the same bytes (base text, auxiliary = MTP + vision), at that revision
    assert 2 * 34_660_610_688 == 69_321_221_376 and 2 * (844_640_768 + 446_571_248) == 2_582_424_032
    assert 69_321_221_376 + 2_582_424_032 == 71_903_645_408


def test_qwen3_6_record_carries_the_split(models):
    record = models["model:qwen3.6-35b-a3b"]
    assert [p["parameters"] for p in record["parameters"]["outside_lm"]] == [844_640_768, 446_571_248]
    assert record["parameters"]["total"] + 844_640_768 + 446_571_248 == 35_951_822_704


def test_deepseek_v3_2_hub_count_leaves_out_the_block_scales():
    # the Hub's count for deepseek-ai/DeepSeek-V3.2 (model page as a third-party plan cites it, main, 2026-09-29;
    # the same figure in a third-party audit table of Hub counts): 685,355,329,792 = language model + MTP layer,
    # the 41,591,584 FP8 block scales of the stored 685,396,921,376 not counted
    assert 671_877_944_064 + 13_477_385_728 == 685_355_329_792
    assert 685_396_921_376 - 685_355_329_792 == 41_591_584


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
