"""``aiinfra roofline``: the bound of given work on a device, or of every operator of a forward pass."""

from __future__ import annotations

from engine.cli.common import emit, root_of
from engine.cli.render import table, to_json
from engine.core.errors import InputError, UnitError
from engine.core.humanize import friendly, number
from engine.core.units import parse_quantity
from engine.domain import hardware, roofline


def run(args) -> int:
    """Reads only what it needs: the hardware folder (a cached index), the compiled formulas
    and, with --model, the cached model and template module the ``forward`` command reads."""
    root = root_of(args)
    _check_mode(args)
    from engine.kb.folders import find_one

    device = find_one(root, "hardware", lambda view: hardware.find(view, args.device, "--device"))  # another broken device: a warning
    selection = hardware.select_peak(device, args.precision, args.accumulator, args.sparse)
    module = roofline.formula_module(root)
    if args.model:
        emit(_model_mode(args, root, device, selection, module))
        return 0
    flops, bytes_ = read_quantity(args.flops, "FLOP", "--flops"), read_quantity(args.bytes, "B", "--bytes")
    result = roofline.bound(module, flops, bytes_, selection.peak.flops, device.bandwidth)
    bands = roofline.bands(device, result, selection.peak.precision)
    link = _link(args, module, device, flops, selection.peak.flops)
    emit(render(device, selection, result, bands, args.format, link))
    return 0


def _link(args, module, device, flops: float, peak: float):
    """The interconnect roofline when --link-bytes is given (None otherwise)."""
    given = getattr(args, "link_bytes", None)
    if given is None:
        if getattr(args, "link_bandwidth", None) is not None:
            raise InputError("--link-bandwidth", "applies with --link-bytes (the bytes the chip sends over the link)")
        return None
    link_bytes = read_quantity(given, "B", "--link-bytes")
    if getattr(args, "link_bandwidth", None) is not None:
        bandwidth = read_quantity(args.link_bandwidth, "B/s", "--link-bandwidth")
        source = "given"
    else:
        ic = device.interconnect or {}
        if not ic.get("per_direction"):
            raise InputError("--link-bandwidth", f"{device.id} states no per-direction interconnect bandwidth; give one (e.g. 450GB/s)")
        bandwidth = hardware.quantity(ic["per_direction"], "B/s")
        source = f"{device.id}: {ic.get('name', 'interconnect')} per direction {ic['per_direction']} [{ic.get('source', '')}]"
    if bandwidth <= 0:
        raise InputError("--link-bandwidth", "expected a bandwidth above 0 B/s")
    return roofline.link_bound(module, flops, link_bytes, peak, bandwidth), source


def _check_mode(args) -> None:
    if args.model:
        if args.flops or args.bytes or getattr(args, "link_bytes", None):
            raise InputError("--model", "bounds the model's own operators; drop --flops, --bytes and --link-bytes")
        if args.tokens is None:
            raise InputError("--tokens", "is needed with --model (new tokens per sequence)")
        for name, value in (("tokens", args.tokens), ("batch", args.batch), ("tp", _tp(args))):
            if value < 1:
                raise InputError(f"--{name}", f"expected a whole number >= 1, got {value}")
        if args.history < 0:
            raise InputError("--history", f"expected a whole number >= 0, got {args.history}")
        return
    if _tp(args) != 1:
        raise InputError("--tp", "splits a model's operators over the ranks; use it with --model (divide --flops and --bytes yourself)")
    for flag, attr in (("--weights", "weights"), ("--kv-cache", "kv_cache")):
        if getattr(args, attr, None):
            raise InputError(flag, "sizes a model's weights or K/V cache; use it with --model (--bytes is given whole)")
    for option, value in (("--flops", args.flops), ("--bytes", args.bytes)):
        if value is None:
            raise InputError(option, "is needed (or --model with --tokens to bound a forward pass)")


def _tp(args) -> int:
    return getattr(args, "tp", 1)


