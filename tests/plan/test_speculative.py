"""Speculative decoding and MTP: FX80 and FX960-FX965 by hand, engine.plan.speculative, and plan serve --speculative.

Every expected number is hand arithmetic written beside it, or a number printed in a cited source:
- Leviathan, Kalman and Matias 2023, "Fast Inference from Transformers via Speculative Decoding" (ICML 2023,
  arXiv 2211.17192): eq. 1 E = (1 - a^(g+1)) / (1 - a); Theorem 3.8 E / (g c + 1); Corollary 3.9 (1 + a) / (1 + c)
  at g = 1; Theorem 3.11 (g c^ + g + 1) / E; section 3.5 (g chosen numerically); Table 1 (a, g, operations,
  speed at c = c^ = 0): 0.6 2 1.53X 1.96X, 0.7 3 1.58X 2.53X, 0.8 2 1.23X 2.44X, 0.8 5 1.63X 3.69X,
  0.9 2 1.11X 2.71X, 0.9 10 1.60X 6.86X; Table 4 (g, a, c, expected): EnDe T5-small t=0 7 0.75 0.02 3.2,
  T5-base 7 0.8 0.04 3.3, T5-large 7 0.82 0.11 2.5, CNNDM T5-small t=1 5 0.53 0.02 1.9.
- DeepSeek-V3 technical report (arXiv 2412.19437): 37B activated parameters; section 2.2 (MTP module: shared
  embedding and head, a transformer block, a 2d -> d projection); section 5.4.3 (second-token acceptance 85-90%,
  1.8 times TPS); config.json hidden 7168, vocab 129280, 61 layers, untied.
- NVIDIA H100 SXM datasheet: 989 TFLOPS dense BF16, 3.35 TB/s; Qwen/Qwen3-8B config.json: 147456 B of K/V per token.
- The plan serve point reuses tests/plan/test_serve_plan.py's Llama-3.1-8B on H100 SXM constants.
"""

from __future__ import annotations

import math

import pytest

from engine.core.errors import InputError
from engine.numeric.evaluate import evaluate
from engine.plan import speculative
from engine.plan.evaluate import _Formulas
from engine.plan.serve import plan_serve


def fx(module, fid, **given):
    meta = module.FORMULAS[fid]
    return evaluate(meta, module, given).outputs[meta["output"]["symbol"]].value


def eq1(a, g):
    return (1 - a ** (g + 1)) / (1 - a)


# ------------------------------------------------------------------------------------------- FX80


@pytest.mark.parametrize("a, g, speed", [(0.6, 2, 1.96), (0.7, 3, 2.53), (0.8, 2, 2.44), (0.8, 5, 3.69), (0.9, 2, 2.71), (0.9, 10, 6.86)])
def test_fx80_reproduces_leviathan_table_1_speed_at_zero_draft_cost(module, a, g, speed):
    # with c = 0 and free verification the speed-up is E itself; e.g. (1 - 0.8^6) / 0.2 = (1 - 0.262144) / 0.2 = 3.68928
    got = fx(module, "FX80", spec_draft_len=g, spec_acceptance_rate=a)
    assert got == pytest.approx(eq1(a, g), rel=1e-12)
    assert round(got, 2) == speed, f"Leviathan et al. Table 1, alpha {a}, gamma {g}: {speed}X"


def test_fx80_alpha_08_gamma_5_is_3689(module):
    # (1 - 0.8^6) / 0.2 = (1 - 0.262144) / 0.2 = 0.737856 / 0.2 = 3.68928 tokens per step (Table 1: 3.69X)
    assert fx(module, "FX80", spec_draft_len=5, spec_acceptance_rate=0.8) == pytest.approx(3.68928, rel=1e-12)


def test_fx80_per_position_by_hand(module):
    # 1 + a1 + a1 a2 + a1 a2 a3 = 1 + 0.8 + 0.48 + 0.192
    got = fx(module, "FX80", spec_acceptance_model="per_position", spec_accept_pos1=0.8, spec_accept_pos2=0.6, spec_accept_pos3=0.4)
    assert got == pytest.approx(2.472, rel=1e-12)


def test_fx80_per_position_with_equal_rates_is_the_constant_series(module):
    given = {f"spec_accept_pos{i}": 0.7 for i in range(1, 4)}
    got = fx(module, "FX80", spec_acceptance_model="per_position", **given)
    assert got == pytest.approx(1 + 0.7 + 0.49 + 0.343, rel=1e-12)  # = (1 - 0.7^4) / 0.3 = 2.533
    assert got == pytest.approx(eq1(0.7, 3), rel=1e-12)


