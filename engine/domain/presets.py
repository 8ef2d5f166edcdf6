"""Presets: calculator inputs filled from a model record (``--model``) or a device (``--device``).

Each filled value carries where it came from (the record, the config key or datasheet field,
and the record's own source), so a result can say "layers = 36 (preset model:qwen3-8b:
config.json num_hidden_layers, Qwen/Qwen3-8B@b968826)". A preset never overrides a value the
user gave, and only symbols the calculator's chain can reach are filled.
"""

from __future__ import annotations

from engine.core.errors import InputError


def _model_source(record: dict) -> str:
    src = record.get("source", {})
    repo = src.get("repo", "")
    rev = str(src.get("revision", ""))
    rev = rev[:7] if len(rev) == 40 else rev
    return f"{repo}@{rev}" if repo else record["id"]


# Calculators whose formulas size a hybrid (recurrent layers beside attention layers: their K/V
# comes from the attention layers alone and each request adds a fixed state, FX71 variant hybrid)
# and DeepSeek Sparse Attention (an indexer key per token beside the latent, FX71 sparse_indexed).
HYBRID_CALCULATORS = frozenset({"calc:kv-concurrency"})
# Calculators that size a served model's weights: bytes_param is the official checkpoint's (its storage block: FP8
# for DeepSeek-V3 and Kimi K2, MXFP4 experts for gpt-oss), scales included; training keeps 16-bit working weights.
SERVING_CALCULATORS = frozenset({"calc:kv-concurrency", "calc:inference-capacity", "calc:serving-fleet", "calc:speculative-decoding",
                                 "calc:energy-per-token"})
# Calculators whose chain never reads peak_flops: a device that states no peak at --precision still fills their values.
PEAKLESS_CALCULATORS = frozenset({"calc:kv-concurrency", "calc:training-memory", "calc:checkpoint-window", "calc:collective", "calc:power-tco"})


def model_values(record: dict, root, calculator: str | None = None) -> dict[str, tuple[object, str]]:
    """symbol -> (value, source) for every formula symbol a model record decides.

    The record's family fills what is its own (engine.domain.families): a hybrid is filled only for a
    calculator of HYBRID_CALCULATORS (``calculator``), with its attention layers as ``layers`` and its
    recurrent state per request, and so is DeepSeek Sparse Attention, with its indexer keys; elsewhere,
    and for a family no calculator holds, the family refuses the model by name.
    """
    from engine.domain import models
    from engine.domain.families import Use, family_of, refuse, shape_of

    cfg, d = record["config"], record["derived"]
    where = _model_source(record)
    ident = record["id"]
    out: dict[str, tuple[object, str]] = {}

    def put(symbol: str, value, key: str) -> None:
        if value is not None:
            out[symbol] = (value, f"preset {ident}: {key} ({where})")

    shape = shape_of(record)
    family = family_of(shape)
    refuse(Use.KV_CONCURRENCY if calculator in HYBRID_CALCULATORS else Use.CALCULATORS, shape)
    family.preset_values(shape, root, put)  # layers (a hybrid's attention layers), and a hybrid's state or DSA's indexer keys
    put("hidden", shape.hidden, "config hidden_size")
    put("heads", shape.heads, "config num_attention_heads")
    put("attention", shape.attention, "derived attention kind")
    if shape.attention == "mla":
        for key in ("kv_lora_rank", "qk_rope_head_dim", "q_lora_rank", "qk_nope_head_dim", "v_head_dim"):
            put(key, shape.mla.get(key), f"config {key}")
    else:
        put("kv_heads", shape.kv_heads, "config num_key_value_heads" if shape.attention == "gqa" else f"{shape.attention}: derived")
        put("head_dim", shape.head_dim, "config head_dim" if d.get("head_dim_stated") else "hidden_size / num_attention_heads")
    put("vocab_size", cfg.get("vocab_size"), "config vocab_size")
    put("max_position_embeddings", cfg.get("max_position_embeddings"), "config max_position_embeddings")  # not a symbol: a plausibility limit
    put("ffn_hidden", d.get("ffn_hidden"), "config intermediate_size")
    put("mlp_gating", d.get("mlp"), "derived MLP form")
    put("tie_embeddings", "tied" if cfg.get("tie_word_embeddings", True) else "untied", "config tie_word_embeddings")
    moe = shape.moe
    put("model_arch", "moe" if moe else "dense", "derived family")
    if moe:
        put("n_experts", moe["experts"], "config routed experts")
        put("top_k", moe["experts_per_token"], "config num_experts_per_tok")
        put("moe_ffn_hidden", moe["expert_intermediate_size"], "config expert intermediate size")
        put("n_shared_experts", moe.get("shared_experts", 0), "config n_shared_experts")
        put("n_dense_layers", moe.get("dense_first_layers", 0), "config first_k_dense_replace")
    window = shape.window
    if "kv_layout" not in out:  # a hybrid's or DSA's layout is its family's (preset_values)
        put("kv_layout", "sliding_window" if window else "full", "derived sliding-window layers" if window else "no sliding window in config")
    if window:
        put("sliding_window", window["window"], "config sliding_window")
        put("window_layers", window["windowed_layers"], f"derived: {window['pattern']}")
    counts = models.parameter_count(record, root)
    put("params", counts["total"], "parameter count from the architecture (FX17 + listed extras)")
    put("params_active", counts["active"], "active parameters per token (FX18 + listed extras)")
    stored = record.get("storage")
    if stored and calculator in SERVING_CALCULATORS:  # params x bytes_param = the checkpoint's bytes (F6)
        from engine.domain.state import checkpoint_text

        put("bytes_param", stored["weight_bytes"] / counts["total"], f"{stored['weight_bytes']} B / {counts['total']} parameters: "
                                                                     + checkpoint_text(record))
        if moe and stored.get("quantised_format"):  # experts in a format of their own (gpt-oss: MXFP4): FX1402's separate variant
            from engine.domain import storage

            fmt = storage.resolve(stored["quantised_format"], "--model", root)
            put("expert_storage", "separate", f"storage: the routed experts stored as {fmt.name}, the rest at {stored['unquantised_bytes']:g} B")
            put("bytes_param_expert", fmt.bytes, f"storage: {fmt.source('quantised_format')}")
    return out