def read_quantity(text: str, unit: str, option: str) -> float:
    """One non-negative value in ``unit`` from the command line (units accepted as with --set)."""
    try:
        q = parse_quantity(text, unit)
    except UnitError as exc:
        raise InputError(option, f"{exc.text!r} {exc.message}") from None
    if q.is_range:
        raise InputError(option, "takes a single value")
    if q.value < 0:
        raise InputError(option, f"expected a value >= 0 {unit}, got {q.value:g}")
    return q.value


# ---------------------------------------------------------------------------- one bound


def to_dict(device, selection, result: roofline.Bound, bands, link=None) -> dict:
    """The calculation contract of DESIGN.md ("JSON result of a calculation"), plus the device and peak."""
    def point(value, unit, source):
        return {"value": value, "unit": unit, "low": value, "high": value, "source": source}

    def out(value, unit):
        return {"value": value, "unit": unit, "low": value, "high": value, "method": "exact"}

    peak = selection.peak
    return {
        "calculator": "roofline",
        "device": device.id,
        "peak": roofline.describe_peak(selection),
        "inputs": {
            "op_flops": point(result.flops, "FLOP", "given"),
            "op_bytes": point(result.bytes, "B", "given"),
            "peak_flops": point(peak.flops, "FLOP/s", f"{device.id}: {peak.source}"),
            "hbm_bandwidth": point(device.bandwidth, "B/s", f"{device.id}: {device.record['memory']['source']}"),
        },
        "outputs": {
            "arith_intensity": out(result.intensity, "FLOP/B"),
            "ridge_intensity": out(result.ridge, "FLOP/B"),
            "attainable_flops": out(result.attainable, "FLOP/s"),
            "time_bound": out(result.time, "s"),
            "compute_time": out(result.compute_time, "s"),
            "memory_time": out(result.memory_time, "s"),
        },
        "bottleneck": result.bottleneck,
        "measured": [_band(b) for b in bands],
        "formulas": list(roofline.FORMULAS),
        "assumptions": ["time >= max(FLOPs / peak, bytes / bandwidth): perfect overlap of compute and memory traffic, HBM the only data path"],
        "warnings": [f"{peak.precision} peak is 2:4 structured-sparse: valid only for sparse operands with sparse kernels"] if peak.sparse else [],
    } | (_link_dict(link, point, out) if link else {})


def _link_dict(link, point, out) -> dict:
    bound, source = link
    return {"link": {
        "inputs": {"link_bytes": point(bound.link_bytes, "B", "given"), "link_bandwidth": point(bound.link_bandwidth, "B/s", source)},
        "outputs": {"comm_intensity": out(bound.intensity, "FLOP/B"), "link_critical_intensity": out(bound.ridge, "FLOP/B"),
                    "link_time": out(bound.link_time, "s"), "compute_time": out(bound.compute_time, "s")},
        "bottleneck": bound.bottleneck,
        "formulas": [roofline.LINK_INTENSITY, roofline.LINK_RIDGE],
        "assumptions": ["the transfer overlaps the compute perfectly: the work is network-bound when it sends more than one byte per "
                        "link_critical_intensity FLOPs (scaling-book roofline chapter, network roofline)"],
    }}


def _band(b: roofline.Band) -> dict:
    return {"kind": b.kind, "low": b.low, "high": b.high, "time_low": b.time_low, "time_high": b.time_high, "workload": b.workload, "source": b.source}


