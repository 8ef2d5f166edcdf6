"""engine.domain.collective: the α and β terms, SendRecv, and the TP all-reduce of a model.

Sources: NVIDIA nccl-tests src/sendrecv.cu (@f476f4a1): every rank sends its buffer to
(rank + 1) mod n and receives from (rank − 1) mod n in one ncclGroupStart/End, and
SendRecvGetBw uses factor 1 (busbw = algbw). Shoeybi et al. 2019 (Megatron-LM) section 3:
two all-reduces per transformer layer in the forward pass. Llama-3.1-70B hidden_size 8192,
num_hidden_layers 80 and Llama-3.1-8B hidden_size 4096, num_hidden_layers 32 (their
config.json, in knowledge/models/llama-3.1-70b.yaml and llama-3.1-8b.yaml). Every other number
is hand arithmetic written beside it.
"""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.domain import collective as C
from engine.domain import collective_model as CM
from engine.numeric import compiled

GiB = 2**30


@pytest.fixture(scope="module")
def module():
    return compiled.load(shipped_root())


def setup(algorithm="ring", op="allreduce", ranks=8, msg_bytes=1e9, bandwidth=100e9, latency=20e-6, routing=None):
    return C.Setup(algorithm, op, ranks, msg_bytes, bandwidth, latency, "given", routing, None)


def value(result, name):
    return result.outputs[name]["value"]


# ----------------------------------------------------------------------------- α and β terms


def test_ring_allreduce_terms_add_up_to_fx50(module):
    r = C.run(setup(), module)
    # α: 2 × (8 − 1) = 14 steps × 20e-6 s = 0.00028 s; β: 2 × 7/8 × 1e9 B / 100e9 B/s = 0.0175 s; sum 0.01778 s
    assert value(r, "collective_latency_time") == pytest.approx(0.00028, rel=1e-12)
    assert value(r, "collective_bandwidth_time") == pytest.approx(0.0175, rel=1e-12)
    assert value(r, "collective_time") == pytest.approx(0.01778, rel=1e-12)
    assert r.outputs["collective_latency_time"]["from"] == "FX700"
    assert r.outputs["collective_bandwidth_time"]["from"] == "FX701"


def test_tree_allreduce_terms(module):
    r = C.run(setup("tree", ranks=8, msg_bytes=float(GiB), bandwidth=50e9), module)
    # 2 × ⌈log2 8⌉ = 6 steps; α: 6 × 20e-6 = 0.00012 s; β: 6 × 1073741824 / 50e9 = 0.12884901888 s;
    # sum 0.12896901888 s (FX62's first example)
    assert value(r, "collective_latency_time") == pytest.approx(0.00012, rel=1e-12)
    assert value(r, "collective_bandwidth_time") == pytest.approx(0.12884901888, rel=1e-12)
    assert value(r, "collective_time") == pytest.approx(0.12896901888, rel=1e-12)


def test_all_to_all_hotspot_beta_term_uses_the_busiest_rank(module):
    r = C.run(setup("all-to-all", op="alltoall", ranks=4, msg_bytes=7e9, routing="hotspot"), module)
    # hotspot factor 4 over 4 ranks: unit = 7e9 / (4 + 3) = 1e9 B; rank 0 receives 4e9 from each of the 3 others = 1.2e10 B;
    # β: 1.2e10 / 100e9 = 0.12 s; α: (4 − 1) steps × 20e-6 = 6e-5 s
    assert value(r, "max_rank_recv_bytes") == pytest.approx(1.2e10, rel=1e-12)
    assert value(r, "collective_bandwidth_time") == pytest.approx(0.12, rel=1e-12)
    assert value(r, "collective_latency_time") == pytest.approx(6e-5, rel=1e-12)


def test_no_bandwidth_no_terms(module):
    r = C.run(setup(bandwidth=None), module)
    assert "collective_latency_time" not in r.outputs and "collective_bandwidth_time" not in r.outputs


# ----------------------------------------------------------------------------- SendRecv


def test_sendrecv_is_one_round_to_the_right_neighbour(module):
    r = C.run(setup(op="sendrecv", ranks=4, msg_bytes=1e9), module)
    assert len(r.rounds) == 1
    assert [(t.src, t.dst, t.nbytes) for t in r.rounds[0].transfers] == [(0, 1, 1e9), (1, 2, 1e9), (2, 3, 1e9), (3, 0, 1e9)]
    # FX1 factor 1: 1e9 B per rank; network 4 × 1e9 = 4e9 B; one step: 20e-6 + 1e9 / 100e9 = 0.01002 s
    assert value(r, "collective_wire_bytes") == 1e9
    assert value(r, "network_bytes") == 4e9
    assert value(r, "critical_path_steps") == 1
    assert value(r, "collective_time") == pytest.approx(0.01002, rel=1e-12)
    assert value(r, "schedule_time") == pytest.approx(0.01002, rel=1e-12)
    # nccl-tests SendRecvGetBw: busbw = algbw = 1e9 / 0.01002 = 9.98003992e10 B/s
    assert value(r, "alg_bandwidth") == pytest.approx(1e9 / 0.01002, rel=1e-12)
    assert value(r, "bus_bandwidth") == pytest.approx(value(r, "alg_bandwidth"), rel=1e-12)
    assert r.to_json()["schedule"]["chunk_bytes"] is None
    assert r.warnings == []


