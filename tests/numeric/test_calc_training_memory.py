"""calc:training-memory: model states (F4 split by FX100-FX102), activations (F5, FX103, FX104), total (FX105), fit (F7).

Every expected number is taken from the cited source or is hand arithmetic written beside it:
- ZeRO: Rajbhandari et al. 2019/2020, "ZeRO: Memory Optimizations Toward Training Trillion
  Parameter Models", Table 1 (per-device model-state memory, GB = 1e9 B, K = 12).
- Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
  (arXiv:2205.05198): Table 2 (per-layer bytes), Table 3 (model configurations), section 4.2.3
  (Eq. 5, first pipeline stage), section 4.3 (embedding/output terms), section 5 (Eq. 6), and
  section 6 (s = 2048, v = 51200, interleaving m = 3 for 175B and 530B).
- The book (../shared/BOOK.md): chapter 6 §6.2 worked example (70B, TP 8, PP 4, DP 32: 35 GB of
  states and about 11.4 GB of activations per card; ZeRO-1 at DP 128: about 287 GB), and §8,
  the core math of its memory calculator.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from engine.cli.main import main
from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.numeric.calculators import Calculator, load_records, run

GB = 1e9


@pytest.fixture(scope="module")
def calc():
    return Calculator.from_record(load_records(shipped_root())["calc:training-memory"])


def mem(calc, module, **given):
    return run(calc, module, given)


def out(result, name):
    return result.outputs[name].value


def warned(result, text):
    return any(text in w for w in result.warnings)


# Korthikanti et al. 2022 Table 3 (a, h, L, t, p, b) with s = 2048 and v = 51200 (section 6).
KORTHIKANTI = {
    "22B": dict(heads=64, hidden=6144, layers=48, tp_size=8, pp_size=1, micro_batch=4),
    "175B": dict(heads=96, hidden=12288, layers=96, tp_size=8, pp_size=8, micro_batch=1),
    "530B": dict(heads=128, hidden=20480, layers=105, tp_size=8, pp_size=35, micro_batch=1),
    "1T": dict(heads=160, hidden=25600, layers=128, tp_size=8, pp_size=64, micro_batch=1),
}
S, V = 2048, 51200


def shape(name, **extra):
    cfg = dict(KORTHIKANTI[name], seq_len=S, vocab_size=V, params=1e9)  # params do not enter the activations
    cfg.update(extra)
    return cfg


# ---------------------------------------------------------------------- ZeRO Table 1 (model states)

# Table 1 of the ZeRO paper: per-device GB for P_os, P_os+g, P_os+g+p at each DP degree, K = 12.
ZERO_TABLE_1 = {
    7.5e9: {1: ("120", "120", "120"), 4: ("52.5", "41.3", "30"), 16: ("35.6", "21.6", "7.5"),
            64: ("31.4", "16.6", "1.88"), 256: ("30.4", "15.4", "0.47"), 1024: ("30.1", "15.1", "0.12")},
    128e9: {1: ("2048", "2048", "2048"), 4: ("896", "704", "512"), 16: ("608", "368", "128"),
            64: ("536", "284", "32"), 256: ("518", "263", "8"), 1024: ("513", "257", "2")},
    1e12: {1: ("16000", "16000", "16000"), 4: ("7000", "5500", "4000"), 16: ("4750", "2875", "1000"),
           64: ("4187", "2218", "250"), 256: ("4046", "2054", "62.5"), 1024: ("4011", "2013", "15.6")},
}


def printed_close(value_bytes: float, printed: str) -> bool:
    """The paper prints 3-4 digits (rounded or cut): the exact value lies within one unit of the last digit."""
    unit = float(Decimal(1).scaleb(Decimal(printed).as_tuple().exponent))
    return abs(value_bytes / GB - float(printed)) < unit


@pytest.mark.parametrize("psi", sorted(ZERO_TABLE_1))
@pytest.mark.parametrize("dp", [1, 4, 16, 64, 256, 1024])
def test_zero_paper_table_1(calc, module, psi, dp):
    # Activations are not part of Table 1: they are given directly (the chain stops there).
    for stage, printed in zip(("1", "2", "3"), ZERO_TABLE_1[psi][dp], strict=True):
        r = mem(calc, module, params=psi, zero_stage=stage, dp_size=dp, activation_bytes_per_gpu=0)
        got = out(r, "model_state_bytes_per_gpu")
        assert printed_close(got, printed), f"ZeRO Table 1, Ψ={psi:g}, Nd={dp}, stage {stage}: {got / GB} GB vs {printed}"
        parts = out(r, "train_weight_bytes_per_gpu") + out(r, "train_grad_bytes_per_gpu") + out(r, "train_optim_bytes_per_gpu")
        assert parts == pytest.approx(got, rel=1e-12)
        assert out(r, "train_memory_bytes_per_gpu") == pytest.approx(got, rel=1e-12)


def test_zero_paper_figure_1_components(calc, module):
    # ZeRO Figure 1, Ψ = 7.5B, K = 12, Nd = 64: 2Ψ + 2Ψ + KΨ = 15 + 15 + 90 GB at baseline;
    # P_os+g+p: (2 + 2 + 12) × 7.5e9 / 64 = 234375000 + 234375000 + 1406250000 B.
    base = mem(calc, module, params=7.5e9, zero_stage="0", dp_size=64, activation_bytes_per_gpu=0)
    assert [out(base, n) for n in ("train_weight_bytes_per_gpu", "train_grad_bytes_per_gpu", "train_optim_bytes_per_gpu")] == [15e9, 15e9, 90e9]
    assert out(base, "model_state_bytes_per_gpu") == 120e9
    full = mem(calc, module, params=7.5e9, zero_stage="3", dp_size=64, activation_bytes_per_gpu=0)
    assert [out(full, n) for n in ("train_weight_bytes_per_gpu", "train_grad_bytes_per_gpu", "train_optim_bytes_per_gpu")] == [234375000, 234375000, 1406250000]


def test_zero_shards_over_dp_not_world_size(calc, module):
    # ECOSYSTEM.md peer mistake: ZeRO sharded over the world size. 70B, TP 8, DP 4, ZeRO-1:
    # N/8 per TP rank first, then only the 12 optimizer bytes over DP 4:
    # (2 + 2 + 12/4) × 70e9 / 8 = 7 × 8.75e9 = 61.25e9 B (world size 32 would give 39.375e9).
    r = mem(calc, module, params=70e9, tp_size=8, dp_size=4, zero_stage="1", activation_bytes_per_gpu=0)
    assert out(r, "model_state_bytes_per_gpu") == pytest.approx(61.25e9)
    assert out(r, "train_optim_bytes_per_gpu") == pytest.approx(12 * 70e9 / 32)  # 26.25e9
    assert out(r, "train_weight_bytes_per_gpu") == pytest.approx(2 * 70e9 / 8)  # 17.5e9, not sharded at stage 1


# ---------------------------------------------------------------------- Korthikanti Table 2 (per layer)


def test_korthikanti_table_2_rows_for_the_22b_config(calc, module):
    # 22B of Table 3: s = 2048, b = 4, h = 6144, a = 64, t = 8. sbh = 2048 × 4 × 6144 = 50331648;
    # 5as/h = 5 × 64 × 2048 / 6144 = 320/3, so sbh·5as/h = 50331648 × 320 / 3 = 5368709120.
    sbh, attn = 50331648, 5368709120
    rows = [  # (inputs, Table 2 row by hand)
        (dict(tp_size=1), sbh * 34 + attn),  # no parallelism: 1711276032 + 5368709120 = 7079985152
        (dict(), sbh * 10 + sbh * 24 // 8 + attn // 8),  # tensor parallel (baseline): 1325400064
        (dict(sp_degree=8), sbh * 34 // 8 + attn // 8),  # tensor + sequence parallel: 884998144
        (dict(recompute="selective"), sbh * 10 + sbh * 24 // 8),  # TP + selective: 654311424
        (dict(recompute="selective", sp_degree=8), sbh * 34 // 8),  # TP + SP + selective: 213909504
        (dict(recompute="full"), sbh * 2),  # full recomputation: 100663296
    ]
    assert [r[1] for r in rows] == [7079985152, 1325400064, 884998144, 654311424, 213909504, 100663296]
    for extra, expect in rows:
        r = mem(calc, module, **shape("22B", **extra))
        assert out(r, "activation_bytes_per_layer") == pytest.approx(expect, rel=1e-12), extra
    # Section 6.1 / Figure 7: SP + selective is under 20% of the tensor-parallel baseline.
    assert 213909504 / 1325400064 < 0.20


@pytest.mark.parametrize("name, saving", [("175B", 0.70), ("530B", 0.65)])
def test_selective_recompute_saving_gpt3_and_mt_nlg(calc, module, name, saving):
    # Korthikanti section 5: 5as/h = 80 for GPT-3 and 64 for MT-NLG, so selective recomputation
    # saves 80/114 = 70.2% and 64/98 = 65.3% ("70% and 65%").
    none = out(mem(calc, module, **shape(name, tp_size=1)), "activation_bytes_per_layer")
    sel = out(mem(calc, module, **shape(name, tp_size=1, recompute="selective")), "activation_bytes_per_layer")
    assert 1 - sel / none == pytest.approx(saving, abs=0.005)


# ---------------------------------------------------------------------- Korthikanti Eq. 5/6 + section 4.3 (per GPU)


def test_22b_total_activations_with_embedding_and_logits(calc, module):
    # 22B, t = 8, p = 1, SP + selective: Eq. 6 34·sbhL/t = 213909504 × 48 = 10267656192, plus
    # section 4.3: embedding dropout sbhp/t = 6291456, final norm + projection input 4sbh/t = 25165824,
    # fp32 logits 4sbv/t = 4 × 2048 × 4 × 51200 / 8 = 209715200: 10508828672 B.
    r = mem(calc, module, **shape("22B", recompute="selective", sp_degree=8))
    assert out(r, "activation_bytes_per_gpu") == 10267656192 + 6291456 + 25165824 + 209715200 == 10508828672


def test_without_vocab_size_the_logits_term_is_left_out_with_a_warning(calc, module):
    # issue 11: the same 22B case with no vocab_size runs; only the fp32 logits 4sbv/t = 209715200 B
    # are missing: 10267656192 + 6291456 + 25165824 = 10299113472 B, and a warning says so.
    cfg = shape("22B", recompute="selective", sp_degree=8)
    del cfg["vocab_size"]
    r = mem(calc, module, **cfg)
    assert out(r, "activation_bytes_per_gpu") == 10267656192 + 6291456 + 25165824 == 10299113472
    assert warned(r, "left out: the fp32 logits term 4sbV/t (logits_activation_bytes, FX300) needs vocab_size")
    assert "FX300" not in r.formulas
    with_vocab = mem(calc, module, **shape("22B", recompute="selective", sp_degree=8))
    assert not warned(with_vocab, "left out:")


def test_without_vocab_size_params_are_still_asked_for(calc, module):
    # vocab_size is optional only for the logits term: deriving params from the shape still needs it
    cfg = {k: v for k, v in LLAMA_31_8B.items() if k != "vocab_size"}
    with pytest.raises(InputError) as err:
        mem(calc, module, **cfg, seq_len=8192, micro_batch=1)
    assert str(err.value).startswith("--set params: calc:training-memory needs a value for params (")
    assert str(err.value).endswith("; or give vocab_size to derive it (FX17)")


def test_175b_interleaved_first_stage(calc, module):
    # GPT-3 175B, t = 8, p = 8, interleaved m = 3 (section 6), SP + selective: per layer
    # 34 × 2048 × 12288 / 8 = 106954752; × 96 × (1 + 7/24) = 13262389248; + sbhp/t = 25165824.
    r = mem(calc, module, **shape("175B", recompute="selective", sp_degree=8, pipeline_schedule="interleaved", virtual_stages=3))
    assert out(r, "activation_bytes_per_layer") == 106954752
    assert out(r, "activation_bytes_per_gpu") == pytest.approx(13262389248 + 25165824, rel=1e-12)


def test_1t_first_stage_holds_all_layers(calc, module):
    # 1T, t = 8, p = 64 (not interleaved): the first stage keeps 64 micro-batches of 2 layers,
    # i.e. L = 128 layers' worth (Eq. 5/6): 128 × 34 × 2048 × 25600 / 8 = 28521267200,
    # + embedding dropout 2048 × 25600 × 64 / 8 = 419430400.
    r = mem(calc, module, **shape("1T", recompute="selective", sp_degree=8))
    assert out(r, "activation_bytes_per_gpu") == 28521267200 + 419430400


# ---------------------------------------------------------------------- the book's own numbers

BOOK_70B = dict(params=70e9, tp_size=8, pp_size=4, dp_size=32, layers=80, hidden=8192, heads=64, seq_len=4096,
                micro_batch=1, sp_degree=8, flash_attention="1", vocab_size=128256)  # vocab: any value, unused at pp > 1


def test_book_chapter_6_worked_example_70b(calc, module):
    # Book ch6 §6.2 完整算例 step 1: 16N / 32 = 35 GB of states per card; activations
    # 80 × 4096 × 8192 × 34 / 8 ≈ 11.4 GB (FlashAttention, TP 8 with SP); 46.4 GB on an 80 GB card.
    r = mem(calc, module, **BOOK_70B)
    assert out(r, "model_state_bytes_per_gpu") == 35e9
    # Here: per layer 4096 × 8192 × 34/8 + 4 B × 64 heads × 4096 rows / 8 (logsumexp) = 142606336 + 131072;
    # × 80 = 11418992640, + embedding dropout 4096 × 8192 × 4 / 8 = 16777216 → 11435769856 B.
    assert out(r, "activation_bytes_per_gpu") == 11435769856
    assert out(r, "activation_bytes_per_gpu") == pytest.approx(11.4e9, rel=0.005)
    assert out(r, "train_memory_bytes_per_gpu") == pytest.approx(46.4e9, rel=0.005)
    assert out(r, "usable_memory_per_gpu") == pytest.approx(80e9 * 0.9 * 0.88)  # F7 defaults: 63.36e9
    assert not [w for w in r.warnings if "not used" not in w]  # it fits; 80 layers split over 4 stages


def test_book_chapter_6_zero1_dp128_does_not_fit(calc, module):
    # Book ch6 §6.2: 70B with ZeRO-1 at DP 128 and no TP/PP holds 2N + 2N + 12N/128 ≈ 287 GB per card.
    r = mem(calc, module, params=70e9, zero_stage="1", dp_size=128, activation_bytes_per_gpu=0)
    assert out(r, "model_state_bytes_per_gpu") == pytest.approx(287e9, rel=0.002)
    assert warned(r, "does not fit")


def book_calculator(n, layers, batch_seqs, seq_len, hidden, heads, dp, tp, pp, zero_stage, recompute):
    """The book's memory.training_memory core math as BOOK.md §8 states it (bytes, before its margin)."""
    n = n / (tp * pp)
    states = {0: 16 * n, 1: (4 + 12 / dp) * n, 2: (2 + 14 / dp) * n, 3: 16 * n / dp}[zero_stage]
    factor = {"none": 34 + 5 * heads * seq_len / hidden, "selective": 11, "full": 2}[recompute]
    return states, factor * seq_len * batch_seqs * hidden * layers / (tp * pp)


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_book_calculator_parity_model_states(calc, module, stage):
    # BOOK.md §8: ZeRO0 16n; ZeRO1 (4 + 12/dp)n; ZeRO2 (2 + 14/dp)n; ZeRO3 16n/dp, n = N/(tp·pp).
    states, _ = book_calculator(70e9, 80, 1, 4096, 8192, 64, 16, 2, 4, stage, "none")
    r = mem(calc, module, params=70e9, dp_size=16, tp_size=2, pp_size=4, zero_stage=str(stage), activation_bytes_per_gpu=0)
    assert out(r, "model_state_bytes_per_gpu") == pytest.approx(states, rel=1e-12)


