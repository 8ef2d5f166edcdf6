"""A paged K/V pool stepped through operations: create, fork, append, cancel.

Pages (vLLM's blocks) hold ``block_tokens`` tokens of every caching layer. A sequence's block table lists its
pages in order, filled left to right, so its last page alone is partly filled: the per-request internal waste
(FX1220 pages, FX1221 slots, FX1223 bytes) of Kwon et al. 2023 section 4.2.

- ``create:ID:N``  a new sequence with an N-token prompt;
- ``fork:PARENT:ID``  a sample or beam sharing every page of PARENT (reference counts + 1; no page is copied);
- ``append:ID:N``  N more tokens; a write to a page that another sequence also references copies its valid
  slots to a new page first (copy-on-write, section 4.4: the last writer finds the count at one and writes in place);
- ``cancel:ID``  the sequence ends (finished, aborted, or a beam dropped); its pages' counts fall, and a page no
  one references joins the free queue.

The free queue is the eviction order: a freed page keeps its contents (a prefix cache may still hit it) until
an allocation takes it from the head. As vLLM's KVCacheManager.free does, a sequence's pages are freed in reverse
order (tail first), so its prefix pages stay cached longest. Without a capacity the pool is unbounded and fresh
pages are always taken first; with ``capacity_pages`` fresh pages are taken while any remain (vLLM's free queue
starts with every block in id order), then the head of the free queue is evicted, and an operation that needs
more pages than are free is rejected whole, changing nothing.
"""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.record import dataclass

FORMULAS = ("FX1220", "FX1221", "FX1222", "FX1223")
KINDS = ("create", "fork", "append", "cancel")
MAX_TOKENS = 10**9


@dataclass(frozen=True, slots=True)
class Op:
    kind: str
    seq: str
    tokens: int = 0
    parent: str = ""

    @property
    def text(self) -> str:
        return {"create": f"create:{self.seq}:{self.tokens}", "fork": f"fork:{self.parent}:{self.seq}",
                "append": f"append:{self.seq}:{self.tokens}", "cancel": f"cancel:{self.seq}"}[self.kind]


@dataclass(frozen=True, slots=True)
class Page:
    id: int
    used: int           # valid token slots
    refs: int           # sequences whose block table lists it (0: in the free queue)


@dataclass(frozen=True, slots=True)
class SeqState:
    seq: str
    tokens: int
    table: tuple        # page ids in order
    pages: int          # FX1220
    waste_tokens: int   # FX1221


@dataclass(frozen=True, slots=True)
class Step:
    op: Op
    accepted: bool
    reason: str
    pages_needed: int
    copied_tokens: int
    freed: tuple        # page ids whose count fell to zero, in the order they joined the free queue
    evicted: tuple      # page ids taken from the free queue's head by this operation
    seqs: tuple         # SeqState, in creation order
    pages: tuple        # live Page (refs > 0), by id
    free_queue: tuple   # Page, head (evicted first) to tail

    @property
    def logical_tokens(self) -> int:
        return sum(s.tokens for s in self.seqs)

    @property
    def table_pages(self) -> int:
        """Entries over every block table: the pages the sequences would hold without sharing."""
        return sum(s.pages for s in self.seqs)

    @property
    def live_pages(self) -> int:
        return len(self.pages)

    @property
    def unused_slots(self) -> int:
        """Empty slots of the live pages (internal fragmentation, each shared page counted once)."""
        return sum(self.block_tokens - p.used for p in self.pages)

    block_tokens: int = 16


def parse_op(text: str) -> Op:
    """``create:a:17``, ``fork:a:b``, ``append:a:1`` or ``cancel:c``; InputError naming OPS otherwise."""
    parts = text.split(":")
    kind = parts[0]
    shapes = {"create": 3, "fork": 3, "append": 3, "cancel": 2}
    if kind not in shapes or len(parts) != shapes[kind]:
        raise InputError("OPS", f"{text!r} is not an operation (expected create:ID:TOKENS, fork:PARENT:ID, append:ID:TOKENS or cancel:ID)")
    for name in parts[1:2] + (parts[2:3] if kind == "fork" else []):
        if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise InputError("OPS", f"{text!r}: sequence id {name!r} is not a name (letters, digits, - _ .)")
    if kind == "fork":
        return Op("fork", parts[2], parent=parts[1])
    if kind == "cancel":
        return Op("cancel", parts[1])
    try:
        tokens = int(parts[2])
    except ValueError:
        tokens = -1
    if not 1 <= tokens <= MAX_TOKENS:
        raise InputError("OPS", f"{text!r}: tokens must be a whole number from 1 to {MAX_TOKENS}, got {parts[2]!r}")
    return Op(kind, parts[1], tokens=tokens)


