"""The serving simulation (engine/measure/simulate.py) by hand arithmetic, Little's law and the closed forms.

The step model is built from the same hand terms as tests/measure/test_serve_times.py: an 8B dense model on one
GPU, 16e9 B of weights, 16e9 FLOPs per token, peak 1e15 FLOP/s at 50 %, HBM 2e12 B/s at 80 %, 2 ms of overhead per
step; K/V reads are left out (kv1 = 0) so that a step's time does not depend on the context and sums stay exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.core.errors import InputError
from engine.measure import serve
from engine.measure import simulate as S

P = dict(e_prefill=0.5, e_decode=0.5, e_hbm=0.8, e_kv=0.8, e_link=0.7, ar_latency=5e-6, overhead=2e-3)
T = dict(fixed=1, rate=0, fits=100, burst=0, stat=-1, g=1, ep=1, replicas=1, output=100, prompt=1000, ctx=1050, w_dense=16e9, w_expert=0,
         experts=0, top_k=0, cd1=16e9, ca1=0, kv1=0, ar_n=0, ar_steps=0, ar1=0, ep1=0, cp=1.6e13, peak=1e15, hbm=2e12, link=450e9,
         ep_link=450e9)
STEP = S.StepModel(T, P)
DECODE = 16e9 / (2e12 * 0.8) + 2e-3  # one decode step: the weights' read, 0.01 s, + 2 ms = 0.012 s (FLOPs 3.2e-5 s < reads)
PREFILL = 1.6e13 / (1e15 * 0.5) + 2e-3  # a 1000-token prompt alone: 0.032 s of FLOPs (> 0.01 s of reads) + 2 ms = 0.034 s


def run(n, prompt=1000, output=100, **kw):
    return S.simulate(STEP, np.full(n, prompt), np.full(n, output), **kw)


def test_one_request_is_its_prefill_and_its_decode_steps():
    r = run(1, concurrency=1, capacity=1e6)
    assert r.ttft[0] == pytest.approx(PREFILL, rel=1e-12)  # 0.034 s
    assert r.tpot[0] == pytest.approx(DECODE, rel=1e-12)  # 0.012 s per token after the first
    assert r.e2e[0] == pytest.approx(0.034 + 99 * 0.012, rel=1e-12)  # 1.222 s
    assert r.steps == 100  # one prefill step, 99 decode steps


def test_low_load_equals_the_closed_forms():
    # one client in a closed loop: the serving closed forms (engine/measure/serve.py) give the same TTFT and TPOT
    closed = serve.times({k: np.array([float(v)]) for k, v in T.items()}, {k: np.array([v]) for k, v in P.items()})
    sim = run(20, concurrency=1, capacity=1e6).summary()
    assert sim["ttft"]["mean"] == pytest.approx(float(closed["ttft"][0]), rel=1e-9)
    assert sim["tpot"]["mean"] == pytest.approx(float(closed["tpot"][0]), rel=1e-9)
    assert sim["request_throughput"] == pytest.approx(float(closed["request_throughput"][0]), rel=1e-9)


def test_a_burst_waits_behind_the_prompts_ahead_of_it():
    # 4 requests sent at once, a token budget of 1000 per step shared by the decodes (one token each) and the prompt
    # chunks (FCFS). A step's FLOPs are 3.2e-5 s per token (16e9 / 5e14), its weight read 0.01 s, + 2 ms:
    #   step 1: request 0's 1000 tokens                             -> 0.032 + 0.002 = 0.034 s; TTFT 0 = 0.034
    #   step 2: 1 decode + 999 of request 1                         -> 1000 tokens, 0.034 s
    #   step 3: 1 decode + request 1's last 1 + 998 of request 2    -> 0.034 s; TTFT 1 = 0.102
    #   step 4: 2 decodes + request 2's last 2 + 996 of request 3   -> 0.034 s; TTFT 2 = 0.136
    #   step 5: 3 decodes + request 3's last 4: 7 tokens, 2.24e-4 s of FLOPs < 0.01 s of reads -> 0.012 s; TTFT 3 = 0.148
    r = run(4, concurrency=4, capacity=1e6, token_budget=1000)
    assert r.ttft.tolist() == pytest.approx([0.034, 0.102, 0.136, 0.148], rel=1e-12)


def test_prefill_first_runs_each_prompt_in_a_step_of_its_own():
    # the same 4-request burst under prefill-first (SGLang, vLLM V0): a step with admitted prompts carries prompts alone,
    # the decodes wait. Each 1000-token prompt fills one step of 0.034 s: TTFTs 0.034, 0.068, 0.102, 0.136; then the four
    # decode together (4 tokens: 1.28e-4 s of FLOPs < 0.01 s of reads, 0.012 s a step) and all finish after 99 steps:
    # 0.136 + 99 x 0.012 = 1.324 s
    r = run(4, concurrency=4, capacity=1e6, token_budget=1000, schedule="prefill-first")
    assert r.ttft.tolist() == pytest.approx([0.034, 0.068, 0.102, 0.136], rel=1e-12)
    assert r.finish.tolist() == pytest.approx([1.324] * 4, rel=1e-12)
    assert r.steps == 4 + 99


def test_prefill_first_keeps_a_closed_loop_of_equal_requests_in_waves():
    # 4 clients, 12 equal requests: the wave of 4 finishes together (above), so the next 4 are sent together and wait
    # for each other's prompts again: every wave's TTFTs are 0.034, 0.068, 0.102, 0.136 (mean 0.085 s). Mixed steps
    # stagger the first wave's finishes instead, and later requests wait less
    waves = run(12, concurrency=4, capacity=1e6, token_budget=1000, schedule="prefill-first")
    assert waves.ttft.tolist() == pytest.approx([0.034, 0.068, 0.102, 0.136] * 3, rel=1e-12)
    mixed = run(12, concurrency=4, capacity=1e6, token_budget=1000)
    assert mixed.ttft[4:].mean() < 0.085


@pytest.mark.parametrize("admission", S.ADMISSION)
def test_the_kv_capacity_caps_the_running_batch(admission):
    # room for 2 requests of 1100 tokens; 6 clients: at most 2 run at once, the others wait for a slot
    r = run(6, concurrency=6, capacity=2 * 1100, admission=admission)
    assert r.kv_used.max() <= 1.0 + 1e-12
    starts = np.sort(r.first)
    # the third request's first token comes only after one of the first two has finished
    assert starts[2] > np.sort(r.finish)[0]
    assert np.isfinite(r.finish).all()


def test_on_demand_admission_preempts_and_still_finishes_every_request():
    # on-demand admits on the prompt alone: 3 prompts of 1000 fit in 3300 tokens, their decodes do not (3 x 1100 = 3300
    # fits exactly, so use 3200): the latest admitted is preempted, recomputed later, and every request completes
    r = run(6, concurrency=6, capacity=3200, admission="on-demand")
    assert r.preemptions > 0
    assert np.isfinite(r.finish).all() and (r.finish >= r.first).all()
    assert S.simulate(STEP, np.full(6, 1000), np.full(6, 100), concurrency=6, capacity=3200, admission="reserve").preemptions == 0


@pytest.mark.parametrize("kw", [
    dict(concurrency=8),
    dict(concurrency=64, admission="on-demand"),
    dict(arrive=np.cumsum(np.full(200, 0.05))),
])
def test_littles_law_holds_on_every_run(kw):
    rng = np.random.default_rng(1)
    n = 200
    pr = S.lengths("uniform", 1000, n, rng, ratio=0.5)
    out = S.lengths("lognormal", 100, n, rng, sigma=0.5)
    r = S.simulate(STEP, pr, out, capacity=8 * 1100 * 2, **kw)
    little = r.summary()["little"]
    assert little["in_system"] == pytest.approx(little["rate_x_e2e"], rel=1e-9)


def test_same_seed_same_run():
    def once():
        rng = np.random.default_rng(7)
        arr = S.arrivals("gamma", 10.0, 300, rng, cv=2.0)
        return S.simulate(STEP, S.lengths("lognormal", 800, 300, rng, sigma=0.6), S.lengths("uniform", 120, 300, rng, ratio=0.2),
                          arrive=arr, capacity=50_000).summary()
    assert once() == once()


def test_poisson_arrivals_have_the_stated_rate():
    rng = np.random.default_rng(3)
    arr = S.arrivals("poisson", 5.0, 20000, rng)
    assert 20000 / arr[-1] == pytest.approx(5.0, rel=0.03)  # 20,000 gaps: the sample rate within 3 % (about 4 sigma)


@pytest.mark.parametrize(("call", "field"), [
    (lambda: S.lengths("zipf", 10, 5, np.random.default_rng()), "--lengths"),
    (lambda: S.arrivals("poisson", 0.0, 5, np.random.default_rng()), "--rate"),
    (lambda: run(2, concurrency=1, capacity=500), "capacity"),
    (lambda: run(2, concurrency=1, capacity=1e6, admission="lifo"), "--admission"),
    (lambda: run(2, concurrency=1, capacity=1e6, schedule="decode-first"), "--schedule"),
])
def test_bad_input_names_its_field(call, field):
    with pytest.raises(InputError) as exc:
        call()
    assert exc.value.field == field


def test_the_host_work_per_sequence_counts_every_sequence_in_the_step():
    # overhead_seq = 1 ms a sequence: a lone request's prompt step pays it once (0.034 + 0.001 s) and each decode step
    # once (0.012 + 0.001 s); a step's prompt tokens count as prompts of the run's length (1000 tokens: one prompt), four
    # decoding requests as four sequences (4 x 1 ms); at one client the closed forms and the simulation still agree
    p = {**P, "overhead_seq": 1e-3}
    step = S.StepModel(T, p)
    r = S.simulate(step, np.full(1, 1000), np.full(1, 100), concurrency=1, capacity=1e6)
    assert r.ttft[0] == pytest.approx(PREFILL + 1e-3, rel=1e-12)
    assert r.tpot[0] == pytest.approx(DECODE + 1e-3, rel=1e-12)
    assert step.one(0, 0, 1000) - STEP.one(0, 0, 1000) == pytest.approx(1e-3, rel=1e-12)  # 1000 prompt tokens = one prompt of 1000
    assert step.one(4, 0, 0) - STEP.one(4, 0, 0) == pytest.approx(4e-3, rel=1e-12)  # four decoding sequences
    closed = serve.times({k: np.array([float(v)]) for k, v in T.items()}, {k: np.array([v]) for k, v in p.items()})
    sim = S.simulate(step, np.full(20, 1000), np.full(20, 100), concurrency=1, capacity=1e6).summary()
    assert sim["ttft"]["mean"] == pytest.approx(float(closed["ttft"][0]), rel=1e-9)
    assert sim["tpot"]["mean"] == pytest.approx(float(closed["tpot"][0]), rel=1e-9)


def test_the_layers_fixed_costs_enter_every_simulated_step_as_in_the_closed_form():
    # 32 layers at 80 us and 30 MoE layers at 0.8 ms: 2.56e-3 + 24e-3 = 26.56 ms more on every step, prompt or decode;
    # at one client the simulation and the closed form agree with them as without them
    t = {**T, "layers": 32, "moe_layers": 30}
    p = {**P, "overhead_layer": 8e-5, "overhead_moe": 8e-4}
    step = S.StepModel(t, p)
    assert step.one(1, 0, 0) - S.StepModel(t, P).one(1, 0, 0) == pytest.approx(0.02656, rel=1e-12)
    r = S.simulate(step, np.full(1, 1000), np.full(1, 100), concurrency=1, capacity=1e6)
    assert r.ttft[0] == pytest.approx(PREFILL + 0.02656, rel=1e-12)
    assert r.tpot[0] == pytest.approx(DECODE + 0.02656, rel=1e-12)
    closed = serve.times({k: np.array([float(v)]) for k, v in t.items()}, {k: np.array([v]) for k, v in p.items()})
    sim = S.simulate(step, np.full(20, 1000), np.full(20, 100), concurrency=1, capacity=1e6).summary()
    assert sim["tpot"]["mean"] == pytest.approx(float(closed["tpot"][0]), rel=1e-9)
