"""engine.domain.kv_tiers: a reusable prefix in cache tiers, by hand arithmetic.

The running case: Qwen3-8B-sized K/V (2 x 36 layers x 8 K/V heads x 128 x 2 B = 147456 B per token; Qwen/Qwen3-8B
config.json), an 8B dense model's 2 x 8e9 = 1.6e10 FLOPs per token (FX30), one H100 SXM at 989 TFLOPS dense BF16 (NVIDIA
H100 datasheet) and MFU 0.5; an 8192-token prefix reused every 60 s on average while 20000 other prompt tokens per second
enter the caches (20000 x 147456 = 2.94912e9 B/s). Tiers: 40 GB of HBM, 512 GB of host DRAM over PCIe Gen5 at 64 GB/s per
direction (H100 datasheet: 128 GB/s both ways), 4 TB of NVMe at 7 GB/s after 100 us (book ch17: one drive gives 5-7 GB/s).
"""

from __future__ import annotations

import math
import random
from collections import OrderedDict

import pytest

from engine.core.errors import InputError
from engine.domain import kv_tiers

PER_TOKEN, FLOPS, PEAK = 147456, 1.6e10, 989e12
GPU, HOST, SSD = kv_tiers.Tier("gpu", 40e9, None), kv_tiers.Tier("host", 512e9, 64e9), kv_tiers.Tier("ssd", 4e12, 7e9, 1e-4)


def inputs(**over):
    base = dict(prefix_tokens=8192, suffix_tokens=0, kv_bytes_per_token=PER_TOKEN, flops_per_token=FLOPS, peak_flops=PEAK, mfu=0.5,
                tp_size=1, insert_rate_tokens=20000, reuse_interval=60.0)
    return kv_tiers.Inputs(**(base | over))


def test_restore_and_recompute_by_hand():
    r = kv_tiers.analyse(inputs(), [GPU, HOST, SSD])
    assert r.recompute_time == pytest.approx(8192 * 1.6e10 / (989e12 * 0.5), rel=1e-12)   # 1.31072e14 / 4.945e14 = 0.26505966 s
    gpu, host, ssd = r.tiers
    assert gpu.restore_time == 0 and gpu.load_time == 0                                      # a hit in HBM moves nothing
    assert host.restore_time == pytest.approx(8192 * 147456 / 64e9, rel=1e-12) == pytest.approx(0.018874368)
    assert ssd.restore_time == pytest.approx(1e-4 + 1207959552 / 7e9, rel=1e-12) == pytest.approx(0.17266565)
    assert host.load_time == host.restore_time and ssd.load_time == ssd.restore_time          # both beat 0.265 s of recompute


def test_hit_rates_by_hand():
    r = kv_tiers.analyse(inputs(), [GPU, HOST, SSD])
    rate = 20000 * 147456                                                  # 2.94912e9 B/s
    t1, t2, t3 = 40e9 / rate, 552e9 / rate, 4552e9 / rate                  # 13.563 s, 187.17 s, 1543.5 s (FX1243)
    assert [t.characteristic_time for t in r.tiers] == pytest.approx([t1, t2, t3], rel=1e-12)
    h1, h2, h3 = (1 - math.exp(-t / 60) for t in (t1, t2, t3))             # 0.20232668, 0.95582405, 1 - 6.7e-12 (FX1244)
    assert h1 == pytest.approx(0.20232668, abs=1e-8) and h2 == pytest.approx(0.95582405, abs=1e-8)
    assert [t.hit_through for t in r.tiers] == pytest.approx([h1, h2, h3], rel=1e-12)
    assert [t.hit_rate for t in r.tiers] == pytest.approx([h1, h2 - h1, h3 - h2], rel=1e-9)   # host 0.75349737 (FX1245)
    assert r.hit_total == pytest.approx(h3, rel=1e-12)


