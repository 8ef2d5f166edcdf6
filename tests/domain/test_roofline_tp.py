"""``aiinfra roofline --model ... --tp N``: the per-GPU bound of a tensor-parallel model, by hand arithmetic.

Llama-3.1-70B (knowledge/models/llama-3.1-70b.yaml, the meta-llama/Llama-3.1-70B config.json):
hidden 8192, 80 layers, 64 heads, 8 KV heads, head_dim 128, vocab 128256, untied embeddings,
70,553,706,496 parameters (the Hub count). H100 SXM HBM3: 3.35e12 B/s (NVIDIA datasheet).

One decode step (1 new token, batch 1) reads every weight except the embedding table (only the
token's row is gathered):
  embedding table  128256 * 8192          =  1,050,673,152 parameters (replicated row gather)
  norm weights     80 * 2 * 8192 + 8192   =      1,318,912 parameters (replicated on every rank)
  split weights    70,553,706,496 - 1,050,673,152 - 1,318,912 = 69,501,714,432 parameters
  per GPU at TP 8  69,501,714,432 * 2 B / 8 = 17,375,428,608 B
KV read after 1024 tokens: 80 layers * 2 (K, V) * 8 heads * 128 * 2 B * 1024 = 335,544,320 B,
and FX73 gives one rank 1 / min(8, 8 KV heads) of it: 41,943,040 B.
So the memory bound is (17,375,428,608 + 41,943,040) / 3.35e12 = 5.1992 ms; the rest of the
ledger (activations, replicated norms) adds about 0.13 %. The usual back-of-envelope figure,
141e9 B of BF16 weights / 8 / 3.35e12 B/s = 5.26 ms, counts the embedding table as read too:
(141.1e9 - 2 * 1,050,673,152) / 8 / 3.35e12 = 5.186 ms.
"""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main
from engine.domain import roofline
from engine.domain.ledger import Row

BW = 3.35e12
SPLIT_WEIGHT_BYTES = 69_501_714_432 * 2 / 8   # 17,375,428,608 B per GPU
KV_PER_GPU = 80 * 2 * 8 * 128 * 2 * 1024 / 8  # 41,943,040 B per GPU
HAND = (SPLIT_WEIGHT_BYTES + KV_PER_GPU) / BW  # 5.1992e-3 s
ARGS = ["roofline", "--device", "h100-sxm", "--model", "llama-3.1-70b", "--tokens", "1", "--history", "1024", "--format", "json"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def tp8():
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main([*ARGS, "--tp", "8"]) == 0
    return json.loads(buf.getvalue())


def test_llama_70b_decode_at_tp8_is_the_weight_read_over_eight(tp8):
    totals = tp8["totals"]
    assert totals["single_roofline_bottleneck"] == "memory"
    assert totals["single_roofline_s"] == pytest.approx(HAND, rel=3e-3)      # 5.199 ms, activations add 0.13 %
    assert totals["single_roofline_s"] == pytest.approx(5.26e-3, rel=1.5e-2)  # 141e9 / 8 / 3.35e12, table read too
    assert totals["bytes"] == pytest.approx(SPLIT_WEIGHT_BYTES + KV_PER_GPU, rel=3e-3)


def test_the_tp_block_says_what_is_split_and_what_is_left_out(tp8):
    tp = tp8["tensor_parallel"]
    assert tp8["scenario"]["tp"] == 8 and tp["tp"] == 8
    assert "norm" in tp["replicated"] and "embedding" in tp["replicated"]
    ar = tp["allreduce"]
    assert ar["included"] is False
    assert ar["allreduces"] == 160               # 2 per layer * 80 layers
    assert ar["message_bytes"] == 8192 * 2       # 1 row * hidden 8192 * 2 B
    assert "FX73" in tp8["formulas"]


def test_tp1_output_has_no_tp_block(capsys):
    # the whole 70B model does not fit one H100 (131.42 GiB of BF16 weights > 66.26 GiB usable): refused, exit 2
    code, _, err = run([*ARGS, "--tp", "1"], capsys)
    assert code == 2 and "do not fit" in err
    # on one B200 (178.35 GiB driver total: 0.9 x 178.35 - 5 = 155.5 GiB usable) it fits
    argv = [a if a != "h100-sxm" else "b200" for a in ARGS]
    code, out, _ = run([*argv, "--tp", "1"], capsys)
    data = json.loads(out)
    assert code == 0 and "tensor_parallel" not in data and "tp" not in data["scenario"]
    # whole model on one GPU: (69,501,714,432 * 2 + 335,544,320) / 8e12 (B200 HBM, DGX B200 datasheet) = 17.42 ms plus
    # 0.05 % activations
    assert data["totals"]["single_roofline_s"] == pytest.approx((69_501_714_432 * 2 + 335_544_320) / 8e12, rel=3e-3)


def row(kind, **costs):
    fields = dict.fromkeys(Row._fields, 0)
    fields.update(name=kind, kind=kind, shape="", repeats=1, special_functions={}, formulas=[], note="")
    fields.update(costs)
    return Row(**fields)


def test_shard_divides_split_kinds_and_keeps_replicated_ones():
    mm = row("matmul", matrix_flops=800.0, weight_bytes=160.0, activation_read_bytes=8.0, kv_read_bytes=64.0)
    norm = row("norm", scalar_flops=40.0, weight_bytes=16.0)
    out = roofline.shard([mm, norm], 8, 0.25)
    assert (out[0].matrix_flops, out[0].weight_bytes, out[0].activation_read_bytes) == (100.0, 20.0, 1.0)  # / 8
    assert out[0].kv_read_bytes == 16.0  # 64 * 0.25
    assert out[1] == norm


@pytest.mark.parametrize("attention, extra, tp, share", [
    ("gqa", {"num_key_value_heads": 8}, 8, 1 / 8),    # 1 / min(8, 8)
    ("gqa", {"num_key_value_heads": 8}, 16, 1 / 8),   # 1 / min(16, 8): KV heads replicated beyond 8 ranks
    ("mha", {}, 4, 1 / 4),                            # 1 / min(4, 32 heads)
    ("mqa", {}, 8, 1.0),                              # the one KV head on every rank
])
def test_kv_share_follows_fx73(module, attention, extra, tp, share):
    record = {"config": {"num_attention_heads": 32, **extra}, "derived": {"attention": attention}}
    assert roofline.kv_share(module, record, tp) == pytest.approx(share)


@pytest.mark.parametrize("argv, message", [
    (["--tp", "0"], "--tp: expected a whole number >= 1, got 0"),
])
def test_bad_tp_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run([*ARGS, *argv], capsys)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_tp_without_a_model_is_refused(capsys):
    code, _, err = run(["roofline", "--device", "h100-sxm", "--flops", "1e12", "--bytes", "1GB", "--tp", "8"], capsys)
    assert code == 2 and "--tp:" in err and "--model" in err and len(err.strip().splitlines()) == 1