# Bytes per element of a cached KV entry by --precision name (book Appendix B table B.4); a
# precision without a KV format here (fp64, tf32: a compute mode) leaves kv_bytes to be given.
KV_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "fp6": 0.75, "fp4": 0.5, "int8": 1, "int4": 0.5}


def precision_values(precision: str) -> dict[str, tuple[object, str]]:
    """kv_bytes from ``--precision`` (a value the user gives, or a --model/--device preset, is never overridden)."""
    from engine.domain.hardware import FORMATS, PRECISIONS

    if precision in FORMATS:  # a block-scaled format: its K/V cache in the same format, scales included (FX650)
        from engine.domain import storage

        fmt = storage.resolve(precision, "--precision")
        return {"kv_bytes": (fmt.bytes, fmt.source("--precision"))}
    if precision not in PRECISIONS:
        raise InputError("--precision", f"{precision!r} is not a known precision (known: {', '.join(PRECISIONS + tuple(FORMATS))})")
    size = KV_BYTES.get(precision)
    if size is None:
        return {}
    return {"kv_bytes": (size, f"--precision {precision}: {size:g} B per element (book Appendix B table B.4)")}


def device_values(device, precision: str = "bf16") -> dict[str, tuple[object, str]]:
    """symbol -> (value, source) for every formula symbol a device record decides."""
    ident = device.id
    out: dict[str, tuple[object, str]] = {}
    mem_src = device.record["memory"].get("source", "datasheet")
    total = device.driver_total  # what serving engines budget from; the datasheet's nominal capacity is a different number
    if total is not None:
        label = "driver-reported total" if total.measured else "derived usable total"
        out["gpu_memory_total"] = (total.bytes, f"preset {ident}: {label} {total.text} — {total.source}")
    out["hbm_capacity"] = (device.memory_bytes, f"preset {ident}: memory capacity {device.memory_text} — {mem_src}")
    out["hbm_bandwidth"] = (device.bandwidth, f"preset {ident}: memory bandwidth {device.bandwidth_text} — {mem_src}")
    from engine.domain.hardware import FORMATS, select_format_peak

    if precision in FORMATS:  # a block-scaled format runs where the record states it (refused elsewhere)
        peak = select_format_peak(device, precision).peak
    else:
        peak = device.headline(precision)
    if peak is not None:
        out["peak_flops"] = (peak.flops, f"preset {ident}: dense {precision} peak {peak.text} — {peak.source}")
    if device.tdp_w is not None:
        out["gpu_tdp"] = (device.tdp_w, f"preset {ident}: TDP {device.record['tdp']['value']} — {device.record['tdp']['source']}")
    for m in device.measured:  # a realistic band where a measured source exists (never invented)
        if m.kind == "mfu" and m.precision == precision:
            out["mfu"] = ([(m.low + m.high) / 2, m.low, m.high], f"preset {ident}: measured MFU {m.low:g}..{m.high:g} ({m.workload}) — {m.source}")
        elif m.kind == "memory_bandwidth":
            out["mbu"] = ([(m.low + m.high) / 2, m.low, m.high], f"preset {ident}: measured share of peak memory bandwidth {m.low:g}..{m.high:g} ({m.workload}) — {m.source}")
    measured = device.measured_bus_bandwidth("allreduce")
    if measured:  # what the book asks for instead of a discount of the nominal rate (F20): a measured busBw
        bw, m = measured
        out["eff_bandwidth"] = (bw, f"preset {ident}: measured all-reduce busBw {m['bus_bandwidth']} ({m['algorithm']}, {m['ranks']} ranks, "
                                    f"{m['message']} messages, {m['system']}) — {m['source']}; valid for that group size and fabric")
    link = device.interconnect or {}
    if link.get("per_direction"):
        from engine.domain.hardware import quantity

        out["nominal_bandwidth"] = (quantity(link["per_direction"], "B/s"),
                                    f"preset {ident}: {link.get('name', 'interconnect')} per direction {link['per_direction']} — {link.get('source', '')}")
    return out