def test_conservation_and_ttft_linear_in_hit_rate():
    for tiers in ([GPU], [GPU, HOST], [GPU, HOST, SSD], [HOST, SSD]):
        r = kv_tiers.analyse(inputs(queue_time=0.1, suffix_tokens=512), tiers)
        # the tiers' own hit rates add up to the hierarchy's; none is negative
        assert sum(t.hit_rate for t in r.tiers) == pytest.approx(r.hit_total, rel=1e-12)
        assert all(t.hit_rate >= 0 for t in r.tiers)
        # TTFT = queue + suffix + recompute - sum of h_k x (recompute - load_k): each unit of hit saves recompute - load
        saved = sum(t.hit_rate * (r.recompute_time - t.load_time) for t in r.tiers)
        assert r.ttft == pytest.approx(0.1 + r.suffix_prefill_time + r.recompute_time - saved, rel=1e-12)
        assert r.ttft_no_cache == pytest.approx(0.1 + r.suffix_prefill_time + r.recompute_time, rel=1e-12)
        # the suffix is FX74 over 512 tokens: 512 x 1.6e10 / 4.945e14
        assert r.suffix_prefill_time == pytest.approx(512 * 1.6e10 / 4.945e14, rel=1e-12)
        assert r.ttft <= r.ttft_no_cache


def test_worked_ttft_of_the_formula_example():
    """FX1247's example: the 40 GB + 512 GB case, no queue, no suffix: 0.75349737 x 0.018874368 + 0.04417595 x 0.26505966."""
    r = kv_tiers.analyse(inputs(), [GPU, HOST])
    assert r.expected_load_time == pytest.approx(0.014221787, rel=1e-6)
    assert r.ttft == pytest.approx(0.014221787 + 0.011709262, rel=1e-6) == pytest.approx(0.025931049, rel=1e-6)
    assert dict(r.ttft_all_hit) == pytest.approx({"gpu": 0.0, "host": 0.018874368})


def test_break_even_prefix_length():
    ssd = kv_tiers.analyse(inputs(), [GPU, SSD]).tiers[1]
    # 1e-4 / (1.6e10 / 4.945e14 - 147456 / 7e9) = 1e-4 / (3.2355915e-5 - 2.1065143e-5) = 8.8567901 tokens (FX1242)
    assert ssd.break_even_tokens == pytest.approx(8.8567901, rel=1e-7)
    p = ssd.break_even_tokens  # at that length the two times are equal, by FX1240 = FX1241 written out
    assert 1e-4 + p * 147456 / 7e9 == pytest.approx(p * 1.6e10 / 4.945e14, rel=1e-12)
    remote = kv_tiers.analyse(inputs(), [GPU, kv_tiers.Tier("remote", 1e14, 50e9, 1e-3)]).tiers[1]
    assert remote.break_even_tokens == pytest.approx(0.001 / (1.6e10 / 4.945e14 - 147456 / 5e10), rel=1e-12)  # 34.005746
    assert kv_tiers.analyse(inputs(), [HOST]).tiers[0].break_even_tokens == 0                             # no latency: any length


def test_a_tier_slower_than_recompute_is_never_restored():
    # 10 Gb/s = 1.25e9 B/s: 147456 / 1.25e9 = 1.18e-4 s per token against 3.24e-5 s of recompute
    slow = kv_tiers.analyse(inputs(), [GPU, kv_tiers.Tier("remote", 1e14, 1.25e9, 1e-3)]).tiers[1]
    assert slow.break_even_tokens is None and not slow.restores
    assert slow.restore_time == pytest.approx(1e-3 + 1207959552 / 1.25e9, rel=1e-12)                      # 0.96736764 s
    assert slow.load_time == pytest.approx(8192 * 1.6e10 / 4.945e14, rel=1e-12)                            # the recompute (FX1246)