def test_book_calculator_parity_activations_and_the_stated_differences(calc, module):
    # A 7B-class shape, tp = pp = 1, recompute none: the layer term equals the book's; ours adds
    # Korthikanti section 4.3: sbh (embedding dropout) + 4sbh (final norm, projection input) + 4sbV (fp32 logits).
    s, b, h, a, L, v = 4096, 1, 4096, 32, 32, 32000
    _, book_act = book_calculator(7e9, L, b, s, h, a, 1, 1, 1, 0, "none")
    assert book_act == s * h * (34 + 5 * a * s / h) * L == 104152956928  # 16777216 × 194 × 32
    r = mem(calc, module, params=7e9, layers=L, hidden=h, heads=a, seq_len=s, micro_batch=b, vocab_size=v)
    extras = s * b * h * 1 + s * b * h * 4 + 4 * s * b * v  # 16777216 + 67108864 + 524288000 = 608174080
    assert out(r, "activation_bytes_per_gpu") == book_act + extras == 104761131008
    # Stated difference (1): with pp = 4 the book divides the activations by 4; under 1F1B the first
    # stage keeps 4 micro-batches of L/4 layers, so the layer term stays L × per-layer (Eq. 5).
    _, book_pp4 = book_calculator(7e9, L, b, s, h, a, 1, 1, 4, 0, "none")
    r4 = mem(calc, module, params=7e9, layers=L, hidden=h, heads=a, seq_len=s, micro_batch=b, vocab_size=v, pp_size=4)
    assert out(r4, "activation_bytes_per_gpu") == 4 * book_pp4 + s * b * h * 4  # embedding mask for 4 micro-batches


