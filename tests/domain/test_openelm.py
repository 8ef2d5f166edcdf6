"""OpenELM-270M and -450M as model records: layer-wise scaling, counted exactly (issue #15).

Every layer of an OpenELM model has its own query heads, K/V heads and feed-forward width. The configs are the
config.json files of apple/OpenELM-450M (as ghemdd/OpenELM-450M copies it, _name_or_path apple/OpenELM-450M; the
PrunaAI/apple-OpenELM-450M-HQQ-2bit-smashed commit 4248c3c7 shows the same fields) and apple/OpenELM-270M (as the loaded
config prints in l1351868270/ld_openelm.c openelm.config at 8e2ef8115b30f945bd3769c8ee4a98d69d216ac4); torch_dtype,
transformers_version and use_cache differ between copies and shape nothing. The totals are the published
model.safetensors.index.json total_size of the mlx-community conversions, 2 bytes a weight: 914,358,272 B for
OpenELM-450M(-Instruct) (22a84e2) and 543,054,336 B for OpenELM-270M (7c2cf58). Every other number is hand arithmetic on
the shapes of Apple's modeling_openelm.py, written beside each assertion, never a value copied from running this code.
"""

from __future__ import annotations

import copy
import json
import math

import pytest

from engine.cli.main import main
from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.domain import state
from engine.domain.models import import_config, kv_bytes_per_token, load_models, parameter_count
from engine.domain.presets import model_values

CONFIG_450M = {
    "_name_or_path": "apple/OpenELM-450M", "activation_fn_name": "swish", "architectures": ["OpenELMForCausalLM"],
    "auto_map": {"AutoConfig": "apple/OpenELM-450M--configuration_openelm.OpenELMConfig",
                 "AutoModelForCausalLM": "apple/OpenELM-450M--modeling_openelm.OpenELMForCausalLM"},
    "bos_token_id": 1, "eos_token_id": 2, "ffn_dim_divisor": 256,
    "ffn_multipliers": [0.5, 0.68, 0.87, 1.05, 1.24, 1.42, 1.61, 1.79, 1.97, 2.16, 2.34, 2.53, 2.71, 2.89, 3.08, 3.26, 3.45, 3.63, 3.82, 4.0],
    "ffn_with_glu": True, "head_dim": 64, "initializer_range": 0.02, "max_context_length": 2048, "model_dim": 1536, "model_type": "openelm",
    "normalization_layer_name": "rms_norm", "normalize_qk_projections": True, "num_gqa_groups": 4,
    "num_kv_heads": [3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6],
    "num_query_heads": [12, 12, 12, 16, 16, 16, 16, 16, 16, 16, 20, 20, 20, 20, 20, 20, 24, 24, 24, 24],
    "num_transformer_layers": 20, "qkv_multipliers": [0.5, 1.0], "rope_freq_constant": 10000, "rope_max_length": 4096,
    "share_input_output_layers": True, "torch_dtype": "bfloat16", "transformers_version": "4.40.2", "use_cache": False, "vocab_size": 32000,
}
CONFIG_270M = {
    "activation_fn_name": "swish", "architectures": ["OpenELMForCausalLM"],
    "auto_map": {"AutoConfig": "configuration_openelm.OpenELMConfig", "AutoModelForCausalLM": "modeling_openelm.OpenELMForCausalLM"},
    "bos_token_id": 1, "eos_token_id": 2, "ffn_dim_divisor": 256,
    "ffn_multipliers": [0.5, 0.73, 0.97, 1.2, 1.43, 1.67, 1.9, 2.13, 2.37, 2.6, 2.83, 3.07, 3.3, 3.53, 3.77, 4.0],
    "ffn_with_glu": True, "head_dim": 64, "initializer_range": 0.02, "max_context_length": 2048, "model_dim": 1280, "model_type": "openelm",
    "normalization_layer_name": "rms_norm", "normalize_qk_projections": True, "num_gqa_groups": 4,
    "num_kv_heads": [3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5],
    "num_query_heads": [12, 12, 12, 12, 12, 16, 16, 16, 16, 16, 16, 16, 20, 20, 20, 20],
    "num_transformer_layers": 16, "qkv_multipliers": [0.5, 1.0], "rope_freq_constant": 10000, "rope_max_length": 4096,
    "share_input_output_layers": True, "torch_dtype": "float32", "transformers_version": "4.40.1", "use_cache": True, "vocab_size": 32000,
}
INDEX_450M = 914_358_272   # mlx-community/OpenELM-450M-Instruct model.safetensors.index.json (22a84e2) total_size, 2 B a weight
INDEX_270M = 543_054_336   # mlx-community/OpenELM-270M model.safetensors.index.json (7c2cf58) total_size, 2 B a weight
# FX908 widths by hand: m x d rounded half up to a multiple of 256 (e.g. 1.42 x 1536 = 2181.12 = 8.52 x 256 -> 2304)
FFN_450M = [768, 1024, 1280, 1536, 1792, 2304, 2560, 2816, 3072, 3328, 3584, 3840, 4096, 4352, 4608, 5120, 5376, 5632, 5888, 6144]
FFN_270M = [768, 1024, 1280, 1536, 1792, 2048, 2560, 2816, 3072, 3328, 3584, 3840, 4352, 4608, 4864, 5120]


