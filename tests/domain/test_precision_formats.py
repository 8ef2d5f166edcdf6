"""Block-scaled storage (FX650), compute precision (FX651) and mixed-format weights (FX652).

Every expected number is hand arithmetic from the format definitions:
OCP Microscaling Formats (MX) Specification v1.0 (2023-09): MXFP8/MXFP6/MXFP4 store k = 32
elements with one shared 8-bit E8M0 scale. NVIDIA, Introducing NVFP4 for Efficient and
Accurate Low-Precision Inference (technical blog, 2025-06): E2M1 elements, one FP8 E4M3 scale
per 16 values, plus one FP32 scale per tensor (negligible). GPTQ/AWQ: INT4 groups of 128 with
an FP16 scale (and a packed 4-bit zero point when asymmetric). Bits / 8 = bytes.
"""

from __future__ import annotations

import pytest

from engine.kb.knowledge import Knowledge
from engine.numeric import compiled
from engine.numeric.evaluate import evaluate

SHIPPED = Knowledge.load(None, strict=False)


@pytest.fixture(scope="module")
def module():
    return compiled.from_formulas(SHIPPED.formulas)


def value(module, fid, **given):
    f = SHIPPED.formulas.get(fid)
    return evaluate(module.FORMULAS[fid], module, given).outputs[f.output.symbol].value


# (format, extra inputs, bytes per value, the arithmetic)
STORAGE = [
    ("nvfp4", {}, 0.5625, "4 + 8/16 = 4.5 bit; 4.5/8"),
    ("mxfp4", {}, 0.53125, "(32*4 + 8)/32 = 4.25 bit; 4.25/8"),
    ("mxfp6", {}, 0.78125, "6 + 8/32 = 6.25 bit; 6.25/8"),
    ("mxfp8", {}, 1.03125, "8 + 8/32 = 8.25 bit; 8.25/8"),
    ("int4_group", {}, 0.515625, "4 + 16/128 = 4.125 bit (symmetric, FP16 scale, g128)"),
    ("int4_group", {"group_zero_bits": 4}, 0.51953125, "4 + (16 + 4)/128 = 4.15625 bit (asymmetric, packed INT4 zero)"),
    ("int4_group", {"quant_group_size": 64, "group_zero_bits": 16}, 0.5625, "4 + (16 + 16)/64 = 4.5 bit (FP16 scale and zero, g64)"),
    ("int8_group", {}, 1.015625, "8 + 16/128 = 8.125 bit"),
    ("int8_group", {"quant_group_size": 32, "group_scale_bits": 32}, 1.125, "8 + 32/32 = 9 bit (FP32 scale per 32)"),
]


@pytest.mark.parametrize("fmt, extra, expected, arithmetic", STORAGE, ids=[f"{s[0]}-{i}" for i, s in enumerate(STORAGE)])
def test_bytes_per_value_include_the_scales(module, fmt, extra, expected, arithmetic):
    assert value(module, "FX650", storage_format=fmt, **extra) == pytest.approx(expected, rel=1e-12), arithmetic


def test_block_scales_cost_more_than_the_bare_element_width(module):
    # book table B.4 gives FP4 0.5 B (element bits only); NVFP4 adds 1/16 B, MXFP4 1/32 B per value
    assert value(module, "FX650", storage_format="nvfp4") - 0.5 == pytest.approx(1 / 16, rel=1e-12)
    assert value(module, "FX650", storage_format="mxfp4") - 0.5 == pytest.approx(1 / 32, rel=1e-12)


def test_fx19_block_scaled_variant_agrees_with_the_named_formats(module):
    fx19 = {"nvfp4": (4, 8, 16), "mxfp4": (4, 8, 32), "mxfp6": (6, 8, 32), "mxfp8": (8, 8, 32)}
    for fmt, (bits, scale, group) in fx19.items():
        got = value(module, "FX19", weight_quant="block_scaled", weight_bits=bits, weight_scale_bits=scale, weight_group_size=group)
        assert got == pytest.approx(value(module, "FX650", storage_format=fmt), rel=1e-12), fmt


@pytest.mark.parametrize("w, a, expected", [(4, 16, 16), (8, 8, 8), (4, 8, 8), (4, 4, 4), (16, 16, 16)])
def test_compute_precision_is_the_wider_operand(module, w, a, expected):
    # W4A16 multiplies at 16 bits (weights dequantised first), W4A8 at 8, W4A4 at 4: max(w, a)
    assert value(module, "FX651", weight_bits=w, activation_bits=a) == expected


def test_gpt_oss_120b_checkpoint_from_its_mxfp4_experts(module):
    # gpt-oss model card (OpenAI 2025-08, arXiv:2508.10925) Table 1: 114.71B MLP of 116.83B total, checkpoint 60.8 GiB.
    # hand arithmetic: 114.71e9 * 0.53125 = 6.09396875e10; 2.12e9 * 2 = 4.24e9; total 6.51796875e10 B
    got = value(module, "FX652", format_bytes=0.53125, quantised_params=114.71e9, params=116.83e9)
    assert got == pytest.approx(6.51796875e10, rel=1e-12)
    assert got / 2**30 == pytest.approx(60.8, rel=0.005)  # 6.51796875e10 / 1073741824 = 60.70 GiB vs 60.8 stated


def test_weight_kv_and_compute_precision_are_three_symbols():
    # W4A16KV8: the three choices must be separate inputs, not one --precision
    outputs = {SHIPPED.formulas.get(fid).output.symbol for fid in ("FX19", "FX158", "FX650", "FX651")}
    assert outputs == {"bytes_param", "kv_bytes", "format_bytes", "compute_bits"}