# ---------------------------------------------------------------------- properties


def test_doubling_dp_under_zero3_halves_model_states(calc, module):
    one = mem(calc, module, params=70e9, zero_stage="3", dp_size=64, tp_size=8, activation_bytes_per_gpu=0)
    two = mem(calc, module, params=70e9, zero_stage="3", dp_size=128, tp_size=8, activation_bytes_per_gpu=0)
    for name in ("model_state_bytes_per_gpu", "train_weight_bytes_per_gpu", "train_grad_bytes_per_gpu", "train_optim_bytes_per_gpu"):
        assert out(two, name) == pytest.approx(out(one, name) / 2, rel=1e-12)


def test_zero1_doubling_dp_halves_only_the_optimizer_states(calc, module):
    one = mem(calc, module, params=7.5e9, zero_stage="1", dp_size=8, activation_bytes_per_gpu=0)
    two = mem(calc, module, params=7.5e9, zero_stage="1", dp_size=16, activation_bytes_per_gpu=0)
    assert out(two, "train_optim_bytes_per_gpu") == pytest.approx(out(one, "train_optim_bytes_per_gpu") / 2)
    assert out(two, "train_weight_bytes_per_gpu") == out(one, "train_weight_bytes_per_gpu")
    assert out(two, "train_grad_bytes_per_gpu") == out(one, "train_grad_bytes_per_gpu")


