"""Text, Markdown, CSV and JSON of ``aiinfra kv tiers`` (a result from engine.domain.kv_tiers)."""

from __future__ import annotations

MODEL = ("exclusive tiers that evict LRU and demote to the next tier act as one LRU of their summed capacity "
         "(Mattson et al. 1970; Wong and Wilkes 2002); the prefix returns after an exponential interval of mean "
         "reuse_interval (Poisson reuse) while other K/V enters at insert_rate, so it is within tiers 1..k with "
         "probability 1 - exp(-T_k / reuse_interval), T_k = capacity through k / insert rate (Che et al. 2002)")
_CSV = [("tier", "tier"), ("capacity_bytes", "capacity_bytes"), ("capacity_through_bytes", "capacity_through_bytes"),
        ("bandwidth_bytes_per_s", "bandwidth_bytes_per_s"), ("latency_s", "latency_s"), ("characteristic_time_s", "characteristic_time_s"),
        ("hit_through", "hit_through"), ("hit_rate", "hit_rate"), ("restore_time_s", "restore_time_s"), ("load_time_s", "load_time_s"),
        ("break_even_tokens", "break_even_tokens")]
_TEXT = [("tier", "tier"), ("capacity", "capacity"), ("bandwidth", "bandwidth"), ("latency", "latency"),
         ("t_c", "T_C (FX1243)"), ("through", "hit within (FX1244)"), ("hit", "tier hit (FX1245)"),
         ("restore", "restore (FX1240)"), ("load", "load (FX1246)"), ("even", "break-even (FX1242)")]


def render(result, fmt: str) -> str:
    if fmt == "json":
        from engine.cli.render import to_json

        return to_json(_json(result))
    from engine.cli.render import table

    if fmt == "csv":
        return table([_csv_row(t) for t in result.tiers], _CSV, "csv")
    md = fmt == "md"
    x = result.inputs
    who = ", ".join(p.split(":", 1)[-1] for p in (result.model, result.device) if p)
    head = (f"{who + ': ' if who else ''}prefix of {x.prefix_tokens:,} tokens"
            + (f" + {x.suffix_tokens:,} new tokens" if x.suffix_tokens else "")
            + f", reused every {_time(x.reuse_interval)} on average, other K/V entering at {x.insert_rate_tokens:,.6g} tokens/s")
    lines = [f"## {head}" if md else head, "",
             table([_text_row(t) for t in result.tiers], _TEXT, "md" if md else "text",
                   droppable=("latency", "bandwidth", "t_c", "through", "even", "load")), ""]
    bullet = "- " if md else "  "
    lines += [f"{bullet}recompute the prefix (FX1241): {_time(result.recompute_time)} "
              f"({x.prefix_tokens:,} x {x.flops_per_token:.4g} FLOP / ({x.tp_size} x {x.peak_flops:.4g} FLOP/s x MFU {x.mfu:g}))",
              f"{bullet}K/V {x.kv_bytes_per_token:,.6g} B per token: the prefix is {_bytes(x.prefix_tokens * x.kv_bytes_per_token)}; "
              f"insert rate {result.insert_rate_bytes / 1e9:.4g} GB/s",
              f"{bullet}hit rate over all tiers {result.hit_total:.4f}; expected load time of a hit {_time(result.expected_load_time)}",
              f"{bullet}TTFT (FX1247): {_time(result.ttft)} at these hit rates; {_time(result.ttft_no_cache)} with no cache"
              + (f" (queue {_time(x.queue_time)}" if x.queue_time else " (no queueing")
              + (f", the new tokens' prefill {_time(result.suffix_prefill_time)})" if x.suffix_tokens else ")"),
              f"{bullet}TTFT if every return hit one tier: " + ", ".join(f"{n} {_time(v)}" for n, v in result.ttft_all_hit)]
    never = [t.name for t in result.tiers if t.break_even_tokens is None]
    if never:
        lines.append(f"{bullet}restoring never beats recomputing from {', '.join(never)}: a token moves slower than it recomputes, "
                     "so a hit there is recomputed (FX1246)")
    lines += ["", f"model: {MODEL}"] + [f"note: {n}" for n in result.notes]
    return "\n".join(lines)


def _json(result) -> dict:
    from engine.core.record import fields

    x = result.inputs
    return {"model": result.model, "device": result.device,
            "inputs": {f.name: getattr(x, f.name) for f in fields(x)},
            "insert_rate_bytes": result.insert_rate_bytes, "recompute_time": result.recompute_time,
            "suffix_prefill_time": result.suffix_prefill_time,
            "tiers": [{f.name: getattr(t, f.name) for f in fields(t)} for t in result.tiers],
            "hit_total": result.hit_total, "expected_load_time": result.expected_load_time, "ttft": result.ttft,
            "ttft_no_cache": result.ttft_no_cache, "ttft_all_hit": dict(result.ttft_all_hit),
            "units": {"capacity": "B", "bandwidth": "B/s", "latency": "s", "characteristic_time": "s", "restore_time": "s",
                      "load_time": "s", "break_even_tokens": "tokens", "ttft": "s", "insert_rate_bytes": "B/s"},
            "hit_model": MODEL, "formulas": result.formulas, "notes": list(result.notes)}


def _csv_row(t) -> dict:
    return {"tier": t.name, "capacity_bytes": t.capacity, "capacity_through_bytes": t.capacity_through,
            "bandwidth_bytes_per_s": "" if t.bandwidth is None else t.bandwidth, "latency_s": t.latency,
            "characteristic_time_s": t.characteristic_time, "hit_through": t.hit_through, "hit_rate": t.hit_rate,
            "restore_time_s": t.restore_time, "load_time_s": t.load_time,
            "break_even_tokens": "never" if t.break_even_tokens is None else t.break_even_tokens}


def _text_row(t) -> dict:
    even = "-" if t.bandwidth is None else "never" if t.break_even_tokens is None else f"{t.break_even_tokens:,.1f} tokens"
    return {"tier": t.name, "capacity": _bytes(t.capacity), "bandwidth": "in HBM" if t.bandwidth is None else f"{t.bandwidth / 1e9:.4g} GB/s",
            "latency": _time(t.latency), "t_c": _time(t.characteristic_time), "through": f"{t.hit_through:.4f}",
            "hit": f"{t.hit_rate:.4f}", "restore": _time(t.restore_time),
            "load": _time(t.load_time) + ("" if t.restores else " (recompute)"), "even": even}


def _bytes(n: float) -> str:
    from engine.core.humanize import friendly

    return friendly(n, "B") or "0 B"


def _time(s: float) -> str:
    if s == 0:
        return "0 s"
    if s < 1e-3:
        return f"{s * 1e6:.4g} us"
    if s < 1:
        return f"{s * 1e3:.4g} ms"
    if s < 600:
        return f"{s:.4g} s"
    if s < 2 * 86400:
        return f"{s / 3600:.4g} h" if s >= 7200 else f"{s / 60:.4g} min"
    return f"{s / 86400:.4g} d"
