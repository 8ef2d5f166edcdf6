"""calc:speculative-decoding: worked examples, the roofline chain to the break-even batch, its warnings and refusals.

Every expected number is printed in a cited source or is hand arithmetic written beside it:
Leviathan, Kalman and Matias 2023 (arXiv 2211.17192) eq. 1, Theorems 3.8 and 3.11, Tables 1 and 4; DeepSeek-V3
technical report (arXiv 2412.19437) sections 2.2 and 5.4.3 (37B activated; MTP second token accepted 85-90%, 1.8x TPS);
NVIDIA H100 SXM datasheet (989 TFLOPS dense BF16, 3.35 TB/s); Qwen/Qwen3-8B config.json (36 layers, 8 KV heads,
head_dim 128: 147456 B of BF16 K/V per token).
"""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.numeric.calculators import Calculator, load_records, run


@pytest.fixture(scope="module")
def calc():
    return Calculator.from_record(load_records(shipped_root())["calc:speculative-decoding"])


def out(result, name):
    return result.outputs[name].value


def test_leviathan_table_1_row(calc, module):
    # alpha 0.8, gamma 5, c 0: E = (1 - 0.8^6) / 0.2 = 3.68928, speed-up E / (0 + 1) (Table 1: 3.69X)
    r = run(calc, module, dict(spec_draft_len=5, spec_acceptance_rate=0.8, draft_cost_ratio=0))
    assert out(r, "spec_tokens_per_step") == pytest.approx(3.68928, rel=1e-12)
    assert out(r, "spec_speedup") == pytest.approx(3.68928, rel=1e-12)
    assert r.formulas[:2] == ["FX80", "FX960"]


def test_leviathan_table_4_t5_base_with_operations(calc, module):
    # gamma 7, alpha 0.8, c 0.04: E = (1 - 0.8^8) / 0.2 = 4.1611392, / 1.28 = 3.2509 (Table 4 prints 3.3);
    # Theorem 3.11 with c^ = 0.04: (7 x 0.04 + 8) / 4.1611392 = 8.28 / 4.1611392 = 1.98984
    r = run(calc, module, dict(spec_draft_len=7, spec_acceptance_rate=0.8, draft_cost_ratio=0.04, draft_flops_ratio=0.04))
    assert out(r, "spec_speedup") == pytest.approx(4.1611392 / 1.28, rel=1e-9)
    assert out(r, "spec_flops_factor") == pytest.approx(8.28 / 4.1611392, rel=1e-9)


def test_per_position_rates(calc, module):
    # 1 + 0.9 + 0.9 x 0.8 + 0.9 x 0.8 x 0.7 = 1 + 0.9 + 0.72 + 0.504 = 3.124; / (3 x 0.05 + 1) = 2.716522
    r = run(calc, module, dict(spec_draft_len=3, spec_acceptance_model="per_position", spec_accept_pos1=0.9, spec_accept_pos2=0.8,
                               spec_accept_pos3=0.7, draft_cost_ratio=0.05))
    assert out(r, "spec_tokens_per_step") == pytest.approx(3.124, rel=1e-12)
    assert out(r, "spec_speedup") == pytest.approx(3.124 / 1.15, rel=1e-12)


def test_deepseek_v3_mtp_module_as_the_draft(calc, module):
    # FX14 untied 2 x 129280 x 7168; FX965 (37e9 - 1853358080) / 61 + 2 x 7168^2 + 129280 x 7168 = 1.6056139e9;
    # FX964 / 37e9 = 0.043395; at alpha 0.85, gamma 1, c = that: 1.85 / 1.043395 = 1.7731 (the report: 1.8x)
    # the time ratio c is an input (measured); here it is set to the module's FLOPs share, its floor
    r = run(calc, module, dict(spec_draft_len=1, spec_acceptance_rate=0.85, draft_cost_ratio=0.043394971, params_active=37e9, layers=61,
                               hidden=7168, vocab_size=129280))
    assert out(r, "draft_params_active") == pytest.approx(1.6056139e9, rel=1e-7)
    assert out(r, "draft_flops_ratio") == pytest.approx(0.0433950, rel=1e-6)
    assert out(r, "spec_speedup") == pytest.approx(1.85 / 1.043394971, rel=1e-9)
    assert out(r, "spec_speedup") < 1.8 < 1.9 / 1.043394971  # alpha 0.85 .. 0.9 brackets the reported 1.8x


ROOFLINE = dict(spec_draft_len=3, spec_acceptance_rate=0.7, draft_cost_ratio=0.05, params=8e9, params_active=8e9, bytes_param=2,
                peak_flops="989TFLOPS", hbm_bandwidth="3.35TB/s", kv_bytes_per_token_per_gpu=147456, context_tokens=128)


def test_breakeven_batch_and_verify_step_on_the_roofline(calc, module):
    # r = (1 - 0.7^4) / 0.3 - 0.15 = 2.383; R = 989e12 / 3.35e12 = 295.2238806;
    # B* = 2.383 x 295.2238806 x 16e9 / (4 x 1.6e10 - 2.383 x 295.2238806 x 128 x 147456) = 221.923 sequences
    r = run(calc, module, dict(ROOFLINE, batch_size=256))
    assert out(r, "spec_breakeven_batch") == pytest.approx(221.9234, rel=1e-6)
    # at 256 sequences: 4 x 256 x 1.6e10 / 9.89e14 = 0.016566 s against (16e9 + 256 x 128 x 147456) / 3.35e12 = 6.2185e-3 s
    assert out(r, "spec_verify_step_time") == pytest.approx(4 * 256 * 1.6e10 / 9.89e14, rel=1e-9)
    assert out(r, "decode_step_time") == pytest.approx((16e9 + 256 * 128 * 147456) / 3.35e12, rel=1e-9)
    assert any("past the break-even batch" in w for w in r.warnings)
    below = run(calc, module, dict(ROOFLINE, batch_size=221))
    assert not any("past the break-even batch" in w for w in below.warnings)


def test_never_pays_is_said(calc, module):
    # alpha 0.1, gamma 4, c 0.5: E = 1.1111, E / (2 + 1) = 0.37 < 1; r = E - 2 < 1 -> break-even 0
    r = run(calc, module, dict(ROOFLINE, spec_draft_len=4, spec_acceptance_rate=0.1, draft_cost_ratio=0.5, batch_size=1))
    assert out(r, "spec_speedup") == pytest.approx((1 - 0.1**5) / 0.9 / 3, rel=1e-9)
    assert out(r, "spec_breakeven_batch") == 0
    assert any("does not pay" in w for w in r.warnings) and any("never pays" in w for w in r.warnings)


def test_a_position_rate_with_the_constant_model_is_refused(calc, module):
    with pytest.raises(InputError) as exc:
        run(calc, module, dict(spec_draft_len=3, spec_acceptance_rate=0.7, draft_cost_ratio=0.05, spec_accept_pos2=0.5))
    assert exc.value.field == "--set spec_accept_pos2" and "spec_acceptance_model=per_position" in exc.value.message
