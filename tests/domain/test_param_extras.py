"""The parameter terms FX10-FX18 lack, as formula records FX870-FX880, and the weights-only 12·L·h² (FX400).

Shapes are the official configs the model records cite: GPT-3 175B (Brown et al. 2020 Table 2.1:
96 layers, d_model 12288, 96 heads of 128, d_ff 4·d_model, context 2048, vocabulary 50257, tied),
OPT-13B (facebook/opt-13b config.json: 40 layers, hidden 5120, 40 heads, ffn_dim 20480,
max_position_embeddings 2048 plus OPT's offset of 2 rows, vocabulary 50272, tied),
Qwen2.5-72B-Instruct (80 layers, 64 heads, 8 KV heads, head_dim 128, Q/K/V biases only),
Gemma 3 27B (google/gemma-3-27b-it text_config: 62 layers, hidden 5376, four norms per layer),
gpt-oss-20b (openai/gpt-oss-20b@6cee5e81: 24 layers, hidden 2880, 64 heads, 8 KV heads, head_dim
64, 32 experts of 2880, top-4, biased attention, router and experts, one sink per head),
DeepSeek-V3 (deepseek-ai/DeepSeek-V3@e815299b: 61 layers, 3 dense, 256 experts, a correction bias
per expert) and Falcon-7B (tiiuae/falcon-7b config.json, as in tests/cli/test_cmd_model.py: 32
layers, hidden 4544, 71 heads of 64, multi-query, one LayerNorm per parallel block). Every expected
number is hand arithmetic on those fields, written out next to it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine import api
from engine.cli.main import main
from engine.domain.model_count import EXTRA_FORMULAS, MISSING_FORMULAS, weights_only_count
from engine.domain.models import import_config, load_models, parameter_count

ROOT = Path(__file__).resolve().parents[2]

FALCON_7B = {
    "alibi": False, "apply_residual_connection_post_layernorm": False, "architectures": ["FalconForCausalLM"],
    "attention_dropout": 0.0, "bias": False, "bos_token_id": 11, "eos_token_id": 11, "hidden_dropout": 0.0,
    "hidden_size": 4544, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "falcon",
    "multi_query": True, "new_decoder_architecture": False, "num_attention_heads": 71, "num_hidden_layers": 32,
    "parallel_attn": True, "torch_dtype": "bfloat16", "transformers_version": "4.27.4", "use_cache": True, "vocab_size": 65024,
}


@pytest.fixture(scope="module")
def models() -> dict:
    return load_models(ROOT)


def value(fid: str, **inputs) -> float:
    (out,) = api.evaluate(fid, ROOT, **inputs).outputs.values()
    return out.value


# ------------------------------------------------------------------------- the records alone
def test_attention_biases_qkv_and_qkvo():
    # Qwen2.5-72B: (64 + 2 x 8) x 128 = 10240 per layer, x 80 = 819200
    assert value("FX870", attention_bias_on="qkv", layers=80, heads=64, kv_heads=8, head_dim=128) == 819200
    # GPT-3: (96 + 2 x 96) x 128 + 12288 = 49152 per layer, x 96 = 4718592
    assert value("FX870", attention_bias_on="qkvo", layers=96, heads=96, kv_heads=96, head_dim=128, hidden=12288) == 4718592


def test_mlp_biases_plain_and_gated():
    assert value("FX871", mlp_gating="plain", layers=96, ffn_hidden=49152, hidden=12288) == 96 * 61440 == 5898240
    assert value("FX871", mlp_gating="gated", layers=1, ffn_hidden=2880, hidden=2880) == 2 * 2880 + 2880 == 8640


def test_norm_terms():
    assert value("FX872", layers=96, norms_per_layer=2, hidden=12288) == 193 * 12288 == 2371584   # GPT-3 LayerNorm biases
    assert value("FX873", layers=62, norms_per_layer=4, hidden=5376) == 62 * 2 * 5376 == 666624   # Gemma 3 27B
    assert value("FX873", layers=32, norms_per_layer=1, hidden=4544) == -32 * 4544 == -145408     # Falcon-7B: one fewer
    assert value("FX873", layers=32, hidden=4096) == 0                                            # default: two per layer


def test_position_table_router_experts_and_sinks():
    assert value("FX874", position_embeddings=2050, hidden=5120) == 10496000                      # OPT-13B, 2048 + 2 rows
    assert value("FX875", layers=61, n_dense_layers=3, n_experts=256) == 58 * 256 == 14848        # DeepSeek-V3
    assert value("FX876", layers=24, n_experts=32, moe_ffn_hidden=2880, hidden=2880) == 24 * 32 * 8640 == 6635520
    assert value("FX877", layers=24, top_k=4, moe_ffn_hidden=2880, hidden=2880) == 24 * 4 * 8640 == 829440
    assert value("FX878", layers=24, heads=64) == 1536


def test_weights_only_is_twelve_l_h_squared():
    # GPT-3 175B: 12 x 96 x 12288^2 = 12 x 96 x 150994944 = 173946175488, about 174B
    assert 12288 ** 2 == 150994944 and 12 * 96 * 150994944 == 173946175488
    assert value("FX400", param_count_terms="weights_only", layers=96, hidden=12288) == 173946175488


# ------------------------------------------------------------------ the records on model records
def test_gpt3_total_is_fx17_plus_its_four_extras(models):
    counted = parameter_count(models["model:gpt-3-175b"], ROOT)
    fx17 = 96 * 1811963904 + 50257 * 12288 + 12288            # FX13 per layer (MHA + plain 4h MLP + 2 norms), tied head, final norm
    assert fx17 == 174566105088
    assert counted["extras"] == {"attention_biases": 4718592, "mlp_biases": 5898240, "norm_biases": 2371584, "position_embeddings": 2048 * 12288}
    assert counted["total"] == counted["active"] == fx17 + 4718592 + 5898240 + 2371584 + 25165824 == 174604259328
    assert counted["extra_formulas"] == {"attention_biases": "FX870", "mlp_biases": "FX871", "norm_biases": "FX872", "position_embeddings": "FX874"}
    assert counted["formulas"][-2:] == ["FX879", "FX880"]


def test_opt_13b_total(models):
    counted = parameter_count(models["model:opt-13b"], ROOT)
    layer = 4 * 5120 * 40 * 128 + 2 * 5120 * 20480 + 2 * 5120  # 104857600 + 209715200 + 10240
    extras = 40 * (120 * 128 + 5120) + 40 * (20480 + 5120) + 81 * 5120 + 2050 * 5120  # 819200 + 1024000 + 414720 + 10496000
    assert counted["total"] == 40 * layer + 50272 * 5120 + 5120 + extras == 12853473280


def test_qwen25_and_gemma3_extras(models):
    assert parameter_count(models["model:qwen2.5-72b-instruct"], ROOT)["extras"] == {"attention_biases": 80 * 80 * 128}
    gemma = parameter_count(models["model:gemma-3-27b-it"], ROOT)
    assert gemma["extras"] == {"extra_norms": 666624} and gemma["extra_formulas"] == {"extra_norms": "FX873"}


def test_gpt_oss_active_uses_the_active_expert_biases(models):
    counted = parameter_count(models["model:gpt-oss-20b"], ROOT)
    fx18 = 24 * (26542080 + 5760 + 4 * 3 * 2880 * 2880 + 32 * 2880) + 2 * 201088 * 2880 + 2880
    assert fx18 == 4186416960
    assert counted["active"] == fx18 + 192000 + 768 + 24 * 4 * 8640 + 1536 == 4187440704
    assert "FX877" in counted["formulas"] and "expert_biases" in counted["extras"]


def test_models_without_extras_use_fx17_alone(models):
    counted = parameter_count(models["model:qwen3-8b"], ROOT)
    assert counted["extras"] == {} and counted["extra_formulas"] == {}
    assert counted["total"] == 36 * 192946432 + 1244659712 + 4096 == 8190735360          # FX17 example, Qwen3-8B
    assert not {"FX879", "FX880"} & set(counted["formulas"])


def test_falcon_7b_import_counts_one_norm_per_layer():
    rec = import_config(FALCON_7B, "falcon-7b", "tiiuae/falcon-7b", root=ROOT)
    counted = parameter_count(rec, ROOT)
    assert counted["extras"] == {"extra_norms": -32 * 4544, "norm_biases": 33 * 4544}        # -145408, 149952
    layer = 2 * 4544 * 64 * 72 + 2 * 4544 * 18176 + 2 * 4544                                   # FX10 mqa 41877504, FX11 plain, FX12
    assert counted["total"] == 32 * layer + 65024 * 4544 + 4544 - 145408 + 149952 == 6921720704


def test_every_extra_names_its_record_and_why():
    assert set(EXTRA_FORMULAS) == set(MISSING_FORMULAS)
    records = api.formulas(ROOT)
    assert all(fid in records for fid in EXTRA_FORMULAS.values())


def test_weights_only_count_of_a_record(models):
    assert weights_only_count(models["model:gpt-3-175b"], ROOT) == 173946175488


# ------------------------------------------------------------------ the counts follow the records
def test_an_edited_record_changes_the_count(tmp_path, models):
    # the sinks come from FX878 itself: doubling its expression doubles the count (Python holds no copy)
    (tmp_path / "formulas").mkdir()  # model.yaml alone holds every count formula: a small module to compile
    path = tmp_path / "formulas" / "model.yaml"
    shutil.copyfile(ROOT / "formulas" / "model.yaml", path)
    text = path.read_text(encoding="utf-8")
    assert text.count("  expr: layers * heads\n") == 1
    path.write_text(text.replace("  expr: layers * heads\n", "  expr: 2 * layers * heads\n"), encoding="utf-8")
    counted = parameter_count(models["model:gpt-oss-20b"], tmp_path)
    assert counted["extras"]["attention_sinks"] == 2 * 24 * 64
    assert counted["total"] == 20914757184 + 1536


# ------------------------------------------------------------------------------ CLI and numeric path
def test_model_show_json_names_the_extra_formulas(capsys):
    assert main(["model", "show", "gpt-oss-20b", "--format", "json"]) == 0
    computed = json.loads(capsys.readouterr().out)["computed"]
    assert computed["extra_formulas"] == {"attention_biases": "FX870", "router_bias": "FX875", "expert_biases": "FX876", "attention_sinks": "FX878"}
    assert computed["total"] == 20914757184 and computed["active"] == 4187440704


def test_model_show_text_names_the_formula_per_extra(capsys):
    assert main(["model", "show", "deepseek-v3"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("router_bias"))
    assert row.split()[1] == "14848" and "FX875:" in row


def test_bad_selector_is_one_line_exit_2(capsys):
    code = main(["formula", "eval", "FX870", "--set", "attention_bias_on=qk", "--set", "layers=2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "attention_bias_on" in err[0] and "qkvo" in err[0]


def test_counting_imports_no_sympy():
    code = ("import sys; from pathlib import Path; from engine.domain.models import load_models, parameter_count; "
            "r = Path('.'); [parameter_count(m, r) for m in load_models(r).values()]; print('sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