def render(device, selection, result: roofline.Bound, bands, fmt: str, link=None) -> str:
    data = to_dict(device, selection, result, bands, link)
    if fmt == "json":
        return to_json(data)
    if fmt == "csv":
        rows = [dict(kind="input", name=n, value=v["value"], unit=v["unit"], note=v["source"]) for n, v in data["inputs"].items()]
        rows += [dict(kind="output", name=n, value=v["value"], unit=v["unit"], note="") for n, v in data["outputs"].items()]
        rows.append(dict(kind="output", name="bottleneck", value=result.bottleneck, unit="", note=""))
        if link:
            rows += [dict(kind="input", name=n, value=v["value"], unit=v["unit"], note=v["source"]) for n, v in data["link"]["inputs"].items()]
            rows += [dict(kind="output", name=n, value=v["value"], unit=v["unit"], note="") for n, v in data["link"]["outputs"].items()
                     if n != "compute_time"]
            rows.append(dict(kind="output", name="link_bottleneck", value=data["link"]["bottleneck"], unit="", note=""))
        return table(rows, [(c, c) for c in ("kind", "name", "value", "unit", "note")], "csv")
    md = fmt == "md"
    peak = selection.peak
    lines = [f"## Roofline on {device.id}" if md else f"Roofline on {device.id} ({device.name})", ""]
    lines.append(f"peak: {peak.label}" + (f"; {peak.derivation}" if peak.derivation else "") + f" [{peak.source}]")
    lines += [f"note: {n}" for n in selection.notes]
    lines.append(f"bandwidth: {device.bandwidth_text} [{device.record['memory']['source']}]")
    lines.append("")
    lines += _bound_lines(result)
    if link:
        lines += _link_lines(*link)
    lines += _band_lines(bands)
    for w in data["warnings"]:
        lines.append(f"warning: {w}")
    lines.append(f"formulas: {', '.join(roofline.FORMULAS + ((roofline.LINK_INTENSITY, roofline.LINK_RIDGE) if link else ()))}")
    return "\n".join(lines)


def _bound_lines(r: roofline.Bound) -> list[str]:
    return [
        f"work: {number(r.flops)} FLOP, {number(r.bytes)} B",
        f"arithmetic intensity = {_intensity(r.intensity)} FLOP/B (FX36)",
        f"ridge point = {number(r.ridge)} FLOP/B (FX37)",
        f"attainable = {number(r.attainable)} FLOP/s" + _also(r.attainable, "FLOP/s") + " (FX38)",
        f"compute time = {_seconds(r.compute_time)}, memory time = {_seconds(r.memory_time)}",
        f"time bound = {_seconds(r.time)}, {r.bottleneck}-bound",
    ]


def _link_lines(b: roofline.LinkBound, source: str) -> list[str]:
    return [
        "",
        f"link: {number(b.link_bytes)} B sent at {number(b.link_bandwidth)} B/s per direction [{source}]",
        f"communication intensity = {_intensity(b.intensity)} FLOP/B (FX705)",
        f"link ridge = {number(b.ridge)} FLOP/B (FX706)",
        f"compute time = {_seconds(b.compute_time)}, link time = {_seconds(b.link_time)}",
        f"{'network-bound: the transfer outlasts the compute' if b.bottleneck == 'network' else 'compute-bound: the transfer can hide under the compute'}",
    ]


def _calibrated_lines(root, device: str, whole, peak: float, bandwidth: float, tokens: int) -> list[str]:
    """The totals at the serving calibration's efficiencies for the device's generation (aiinfra validate)."""
    from engine.measure import fitted

    c = fitted.constants(root, "serve", device)
    if c is None:
        return []
    v, frm = c["values"], c["from"]
    matrix = "e_decode" if tokens == 1 else "e_prefill"
    t = max(whole.flops / (peak * v[matrix]), whole.bytes / (bandwidth * v["e_hbm"]))
    b = c["band"]
    band = (f"; held out, {b['held_out_within_30']:.0f}% of serving rows within +-30% (median error x{b['held_out_median_error_factor']:.2f})"
            if b.get("held_out_within_30") is not None else "")
    return [f"calibrated ({'decode' if tokens == 1 else 'prefill'}; knowledge/calibration/fitted.json, serve, {frm[matrix]}): matrix efficiency "
            f"{v[matrix]:.2f}, HBM efficiency {v['e_hbm']:.2f} -> {_seconds(t)}{band}"]