class Pool:
    """The mutable pool; ``run`` gives one frozen Step per operation."""

    def __init__(self, block_tokens: int = 16, capacity_pages: int | None = None, module=None):
        if not isinstance(block_tokens, int) or block_tokens < 1:
            raise InputError("--block-size", f"expected a whole number of tokens >= 1, got {block_tokens!r}")
        if capacity_pages is not None and (not isinstance(capacity_pages, int) or capacity_pages < 1):
            raise InputError("--capacity-pages", f"expected a whole number >= 1, got {capacity_pages!r}")
        self.b, self.capacity = block_tokens, capacity_pages
        self.used: dict[int, int] = {}       # page id -> valid slots (live and free-queued pages)
        self.refs: dict[int, int] = {}
        self.tables: dict[str, list[int]] = {}
        self.free: list[int] = []            # head first
        self.next_id = 0
        from engine.domain.kv_sequence import _Formulas

        self.ev = _Formulas(module)

    def run(self, ops) -> list[Step]:
        return [self.apply(op) for op in ops]

    def apply(self, op: Op) -> Step:
        self._check(op)
        need = self._pages_needed(op)
        available = None if self.capacity is None else self.capacity - self.next_id + len(self.free)
        if available is not None and need > available:
            return self._step(op, False, f"needs {need} page{'s' * (need != 1)}, {available} free", need, 0, (), ())
        self.copied, self.freed, self.evicted = 0, [], []
        if op.kind == "create":
            self.tables[op.seq] = []
            self._append(op.seq, op.tokens)
        elif op.kind == "append":
            self._append(op.seq, op.tokens)
        elif op.kind == "fork":
            self.tables[op.seq] = list(self.tables[op.parent])
            for page in self.tables[op.seq]:
                self.refs[page] += 1
        else:
            for page in reversed(self.tables.pop(op.seq)):  # tail first: the prefix stays cached longest
                self.refs[page] -= 1
                if self.refs[page] == 0:
                    del self.refs[page]
                    self.free.append(page)
                    self.freed.append(page)
        return self._step(op, True, "", need, self.copied, tuple(self.freed), tuple(self.evicted))

    def _check(self, op: Op) -> None:
        if op.kind in ("create", "fork") and op.seq in self.tables:
            raise InputError("OPS", f"{op.text}: sequence {op.seq!r} already exists")
        if op.kind in ("append", "cancel") and op.seq not in self.tables:
            raise InputError("OPS", f"{op.text}: no live sequence {op.seq!r}")
        if op.kind == "fork" and op.parent not in self.tables:
            raise InputError("OPS", f"{op.text}: no live sequence {op.parent!r} to fork")

    def _pages_needed(self, op: Op) -> int:
        if op.kind not in ("create", "append"):
            return 0
        table = self.tables.get(op.seq, []) if op.kind == "append" else []
        room = self.b - self.used[table[-1]] if table else 0
        copy = 1 if table and room and self.refs[table[-1]] > 1 else 0
        return copy + -(-max(0, op.tokens - room) // self.b)

    def _append(self, seq: str, count: int) -> None:
        table = self.tables[seq]
        while count:
            if not table or self.used[table[-1]] == self.b:
                table.append(self._allocate(0))
            tail = table[-1]
            if self.refs[tail] > 1:  # copy-on-write
                self.refs[tail] -= 1
                self.copied += self.used[tail]
                tail = table[-1] = self._allocate(self.used[tail])
            take = min(count, self.b - self.used[tail])
            self.used[tail] += take
            count -= take

    def _allocate(self, used: int) -> int:
        if self.capacity is None or self.next_id < self.capacity:
            page, self.next_id = self.next_id, self.next_id + 1
        else:
            page = self.free.pop(0)
            self.evicted.append(page)
        self.used[page], self.refs[page] = used, 1
        return page

    def _step(self, op, accepted, reason, need, copied, freed, evicted) -> Step:
        seqs = []
        for seq, table in self.tables.items():
            tokens = sum(self.used[p] for p in table)
            pages = self.ev("FX1220", sequence_kv_tokens=tokens, block_tokens=self.b)
            seqs.append(SeqState(seq, tokens, tuple(table), pages,
                                 self.ev("FX1221", sequence_kv_pages=pages, sequence_kv_tokens=tokens, block_tokens=self.b)))
        live = tuple(Page(p, self.used[p], self.refs[p]) for p in sorted(self.refs))
        queue = tuple(Page(p, self.used[p], 0) for p in self.free)
        return Step(op, accepted, reason, need, copied, freed, evicted, tuple(seqs), live, queue, self.b)


def run(texts, block_tokens: int = 16, capacity_pages: int | None = None, module=None) -> list[Step]:
    """Parse every operation first (a bad one is refused before any runs), then step the pool through them."""
    if not texts:
        raise InputError("OPS", "no operation given (e.g. create:a:17 fork:a:b append:b:1 cancel:a)")
    ops = [parse_op(t) for t in texts]
    return Pool(block_tokens, capacity_pages, module).run(ops)
