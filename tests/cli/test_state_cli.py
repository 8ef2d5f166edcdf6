"""``aiinfra state``: text, json and md output, --device, and bad input (exit 2, one line naming the field)."""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_text(capsys):
    # Qwen/Qwen3-8B: 2 x 36 x 8 x 128 x 2 B = 147456 B per token, x 1000 tokens = 147456000 B
    code, out, _ = run(["state", "--model", "qwen3-8b", "--context", "1000"], capsys)
    assert code == 0
    assert "full_attention" in out and "147456000" in out and "total" in out


def test_json_with_device(capsys):
    # gemma-3-27b-it at 32768 tokens: 3120562176 B per request (FX70's worked example);
    # h100-sxm under FX72's vLLM rule, 0.9 x 79.18 GiB (driver_total) - 5 GiB = 71,148,280,741.89 B, less the record's
    # parameter total x 2 B; json carries the layer kinds and the fit
    code, out, _ = run(["state", "--model", "gemma-3-27b-it", "--context", "32768", "--device", "h100-sxm", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["bytes_per_request"] == 3120562176
    kinds = {k["kind"]: k["bytes_per_request"] for k in data["layer_kinds"]}
    assert kinds == {"full_attention": 2684354560, "sliding_attention": 436207616}
    assert data["device"]["memory_bytes"] == pytest.approx(0.9 * 79.18 * 2**30 - 5 * 2**30)
    assert data["device"]["requests"] == int((data["device"]["memory_bytes"] - data["device"]["weight_bytes"]) // 3120562176)
    assert data["device"]["memory_rule"].startswith("FX72, vLLM's rule: 0.9 x driver-reported 79.180 GiB - 5 GiB")


def test_fit_count_by_hand(capsys):
    # Qwen3-8B on h100-sxm at 1000 tokens: (0.9 x 79.18 GiB - 5 GiB = 71,148,280,741.89 - 8190735360 x 2) / 147456000
    # = 371.4 -> 371 (before issue 28: the nominal 80e9 B with no engine share, 431)
    code, out, _ = run(["state", "--model", "qwen3-8b", "--context", "1000", "--device", "h100-sxm"], capsys)
    assert code == 0
    assert "371 requests" in out


def test_md(capsys):
    # deepseek-v3: 61 x (512 + 64) x 2 B = 70272 B per token, x 8192 = 575668224 B of MLA latent
    code, out, _ = run(["state", "--model", "deepseek-v3", "--context", "8192", "--format", "md"], capsys)
    assert code == 0
    assert "| mla_latent | 61 | 8192 | 575668224 |" in out


@pytest.mark.parametrize("argv, field", [
    (["--model", "qwen3-8b", "--context", "abc"], "--context"),
    (["--model", "qwen3-8b", "--context", "0"], "--context"),
    (["--model", "nope", "--context", "5"], "--model"),
    (["--model", "qwen3-8b", "--context", "5", "--kv-bytes", "-1"], "--kv-bytes"),
    (["--model", "qwen3-8b", "--context", "5", "--device", "nope"], "--device"),
    (["--model", "qwen3-8b", "--context", "5", "--device", "h100-sxm", "--weight-bytes", "x"], "--weight-bytes"),
    (["--model", "deepseek-v3", "--context", "5", "--device", "h200", "--weight-bytes", "1"], "--device"),
])
def test_bad_input(argv, field, capsys):
    code, out, err = run(["state", *argv], capsys)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and field in err


def test_missing_context(capsys):
    code, _, err = run(["state", "--model", "qwen3-8b"], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "--context" in err


def test_hybrid_config(tmp_path, capsys):
    # the Qwen3-Next config copy of tests/domain/test_arch_refusals.py: 12 full-attention layers,
    # KV 24576 B per token x 32768 = 805306368 B; 36 Gated DeltaNet layers x 1097728 B = 39518208 B
    from tests.domain.test_arch_refusals import QWEN3_NEXT

    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN3_NEXT))
    code, out, _ = run(["state", "--config", str(path), "--context", "32768", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert {k["kind"]: k["bytes_per_request"] for k in data["layer_kinds"]} == {"full_attention": 805306368, "recurrent": 39518208}
    assert data["bytes_per_request"] == 844824576
    code, out, err = run(["state", "--config", str(path), "--context", "10", "--device", "h100-sxm"], capsys)
    assert code == 2 and "--device" in err and len(err.strip().splitlines()) == 1
    code, out, err = run(["state", "--config", str(tmp_path / "missing.json"), "--context", "10"], capsys)
    assert code == 2 and "--config" in err


def test_tensor_parallel_replica_by_hand(capsys):
    """--tp N: each GPU holds 1/N of the weights and its share of every request.
    Nemotron-H-8B at 8192 tokens (FX801's worked example: K/V 134,217,728 B in 4 attention layers of 8 KV heads,
    state 51,806,208 B in 24 Mamba-2 layers of 128 heads and 8 groups) on L4s at TP 2:
    per GPU K/V 134,217,728 / 2 (FX73: 8 KV heads over 2 ranks) + state 51,806,208 / 2 = 93,011,968 B;
    usable per GPU (FX72's vLLM rule) 0.9 x 22478.3125 MiB (deviceQuery, the record's driver_total: 23,570,219,008 B)
    - 5 GiB = 15,844,487,987.2 B; free 15,844,487,987.2 - 8,100,852,736 x 2 / 2 = 7,743,635,251.2 B;
    // 93,011,968 = 83 requests per replica."""
    code, out, _ = run(["state", "--model", "nemotron-h-8b", "--context", "8192", "--device", "l4", "--tp", "2", "--format", "json"], capsys)
    assert code == 0
    fit = json.loads(out)["device"]
    assert (fit["tp"], fit["request_bytes_per_gpu"], fit["weight_bytes"]) == (2, 93_011_968, 8_100_852_736)
    assert fit["requests"] == 83


def test_tensor_parallel_keeps_the_mla_latent_whole(capsys):
    """Kimi Linear at 131072 tokens, TP 2 on H100 SXM (80 GB): the latent (7 layers x 576 x 2 B = 8064 B per token,
    x 131072 = 1,056,964,608 B) is on both GPUs; the 20 KDA states (1,122,304 B each) split: 11,223,040 B per GPU;
    (0.9 x 79.18 GiB - 5 GiB = 71,148,280,741.89 B usable, FX72's vLLM rule - 49,122,681,728) // 1,068,187,648 = 20 requests."""
    code, out, _ = run(["state", "--model", "kimi-linear-48b-a3b", "--context", "131072", "--device", "h100-sxm", "--tp", "2",
                        "--format", "json"], capsys)
    assert code == 0
    fit = json.loads(out)["device"]
    assert fit["request_bytes_per_gpu"] == 1_056_964_608 + 11_223_040 and fit["requests"] == 20


def test_weights_past_one_device_point_to_tp(capsys):
    # Qwen3-Next-80B-A3B in BF16: 79,674,391,296 x 2 B = 159.3 GB, more than an H200's 141 GB
    code, _, err = run(["state", "--model", "qwen3-next-80b-a3b", "--context", "8192", "--device", "h200"], capsys)
    assert code == 2 and err.count("\n") == 1 and "give --tp N" in err


@pytest.mark.parametrize("argv, field", [
    (["--model", "nemotron-h-8b", "--context", "8192", "--device", "l4", "--tp", "3"], "--tp: 3 must divide the 32 attention heads"),
    (["--model", "qwen3-8b", "--context", "8192", "--tp", "2"], "--tp: needs --device"),
    (["--model", "qwen3-8b", "--context", "8192", "--device", "l4", "--tp", "0"], "--tp: expected a whole number >= 1"),
])
def test_bad_tp(capsys, argv, field):
    code, _, err = run(["state", *argv], capsys)
    assert code == 2 and err.startswith(f"aiinfra: error: {field}") and err.count("\n") == 1