# ------------------------------------------------------------------------------------------ FX960


@pytest.mark.parametrize("g, a, c, expected", [(7, 0.75, 0.02, 3.2), (7, 0.8, 0.04, 3.3), (7, 0.82, 0.11, 2.5), (5, 0.53, 0.02, 1.9)])
def test_fx960_reproduces_leviathan_table_4_expected_improvement(module, g, a, c, expected):
    # e.g. (1 - 0.75^8) / 0.25 = 3.5995483, / (7 x 0.02 + 1) = 3.1575, printed 3.2
    got = fx(module, "FX960", spec_tokens_per_step=eq1(a, g), spec_draft_len=g, draft_cost_ratio=c, verify_cost_ratio=1)
    assert got == pytest.approx(eq1(a, g) / (g * c + 1), rel=1e-12)
    assert round(got, 1) == expected, f"Leviathan et al. Table 4: gamma {g}, alpha {a}, c {c}: {expected}"


def test_fx960_corollary_3_9_at_gamma_1(module):
    # (1 - a^2) / ((1 - a)(c + 1)) = (1 + a) / (1 + c): a = 0.6, c = 0.1 -> 1.6 / 1.1 = 1.4545
    assert fx(module, "FX960", spec_tokens_per_step=eq1(0.6, 1), spec_draft_len=1, draft_cost_ratio=0.1, verify_cost_ratio=1) == pytest.approx(1.6 / 1.1, rel=1e-12)


def test_fx960_deepseek_v3_mtp_brackets_the_reported_18x(module):
    # one MTP module drafts the second token (gamma 1), accepted 85-90%; c = its active share 0.043395 (FX964/FX965 below)
    low = fx(module, "FX960", spec_tokens_per_step=1.85, spec_draft_len=1, draft_cost_ratio=0.043394971, verify_cost_ratio=1)
    high = fx(module, "FX960", spec_tokens_per_step=1.90, spec_draft_len=1, draft_cost_ratio=0.043394971, verify_cost_ratio=1)
    assert low == pytest.approx(1.85 / 1.043394971, rel=1e-12)  # 1.7731
    assert high == pytest.approx(1.90 / 1.043394971, rel=1e-12)  # 1.8210
    assert low < 1.8 < high, "DeepSeek-V3 section 5.4.3: 1.8 times TPS"


# ------------------------------------------------------------------------------------------ FX961


@pytest.mark.parametrize("a, g, ops", [(0.6, 2, 1.53), (0.7, 3, 1.58), (0.8, 2, 1.23), (0.8, 5, 1.63), (0.9, 2, 1.11), (0.9, 10, 1.60)])
def test_fx961_reproduces_leviathan_table_1_operations(module, a, g, ops):
    # (g + 1) / E at c^ = 0: e.g. 3 / ((1 - 0.6^3) / 0.4) = 3 / 1.96 = 1.5306
    got = fx(module, "FX961", spec_draft_len=g, draft_flops_ratio=0, spec_tokens_per_step=eq1(a, g))
    assert got == pytest.approx((g + 1) / eq1(a, g), rel=1e-12)
    assert round(got, 2) == ops, f"Leviathan et al. Table 1, alpha {a}, gamma {g}: operations {ops}X"


# ------------------------------------------------------------------------------------------ FX962

COMPUTE_64 = 64 * 1.6e10 / 9.89e14  # FX131: 64 sequences of an 8B model on one H100 at MFU 1 = 1.0353893e-3 s
READS_64 = (16e9 + 64 * 2048 * 147456) / 3.35e12  # FX132: 16 GB of weights + 64 x 2048 tokens of Qwen3-8B K/V = 0.0105455 s
COMPUTE_256 = 256 * 1.6e10 / 9.89e14  # 4.1415571e-3 s
READS_256 = (16e9 + 256 * 128 * 147456) / 3.35e12  # 6.2184592e-3 s at 128-token contexts


def test_fx962_verify_is_free_while_memory_bound(module):
    got = fx(module, "FX962", spec_draft_len=3, decode_compute_time=COMPUTE_64, decode_memory_time=READS_64)
    assert 4 * COMPUTE_64 < READS_64  # 4.14 ms of FLOPs under 10.5 ms of reads
    assert got == pytest.approx(READS_64, rel=1e-12)  # v = 1


