"""``aiinfra collective ring|tree --op allreduce --model ID --tokens N --tp T`` and ``--op sendrecv``.

Model shapes from the shipped records' config.json fields: Llama-3.1-70B hidden_size 8192,
num_hidden_layers 80 (knowledge/models/llama-3.1-70b.yaml); Llama-3.1-8B hidden_size 4096,
num_hidden_layers 32 (knowledge/models/llama-3.1-8b.yaml). Megatron-LM (Shoeybi et al. 2019,
section 3): 2 all-reduces per layer in the forward pass. The step latency default, 20 µs, is
FX50's (book comm calculator @a98dbf79). Every other number is hand arithmetic beside it.
"""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main

A2A = ["collective", "all-to-all", "--op", "alltoall", "--model", "deepseek-v3", "--tokens", "4096", "--ranks", "64"]
TP70 = ["collective", "ring", "--op", "allreduce", "--model", "llama-3.1-70b", "--tokens", "8192", "--tp", "8"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def as_json(argv, capsys):
    code, out, err = run([*argv, "--format", "json"], capsys)
    assert code == 0, err
    return json.loads(out)


def test_llama_70b_tp8_json(capsys):
    data = as_json([*TP70, "--bandwidth", "300GB/s"], capsys)
    assert data["inputs"]["ranks"]["value"] == 8
    # message: 8192 tokens × 8192 hidden × 2 B = 134217728 B
    assert data["inputs"]["msg_bytes"]["value"] == 134217728
    out = {k: v["value"] for k, v in data["outputs"].items()}
    # α: 14 × 20e-6 = 0.00028 s; β: 2 × 7/8 × 134217728 / 300e9 = 234881024 / 300e9 = 0.00078293674667 s (7.8293674666…e-4)
    assert out["collective_latency_time"] == pytest.approx(0.00028, rel=1e-12)
    assert out["collective_bandwidth_time"] == pytest.approx(0.00078293674667, rel=1e-11)
    assert out["collective_time"] == pytest.approx(0.00106293674667, rel=1e-11)
    tp = data["model_budget"]
    assert (tp["model"], tp["hidden"], tp["layers"], tp["tokens"], tp["tp"]) == ("model:llama-3.1-70b", 8192, 80, 8192, 8)
    assert tp["allreduces_per_forward"]["value"] == 160  # 2 × 80 layers
    assert tp["time_per_forward"]["value"] == pytest.approx(0.1700698794667, rel=1e-11)  # 160 × 0.00106293674667
    assert "meta-llama/Llama-3.1-70B" in tp["source"]


def test_tree_decode_step_of_llama_8b_fp8(capsys):
    argv = ["collective", "tree", "--op", "allreduce", "--model", "llama-3.1-8b", "--tokens", "16", "--tp", "4",
            "--act-bytes", "1", "--bandwidth", "100GB/s", "--latency", "10us"]
    data = as_json(argv, capsys)
    # message: 16 × 4096 × 1 B = 65536 B; tree 2 × ⌈log2 4⌉ = 4 steps
    assert data["inputs"]["msg_bytes"]["value"] == 65536
    out = {k: v["value"] for k, v in data["outputs"].items()}
    # α: 4 × 10e-6 = 4e-5 s; β: 4 × 65536 / 100e9 = 2.62144e-6 s; one call 4.262144e-5 s
    assert out["collective_latency_time"] == pytest.approx(4e-5, rel=1e-12)
    assert out["collective_bandwidth_time"] == pytest.approx(2.62144e-6, rel=1e-12)
    tp = data["model_budget"]
    # 2 × 32 layers = 64 calls; 64 × 4.262144e-5 = 0.00272777216 s, latency-bound
    assert tp["allreduces_per_forward"]["value"] == 64
    assert tp["time_per_forward"]["value"] == pytest.approx(0.00272777216, rel=1e-9)


def test_text_shows_the_model_budget_and_terms(capsys):
    code, out, err = run([*TP70, "--bandwidth", "300GB/s"], capsys)
    assert code == 0, err
    assert "TP budget of model:llama-3.1-70b at TP = 8, 8192 tokens" in out
    assert "all-reduces per forward (2L)  160" in out
    assert "collective_latency_time" in out and "collective_bandwidth_time" in out


def test_deepseek_v3_dispatch_fp8_ep64(capsys):
    # DeepSeek-V3 config.json (deepseek-ai/DeepSeek-V3@e815299b): hidden_size 7168, num_experts_per_tok 8,
    # num_hidden_layers 61, first_k_dense_replace 3 -> 58 MoE layers
    data = as_json([*A2A, "--act-bytes", "1", "--bandwidth", "50GB/s"], capsys)
    # send buffer: 4096 tokens × 8 × 7168 × 1 B = 234881024 B
    assert data["inputs"]["msg_bytes"]["value"] == 234881024
    b = data["model_budget"]
    assert (b["hidden"], b["top_k"], b["layers"], b["moe_layers"], b["ep"]) == (7168, 8, 61, 58, 64)
    # per phase: 234881024 × 63/64 = 231211008 B leave the rank (balanced routing)
    assert b["phase_bytes"]["value"] == pytest.approx(231211008, rel=1e-12)
    assert data["outputs"]["collective_wire_bytes"]["value"] == pytest.approx(231211008, rel=1e-12)
    # one all-to-all: 63 × 20e-6 + 231211008 / 50e9 = 0.00126 + 0.00462422016 = 0.00588422016 s
    out = {k: v["value"] for k, v in data["outputs"].items()}
    assert out["collective_latency_time"] == pytest.approx(0.00126, rel=1e-12)
    assert out["collective_bandwidth_time"] == pytest.approx(0.00462422016, rel=1e-12)
    assert out["collective_time"] == pytest.approx(0.00588422016, rel=1e-12)
    # dispatch + combine per MoE layer: 2 × 58 = 116 calls; 116 × 0.00588422016 = 0.68256953856 s
    assert b["alltoalls_per_forward"]["value"] == 116
    assert b["time_per_forward"]["value"] == pytest.approx(0.68256953856, rel=1e-12)
    assert b["formulas"] == ["FX707", "FX708", "FX709"]


def test_sendrecv_cli(capsys):
    data = as_json(["collective", "ring", "--op", "sendrecv", "--ranks", "8", "--bytes", "1GB", "--bandwidth", "100GB/s"], capsys)
    out = {k: v["value"] for k, v in data["outputs"].items()}
    # one step: 20e-6 + 1e9 / 100e9 = 0.01002 s; nccl-tests SendRecv busbw = algbw = 1e9 / 0.01002
    assert out["critical_path_steps"] == 1
    assert out["collective_time"] == pytest.approx(0.01002, rel=1e-12)
    assert out["bus_bandwidth"] == pytest.approx(1e9 / 0.01002, rel=1e-12)
    assert data["model_budget"] is None


@pytest.mark.parametrize(("argv", "field", "fragment"), [
    ([*TP70[:6], "--tp", "8"], "--tokens", "is needed with --model"),
    ([*TP70[:6], "--tokens", "8"], "--tp", "is needed with --model"),
    ([*TP70, "--bytes", "1GB"], "--bytes", "does not apply with --model here"),
    ([*TP70, "--ranks", "8"], "--ranks", "does not apply with --model here (--tp)"),
    ([*TP70[:3], "allgather", *TP70[4:]], "--model", "sizes the Megatron TP all-reduce"),
    (["collective", "ring", "--op", "allreduce", "--model", "no-such-model", "--tokens", "8", "--tp", "8"], "--model", "no model 'no-such-model'"),
    ([*TP70[:9], "1"], "--tp", "expected a whole number from 2 to 512, got 1"),
    ([*TP70[:9], "513"], "--tp", "expected a whole number from 2 to 512, got 513"),
    ([*TP70[:7], "0", "--tp", "8"], "--tokens", "expected a whole number >= 1, got 0"),
    ([*TP70, "--act-bytes", "0"], "--act-bytes", "expected a number of bytes > 0"),
    ([*TP70, "--act-bytes", "two"], "--act-bytes", ""),
    (["collective", "ring", "--op", "allreduce", "--ranks", "4", "--bytes", "1GB", "--tokens", "8"], "--tokens", "applies with --model only"),
    (["collective", "ring", "--op", "allreduce", "--ranks", "4"], "--bytes", "is needed"),
    (["collective", "ring", "--op", "allreduce", "--bytes", "1GB"], "--ranks", "is needed"),
    (A2A[:-2], "--ranks", "is needed with --model (the EP group size"),
    ([*A2A, "--tp", "8"], "--tp", "does not apply with --model here"),
    ([*A2A[:5], "llama-3.1-8b", *A2A[6:]], "--model", "has no routed experts"),
    (["collective", "tree", "--op", "sendrecv", "--ranks", "4", "--bytes", "1GB"], "--op", "ring --op sendrecv"),
])
def test_bad_input_is_one_line_exit_2(argv, field, fragment, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2, (out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"aiinfra: error: {field}: ") and fragment in lines[0]


def test_token_assignment_view_of_a_dispatch(capsys):
    """Mixtral-8x7B (mistralai config: hidden 4096, 8 experts, top-2), 1024 tokens per rank over EP = 8, BF16:
    each rank sends 1024 x 2 = 2048 assignments of 4096 x 2 B = 8192 B; balanced, 2048 / 8 = 256 per destination
    (its own 256 stay local) and one expert per rank."""
    import json

    from engine.cli.main import main

    assert main(["collective", "all-to-all", "--op", "alltoall", "--model", "mixtral-8x7b", "--tokens", "1024", "--ranks", "8",
                 "--bandwidth", "50GB/s", "--format", "json"]) == 0
    t = json.loads(capsys.readouterr().out)["model_budget"]["token_assignments"]
    assert (t["bytes_per_assignment"], t["sent_per_rank"], t["experts_per_rank"]) == (8192, 2048, 1)
    assert t["matrix"][0] == [256] * 8 and t["received_per_rank"] == [2048] * 8 and t["max_over_mean_received"] == 1
    # a hotspot moves assignments between ranks but keeps their total: 8 ranks x 2048
    assert main(["collective", "all-to-all", "--op", "alltoall", "--model", "mixtral-8x7b", "--tokens", "1024", "--ranks", "8",
                 "--bandwidth", "50GB/s", "--routing", "hotspot", "--format", "json"]) == 0
    t = json.loads(capsys.readouterr().out)["model_budget"]["token_assignments"]
    assert sum(t["received_per_rank"]) == pytest.approx(8 * 2048) and t["max_over_mean_received"] > 1
