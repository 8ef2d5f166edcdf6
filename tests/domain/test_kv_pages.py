"""engine.domain.kv_pages: block tables, fork, copy-on-write, cancel and the free queue, by hand.

Kwon et al. 2023 (PagedAttention) section 4.4 and Figure 8: two samples of a 7-token prompt in 4-token blocks
share block 0; the first writer to the partly filled block 1 copies its 3 tokens. The six-operation scenario is
the companion calculator's default (seed 000_, kv_pages.py@d3ab25b4). Eviction: vLLM's KVCacheManager.free frees
a request's blocks in reverse order, appended to the free queue, and allocation takes the head.
"""

from __future__ import annotations

import pytest

from engine.core.errors import InputError
from engine.domain import kv_pages


def tables(step):
    return {q.seq: list(q.table) for q in step.seqs}


def test_figure_8_fork_and_copy_on_write():
    steps = kv_pages.run(["create:p:7", "fork:p:s", "append:p:1", "append:s:1"], block_tokens=4)
    assert tables(steps[1]) == {"p": [0, 1], "s": [0, 1]}          # shared, nothing copied
    assert steps[1].copied_tokens == 0 and [(p.id, p.refs) for p in steps[1].pages] == [(0, 2), (1, 2)]
    assert tables(steps[2]) == {"p": [0, 2], "s": [0, 1]}          # p copies block 1's 3 tokens, then writes
    assert steps[2].copied_tokens == 3
    assert tables(steps[3]) == {"p": [0, 2], "s": [0, 1]}          # s is now the only owner: writes in place
    assert steps[3].copied_tokens == 0
    last = steps[3]
    assert [(p.id, p.used, p.refs) for p in last.pages] == [(0, 4, 2), (1, 4, 1), (2, 4, 1)]
    # FX1224 shared: floor(7/4) + 2 x (ceil(8/4) - floor(7/4)) = 1 + 2 = 3 pages; FX1225: (2 - 1) x 3 = 3 tokens
    assert last.live_pages == 3 and steps[2].copied_tokens + steps[3].copied_tokens == 3


def test_companion_scenario():
    steps = kv_pages.run("create:a:17 fork:a:b fork:a:c append:a:1 append:b:16 cancel:c".split())
    assert tables(steps[0]) == {"a": [0, 1]}
    assert [(q.pages, q.waste_tokens) for q in steps[0].seqs] == [(2, 32 - 17)]
    assert tables(steps[3]) == {"a": [0, 2], "b": [0, 1], "c": [0, 1]} and steps[3].copied_tokens == 1
    # b copies page 1's 1 token to page 3, fills it to 16, then page 4 takes the 17th token
    assert tables(steps[4])["b"] == [0, 3, 4] and steps[4].copied_tokens == 1
    assert [q.tokens for q in steps[4].seqs] == [18, 33, 17]
    # cancel c: page 0 falls to 2 references, page 1 (c's own now) to 0 and joins the free queue
    assert steps[5].freed == (1,) and [p.id for p in steps[5].free_queue] == [1]
    assert [(p.id, p.refs) for p in steps[5].pages] == [(0, 2), (2, 1), (3, 1), (4, 1)]
    # waste per request: a 2 x 16 - 18 = 14; b 3 x 16 - 33 = 15
    assert [(q.seq, q.waste_tokens) for q in steps[5].seqs] == [("a", 14), ("b", 15)]


def test_eviction_order_tail_first_and_capacity():
    steps = kv_pages.run(["create:a:40", "cancel:a", "create:b:20", "create:c:30"], capacity_pages=3)
    assert steps[1].freed == (2, 1, 0)                      # tail page first
    assert [p.id for p in steps[1].free_queue] == [2, 1, 0]
    assert steps[2].evicted == (2, 1) and tables(steps[2]) == {"b": [2, 1]}
    assert [p.id for p in steps[2].free_queue] == [0]       # a's first page is kept longest
    rejected = steps[3]                                     # 30 tokens need 2 pages, 1 is free
    assert not rejected.accepted and rejected.pages_needed == 2 and "1 free" in rejected.reason
    assert tables(rejected) == {"b": [2, 1]} and [p.id for p in rejected.free_queue] == [0]


def test_fresh_pages_before_eviction():
    steps = kv_pages.run(["create:a:16", "cancel:a", "create:b:16"], capacity_pages=2)
    assert tables(steps[2]) == {"b": [1]} and steps[2].evicted == ()   # page 1 never used: taken before evicting 0


@pytest.mark.parametrize("ops", [
    "create:a:17 fork:a:b fork:a:c append:a:1 append:b:16 cancel:c".split(),
    "create:p:7 fork:p:s1 fork:p:s2 append:s1:9 append:s2:1 append:p:30 cancel:p fork:s1:s3 append:s3:5 cancel:s1".split(),
    "create:x:64 fork:x:y append:y:1 append:x:1 cancel:x cancel:y create:z:3".split(),
])
@pytest.mark.parametrize("block", [1, 4, 16])
def test_conservation(ops, block):
    for s in kv_pages.run(ops, block_tokens=block):
        refs = {}
        for q in s.seqs:
            assert len(q.table) == q.pages == -(-q.tokens // block)          # FX1220 is the table's length
            assert q.waste_tokens == q.pages * block - q.tokens < block        # FX1221: at most one block
            for p in q.table:
                refs[p] = refs.get(p, 0) + 1
        assert {p.id: p.refs for p in s.pages} == refs                        # reference counts = table entries
        assert s.table_pages == sum(p.refs for p in s.pages)
        live = {p.id for p in s.pages}
        assert live.isdisjoint(p.id for p in s.free_queue)
        # every used slot is a token of some sequence: shared pages count once per reference
        used = {p.id: p.used for p in s.pages}
        assert sum(used[p] for q in s.seqs for p in q.table) == s.logical_tokens


@pytest.mark.parametrize("text", ["create:a", "create:a:0", "append:a:x", "fork:a", "drop:a", "cancel:", "create:a b:3"])
def test_bad_operation(text):
    with pytest.raises(InputError) as err:
        kv_pages.parse_op(text)
    assert err.value.field == "OPS"


def test_bad_sequence_of_operations():
    with pytest.raises(InputError, match="no live sequence 'b'"):
        kv_pages.run(["create:a:1", "append:b:1"])
    with pytest.raises(InputError, match="already exists"):
        kv_pages.run(["create:a:1", "fork:a:a"])
