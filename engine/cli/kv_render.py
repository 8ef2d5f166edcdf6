"""Text, Markdown and JSON of ``aiinfra kv sequence`` and ``aiinfra kv pages`` (results from engine.domain)."""

from __future__ import annotations

_COUNT_ROWS = (  # (Counts field, label, formula)
    ("decode_kv_reads", "K/V records read by the decode calls (history)", "FX1200"),
    ("decode_kv_appends", "K/V records appended by the decode calls", "FX1201"),
    ("sequence_kv_tokens", "final capacity: tokens held at the end", "FX1202"),
    ("decode_visible_pairs", "(query, key) pairs visible to the decode calls", "FX1203"),
    ("prefill_computed_tokens", "prefill rows computed and appended (P - C)", "FX1204"),
    ("prefill_visible_pairs", "prefill (query, key) pairs with the prefix hit", "FX1205"),
    ("prefill_full_pairs", "prefill (query, key) pairs without a hit", "FX1205"),
    ("prefix_saved_pairs", "pairs the prefix hit saves", "FX1206"),
    ("prefix_hit_tokens", "rows the prefix hit saves (C)", "FX1204"),
    ("uncached_recompute_tokens", "no cache: rows the decode calls recompute", "FX1207"),
    ("uncached_recompute_pairs", "no cache: pairs the decode calls recompute", "FX1208"),
)
_BYTE_COLUMNS = [("variant", "attention"), ("per_token", "B/token (F8)"), ("read", "read by decode (FX1209)"),
                 ("appended", "appended (FX1210)"), ("held", "held at end (FX1211)"), ("hit", "prefix hit (FX1211)")]


def render_sequence(result, fmt: str) -> str:
    from engine.cli.render import table, to_json

    c = result.counts
    if fmt == "json":
        return to_json({"model": result.model, "inputs": {"prompt_tokens": c.prompt_tokens, "decode_steps": c.decode_steps,
                                                          "prefix_hit_tokens": c.prefix_hit_tokens},
                        "counts": {k: getattr(c, k) for k, _, _ in _COUNT_ROWS if k not in ("prefix_hit_tokens",)}
                        | {"prefix_saved_tokens": c.prefix_hit_tokens, "prefix_saved_capacity_tokens": 0},
                        "bytes": [_fields(b) for b in result.bytes],
                        "conservation": _conservation(c), "formulas": result.formulas, "notes": list(result.notes)})
    md = fmt == "md"
    who = f"{result.model.split(':', 1)[-1]}: " if result.model else ""
    head = (f"{who}one sequence, prompt P = {c.prompt_tokens} tokens (prefix hit C = {c.prefix_hit_tokens}), "
            f"G = {c.decode_steps} one-token decode calls")
    rows = [{"what": label, "value": f"{getattr(c, k):,}", "formula": fid} for k, label, fid in _COUNT_ROWS]
    rows.append({"what": "capacity the prefix hit saves", "value": "0", "formula": "FX1202"})
    lines = [f"## {head}" if md else head, "", table(rows, [("what", "quantity"), ("value", "count"), ("formula", "formula")], "md" if md else "text"),
             "", "records and rows in tokens, pairs in (query token, key token) pairs per layer and query head", ""]
    lines += ["conservation:"] + [f"- {line}" if md else f"  {line}" for line in _conservation_text(c)]
    if result.bytes:
        from engine.core.humanize import friendly

        brows = [{"variant": b.variant + (" (model)" if b.native and result.model else ""), "per_token": _num(b.kv_bytes_per_token),
                  "read": friendly(b.decode_kv_read_bytes, "B"), "appended": friendly(b.decode_kv_append_bytes, "B"),
                  "held": friendly(b.sequence_kv_bytes, "B"), "hit": friendly(b.prefix_hit_bytes, "B")} for b in result.bytes]
        lines += ["", "bytes:", table(brows, _BYTE_COLUMNS, "md" if md else "text", droppable=("hit", "appended", "per_token"))]
    lines += [""] + [f"note: {n}" for n in result.notes] if result.notes else []
    return "\n".join(lines).rstrip("\n")


def _fields(record) -> dict:
    from engine.core.record import fields

    return {f.name: getattr(record, f.name) for f in fields(record)}


def _conservation(c) -> dict:
    return {"prefill_appends_plus_hit_plus_decode_appends": c.prefill_computed_tokens + c.prefix_hit_tokens + c.decode_kv_appends,
            "final_capacity": c.sequence_kv_tokens,
            "prefill_pairs_plus_saved": c.prefill_visible_pairs + c.prefix_saved_pairs, "prefill_full_pairs": c.prefill_full_pairs,
            "decode_reads_plus_own": c.decode_kv_reads + c.decode_kv_appends, "decode_visible_pairs": c.decode_visible_pairs}


def _conservation_text(c) -> list[str]:
    return [f"prefill appends {c.prefill_computed_tokens:,} + prefix hit {c.prefix_hit_tokens:,} + decode appends "
            f"{c.decode_kv_appends:,} = {c.prefill_computed_tokens + c.prefix_hit_tokens + c.decode_kv_appends:,} = final capacity {c.sequence_kv_tokens:,}",
            f"prefill pairs {c.prefill_visible_pairs:,} + saved {c.prefix_saved_pairs:,} = {c.prefill_visible_pairs + c.prefix_saved_pairs:,} "
            f"= pairs without a hit {c.prefill_full_pairs:,}",
            f"decode history reads {c.decode_kv_reads:,} + own records {c.decode_kv_appends:,} = visible pairs {c.decode_visible_pairs:,}"]