def test_fx962_verify_multiplies_a_compute_bound_step(module):
    got = fx(module, "FX962", spec_draft_len=3, decode_compute_time=COMPUTE_256, decode_memory_time=READS_256)
    assert got == pytest.approx(4 * COMPUTE_256, rel=1e-12)  # 16.57 ms
    assert got / max(COMPUTE_256, READS_256) == pytest.approx(2.664, abs=5e-4)  # v = 16.566 / 6.218


# ------------------------------------------------------------------------------------------ FX963

R = 989e12 / 3.35e12  # 295.2238806 FLOP/B
E07 = (1 - 0.7**4) / 0.3  # 2.533 tokens per step at alpha 0.7, gamma 3
ROOF = dict(spec_draft_len=3, draft_cost_ratio=0.05, ridge_intensity=R, weight_bytes=16e9, mfu=1, mbu=1, infer_flops_per_token=1.6e10,
            tp_size=1, kv_bytes_per_token_per_gpu=147456)


def test_fx963_breakeven_by_hand(module):
    r = E07 - 3 * 0.05  # 2.383: the verify pass may cost this many plain steps
    b = r * R * 16e9 / (4 * 1.6e10 - r * R * 128 * 147456)  # 1.1256296e13 / 5.0721533e10
    assert b == pytest.approx(221.9234, rel=1e-6)
    assert fx(module, "FX963", spec_tokens_per_step=E07, context_tokens=128, **ROOF) == pytest.approx(b, rel=1e-12)
    # at that batch the verify pass (4 x FX131) over the memory-bound plain step (FX132) is r: the speed-up is 1
    compute, reads = b * 1.6e10 / 989e12, (16e9 + b * 128 * 147456) / 3.35e12
    assert compute < reads and 4 * compute / reads == pytest.approx(r, rel=1e-9)
    assert E07 / (3 * 0.05 + 4 * compute / reads) == pytest.approx(1, rel=1e-9)


def test_fx963_signals(module):
    # 2048-token contexts: r x R x 2048 x 147456 = 2.38 x 8.9155e10 > 4 x 1.6e10, so the K/V reads keep verifying cheap: -1
    assert fx(module, "FX963", spec_tokens_per_step=E07, context_tokens=2048, **ROOF) == -1
    # alpha 0.1, gamma 4, c 0.5: E = 1.1111, r = 1.1111 - 2 < 1: never pays, 0
    poor = {**ROOF, "spec_draft_len": 4, "draft_cost_ratio": 0.5}
    assert fx(module, "FX963", spec_tokens_per_step=eq1(0.1, 4), context_tokens=128, **poor) == 0


def test_fx963_is_the_crossover_scaled_by_r_over_gamma_plus_1(module):
    # book ch24 decode pool: 133.33 FLOP/B, 70 GB, 1.4e11 FLOPs per token: weights-only crossover 66.667 (FX133);
    # a free draft at alpha 0.8, gamma 4 (r = E = 3.3616) stops paying at 66.667 x 3.3616 / 5 = 44.821
    got = fx(module, "FX963", spec_tokens_per_step=3.3616, spec_draft_len=4, draft_cost_ratio=0, ridge_intensity=400e12 / 3e12, weight_bytes=70e9,
             mfu=1, mbu=1, infer_flops_per_token=1.4e11, tp_size=4, context_tokens=1, kv_bytes_per_token_per_gpu=1)
    assert got == pytest.approx(400 / 3 * 70e9 / 1.4e11 * 3.3616 / 5, rel=1e-6)


# ----------------------------------------------------------------------------------- FX964, FX965


def test_fx965_fx964_deepseek_v3_mtp_module(module):
    emb = 2 * 129280 * 7168  # FX14 untied: 1,853,358,080
    mtp = (37e9 - emb) / 61 + 2 * 7168**2 + 129280 * 7168  # 5.7617e8 + 1.0276e8 + 9.2668e8 = 1.6056139e9
    assert mtp == pytest.approx(1.6056139e9, rel=1e-7)
    assert fx(module, "FX965", params_active=37e9, embedding_params=emb, layers=61, hidden=7168, vocab_size=129280) == pytest.approx(mtp, rel=1e-12)
    assert fx(module, "FX964", draft_params_active=mtp, params_active=37e9) == pytest.approx(0.0433950, rel=1e-6)
    assert fx(module, "FX964", draft_params_active=77e6, params_active=11e9) == pytest.approx(0.007, rel=1e-12)  # T5-small / T5-XXL


# ------------------------------------------------------------------------------ engine.plan.speculative


@pytest.fixture(scope="module")
def f():
    return _Formulas(".")