def test_directions():
    base = kv_tiers.analyse(inputs(), [GPU, HOST]).hit_total
    assert kv_tiers.analyse(inputs(reuse_interval=600), [GPU, HOST]).hit_total < base     # rarer reuse, fewer hits
    assert kv_tiers.analyse(inputs(insert_rate_tokens=40000), [GPU, HOST]).hit_total < base
    assert kv_tiers.analyse(inputs(), [GPU, kv_tiers.Tier("host", 1024e9, 64e9)]).hit_total > base


def _two_level(refs, c1, c2):
    """Exclusive L1/L2 of unit-size items: a miss enters L1; L1's LRU victim is demoted to L2's MRU end; an L2 hit moves
    the item back to L1. Returns, per reference, whether it was found in L1 or L2."""
    l1, l2, out = OrderedDict(), OrderedDict(), []
    for x in refs:
        found = x in l1 or x in l2
        out.append(found)
        l1.pop(x, None)
        l2.pop(x, None)
        l1[x] = True
        if len(l1) > c1:
            victim, _ = l1.popitem(last=False)
            l2[victim] = True
            if len(l2) > c2:
                l2.popitem(last=False)
    return out


def _one_level(refs, c):
    cache, out = OrderedDict(), []
    for x in refs:
        out.append(x in cache)
        cache.pop(x, None)
        cache[x] = True
        if len(cache) > c:
            cache.popitem(last=False)
    return out


def test_demoting_tiers_act_as_one_lru_of_their_summed_capacity():
    """The model's structural claim (Mattson et al. 1970; Wong and Wilkes 2002), checked reference by reference on a
    skewed random trace: exclusive LRU tiers with demotion hit exactly where one LRU of the summed capacity hits."""
    rng = random.Random(32)
    refs = [min(int(rng.paretovariate(1.1)), 400) for _ in range(20000)]
    for c1, c2 in ((5, 20), (10, 40), (1, 100), (30, 1)):
        assert _two_level(refs, c1, c2) == _one_level(refs, c1 + c2)


def test_bad_input_names_the_field():
    with pytest.raises(InputError) as e:
        kv_tiers.analyse(inputs(), [])
    assert e.value.field == "--tier"
    with pytest.raises(InputError, match="only the first tier"):
        kv_tiers.analyse(inputs(), [GPU, kv_tiers.Tier("ssd", 1e12, None)])
    with pytest.raises(InputError) as e:
        kv_tiers.analyse(inputs(mfu=1.5), [GPU])
    assert e.value.field == "--mfu"
    with pytest.raises(InputError) as e:
        kv_tiers.analyse(inputs(prefix_tokens=0), [GPU])
    assert e.value.field == "--prefix"


def test_numeric_path_imports_no_sympy():
    import subprocess
    import sys

    code = ("import sys; from engine.domain import kv_tiers as k; "
            "k.analyse(k.Inputs(8192, 0, 147456, 1.6e10, 989e12, 0.5, 1, 20000, 60.0), [k.Tier('gpu', 4e10, None)]); "
            "print('sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_the_peers_kv_restore_default_scenario():
    """The 12-chapter book's companion calculator (seed 000_; bojieli/ai-infra-book calculations/src/infra_calc/topics/
    kv_restore.py@d3ab25b4), default scenario: Qwen3-8B, 1024 tokens of BF16 K/V (1024 x 147456 = 150,994,944 B), restore
    bandwidth 25e9 B/s, transfer startup 10 us: restore = 10,000 ns + 150,994,944 x 1e9 / 25e9 ns = 6,049,797.76 ns.
    FX1240 gives the same number. Conventions that differ: the peer takes the recompute time as given (recompute_ns = 50 ms)
    where FX1241 derives it from FLOPs at an MFU, and it schedules the offload copy before a prefetch at a known next use,
    where these tiers demote on eviction, off the request's path."""
    r = kv_tiers.analyse(inputs(prefix_tokens=1024), [kv_tiers.Tier("host", 256 * 1024**2, 25e9, 10e-6)])
    assert r.tiers[0].restore_time == pytest.approx(6_049_797.76e-9, rel=1e-12)