def test_sendrecv_time_does_not_grow_with_ranks(module):
    # one grouped step whatever P: 20e-6 + 1e9 / 100e9 = 0.01002 s at 2 and at 64 ranks
    for ranks in (2, 64):
        assert value(C.run(setup(op="sendrecv", ranks=ranks), module), "collective_time") == pytest.approx(0.01002, rel=1e-12)


def test_sendrecv_refused_outside_the_ring(module):
    with pytest.raises(InputError) as exc:
        C.run(setup("tree", op="sendrecv"), module)
    assert exc.value.field == "--op" and "ring --op sendrecv" in exc.value.message


# ----------------------------------------------------------------------------- TP budget


LLAMA_70B = {"id": "model:llama-3.1-70b", "hidden": 8192, "layers": 80, "source": "config.json"}


def test_tp_message_bytes(module):
    # FX702: 8192 tokens × hidden 8192 × 2 B = 134217728 B (book ch16 §16.4.8: 134 MB per all-reduce)
    assert CM.tp_message_bytes(module, 8192, 8192, 2) == 134217728
    # FP8: 4096 tokens × 4096 (Llama-3.1-8B) × 1 B = 16777216 B
    assert CM.tp_message_bytes(module, 4096, 4096, 1) == 16777216


def test_model_budget_of_llama_70b_at_tp8(module):
    msg = CM.tp_message_bytes(module, 8192, 8192, 2)
    r = CM.with_tp_budget(C.run(setup(ranks=8, msg_bytes=msg, bandwidth=300e9), module), module, LLAMA_70B, 8192, 2.0)
    tp = r.model_budget
    # one all-reduce: 2 × 7 × 20e-6 + 2 × 7/8 × 134217728 / 300e9 = 0.00028 + 0.00078293674667 = 0.00106293674667 s (234881024 / 3e11 = 7.8293674666…e-4)
    assert tp["time_per_allreduce"]["value"] == pytest.approx(0.00106293674667, rel=1e-11)
    # Megatron: 2 per layer forward × 80 layers = 160; 160 × 0.00106293674667 = 0.1700698794667 s
    assert tp["allreduces_per_forward"]["value"] == 160
    assert tp["time_per_forward"]["value"] == pytest.approx(0.1700698794667, rel=1e-11)
    assert tp["msg_bytes"]["value"] == 134217728
    assert tp["formulas"] == ["FX702", "FX703", "FX704"] and tp["kind"] == "tensor-parallel all-reduce"
    assert r.to_json()["model_budget"] is tp
    assert r.inputs["msg_bytes"]["source"].startswith("FX702: 8192 tokens x hidden 8192 x 2 B")


def test_model_budget_without_bandwidth_has_count_but_no_time(module):
    r = CM.with_tp_budget(C.run(setup(ranks=8, msg_bytes=134217728.0, bandwidth=None), module), module, LLAMA_70B, 8192, 2.0)
    assert r.model_budget["allreduces_per_forward"]["value"] == 160  # 2 × 80
    assert r.model_budget["time_per_allreduce"] is None and r.model_budget["time_per_forward"] is None


def test_plain_runs_carry_no_model_budget(module):
    assert C.run(setup(), module).to_json()["model_budget"] is None


MIXTRAL = {"id": "model:mixtral-8x7b", "hidden": 4096, "layers": 32, "top_k": 2, "moe_layers": 32, "source": "config.json"}


def test_ep_budget_of_mixtral_balanced(module):
    # Mixtral-8x7B config.json (mistralai/Mixtral-8x7B-v0.1): hidden_size 4096, num_experts_per_tok 2, 32 layers all MoE
    # send buffer: 1024 tokens × 2 × 4096 × 2 B = 16777216 B
    msg = CM.ep_send_bytes(1024, 2, 4096, 2)
    assert msg == 16777216
    r = CM.with_ep_budget(C.run(setup("all-to-all", op="alltoall", ranks=8, msg_bytes=msg, bandwidth=100e9), module), module, MIXTRAL, 1024, 2.0)
    b = r.model_budget
    # per phase: 16777216 × 7/8 = 14680064 B leave the rank, FX707 = FX1 all2all
    assert b["phase_bytes"]["value"] == pytest.approx(14680064, rel=1e-12)
    assert value(r, "collective_wire_bytes") == pytest.approx(14680064, rel=1e-12)
    # one call: 7 × 20e-6 + 14680064 / 100e9 = 0.00014 + 0.00014680064 = 0.00028680064 s; 2 × 32 = 64 calls
    assert b["alltoalls_per_forward"]["value"] == 64
    assert b["time_per_forward"]["value"] == pytest.approx(64 * 0.00028680064, rel=1e-12)  # = 0.01835524096 s
    assert r.inputs["ranks"]["source"] == "--ranks (the EP group) of model:mixtral-8x7b"