def _band_lines(bands) -> list[str]:
    out = []
    for b in bands:
        ratio = f"{b.low:.0%}" if b.low == b.high else f"{b.low:.0%}-{b.high:.0%}"
        span = _seconds(b.time_low) if b.low == b.high else f"{_seconds(b.time_low)} .. {_seconds(b.time_high)}"
        out.append(f"measured {b.kind} on this device: {ratio} of peak ({b.workload}) -> {span} [{b.source}]")
    return out


def _seconds(t: float) -> str:
    return f"{number(t)} s" + _also(t, "s")


def _also(value: float, unit: str) -> str:
    extra = friendly(value, unit)
    return f" ({extra})" if extra else ""


def _intensity(x: float) -> str:
    return "unbounded (no bytes)" if x == float("inf") else number(x)


# ---------------------------------------------------------------------------- forward ledger


def _storage(args, root, selection, record: dict | None = None) -> tuple[float, float]:
    """Bytes per weight and per cached K/V element from --weights / --kv-cache (default: the format the official
    checkpoint ships where it is one plain format, FP8 for DeepSeek-V3 and Kimi K2, else BF16; K/V BF16);
    the compute peak (--precision) may not be narrower than the weights (FX651)."""
    from engine.domain import storage

    shipped = ((record or {}).get("storage") or {}).get("format")
    default = shipped if shipped in storage.PLAIN_BITS else "bf16"
    weights = storage.resolve(getattr(args, "weights", None) or default, "--weights", root)
    if getattr(args, "weights", None):
        storage.check_compute(weights, args.precision)
    kv = storage.resolve(args.kv_cache, "--kv-cache", root).bytes if getattr(args, "kv_cache", None) else 2.0
    return weights.bytes, kv


def _check_fit(args, device, record: dict, weight_bytes: float) -> None:
    """Refuse a model whose weights do not fit one GPU of the TP group (issue 28): the record's stored weights (or
    parameters x --weights) / --tp against the usable memory every serving command budgets (FX72's vLLM rule)."""
    from engine.cli.cmd_state import serving_memory
    from engine.domain.state import weight_storage

    params = record["parameters"]["total"]
    total, source = (params * weight_bytes, f"{params} parameters x {weight_bytes:g} B (--weights)") if getattr(args, "weights", None) \
        else weight_storage(record)
    tp = _tp(args)
    usable, rule = serving_memory(device)
    if total / tp > usable:
        hint = "give --tp N to split them" if tp == 1 else "give a larger --tp"
        raise InputError("--model", f"{args.model}'s weights do not fit {device.short_id}: {total / tp / 2**30:.2f} GiB per GPU "
                                    f"({source}{f', / TP {tp}' if tp > 1 else ''}) > {usable / 2**30:.2f} GiB usable ({rule}); "
                                    f"{hint} or store them narrower (--weights)")


