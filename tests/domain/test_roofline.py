"""engine/domain/roofline.py and ``aiinfra roofline``: bounds by hand arithmetic on datasheet peaks.

H100 SXM: 989.4e12 FLOP/s dense BF16 (Hopper whitepaper) and 3.35e12 B/s (datasheet), so
the ridge is 989.4 / 3.35 = 295.34 FLOP/B. Every other number is worked out beside its test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine.cli.main import main
from engine.domain import hardware, roofline
from engine.kb.knowledge import Knowledge

ROOT = Path(__file__).resolve().parents[2]
H100_PEAK, H100_BW = 989.4e12, 3.35e12

# a 4096 x 4096 x 4096 BF16 GEMM, each operand crossing HBM once: 2·n³ FLOP over 3·n²·2 B
N = 4096
GEMM_FLOPS = 2 * N**3          # 137,438,953,472 FLOP
GEMM_BYTES = 3 * N**2 * 2      # 100,663,296 B
# decode GEMV, one token through a 4096 x 4096 weight: 2·n² FLOP over 2·(n² + n + n) B
GEMV_FLOPS = 2 * N**2          # 33,554,432 FLOP
GEMV_BYTES = 2 * (N**2 + 2 * N)  # 33,570,816 B


@pytest.fixture(scope="module")
def module():
    return roofline.formula_module(str(ROOT))


@pytest.fixture(scope="module")
def hw(tmp_path_factory):
    """``--root`` of a copy of the shipped hardware records alone (formulas fall back to the
    shipped ones): the same handlers, without loading formulas and models on every call."""
    root = tmp_path_factory.mktemp("hw-root")
    shutil.copytree(ROOT / "knowledge" / "hardware", root / "knowledge" / "hardware")
    return ["--root", str(root)]


@pytest.fixture(scope="module")
def k(hw):
    return Knowledge.load(hw[1])


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ----------------------------------------------------------------------------- bounds


def test_h100_ridge_point(module):
    assert roofline.ridge(module, H100_PEAK, H100_BW) == pytest.approx(295.3432835820896, rel=1e-12)  # 989.4e12 / 3.35e12


def test_a_large_gemm_is_compute_bound(module):
    b = roofline.bound(module, GEMM_FLOPS, GEMM_BYTES, H100_PEAK, H100_BW)
    assert b.intensity == pytest.approx(N / 3, rel=1e-12)           # 2n³ / 6n² = n/3 = 1365.33 FLOP/B
    assert b.bottleneck == "compute"                                 # 1365.33 > 295.34
    assert b.attainable == pytest.approx(H100_PEAK, rel=1e-12)
    assert b.time == pytest.approx(GEMM_FLOPS / H100_PEAK, rel=1e-12)  # 1.3891e-4 s = 138.9 us
    assert b.time == pytest.approx(1.389114e-4, rel=1e-6)     # 137.438953472 / 989.4 = 0.1389114 ms


def test_a_decode_gemv_is_memory_bound(module):
    b = roofline.bound(module, GEMV_FLOPS, GEMV_BYTES, H100_PEAK, H100_BW)
    assert b.intensity == pytest.approx(33554432 / 33570816, rel=1e-12)  # 0.99951 FLOP/B
    assert b.bottleneck == "memory"
    assert b.time == pytest.approx(GEMV_BYTES / H100_BW, rel=1e-12)      # 33,570,816 / 3.35e12 = 10.02 us
    assert b.attainable == pytest.approx(b.intensity * H100_BW, rel=1e-12)


def test_the_bound_is_the_larger_of_the_two_times(module):
    for flops, moved in ((GEMM_FLOPS, GEMM_BYTES), (GEMV_FLOPS, GEMV_BYTES), (1e12, 1e9), (1e9, 1e12)):
        b = roofline.bound(module, flops, moved, H100_PEAK, H100_BW)
        assert b.time == pytest.approx(max(flops / H100_PEAK, moved / H100_BW), rel=1e-12)


def test_a100_book_example(module):
    # FX37 worked example: A100 80GB SXM, 312 TFLOPS dense BF16 over 2,039 GB/s = 153.02 FLOP/B
    assert roofline.ridge(module, 312e12, 2.039e12) == pytest.approx(312 / 2.039, rel=1e-12)


def test_sparse_peak_doubles_the_ridge(module):
    # the peer mistake: 1979 TFLOPS 'with sparsity' as the roof puts the ridge at 590.7, not 295.3
    assert roofline.ridge(module, 1979e12, H100_BW) == pytest.approx(1979 / 3.35, rel=1e-12)


def test_operators_that_only_move_data_or_only_compute(module):
    moved = roofline.bound(module, 0, 1e9, H100_PEAK, H100_BW)
    assert (moved.bottleneck, moved.intensity, moved.time) == ("memory", 0.0, 1e9 / H100_BW)
    computed = roofline.bound(module, 1e12, 0, H100_PEAK, H100_BW)
    assert (computed.bottleneck, computed.time) == ("compute", 1e12 / H100_PEAK)
    assert roofline.bound(module, 0, 0, H100_PEAK, H100_BW).bottleneck == "none"


def test_measured_bands_follow_the_bottleneck(module, k):
    devs = hardware.devices(k)
    h100 = devs["hw:h100-sxm"]
    b = roofline.bound(module, GEMM_FLOPS, GEMM_BYTES, H100_PEAK, H100_BW)
    bands = roofline.bands(h100, b, "bf16")
    # Llama 3 (arXiv 2407.21783, table 4): BF16 MFU 38%-43% on H100; FlashAttention-3 is FP16, a
    # different precision with the same 989.4 roof, so it applies too
    assert [(x.kind, x.low, x.high) for x in bands] == [("mfu", 0.38, 0.43), ("kernel_compute", 0.75, 0.75)]
    assert bands[0].time_low == pytest.approx(b.time / 0.43) and bands[0].time_high == pytest.approx(b.time / 0.38)
    gemv = roofline.bound(module, GEMV_FLOPS, GEMV_BYTES, H100_PEAK, H100_BW)
    assert roofline.bands(h100, gemv, "bf16") == []  # no published H100 bandwidth ratio is recorded
    v100 = devs["hw:v100-sxm2-32gb"]
    slow = roofline.bound(module, GEMV_FLOPS, GEMV_BYTES, 125e12, 900e9)
    # Jia et al. 2018: 750 of 900 GB/s on V100, recorded as 0.83
    assert [(x.kind, x.high) for x in roofline.bands(v100, slow, "fp16")] == [("memory_bandwidth", 0.83)]


def test_a_ratio_measured_on_another_roof_is_not_applied(module, k):
    h100 = hardware.devices(k)["hw:h100-sxm"]
    b = roofline.bound(module, 1e15, 1e9, 1978.9e12, H100_BW)
    assert roofline.bands(h100, b, "fp8") == []  # the BF16/FP16 ratios are fractions of 989.4, not of the FP8 roof


def test_root_without_formulas_uses_the_shipped_ones(tmp_path):
    assert "FX37" in roofline.formula_module(str(tmp_path)).FORMULAS


def test_operator_bounds_add_every_byte_field(module):
    row = SimpleNamespace(name="gemv", repeats=2, matrix_flops=GEMV_FLOPS, scalar_flops=5, weight_bytes=2 * N**2,
                          activation_read_bytes=2 * N, activation_write_bytes=2 * N, kv_read_bytes=0, kv_write_bytes=0)
    [op] = roofline.operator_bounds(module, [row], H100_PEAK, H100_BW)
    assert (op.name, op.repeats, op.scalar_flops) == ("gemv", 2, 5.0)
    assert op.bound.bytes == GEMV_BYTES and op.bound.flops == GEMV_FLOPS


# ----------------------------------------------------------------------------- command line


def test_cli_gemm_text(capsys, hw):
    code, out, err = run([*hw, "roofline", "--device", "h100-sxm", "--flops", str(GEMM_FLOPS), "--bytes", str(GEMM_BYTES)], capsys)
    assert (code, err) == (0, "")
    assert "arithmetic intensity = 1365 FLOP/B (FX36)" in out
    assert "ridge point = 295.3 FLOP/B (FX37)" in out
    assert "time bound = 1.389e-4 s (138.9 us), compute-bound" in out
    assert "peak: bf16 dense (fp32 accumulate, tensor_core) 989.4TFLOPS" in out


def test_cli_json_follows_the_calculation_contract(capsys, hw):
    code, out, _ = run([*hw, "roofline", "--device", "hw:h100-sxm", "--flops", "137.438953472GFLOP", "--bytes", "96MiB", "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 0
    assert data["inputs"]["op_bytes"]["value"] == 96 * 2**20 == GEMM_BYTES   # 96 MiB = 3 x 4096² x 2 B
    assert data["inputs"]["op_flops"]["value"] == pytest.approx(GEMM_FLOPS)
    assert data["inputs"]["peak_flops"]["value"] == H100_PEAK
    assert data["outputs"]["ridge_intensity"]["value"] == pytest.approx(989.4 / 3.35)
    assert data["outputs"]["time_bound"] == {"value": pytest.approx(GEMM_FLOPS / H100_PEAK), "unit": "s",
                                             "low": pytest.approx(GEMM_FLOPS / H100_PEAK), "high": pytest.approx(GEMM_FLOPS / H100_PEAK), "method": "exact"}
    assert data["bottleneck"] == "compute" and data["formulas"] == ["FX36", "FX37", "FX38"] and data["warnings"] == []
    assert data["peak"]["sparsity"] == "dense"


def test_cli_sparse_is_used_only_when_asked_and_then_warned(capsys, hw):
    code, out, _ = run([*hw, "roofline", "--device", "h100-sxm", "--sparse", "--flops", "1e15", "--bytes", "1e9", "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["inputs"]["peak_flops"]["value"] == 1979e12  # datasheet: 1,979 TFLOPS with sparsity
    assert data["warnings"] == ["bf16 peak is 2:4 structured-sparse: valid only for sparse operands with sparse kernels"]


@pytest.mark.parametrize("fmt", ["md", "csv"])
def test_cli_other_formats(capsys, hw, fmt):
    code, out, _ = run([*hw, "roofline", "--device", "a100-sxm-80gb", "--flops", "1e12", "--bytes", "1e9", "--format", fmt], capsys)
    assert code == 0
    if fmt == "csv":
        assert out.splitlines()[0] == "kind,name,value,unit,note"
        assert "output,bottleneck,compute,," in out  # 1000 FLOP/B > 312 / 2.039 = 153 FLOP/B
    else:
        assert out.startswith("## Roofline on hw:a100-sxm-80gb")


BAD = {
    "bf16 on a card without bf16": (["--device", "v100-sxm2-32gb", "--flops", "1e12", "--bytes", "1e9"], "--precision: hw:v100-sxm2-32gb has no bf16 peak;"),
    "sparse where none exists": (["--device", "tpu-v5e", "--sparse", "--flops", "1e12", "--bytes", "1e9"], "--sparse: hw:tpu-v5e has no structured-sparse bf16 peak;"),
    "two accumulators": (["--device", "rtx-5090", "--precision", "fp16", "--flops", "1e12", "--bytes", "1e9"], "--accumulator: hw:rtx-5090 states different fp16 peaks by accumulator"),
    "unknown device": (["--device", "h800", "--flops", "1e12", "--bytes", "1e9"], "--device: no device 'h800' (did you mean h200 or h800-sxm? known:"),
    "bytes in seconds": (["--device", "h100-sxm", "--flops", "1e12", "--bytes", "16s"], "--bytes: '16s' has unit s (s), expected a quantity in B (B)"),
    "a range": (["--device", "h100-sxm", "--flops", "1e12..2e12", "--bytes", "1e9"], "--flops: takes a single value"),
    "negative": (["--device", "h100-sxm", "--flops=-1e12", "--bytes", "1e9"], "--flops: expected a value >= 0 FLOP, got -1e+12"),
    "missing bytes": (["--device", "h100-sxm", "--flops", "1e12"], "--bytes: is needed (or --model with --tokens to bound a forward pass)"),
    "model and flops": (["--device", "h100-sxm", "--model", "qwen3-8b", "--tokens", "1", "--flops", "1e12"], "--model: bounds the model's own operators; drop --flops, --bytes and --link-bytes"),
    "model without tokens": (["--device", "h100-sxm", "--model", "qwen3-8b"], "--tokens: is needed with --model (new tokens per sequence)"),
}


@pytest.mark.parametrize("case", BAD)
def test_cli_bad_input_is_one_line_and_exit_2(capsys, hw, case):
    argv, start = BAD[case]
    code, out, err = run([*hw, "roofline", *argv], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"aiinfra: error: {start}"), err


# ----------------------------------------------------------------------------- forward ledger


def test_model_mode_bounds_every_operator_of_the_ledger(capsys, k):
    if not roofline.ledger_available():  # pragma: no cover - engine/domain/ledger.py is written alongside
        pytest.skip("engine/domain/ledger.py is not present")
    code, out, err = run(["roofline", "--device", "h100-sxm", "--model", "qwen3-8b", "--tokens", "1", "--history", "128", "--format", "json"], capsys)
    assert (code, err) == (0, "")
    data = json.loads(out)
    ops = {op["name"]: op for op in data["operators"]}
    for op in data["operators"]:  # every row is its own roofline: max(F / peak, B / bandwidth)
        assert op["time_bound_s"] == pytest.approx(max(op["matrix_flops"] / H100_PEAK, op["bytes"] / H100_BW), rel=1e-9), op["name"]
    assert data["totals"]["sum_of_operator_bounds_s"] == pytest.approx(sum(op["time_bound_s"] for op in data["operators"]))
    # Qwen3-8B config.json: hidden_size 4096, vocab_size 151936, untied output head. One token's logits:
    # 2 x 4096 x 151936 = 1,244,659,712 FLOP over at least 4096 x 151936 x 2 = 1,244,659,712 weight bytes -> memory-bound
    head = ops["lm_head"]
    assert head["matrix_flops"] == 2 * 4096 * 151936
    assert head["bytes"] >= 4096 * 151936 * 2 and head["bottleneck"] == "memory"
    assert data["totals"]["single_roofline_bottleneck"] == "memory"  # decode at batch 1


def test_model_mode_text(capsys):
    if not roofline.ledger_available():  # pragma: no cover
        pytest.skip("engine/domain/ledger.py is not present")
    code, out, _ = run(["roofline", "--device", "a100-sxm-80gb", "--model", "qwen3-8b", "--tokens", "16"], capsys)
    assert code == 0
    assert out.startswith("Roofline of qwen3-8b on hw:a100-sxm-80gb: bf16 dense (fp32 accumulate, tensor_core) 312TFLOPS, 2039GB/s, ridge 153 FLOP/B")
    assert "sum of operator bounds = " in out


def test_model_mode_without_the_ledger_is_a_clear_refusal(capsys, hw, monkeypatch):
    monkeypatch.setattr(roofline, "ledger_available", lambda: False)
    code, _, err = run([*hw, "roofline", "--device", "h100-sxm", "--model", "qwen3-8b", "--tokens", "1"], capsys)
    assert code == 2
    assert err == "aiinfra: error: --model: the per-operator forward ledger (engine/domain/ledger.py) is not available in this installation yet\n"


def test_hardware_only_root_still_has_the_roofline_formulas(tmp_path, capsys):
    (tmp_path / "knowledge" / "hardware").mkdir(parents=True)
    shutil.copy(ROOT / "knowledge" / "hardware" / "h100-sxm.yaml", tmp_path / "knowledge" / "hardware")
    code, out, _ = run(["--root", str(tmp_path), "roofline", "--device", "h100-sxm", "--flops", "1", "--bytes", "1"], capsys)
    assert code == 0 and "ridge point = 295.3 FLOP/B" in out