@pytest.fixture(scope="module")
def models():
    return load_models(shipped_root())


@pytest.mark.parametrize(("mid", "config", "repo", "revision", "index"), [
    ("openelm-450m", CONFIG_450M, "apple/OpenELM-450M", "b53a9c5a731d154b71f8d311ef702f327e0cfa3a", INDEX_450M),
    ("openelm-270m", CONFIG_270M, "apple/OpenELM-270M", "a45edb887e55dd52ab717565a872db9a6fd89a96", INDEX_270M),
])
def test_the_config_imports_to_the_shipped_record_and_its_index_total(models, mid, config, repo, revision, index):
    record = models[f"model:{mid}"]
    again = import_config(copy.deepcopy(config), mid, repo, revision, params=index // 2)
    assert again["config"] == record["config"] and again["derived"] == record["derived"]
    assert (record["source"]["repo"], record["source"]["revision"]) == (repo, revision)
    assert record["parameters"]["total"] * 2 == index and record["parameters"]["matches"] == "checkpoint"
    counted = parameter_count(record)
    assert counted["total"] == counted["active"] == index // 2        # dense: every parameter runs for every token
    assert counted["formulas"] == ["FX10", "FX11", "FX12", "FX14", "FX909"]


def test_the_450m_parts_by_hand(models):
    parts = parameter_count(models["model:openelm-450m"])["parts"]
    # query heads 3 x 12 + 7 x 16 + 6 x 20 + 4 x 24 = 364, K/V heads a quarter of each, 91:
    # qkv_proj (q + 2 kv) x 64 x 1536 and out_proj 1536 x q x 64 in every layer
    assert parts["attention"] == (364 + 2 * 91) * 64 * 1536 + 364 * 64 * 1536 == 89_456_640
    assert sum(FFN_450M) == 69_120
    assert parts["mlp"] == 3 * 1536 * 69_120 == 318_504_960             # proj_1 2f x d and proj_2 d x f
    assert parts["norms"] == 20 * (2 * 1536 + 2 * 64) + 1536 == 65_536  # attn_norm, ffn_norm, q_norm, k_norm; final norm
    assert parts["embeddings"] == 32000 * 1536 == 49_152_000            # shared with the output: no lm_head tensor
    assert sum(parts.values()) == 457_179_136 == INDEX_450M // 2


def test_the_270m_widths_and_total_by_hand(models):
    record = models["model:openelm-270m"]
    lw = record["derived"]["layerwise"]
    assert lw["ffn_hidden"] == FFN_270M
    # three exact ties round up: 0.5 x 1280 = 640 = 2.5 x 256 -> 768; 1.9 x 1280 = 2432 -> 2560; 3.3 x 1280 = 4224 -> 4352
    # (half to even would give 512, 2560 and 4096); the printed module tree has proj_1 8704 = 2 x 4352 in layer 12
    assert (lw["ffn_hidden"][0], lw["ffn_hidden"][6], lw["ffn_hidden"][12]) == (768, 2560, 4352)
    # layer 5's query width: 0.67 x 1280 = 857.6 rounds to 768, over 10% low, so 1024: 16 heads of 64 (openelm.net: query_heads=16)
    assert lw["heads"][5] == 16 and lw["kv_heads"][5] == 4
    # 5 x 12 + 7 x 16 + 4 x 20 = 252 query heads, 63 K/V heads; widths 46,592
    total = 2 * 1280 * 64 * (252 + 63) + 3 * 1280 * 46_592 + 16 * (2 * 1280 + 2 * 64) + 32000 * 1280 + 1280
    assert sum(lw["ffn_hidden"]) == 46_592 and total == 271_527_168 == INDEX_270M // 2 == parameter_count(record)["total"]


def test_kv_bytes_per_token_sum_each_layers_own_heads(models):
    # FX910: 2 x (K/V heads summed over the layers) x head_dim x bytes
    assert kv_bytes_per_token(models["model:openelm-450m"], kv_bytes=2) == 2 * 91 * 64 * 2 == 23_296
    assert kv_bytes_per_token(models["model:openelm-270m"], kv_bytes=1) == 2 * 63 * 64 * 1 == 8_064
    # no single kv_heads stands in: F8 with the largest (6) or the smallest (3) would be 30,720 or 15,360 B
    assert 23_296 not in (2 * 20 * 6 * 64 * 2, 2 * 20 * 3 * 64 * 2)


def test_state_of_a_request_on_an_h100(models, capsys):
    result = state.request_state(models["model:openelm-450m"], 2048)
    assert result.total == 23_296 * 2048 == 47_710_208
    assert [(r.kind, r.layers, r.tokens_held) for r in result.rows] == [("full_attention", 20, 2048)]
    code = main(["state", "--model", "openelm-450m", "--context", "2048", "--device", "h100-sxm", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["bytes_per_request"] == 47_710_208 and data["formulas"] == ["FX910", "FX70", "FX801"]
    # FX72 (vLLM's rule, every command's convention): 0.9 x 85,018,877,624.32 B (h100-sxm's driver total, 79.18 GiB)
    # - 5 GiB (5,368,709,120 B) - the weights 457,179,136 x 2 B = 70,233,922,469.9 B; / 47,710,208 = 1472.1 -> 1472
    assert data["device"]["weight_bytes"] == 914_358_272 and data["device"]["requests"] == 1472


def test_a_tensor_parallel_split_is_refused_by_name(models):
    record = models["model:openelm-450m"]
    with pytest.raises(InputError) as info:
        state.per_gpu_bytes(record, state.request_state(record, 2048), 2)
    assert info.value.field == "--tp" and "model:openelm-450m is layer-wise scaled (20 layers, each with its own widths" in info.value.message


def test_calculators_planners_and_ledger_refuse_it_by_name(models, run):
    record = models["model:openelm-450m"]
    for calculator in (None, "calc:kv-concurrency", "calc:inference-capacity"):
        with pytest.raises(InputError) as info:
            model_values(record, None, calculator)
        assert info.value.message.startswith("model:openelm-450m is layer-wise scaled (20 layers, each with its own widths: query heads "
                                             "12-24, K/V heads 3-6, feed-forward 768-6144 (qkv_multipliers, ffn_multipliers)): the "
                                             "calculators and planners take one heads, kv_heads and ffn_hidden for every layer")
    with pytest.raises(InputError, match="layer-wise scaled .* the forward ledger has no operator template"):
        run(record, 1)


@pytest.mark.parametrize("argv", [
    ["calc", "kv-concurrency", "--model", "openelm-450m", "--set", "context_tokens=2048"],
    ["plan", "--model", "openelm-450m", "--device", "h100-sxm", "--gpus", "8"],
    ["plan", "serve", "--model", "openelm-450m", "--device", "h100-sxm", "--prompt", "1024", "--output", "256", "--ttft", "1s", "--tpot", "50ms"],
    ["forward", "--model", "openelm-450m", "--tokens", "1"],
    ["roofline", "--model", "openelm-450m", "--device", "h100-sxm", "--tokens", "1"],
    ["state", "--model", "openelm-450m", "--context", "2048", "--device", "h100-sxm", "--tp", "2"],
], ids=["kv-concurrency", "plan", "plan-serve", "forward", "roofline", "state-tp"])
def test_the_commands_refuse_it_with_one_line(argv, capsys):
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "openelm-450m is layer-wise scaled" in err


def test_two_multipliers_are_spaced_over_the_layers():
    # OpenELMConfig's own preset for OpenELM-450M gives ffn_multipliers as (0.5, 4.0): the same widths as the stored list
    paired = import_config(dict(copy.deepcopy(CONFIG_450M), ffn_multipliers=[0.5, 4.0]), "x")
    assert paired["derived"]["layerwise"]["ffn_hidden"] == FFN_450M
    # one number: every layer the same, 4.0 x 1536 = 6144 = 24 x 256
    uniform = import_config(dict(copy.deepcopy(CONFIG_450M), ffn_multipliers=4.0), "x")
    assert uniform["derived"]["layerwise"]["ffn_hidden"] == [6144] * 20


def test_a_list_of_kv_heads_is_still_refused_outside_the_openelm_layout():
    llama = {"model_type": "llama", "hidden_size": 1536, "num_hidden_layers": 2, "num_attention_heads": 12, "num_key_value_heads": [3, 4],
             "intermediate_size": 4096, "vocab_size": 32000}
    with pytest.raises(InputError) as info:
        import_config(llama, "x")
    assert info.value.field == "num_key_value_heads" and "expected a whole number >= 1, got [3, 4]" in info.value.message


@pytest.mark.parametrize(("change", "field", "text"), [
    ({"ffn_multipliers": [0.5, 1.0, 2.0]}, "ffn_multipliers",
     "expected a number, two numbers (the first and last layers', spaced evenly between), or 20 numbers, one per layer; got [0.5, 1.0, 2.0]"),
    ({"ffn_multipliers": "0.5..4.0"}, "ffn_multipliers", "expected a number, two numbers"),
    ({"ffn_multipliers": [0.5, True]}, "ffn_multipliers", "expected a number, two numbers"),
    ({"qkv_multipliers": [0.5, 0.75, 1.0]}, "qkv_multipliers",
     "expected a number, two numbers (the first and last layers', spaced evenly between); got [0.5, 0.75, 1.0]"),
    ({"num_query_heads": [12] * 20}, "num_query_heads", "differs from the heads OpenELMConfig computes from qkv_multipliers"),
    ({"num_kv_heads": [4] * 20}, "num_kv_heads", "differs from the heads OpenELMConfig computes from qkv_multipliers"),
    ({"share_input_output_layers": False}, "share_input_output_layers",
     "False is a variant the importer does not understand (it counts openelm models with share_input_output_layers = true)"),
    ({"normalize_qk_projections": False}, "normalize_qk_projections", "is a variant the importer does not understand"),
    ({"ffn_with_glu": False}, "ffn_with_glu", "is a variant the importer does not understand"),
    ({"hidden_size": 1536}, "model_dim", "and hidden_size are both given"),
    ({"num_gqa_groups": 0}, "num_gqa_groups", "expected a whole number >= 1"),
], ids=["ffn-three", "ffn-text", "ffn-bool", "qkv-three", "query-heads", "kv-heads", "untied", "no-qk-norm", "no-glu", "two-names", "groups"])
def test_bad_fields_are_refused_by_name(change, field, text):
    with pytest.raises(InputError) as info:
        import_config({**copy.deepcopy(CONFIG_450M), **change}, "x")
    assert info.value.field == field and text in info.value.message


def test_a_product_within_noise_of_a_rounding_tie_is_refused():
    # 1.9 x 1280 = 2432 is an exact tie (rounds up to 2560); the float just below 1.9 gives 2431.9999999999995, which the
    # reference's int() would round down to 2304 and a forgiving floor up to 2560: the importer takes neither
    below = math.nextafter(1.9, 0)
    ffn = list(CONFIG_270M["ffn_multipliers"])
    ffn[6] = below
    with pytest.raises(InputError) as info:
        import_config(dict(copy.deepcopy(CONFIG_270M), ffn_multipliers=ffn), "x")
    assert info.value.field == "ffn_multipliers[6]" and "within floating-point noise of a rounding tie between two multiples of 256" in info.value.message
