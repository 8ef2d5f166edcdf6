"""A reusable prefix cached in tiers (GPU HBM, host DRAM, local NVMe, a remote pool): each tier's hit rate, the
restore time against the recompute time, the break-even prefix length, and the TTFT the hit rates give.

Every number is a formula of formulas/offload.yaml evaluated through the compiled module: restore time (FX1240),
recompute time (FX1241), break-even prefix length (FX1242), the characteristic time of the tiers down to each
(FX1243), the hit probability within them (FX1244), each tier's own hit rate (FX1245), the load time of a hit
(FX1246) and the TTFT (FX1247); the prompt after the prefix is FX74's prefill. The model, stated once: exclusive
tiers that evict LRU and demote, so tiers 1..k act as one LRU of their summed capacity; Poisson reuse of the
prefix with mean ``reuse_interval``; other K/V entering at ``insert_rate`` (Che et al. 2002's characteristic time).
The only arithmetic here is the running sum of capacities and the hit-weighted sum of load times that FX1243 and
FX1247 take as inputs.
"""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.record import dataclass

FORMULAS = ("FX1240", "FX1241", "FX1242", "FX1243", "FX1244", "FX1245", "FX1246", "FX1247")


@dataclass(frozen=True, slots=True)
class Tier:
    """One cache tier as given, fastest first. ``bandwidth`` None: the GPU tier itself (a hit needs no restore)."""

    name: str
    capacity: float          # B per instance
    bandwidth: float | None  # B/s into the GPUs
    latency: float = 0.0     # s before data flows
    source: str = ""         # where a filled-in bandwidth came from


@dataclass(frozen=True, slots=True)
class TierResult:
    name: str
    capacity: float
    capacity_through: float         # this tier and every faster one (B)
    bandwidth: float | None
    latency: float
    characteristic_time: float      # FX1243 (s)
    hit_through: float              # FX1244
    hit_rate: float                 # FX1245
    restore_time: float             # FX1240 (0 for the GPU tier)
    load_time: float                # FX1246
    restores: bool                  # restoring beats recomputing at this prefix length
    break_even_tokens: float | None  # FX1242; None: restoring never pays (a token moves slower than it recomputes)
    source: str = ""


@dataclass(frozen=True, slots=True)
class Inputs:
    prefix_tokens: int
    suffix_tokens: int
    kv_bytes_per_token: float
    flops_per_token: float
    peak_flops: float
    mfu: float
    tp_size: int
    insert_rate_tokens: float  # tokens/s of other K/V entering the caches
    reuse_interval: float      # s
    queue_time: float = 0.0


@dataclass(frozen=True, slots=True)
class Result:
    inputs: Inputs
    insert_rate_bytes: float
    recompute_time: float        # FX1241
    suffix_prefill_time: float   # FX74 over the suffix
    tiers: tuple                 # TierResult, fastest first
    hit_total: float             # FX1244 of the deepest tier
    expected_load_time: float    # sum of FX1245 x FX1246
    ttft: float                  # FX1247 at the tiers' hit rates
    ttft_no_cache: float         # FX1247 with no hit
    ttft_all_hit: tuple          # (tier name, FX1247 with every return a hit in that tier)
    model: str | None = None
    device: str | None = None
    notes: tuple = ()

    @property
    def formulas(self) -> list[str]:
        return list(FORMULAS) + ["FX74"]


