"""engine.domain.kv_sequence: one sequence's K/V records, pairs and bytes, by hand arithmetic.

Sums written out: call i of G one-token decode calls starts with P + i cached tokens; a causal prefill row k
sees k keys. Qwen3-8B: 36 layers, 32 query heads, 8 K/V heads, head_dim 128 (Qwen/Qwen3-8B config.json), BF16.
The default scenario (P 8192, G 1024, C 6144) is the companion calculator's (seed 000_, cache_sequence.py@d3ab25b4).
"""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.domain import kv_sequence
from engine.domain import models as model_records


def test_tiny_sequence_by_hand():
    c = kv_sequence.counts(4, 3, 2)
    assert c.decode_kv_reads == 4 + 5 + 6            # 15
    assert c.decode_kv_appends == 3
    assert c.sequence_kv_tokens == 7                 # 4 + 3
    assert c.decode_visible_pairs == 5 + 6 + 7       # 18
    assert c.prefill_computed_tokens == 2            # rows 3 and 4
    assert c.prefill_visible_pairs == 3 + 4          # row 3 sees 3 keys, row 4 sees 4
    assert c.prefill_full_pairs == 1 + 2 + 3 + 4     # 10
    assert c.prefix_saved_pairs == 1 + 2             # 3
    assert c.uncached_recompute_tokens == 5 + 6 + 7  # 18 rows, against 3 with a cache
    assert c.uncached_recompute_pairs == 15 + 21 + 28  # n(n+1)/2 for n = 5, 6, 7 = 64


def test_companion_scenario_by_hand():
    c = kv_sequence.counts(8192, 1024, 6144)
    assert c.decode_kv_reads == 1024 * 8192 + 1024 * 1023 // 2 == 8912384
    assert c.decode_visible_pairs == 8912384 + 1024 == 8913408
    assert c.sequence_kv_tokens == 9216
    assert c.prefill_visible_pairs == 2048 * 6144 + 2048 * 2049 // 2 == 14681088
    assert c.prefill_full_pairs == 8192 * 8193 // 2 == 33558528
    assert c.prefix_saved_pairs == 6144 * 6145 // 2 == 18877440
    # (9216 x 9217 x 9218 - 8192 x 8193 x 8194) / 6 = (783012612096 - 549957156864) / 6
    assert c.uncached_recompute_pairs == 38842575872


@pytest.mark.parametrize("P,G,C", [(1, 0, 0), (1, 1, 1), (4, 3, 2), (17, 5, 16), (8192, 1024, 6144), (100, 7, 0), (100, 7, 100)])
def test_conservation(P, G, C):
    c = kv_sequence.counts(P, G, C)
    # prefill appends + prefix hit + decode appends = the whole sequence = final capacity
    assert c.prefill_computed_tokens + C + c.decode_kv_appends == P + G == c.sequence_kv_tokens
    # the hit moves pairs from computed to saved; their sum is the no-hit prefill
    assert c.prefill_visible_pairs + c.prefix_saved_pairs == c.prefill_full_pairs == P * (P + 1) // 2
    # decode: every visible pair is a history read or a query's own record
    assert c.decode_visible_pairs == c.decode_kv_reads + c.decode_kv_appends
    # a prefix hit changes neither the decode work nor the capacity
    assert kv_sequence.counts(P, G, 0).sequence_kv_tokens == c.sequence_kv_tokens
    assert kv_sequence.counts(P, G, 0).decode_kv_reads == c.decode_kv_reads
    # prefill of P, then G calls: causal pairs of the whole P + G sequence
    assert c.prefill_full_pairs + c.decode_visible_pairs == (P + G) * (P + G + 1) // 2
    # the no-cache recompute of call i is the causal prefill of its P + i + 1 positions
    assert c.uncached_recompute_pairs == sum(n * (n + 1) // 2 for n in range(P + 1, P + G + 1))
    assert c.uncached_recompute_tokens == sum(range(P + 1, P + G + 1))


def test_qwen3_8b_bytes_and_counterfactuals():
    from engine.core.paths import shipped_root

    record = model_records.find(model_records.load_models(shipped_root()), "qwen3-8b")
    s = kv_sequence.sequence(8192, 1024, 6144, record=record)
    by = {b.variant: b for b in s.bytes}
    assert [b.variant for b in s.bytes] == ["gqa", "mha", "mqa"] and by["gqa"].native
    assert by["gqa"].kv_bytes_per_token == 2 * 36 * 8 * 128 * 2 == 147456
    assert by["mha"].kv_bytes_per_token == 2 * 36 * 32 * 128 * 2 == 589824
    assert by["mqa"].kv_bytes_per_token == 2 * 36 * 1 * 128 * 2 == 18432
    assert by["gqa"].decode_kv_read_bytes == 8912384 * 147456 == 1314184495104
    assert by["mha"].decode_kv_read_bytes == 8912384 * 589824
    assert by["gqa"].decode_kv_append_bytes == 1024 * 147456 == 150994944
    assert by["gqa"].sequence_kv_bytes == 9216 * 147456 == 1358954496
    assert by["gqa"].prefix_hit_bytes == 6144 * 147456
    assert s.counts.decode_visible_pairs == 8913408  # the same pairs under every variant


def test_mla_has_no_counterfactual():
    from engine.core.paths import shipped_root

    record = model_records.find(model_records.load_models(shipped_root()), "deepseek-v3")
    s = kv_sequence.sequence(8, 2, record=record)
    assert [b.variant for b in s.bytes] == ["mla"]
    assert s.bytes[0].kv_bytes_per_token == 61 * (512 + 64) * 2  # 70272, F8's DeepSeek-V3 example
    assert "no MHA/MQA counterfactual" in s.notes[0]


@pytest.mark.parametrize("args,field", [((0, 1, 0), "--prompt"), ((4, -1, 0), "--steps"), ((4, 1, 5), "--prefix-hit"), ((4, 1, -1), "--prefix-hit")])
def test_bad_input_names_the_field(args, field):
    with pytest.raises(InputError) as err:
        kv_sequence.counts(*args)
    assert err.value.field == field