def _model_mode(args, root, device, selection, module) -> str:
    if not roofline.ledger_available():
        raise InputError("--model", "the per-operator forward ledger (engine/domain/ledger.py) is not available in this installation yet")
    from engine.domain import ledger

    catalog = ledger.load_root(root)
    record = catalog.model(args.model)
    weights, kv = _storage(args, root, selection, record)
    _check_fit(args, device, record, weights)
    result = ledger.forward_record(record, catalog.templates, args.tokens, batch=args.batch, history=args.history, formulas=module,
                                   weight_bytes=weights, kv_bytes=kv)
    tp = _tp(args)
    per_gpu = roofline.shard(result.rows, tp, roofline.kv_share(module, record, tp) if tp > 1 else 1.0)
    rows = roofline.operator_bounds(module, per_gpu, selection.peak.flops, device.bandwidth)
    total_flops = sum(r.bound.flops for r in rows)
    total_bytes = sum(r.bound.bytes for r in rows)
    whole = roofline.bound(module, total_flops, total_bytes, selection.peak.flops, device.bandwidth)
    per_op = sum(r.bound.time for r in rows)
    data = {
        "calculator": "roofline",
        "device": device.id,
        "model": args.model,
        "scenario": {"tokens": args.tokens, "batch": args.batch, "history": args.history, "weight_bytes_per_element": weights,
                     "kv_bytes_per_element": kv},
        "peak": roofline.describe_peak(selection),
        "hbm_bandwidth": device.bandwidth,
        "operators": [_op_dict(r) for r in rows],
        "totals": {"matrix_flops": total_flops, "bytes": total_bytes, "sum_of_operator_bounds_s": per_op,
                   "single_roofline_s": whole.time, "single_roofline_bottleneck": whole.bottleneck},
        "formulas": list(roofline.FORMULAS),
        "assumptions": ["each operator runs alone at its own roofline bound; the sum assumes no overlap between operators",
                        "matrix FLOPs are charged at the matrix-unit peak; scalar operations are listed, not bounded"],
    }
    if tp > 1:
        _add_tp(data, record, tp, args.batch * args.tokens)
    if args.format == "json":
        return to_json(data)
    table_rows = [dict(name=r.name, repeats=r.repeats, flops=number(r.bound.flops), bytes=number(r.bound.bytes),
                       intensity=_intensity(r.bound.intensity), time=number(r.bound.time), bound=r.bound.bottleneck) for r in rows]
    columns = [("name", "operator"), ("repeats", "repeats"), ("flops", "matrix FLOP"), ("bytes", "bytes"), ("intensity", "FLOP/B"), ("time", "time s"), ("bound", "bound")]
    if args.format == "csv":
        return table(table_rows, columns, "csv")
    fmt = "md" if args.format == "md" else "text"
    lines = [f"Roofline of {args.model} on {device.id}: {selection.peak.label}, {device.bandwidth_text}, ridge {number(whole.ridge)} FLOP/B; "
             f"bytes per weight {number(weights)}, per cached K/V element {number(kv)}", ""]
    lines.append(table(table_rows, columns, fmt))
    lines += ["", f"sum of operator bounds = {_seconds(per_op)}",
              f"single roofline of the totals = {_seconds(whole.time)}, {whole.bottleneck}-bound"]
    lines += _band_lines(roofline.bands(device, whole, selection.peak.precision))
    lines += _calibrated_lines(root, device.id.split(":", 1)[-1], whole, selection.peak.flops, device.bandwidth, args.tokens)
    if tp > 1:
        ar = data["tensor_parallel"]["allreduce"]
        lines += [f"per GPU at tensor parallelism {tp}: {data['tensor_parallel']['split']}",
                  f"not included: {ar['allreduces']} TP all-reduces of {number(ar['message_bytes'])} B each "
                  "(price them with `aiinfra collective ring --op allreduce`)"]
    return "\n".join(lines)


def _add_tp(data: dict, record: dict, tp: int, rows_per_pass: int) -> None:
    """Mark a per-GPU result: what is split, what is replicated, and the all-reduces left out."""
    data["scenario"]["tp"] = tp
    data["formulas"] = [*data["formulas"], roofline.KV_SHARE]
    data["tensor_parallel"] = {
        "tp": tp,
        "split": f"FLOPs, weight and activation bytes of {', '.join(roofline.TP_SPLIT)} rows / {tp}; KV bytes x FX73's share",
        "replicated": "embedding, position, norm (q/k norms included), residual and routing rows run whole on every rank",
        "allreduce": roofline.tp_allreduce(record, rows_per_pass, tp),
    }
    data["assumptions"].append(f"per GPU of a {tp}-way tensor-parallel group; TP communication is not in the bound")


def _op_dict(r: roofline.OperatorBound) -> dict:
    b = r.bound
    return {"name": r.name, "repeats": r.repeats, "matrix_flops": b.flops, "bytes": b.bytes, "scalar_flops": r.scalar_flops,
            "arith_intensity": None if b.intensity == float("inf") else b.intensity, "time_bound_s": b.time, "bottleneck": b.bottleneck}