def analyse(inputs: Inputs, tiers: list[Tier], module=None, model: str | None = None, device: str | None = None,
            notes: tuple = ()) -> Result:
    """Every tier's hit rate, restore and load time, and the TTFT, for ``inputs``; ``tiers`` fastest first."""
    from engine.domain.kv_sequence import _Formulas

    _check(inputs, tiers)
    ev = _Formulas(module)
    x = inputs
    timing = dict(infer_flops_per_token=x.flops_per_token, tp_size=x.tp_size, peak_flops=x.peak_flops, mfu=x.mfu)
    recompute = ev("FX1241", prefix_tokens=x.prefix_tokens, **timing)
    suffix = 0.0 if x.suffix_tokens == 0 else ev("FX74", prefill_flops_basis="per_token", prompt_tokens=x.suffix_tokens,
                                                  prefix_hit_rate=0, **timing)
    insert = x.insert_rate_tokens * x.kv_bytes_per_token  # tokens/s x B/token: FX1243's kv_insert_rate in B/s
    rows, above, through = [], 0.0, 0.0
    for tier in tiers:
        through += tier.capacity
        t_c = ev("FX1243", kv_capacity_through_tier=through, kv_insert_rate=insert)
        hit = ev("FX1244", kv_characteristic_time=t_c, prefix_reuse_interval=x.reuse_interval)
        own = ev("FX1245", kv_hit_through_tier=hit, kv_hit_above_tier=above)
        restore, even = _restore(ev, tier, x, timing)
        load = ev("FX1246", kv_restore_time=restore, prefix_recompute_time=recompute)
        rows.append(TierResult(tier.name, tier.capacity, through, tier.bandwidth, tier.latency, t_c, hit, own, restore, load,
                               restore <= recompute, even, tier.source))
        above = hit
    expected = sum(r.hit_rate * r.load_time for r in rows)  # FX1247's kv_expected_load_time: sum of FX1245 x FX1246
    ttft = _ttft(ev, x, expected, above, recompute, suffix)
    none = _ttft(ev, x, 0, 0, recompute, suffix)
    every = tuple((r.name, _ttft(ev, x, r.load_time, 1, recompute, suffix)) for r in rows)
    return Result(x, insert, recompute, suffix, tuple(rows), above, expected, ttft, none, every, model, device, notes)


def _restore(ev, tier: Tier, x: Inputs, timing: dict) -> tuple[float, float | None]:
    """FX1240's restore time and FX1242's break-even length; the GPU tier restores nothing (0, 0)."""
    if tier.bandwidth is None:
        return 0.0, 0.0
    link = dict(kv_bytes_per_token=x.kv_bytes_per_token, kv_tier_bandwidth=tier.bandwidth)
    restore = ev("FX1240", kv_tier_latency=tier.latency, prefix_tokens=x.prefix_tokens, **link)
    per_token_move = ev("FX1240", kv_tier_latency=0, prefix_tokens=1, **link)
    per_token_compute = ev("FX1241", prefix_tokens=1, **timing)
    if per_token_move >= per_token_compute:
        return restore, None
    return restore, ev("FX1242", kv_tier_latency=tier.latency, **link, **timing)


def _ttft(ev, x: Inputs, expected: float, hit: float, recompute: float, suffix: float) -> float:
    return ev("FX1247", queue_time=x.queue_time, kv_expected_load_time=expected, kv_hit_through_tier=hit,
              prefix_recompute_time=recompute, suffix_prefill_time=suffix)


def _check(x: Inputs, tiers: list[Tier]) -> None:
    if not tiers:
        raise InputError("--tier", "give at least one tier, fastest first (e.g. --tier gpu:40GB --tier host:512GB:64GB/s)")
    for field, value in (("--prefix", x.prefix_tokens), ("--tp", x.tp_size)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(field, f"expected a whole number >= 1, got {value!r}")
    if not isinstance(x.suffix_tokens, int) or isinstance(x.suffix_tokens, bool) or x.suffix_tokens < 0:
        raise InputError("--suffix", f"expected a whole number >= 0, got {x.suffix_tokens!r}")
    for field, value in (("--insert-rate", x.insert_rate_tokens), ("--reuse-interval", x.reuse_interval),
                         ("--bytes-per-token", x.kv_bytes_per_token), ("--flops-per-token", x.flops_per_token),
                         ("--peak-flops", x.peak_flops)):
        if not value > 0:
            raise InputError(field, f"expected a positive quantity, got {value!r}")
    if not 0 < x.mfu <= 1:
        raise InputError("--mfu", f"expected a fraction in (0, 1], got {x.mfu!r}")
    if not x.queue_time >= 0:
        raise InputError("--queue-time", f"expected a time >= 0, got {x.queue_time!r}")
    names = [t.name for t in tiers]
    for i, t in enumerate(tiers):
        if names.index(t.name) != i:
            raise InputError("--tier", f"the tier name {t.name!r} is given twice")
        if not t.capacity > 0:
            raise InputError("--tier", f"{t.name}: expected a positive capacity, got {t.capacity!r}")
        if t.bandwidth is not None and not t.bandwidth > 0:
            raise InputError("--tier", f"{t.name}: expected a positive bandwidth, got {t.bandwidth!r}")
        if not t.latency >= 0:
            raise InputError("--tier", f"{t.name}: expected a latency >= 0, got {t.latency!r}")
        if t.bandwidth is None and i > 0:
            raise InputError("--tier", f"{t.name}: only the first tier (the GPU's own HBM) may omit the bandwidth; "
                                       "a lower tier needs NAME:CAPACITY:BANDWIDTH[:LATENCY]")