# The preset table of one (root, model, device, precision) is kept in this process. Its files
# (the model and hardware records and the formulas) are stat-ed at most every FRESH_INTERVAL
# seconds; when a stat changes, or a file is newer than RACY_NS (a second edit in the same
# timestamp tick leaves the stat unchanged), the content key decides, as in
# engine.numeric.compiled. The engine's own sources (this module, hardware.py, every
# engine/domain/model*.py, which derive the records, and engine/domain/families/*.py, which
# count them and fill their family's values) are in the key, not stat-ed.
FOLDERS = ("knowledge/models", "knowledge/hardware", "formulas")
FRESH_INTERVAL = 0.01
RACY_NS = 2_000_000_000
_MEMO: dict[tuple, list] = {}  # (absolute root, model, device, precision) -> [stamp, racy, key, table, checked_at, ignored problems]


def cached(root, model: str | None, device: str | None, precision: str = "bf16", calculator: str | None = None) -> dict[str, tuple[object, str]]:
    """``build`` kept in this process and through a JSON cache keyed by the model, hardware and
    formula files (errors are not cached). A new dict each call; the values are shared.
    ``calculator``: the calculator the values are for (a hybrid model is filled only for HYBRID_CALCULATORS)."""
    import os
    import time

    calculator = calculator if calculator in HYBRID_CALCULATORS | SERVING_CALCULATORS | PEAKLESS_CALCULATORS else None  # tables that differ
    path = os.path.abspath(os.fspath(root))
    memo = (path, model or "", device or "", precision, calculator or "")
    hit = _MEMO.get(memo)
    now = time.monotonic()
    if hit is None or not (now - hit[4] < FRESH_INTERVAL or _still_fresh(memo, hit, now)):
        stamp, racy = _stamp(path)  # before the key: an edit in between shows at the next check
        key = _key(path, model, device, precision, calculator)
        table, ignored = _table(path, key, model, device, precision, calculator)
        hit = _MEMO[memo] = [stamp, racy, key, table, now, ignored]
    if hit[5]:  # problems in other model or device records: one warning (aiinfra check lists them)
        from engine.kb.folders import warn_ignored

        warn_ignored(hit[5])
    return dict(hit[3])