@pytest.mark.parametrize("name", sorted(KORTHIKANTI))
def test_recompute_ordering_full_lt_selective_lt_none(calc, module, name):
    per = {rc: out(mem(calc, module, **shape(name, recompute=rc, sp_degree=8)), "activation_bytes_per_gpu")
           for rc in ("none", "selective", "full")}
    assert per["full"] < per["selective"] < per["none"]


@pytest.mark.parametrize("name", sorted(KORTHIKANTI))
def test_flash_attention_drops_the_score_term(calc, module, name):
    # The fused kernel keeps one fp32 logsumexp per head and row: 4·a·s·b/t per layer, against
    # 34·sbh/t for the rest (with SP); so flash + none exceeds selective by 4a/(34h) of it (0.09% for 175B).
    base = shape(name, sp_degree=8)
    eager = out(mem(calc, module, **base), "activation_bytes_per_layer")
    flash = out(mem(calc, module, **base, flash_attention="1"), "activation_bytes_per_layer")
    selective = out(mem(calc, module, **base, recompute="selective"), "activation_bytes_per_layer")
    cfg = KORTHIKANTI[name]
    assert flash < eager
    assert flash - selective == pytest.approx(4 * cfg["heads"] * S * cfg["micro_batch"] / 8, rel=1e-9)
    assert flash / selective - 1 == pytest.approx(4 * cfg["heads"] / (34 * cfg["hidden"]), rel=1e-9)  # 0.12% (22B) to 0.07% (1T)
    assert flash / selective - 1 < 0.002