def render_pages(steps, block: int, capacity, model, per_token, module, fmt: str) -> str:
    page_bytes = None
    if per_token is not None:
        from engine.domain.kv_sequence import _Formulas

        page_bytes = _Formulas(module)("FX1222", block_tokens=block, kv_bytes_per_token=per_token)
    if fmt == "json":
        from engine.cli.render import to_json

        return to_json({"block_tokens": block, "capacity_pages": capacity, "model": model, "kv_bytes_per_token": per_token,
                        "page_bytes": page_bytes, "steps": [_step_json(s, per_token, page_bytes) for s in steps],
                        "formulas": ["FX1220", "FX1221"] + (["F8", "FX1222", "FX1223"] if per_token else []),
                        "rules": RULES})
    md = fmt == "md"
    head = f"paged K/V: {block} tokens per page, " + (f"{capacity} pages" if capacity else "unbounded pool")
    if model:
        head += f"; {model.split(':', 1)[-1]}: {_num(per_token)} B per token, {_num(page_bytes)} B per page (FX1222)"
    out = [f"## {head}" if md else head]
    for i, s in enumerate(steps, 1):
        out += [""] + _step_text(i, s, block, page_bytes, md)
    return "\n".join(out)


RULES = ["a sequence's pages are filled in order; only its last page is partly filled (FX1220, FX1221)",
         "fork shares every page of the parent (reference count + 1, nothing copied)",
         "a write to a page with more than one reference copies its valid slots to a new page first (copy-on-write)",
         "cancel frees the sequence's pages tail first; a page with no reference joins the free queue's tail, and allocation "
         "takes fresh pages while any remain, then evicts the free queue's head (vLLM KVCacheManager.free / BlockPool)"]


def _step_json(s, per_token, page_bytes) -> dict:
    data = {"op": s.op.text, "accepted": s.accepted, "reason": s.reason or None, "pages_needed": s.pages_needed,
            "copied_tokens": s.copied_tokens, "freed": list(s.freed), "evicted": list(s.evicted),
            "sequences": [{"id": q.seq, "tokens": q.tokens, "table": list(q.table), "pages": q.pages, "waste_tokens": q.waste_tokens} for q in s.seqs],
            "pages": [{"id": p.id, "used": p.used, "refs": p.refs} for p in s.pages],
            "free_queue": [{"id": p.id, "used": p.used} for p in s.free_queue],
            "totals": {"logical_tokens": s.logical_tokens, "table_pages": s.table_pages, "live_pages": s.live_pages,
                       "pages_saved_by_sharing": s.table_pages - s.live_pages, "unused_slots": s.unused_slots,
                       "waste_tokens_per_request": sum(q.waste_tokens for q in s.seqs)}}
    if per_token is not None:
        data["bytes"] = {"live": s.live_pages * page_bytes, "unused": s.unused_slots * per_token, "copied": s.copied_tokens * per_token}
    return data


def _step_text(i: int, s, block: int, page_bytes, md: bool) -> list[str]:
    from engine.cli.render import table

    status = "" if s.accepted else f"  REJECTED: {s.reason}; nothing changed"
    extra = [f"copied {s.copied_tokens} token{'s' * (s.copied_tokens != 1)} on write"] if s.copied_tokens else []
    extra += [f"freed {_ids(s.freed)}"] if s.freed else []
    extra += [f"evicted {_ids(s.evicted)}"] if s.evicted else []
    title = f"{i}. {s.op.text}{status}" + (f"  ({'; '.join(extra)})" if extra else "")
    lines = [f"### {title}" if md else title]
    rows = [{"seq": q.seq, "tokens": q.tokens, "table": _ids(q.table), "pages": q.pages, "waste": q.waste_tokens} for q in s.seqs]
    if rows:
        lines.append(table(rows, [("seq", "sequence"), ("tokens", "tokens"), ("table", "block table"), ("pages", "pages (FX1220)"),
                                  ("waste", "waste slots (FX1221)")], "md" if md else "text"))
    pages = ", ".join(f"{p.id}:{p.used}/{block}" + (f" x{p.refs}" if p.refs > 1 else "") for p in s.pages) or "none"
    queue = ", ".join(f"{p.id}:{p.used}/{block}" for p in s.free_queue) or "empty"
    shared = s.table_pages - s.live_pages
    summary = (f"live pages {s.live_pages} ({pages}); {s.logical_tokens} tokens in {s.table_pages} table entries, "
               f"{shared} saved by sharing; {s.unused_slots} empty slots")
    if page_bytes is not None:
        from engine.core.humanize import friendly

        summary += f"; {friendly(s.live_pages * page_bytes, 'B') or '0 B'} live"
    lines += [("- " if md else "  ") + summary, ("- " if md else "  ") + f"free queue, evicted first to last: {queue}"]
    return lines


def _ids(ids) -> str:
    return "[" + " ".join(str(i) for i in ids) + "]"


def _num(x) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,.6g}"