def load(root, model: str | None, device: str | None, precision: str = "bf16", calculator: str | None = None) -> dict[str, tuple[object, str]]:
    """The preset values for ``--model``/``--device``: ``cached`` (the API and the CLI share it)."""
    return cached(root, model, device, precision, calculator)


def forget() -> None:
    """Drop every kept preset table: the next ``cached`` call reads the cache again."""
    _MEMO.clear()


def _key(path: str, model: str | None, device: str | None, precision: str, calculator: str | None = None) -> str:
    import zlib

    from engine.numeric import compiled

    args = f"{model or ''}|{device or ''}|{precision}" + (f"|{calculator}" if calculator else "")
    return compiled.files_key(path, list(FOLDERS), _own()) + f"{zlib.crc32(args.encode()):08x}"


def _own() -> list[str]:
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    models = sorted(n for n in os.listdir(here) if n.startswith("model") and n.endswith(".py"))
    families = sorted(n for n in os.listdir(os.path.join(here, "families")) if n.endswith(".py"))
    return ["engine/domain/presets.py", "engine/domain/hardware.py", "engine/domain/usable_memory.py", "engine/domain/state.py"] + \
        [f"engine/domain/{n}" for n in models] + [f"engine/domain/families/{n}" for n in families]


def _table(path: str, key: str, model: str | None, device: str | None, precision: str,
           calculator: str | None = None) -> dict[str, tuple[object, str]]:
    from engine.numeric import compiled

    def fresh() -> dict:
        ignored: list[str] = []
        return {"values": build(path, model, device, precision, calculator, ignored), "ignored": ignored}

    found = compiled.json_cached("presets", key, fresh)
    return {k: tuple(v) for k, v in found["values"].items()}, list(found["ignored"])


def _still_fresh(memo: tuple, hit: list, now: float) -> bool:
    path, model, device, precision, calculator = memo
    stamp, racy = _stamp(path)
    if stamp == hit[0] and not hit[1]:
        hit[4] = now
        return True
    if _key(path, model or None, device or None, precision, calculator or None) != hit[2]:
        return False
    hit[0], hit[1], hit[4] = stamp, racy, now
    return True


def _stamp(path: str) -> tuple[tuple, bool]:
    """(name, size, mtime, ctime, inode) of every YAML file of FOLDERS, and whether any is newer than RACY_NS."""
    import os
    import time

    found: list[tuple] = []
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(path, folder)):
            dirnames.sort()
            for name in sorted(n for n in filenames if n.endswith(".yaml")):
                try:
                    st = os.stat(os.path.join(dirpath, name))
                except OSError:
                    continue
                found.append((os.path.join(dirpath, name), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    newest = max((max(entry[2], entry[3]) for entry in found), default=0)
    return tuple(found), newest > time.time_ns() - RACY_NS


def build(root, model: str | None, device: str | None, precision: str = "bf16", calculator: str | None = None,
          ignored: list | None = None) -> dict[str, tuple[object, str]]:
    """The preset values for ``--model``/``--device`` (the device wins on a shared symbol; none do today).
    A broken record beside the model or device asked for does not stop it (#24): its problems are appended
    to ``ignored`` (or are one warning on stderr when ``ignored`` is None)."""
    from engine.kb.folders import find_one

    out: dict[str, tuple[object, str]] = {}
    if model:
        from engine.domain import models

        out.update(model_values(find_one(root, "models", lambda v: models.find(v.models, model, "--model"), ignored), root, calculator))
    if device:
        from engine.domain import hardware

        dev = find_one(root, "hardware", lambda v: hardware.find(v, device, "--device"), ignored)
        values = device_values(dev, precision)
        if "peak_flops" not in values and calculator not in PEAKLESS_CALCULATORS:  # a calculator that never reads it runs
            known = sorted({p.precision for p in dev.peaks if not p.sparse})
            has = f"it has: {', '.join(known)}" if known else "it states no peak at any precision: the vendor publishes none"
            raise InputError("--precision", f"{dev.short_id} states no dense {precision} peak ({has})")
        out.update(values)
    return out