def test_flash_attention_with_full_recompute_changes_nothing(calc, module):
    a = mem(calc, module, **shape("22B", recompute="full"))
    b = mem(calc, module, **shape("22B", recompute="full", flash_attention="1"))
    assert out(a, "activation_bytes_per_gpu") == out(b, "activation_bytes_per_gpu")
    # full recomputation needs no head count: without one the activations are the same (heads then feeds only the
    # optional attention-score term FX411 and the book's rule FX413, which are left out)
    c = mem(calc, module, **{k: v for k, v in shape("22B", recompute="full").items() if k != "heads"})
    assert out(c, "activation_bytes_per_gpu") == out(a, "activation_bytes_per_gpu") and "heads" not in c.inputs


def test_sequence_parallel_divides_everything_by_t(calc, module):
    # Korthikanti Eq. 4: with SP the per-layer memory is Eq. 1 divided by t.
    no_par = out(mem(calc, module, **shape("22B", tp_size=1)), "activation_bytes_per_layer")
    tp_sp = out(mem(calc, module, **shape("22B", sp_degree=8)), "activation_bytes_per_layer")
    assert tp_sp == pytest.approx(no_par / 8, rel=1e-12)


def test_hbm_gb_and_gib_differ(calc, module):
    # ECOSYSTEM.md: GB and GiB mixed. 80 GB = 80e9 B, 80 GiB = 85899345920 B; F7 × 0.9 × 0.88.
    gb = mem(calc, module, params=7.5e9, activation_bytes_per_gpu=0, hbm_capacity="80GB")
    gib = mem(calc, module, params=7.5e9, activation_bytes_per_gpu=0, hbm_capacity="80GiB")
    assert out(gb, "usable_memory_per_gpu") == pytest.approx(63.36e9)
    assert out(gib, "usable_memory_per_gpu") == pytest.approx(85899345920 * 0.792)