def test_optimal_draft_len_by_hand(f):
    # E_g / (1 + 0.05 g) at alpha 0.8: g 6: 3.951424 / 1.3 = 3.0396; g 7: 4.1611392 / 1.35 = 3.0823;
    # g 8: 4.32891136 / 1.4 = 3.0921; g 9: 4.463129088 / 1.45 = 3.0780 -> 8
    g, s = speculative.optimal_draft_len(f, 0.8, 0.05)
    assert g == 8 and s == pytest.approx(4.32891136 / 1.4, rel=1e-9)
    # c = 0: E only grows with g (up to 1 / (1 - alpha)), so the longest tried is returned
    assert speculative.optimal_draft_len(f, 0.8, 0.0, longest=12)[0] == 12


def test_resolve_draft_and_mtp(f):
    s = speculative.resolve(f, speculative.parse("draft_len=3,acceptance=0.7,draft_cost=0.05"), {})
    assert (s.draft_len, s.tokens_per_step, s.ideal_speedup) == (3, pytest.approx(E07, rel=1e-12), pytest.approx(E07 / 1.15, rel=1e-12))
    d = speculative.resolve(f, speculative.parse("draft_len=2,acceptance=0.7"), {})
    assert d.draft_cost == 0.05 and "Leviathan" in d.draft_cost_source  # the default c, said
    p = speculative.resolve(f, speculative.parse("acceptance=0.9/0.8/0.7"), {})
    assert p.draft_len == 3 and p.tokens_per_step == pytest.approx(1 + 0.9 + 0.72 + 0.504, rel=1e-12) and p.optimal_draft_len == 0
    m = speculative.resolve(f, speculative.parse("method=mtp,acceptance=0.85"),
                            dict(params_active=37e9, layers=61, hidden=7168, vocab_size=129280, tie_embeddings="untied"))
    assert (m.draft_len, m.tokens_per_step) == (1, pytest.approx(1.85, rel=1e-12))
    assert m.draft_cost == pytest.approx(0.0433950, rel=1e-6)  # FX965 / FX964 as above


@pytest.mark.parametrize("text, field, message", [
    ("draft_len=3,acceptance=1.2", "speculative.acceptance", "'1.2' is not a probability in [0, 1]"),
    ("draft_len=0,acceptance=0.7", "speculative.draft_len", "'0' is not a positive integer"),
    ("draft_len=3,acceptance=0.7,draft_cost=-0.1", "speculative.draft_cost", "'-0.1' is not a non-negative ratio"),
    ("draft_len=3,acceptance=0.7,gamma=3", "speculative.gamma", "is not a field (expected one of method, draft_len, acceptance, draft_cost)"),
    ("method=eagle,acceptance=0.7", "speculative.method", "'eagle' is not one of draft, mtp"),
    ("draft_len=2,acceptance=0.9/0.8/0.7", "speculative.draft_len", "2 does not match the 3 per-position acceptance rates"),
    ("acceptance=0.9/0.9/0.9/0.9/0.9/0.9/0.9/0.9/0.9", "speculative.acceptance", "9 per-position rates; FX80 takes at most 8"),
    ("draft_len", "speculative", "'draft_len' is not key=value (keys: method, draft_len, acceptance, draft_cost)"),
])
def test_parse_refuses_with_the_field(text, field, message):
    with pytest.raises(InputError) as exc:
        speculative.parse(text)
    assert (exc.value.field, exc.value.message) == (field, message)


def test_resolve_needs_a_draft_length_with_one_rate(f):
    with pytest.raises(InputError) as exc:
        speculative.resolve(f, speculative.parse("acceptance=0.7"), {})
    assert exc.value.field == "speculative.draft_len"


# --------------------------------------------------------------------------------- plan serve, by hand

N = 8_030_261_248
L, H, A, KVH, D = 32, 4096, 32, 8, 128
PEAK, MFU, HBM_BW, NVLINK = 989.4e12, 0.405, 3.35e12, 450e9
ARGS = dict(prompt=1024, output=256, ttft=0.5, tpot=0.05, max_batch=48)
SPEC = speculative.parse("draft_len=3,acceptance=0.7,draft_cost=0.05")


@pytest.fixture(scope="module")
def spec_plan():
    return plan_serve(".", "llama-3.1-8b", "h100-sxm", prune="none", speculative=SPEC, **ARGS)


