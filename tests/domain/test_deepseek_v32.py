"""DeepSeek-V3.2 as a model record: DeepSeek-V3 plus one lightning indexer per layer (DeepSeek Sparse Attention).

The config is the raw config.json a third-party inspection of the downloaded checkpoint prints (its indexer
fields agree with DeepSeek-V3.2-Exp's inference/config_671B_v3.2.json). That inspection counts 685,396,921,376
stored elements including the multi-token-prediction layer and the FP8 block scales; the parts are reconciled
by hand below from the tensor shapes it lists (indexer wq_b [8192, 1536], wk [128, 7168], k_norm weight and
bias [128], weights_proj [64, 7168] in each of the 62 stored layers).
"""

from __future__ import annotations

import json

import pytest

from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.domain import state
from engine.domain.models import import_config, load_models, parameter_count
from engine.domain.presets import model_values

INDEXER = 8192 * 1536 + 128 * 7168 + 2 * 128 + 64 * 7168     # 13,959,424 per layer
DEEPSEEK_V3 = 671_026_419_200                                # knowledge/models/deepseek-v3.yaml (Hub safetensors metadata)
V3_MTP, V3_SCALES = 13_463_426_304, 41_540_496               # the same record's outside-the-LM parts
STORED = 685_396_921_376


@pytest.fixture(scope="module")
def record():
    return load_models(shipped_root())["model:deepseek-v3.2"]


def test_the_checkpoint_total_is_reconciled_exactly(record):
    mtp = V3_MTP + INDEXER                                   # layer 61 carries an indexer too
    scales = V3_SCALES + 62 * (64 * 12 + 1 * 56)             # wq_b and wk scale tensors of 62 indexers
    language_model = DEEPSEEK_V3 + 61 * INDEXER
    assert (INDEXER, mtp, scales) == (13_959_424, 13_477_385_728, 41_591_584)
    assert language_model + mtp + scales == STORED
    counted = parameter_count(record)
    assert counted["total"] == language_model == 671_877_944_064
    assert counted["extras"]["indexer"] == 61 * INDEXER and counted["extra_formulas"]["indexer"] == "FX887"


def test_every_token_runs_the_indexers(record):
    v3 = load_models(shipped_root())["model:deepseek-v3"]
    assert parameter_count(record)["active"] == parameter_count(v3)["active"] + 61 * INDEXER


def test_state_adds_the_indexer_key_cache(record):
    # MLA latent 61 x 576 x 2 B = 70272 B per token; indexer keys 61 x (128 FP8 + 4-byte scale per 128) = 8052 B
    result = state.request_state(record, 131072)
    rows = {r.kind: r.bytes_per_request for r in result.rows}
    assert rows == {"mla_latent": 70272 * 131072, "indexer_keys": 8052 * 131072}
    assert result.total == (70272 + 8052) * 131072 and "FX888" in result.formulas


def test_sizing_tools_refuse_sparse_attention_by_name(record):
    with pytest.raises(InputError) as info:
        model_values(record, None)
    assert "DeepSeek Sparse Attention (an indexer key cache beside the MLA latent, attention over the top 2048" in info.value.message
    # kv-concurrency sizes it: the latent of every layer plus the indexer keys (FX888: 61 x 132 = 8052 B per token)
    values = model_values(record, None, "calc:kv-concurrency")
    assert (values["kv_layout"][0], values["indexer_key_bytes_per_token"][0], values["layers"][0]) == ("sparse_indexed", 8052, 61)


def test_kv_concurrency_counts_the_indexer_keys(capsys):
    """DeepSeek-V3.2 in FP8 (671,877,944,064 parameters x 1 B) on 8 H200s (141 GB, datasheet) at 32,768 tokens:
    budget 141e9 x 0.9 - 671,877,944,064 / 8 - 5 GiB = 37,546,547,872 B per GPU; each request holds the BF16 latent
    (61 x 576 x 2 = 70,272 B per token, replicated) and the indexer keys (8,052 B per token, replicated):
    (70,272 + 8,052) x 32,768 = 2,566,553,600 B; 37,546,547,872 / 2,566,553,600 = 14.6 -> 14 (16 without the keys)."""
    import json

    from engine.cli.main import main

    assert main(["calc", "kv-concurrency", "--model", "deepseek-v3.2", "--device", "h200", "--set", "gpu_memory_total=141GB",
                 "--set", "tp_size=8", "--set", "context_tokens=32768", "--set", "weight_bytes=671877944064", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)["outputs"]
    assert out["kv_budget_per_gpu"]["value"] == pytest.approx(141e9 * 0.9 - 671_877_944_064 / 8 - 5 * 2**30)
    assert out["max_concurrent_requests"]["value"] == 14


def test_import_from_the_config(record):
    cfg = dict(record["config"])
    again = import_config(json.loads(json.dumps(cfg)), "x", params=671_877_944_064)
    assert again["derived"]["sparse_attention"] == {"kind": "dsa", "index_heads": 64, "index_head_dim": 128, "index_topk": 2048}
    with pytest.raises(InputError, match="index_n_heads: expected a whole number >= 1"):
        import_config({k: v for k, v in cfg.items() if k != "index_n_heads"}, "x")


# ------------------------------------------------------------------ the forward ledger (mla_moe with DSA)

# the `run` fixture (the forward ledger with the shipped templates) is in tests/domain/conftest.py


def rows(result):
    return {r.name: r for r in result.rows}


def test_decode_at_128k_attends_to_the_top_2048(record, run):
    """One decode step after 131,072 cached tokens: the indexer scores all 131,073 positions (64 heads of 128),
    the absorbed MLA attends 2048 (576-wide scores, 512-wide values), and reads 2048 latents plus every indexer key."""
    result = run(record, 1, history=131072)
    r = rows(result)
    assert result.scenario["mla_path"] == "absorbed" and result.warnings == []
    assert result.totals["parameters"] == 671_877_944_064
    assert r["indexer_scores"].attention_matrix_flops == 61 * 2 * 64 * 128 * 131073
    assert r["attention_scores"].attention_matrix_flops == 61 * 2 * 128 * 576 * 2048
    assert r["attention_pv"].attention_matrix_flops == 61 * 2 * 128 * 512 * 2048
    assert r["attention_scores"].kv_read_bytes == 61 * 2048 * 576 * 2
    assert r["indexer_scores"].kv_read_bytes == 61 * 131072 * 128 * (1 + 4 / 128)
    assert result.totals["kv_bytes_per_token"] == 70272 + 8052


def test_short_contexts_attend_densely_and_the_crossing_is_exact(record, run):
    # 3 new tokens over 5 cached: every causal cell (5 x 3 + 3 x 4 / 2 = 21), as DeepSeek-V3 absorbed counts them
    assert rows(run(record, 3, history=5))["attention_pv"].attention_matrix_flops == 61 * 2 * 128 * 512 * 21
    # 16 new tokens over 2040 cached: positions 2041..2048 attend to all earlier tokens (2041 + ... + 2048 = 16356),
    # positions 2049..2056 to 2048 each (16384): 32740 cells per head
    assert rows(run(record, 16, history=2040))["attention_pv"].attention_matrix_flops == 61 * 2 * 128 * 512 * 32740


def test_sparse_mla_runs_absorbed(record, run):
    assert run(record, 4096).scenario["mla_path"] == "absorbed"  # auto: absorbed even for a prefill
    with pytest.raises(InputError, match="--mla-path: model:deepseek-v3.2 uses DeepSeek Sparse Attention"):
        run(record, 4096, mla_path="expanded")