# ---------------------------------------------------------------------- parameters from the shape

LLAMA_31_8B = dict(layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn_hidden=14336, vocab_size=128256)


def test_params_derived_from_the_shape(calc, module):
    # meta-llama/Llama-3.1-8B config.json; the Hub's safetensors count is 8,030,261,248 (FX17's example).
    # SwiGLU counted with three matrices (ECOSYSTEM.md: two would put it ~20% low).
    r = mem(calc, module, **LLAMA_31_8B, seq_len=8192, micro_batch=1)
    assert out(r, "model_state_bytes_per_gpu") == 16 * 8030261248
    assert r.formulas[:6] == ["FX10", "FX11", "FX12", "FX13", "FX14", "FX17"]


# ---------------------------------------------------------------------- failure boundaries


def test_tp_beyond_kv_heads_is_flagged(calc, module):
    r = mem(calc, module, **LLAMA_31_8B, seq_len=8192, micro_batch=1, tp_size=16, sp_degree=16, recompute="selective")
    assert warned(r, "tp_size exceeds the KV heads")
    # 32 heads over 16 ranks is whole: no divisibility warning.
    assert not warned(r, "heads is not divisible")


def test_heads_not_divisible_by_tp(calc, module):
    r = mem(calc, module, **shape("22B", tp_size=6, sp_degree=6))  # 64 heads / 6
    assert warned(r, "heads is not divisible by tp_size")