def test_one_speculative_point_by_hand(spec_plan):
    row = next(r for r in spec_plan.rows if (r["mode"], r["tp"], r["ep"], r["batch"]) == ("colocate", 2, 1, 4))
    kv, ctx = 2 * L * KVH * D * 2, 1024 + 256 / 2  # F8 gqa 131,072 B per token; mean context
    compute = 4 * 2 * (N + 2 * L * ctx * A * D) / (2 * PEAK * MFU)  # FX131, TP 2
    reads = (2 * N / 2 + 4 * ctx * kv / 2) / HBM_BW  # FX132, MBU 1
    one = 2 * (2 - 1) * 20e-6 + (2 * (4 * H * 2) * (2 - 1) / 2) / (NVLINK * 0.7)  # FX50 ring of FX702's 4 tokens
    step = max(compute, reads) + 2 * L * one  # FX75 roofline + FX704
    one4 = 2 * (2 - 1) * 20e-6 + (2 * (4 * 4 * H * 2) * (2 - 1) / 2) / (NVLINK * 0.7)  # the same ring carrying 4 x 4 tokens
    verify = max(4 * compute, reads) + 2 * L * one4  # FX962 + the verify pass's all-reduces
    v = verify / step
    chunk = 2 * (N + 2 * L * 1024 * A * D) * (4 * 1024 / 256) / (2 * PEAK * MFU)  # FX74 share of a step
    tpot = step * (3 * 0.05 + v) / E07 + chunk  # FX78 speculative + the chunked-prefill share
    assert row["spec_verify_ratio"] == pytest.approx(v, rel=1e-12)
    assert row["tpot"] == pytest.approx(tpot, rel=1e-12)
    assert row["tpot_plain"] == pytest.approx(step + chunk, rel=1e-12)
    assert row["spec_speedup"] == pytest.approx(E07 / (0.15 + v), rel=1e-12)  # FX960
    assert row["spec_pays"] is (E07 / (0.15 + v) > 1)
    assert row["user_tokens_per_s"] == pytest.approx(1 / tpot, rel=1e-12)


def test_speculation_stops_paying_past_the_breakeven_batch():
    # short contexts so the verify pass turns compute-bound: both sides of FX963's batch
    r = plan_serve(".", "llama-3.1-8b", "h100-sxm", prompt=128, output=64, ttft=1.0, tpot=0.2, max_batch=160, prune="none", split=False,
                   speculative=speculative.parse("draft_len=5,acceptance=0.6,draft_cost=0.1"))
    rows = {x["batch"]: x for x in r.rows if x["tp"] == 1}
    even = rows[1]["spec_breakeven_batch"]
    assert 2 < even < 150 and all(x["spec_breakeven_batch"] == pytest.approx(even) for x in rows.values())  # one per (TP, EP)
    below, above = rows[math.floor(even) - 2], rows[math.ceil(even) + 2]
    assert below["spec_speedup"] > 1 > above["spec_speedup"]
    assert below["tpot"] < below["tpot_plain"] and above["tpot"] > above["tpot_plain"]
    # past the crossover both steps are compute-bound: v = gamma + 1 and the speed-up is E / (gamma c + gamma + 1)
    assert rows[160]["spec_verify_ratio"] == pytest.approx(6, rel=1e-3)
    assert rows[160]["spec_speedup"] == pytest.approx(eq1(0.6, 5) / (0.5 + 6), rel=1e-3)


def test_bound_pruning_never_changes_the_speculative_result():
    # FX134 is asked for TPOT x E / (gamma c + 1): a verify pass never costs less than a plain step
    kw = dict(prompt=512, output=128, ttft=0.5, tpot=0.004, max_batch=512, speculative=SPEC)
    bound = plan_serve(".", "llama-3.1-8b", "h100-sxm", prune="bound", **kw)
    every = plan_serve(".", "llama-3.1-8b", "h100-sxm", prune="none", **kw)
    assert bound.pruned_bound > 0 and bound.feasible == every.feasible > 0
    assert bound.best == every.best and bound.front == every.front
    plain = plan_serve(".", "llama-3.1-8b", "h100-sxm", prune="none", **{**kw, "speculative": None})
    assert plain.feasible == 0  # 4 ms is out of reach without speculation


def test_plan_records_the_speculation(spec_plan):
    s = spec_plan.speculative
    assert (s["method"], s["draft_len"], s["acceptance"], s["draft_cost"]) == ("draft", 3, [0.7], 0.05)
    assert s["tokens_per_step"] == pytest.approx(E07, rel=1e-12)
    assert any("speculative decoding: a draft model" in a for a in spec_plan.assumptions)