def test_pipeline_boundaries(calc, module):
    assert warned(mem(calc, module, **shape("22B", pp_size=64)), "more pipeline stages than layers")
    uneven = mem(calc, module, **shape("22B", pp_size=5))  # 48 layers / 5
    assert warned(uneven, "layers do not split evenly")
    assert not warned(mem(calc, module, **shape("22B", pp_size=4)), "layers do not split evenly")


def test_sequence_parallel_must_match_tp(calc, module):
    assert warned(mem(calc, module, **shape("22B", sp_degree=4)), "sp_degree should be 1 (off) or tp_size (on)")
    assert not warned(mem(calc, module, **shape("22B", sp_degree=8)), "sp_degree should be")


def test_does_not_fit_on_the_card(calc, module):
    # 22B without recomputation on one card (t = 1): 16 × 22e9 = 352 GB of states alone.
    r = mem(calc, module, **shape("22B", tp_size=1, params=22e9), hbm_capacity="80GB")
    assert out(r, "train_memory_bytes_per_gpu") > out(r, "usable_memory_per_gpu")
    assert warned(r, "does not fit")


def test_zero_with_dp_1_is_flagged(calc, module):
    r = mem(calc, module, params=7.5e9, zero_stage="2", dp_size=1, activation_bytes_per_gpu=0)
    assert out(r, "model_state_bytes_per_gpu") == 120e9  # dp 1: every stage is stage 0
    assert warned(r, "ZeRO with dp_size = 1 shards nothing")


# ---------------------------------------------------------------------- CLI


def cli(argv, capsys):
    code = main(argv)
    o, e = capsys.readouterr()
    return code, o, e


BOOK_ARGV = ["calc", "training-memory"] + [a for k, v in BOOK_70B.items() for a in ("--set", f"{k}={v}")]


def test_cli_json(capsys):
    code, o, _ = cli([*BOOK_ARGV, "--format", "json"], capsys)
    assert code == 0
    data = json.loads(o)
    assert data["calculator"] == "calc:training-memory"
    assert data["outputs"]["model_state_bytes_per_gpu"]["value"] == 35e9  # book ch6: 16 × 70e9 / 32
    # FX300: the logits term; FX411 and FX413: the optional score term and the book's activation rule
    assert data["formulas"] == ["FX100", "FX101", "FX102", "F4", "FX103", "F5", "FX300", "FX104", "FX105", "F7", "FX411", "FX413"]


def test_cli_warning_exit_0(capsys):
    code, o, _ = cli(["calc", "training-memory", "--set", "params=70e9", "--set", "zero_stage=1", "--set", "dp_size=128",
                      "--set", "activation_bytes_per_gpu=0"], capsys)
    assert code == 0 and "does not fit" in o


@pytest.mark.parametrize("extra, field", [
    (["--set", "zero_stage=4"], "--set zero_stage"),
    (["--set", "recompute=some"], "--set recompute"),
    (["--set", "dp_size=0"], "--set dp_size"),
    (["--set", "hbm_capacity=80GB/s"], "--set hbm_capacity"),
    (["--set", "nonsense=1"], "--set nonsense"),
])
def test_cli_bad_input_one_line_exit_2(capsys, extra, field):
    code, o, e = cli([*BOOK_ARGV, *extra], capsys)
    assert code == 2 and o == ""
    assert e.count("\n") == 1 and field in e and "Traceback" not in e


def test_cli_help_names_the_inputs_in_the_books_terms(capsys):
    code, o, _ = cli(["calc", "training-memory", "--help"], capsys)
    assert code == 0
    assert "zero_stage [one of 0|1|2|3] default 0" in o
    assert "bytes_optim [B] default 12" in o and "sp_degree [1] default 1" in o
    assert "issue name" not in o  # issue 28: the names meant nothing to a reader; the book's stay
    assert "the book's dp" in o
