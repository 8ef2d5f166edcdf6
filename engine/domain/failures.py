"""Failure taxonomy records (knowledge/failure_taxonomies/*.yaml): their check rules, notes and
the per-category figures the reliability formulas give.

- ``problems(k)``: the rules JSON Schema cannot state (each count total adds up), as Problems;
- ``notes(record)``: every printed share that is not its count / base to the printed rounding,
  as sentences naming the row (a source's own misprint is a note, never a problem);
- ``figures(record, module)``: per category its share (FX500), its job MTBF (FX501: period /
  count) and its per-GPU MTBF (FX502, category variant: category MTBF x GPUs), from the
  compiled formulas.
"""

from __future__ import annotations

from engine.core.errors import Problem

SHARE, CATEGORY_MTBF, PER_GPU_MTBF = "FX500", "FX501", "FX502"
DAY_S = 86400


def share_base(record: dict) -> int:
    """The count the printed shares are fractions of (``interruptions.share_base``)."""
    counts = record["interruptions"]
    return counts.get("unexpected", 0) if counts.get("share_base") == "unexpected" else counts["total"]


def record_problems(record: dict) -> list[tuple[str, str]]:
    """(field path, sentence) for each count rule one taxonomy breaks."""
    out: list[tuple[str, str]] = []
    counts = record["interruptions"]
    rows = record["categories"]
    every = sum(r["count"] for r in rows)
    if every != counts["total"]:
        out.append(("categories", f"the categories' counts add up to {every}, not interruptions.total {counts['total']}"))
    for kind in ("planned", "unexpected"):
        if kind in counts:
            part = sum(r["count"] for r in rows if r["kind"] == kind)
            if part != counts[kind]:
                out.append(("categories", f"the {kind} categories' counts add up to {part}, not interruptions.{kind} {counts[kind]}"))
    if "planned" in counts and "unexpected" in counts and counts["planned"] + counts["unexpected"] != counts["total"]:
        out.append(("interruptions", f"planned {counts['planned']} + unexpected {counts['unexpected']} is not total {counts['total']}"))
    if counts.get("share_base") == "unexpected" and "unexpected" not in counts:
        out.append(("interruptions.share_base", "is unexpected but interruptions.unexpected is not given"))
    for i, row in enumerate(rows):
        if "printed_share" in row and row["kind"] == "planned" and counts.get("share_base") == "unexpected":
            out.append((f"categories[{i}].printed_share", f"row {row['name']!r} is planned, but the shares are of the unexpected interruptions"))
    return out


def problems(k) -> list[Problem]:
    out: list[Problem] = []
    for ident, record in sorted(getattr(k, "failure_taxonomies", {}).items()):
        place = k.places.get(ident, "")
        out += [Problem(place, ident, path, message) for path, message in record_problems(record)]
        device = record["gpus"].get("device")
        if device and getattr(k, "hardware", None) and device not in k.hardware:  # a root may hold no hardware folder
            out.append(Problem(place, ident, "gpus.device", f"refers to {device}, which is not in knowledge/hardware"))
    return sorted(out)


def notes(record: dict) -> list[str]:
    """One sentence per printed share that its count / base, rounded as printed, does not give."""
    base = share_base(record)
    out = []
    for row in record["categories"]:
        if "printed_share" not in row or not base:
            continue
        decimals = row.get("printed_decimals", 1)
        computed = 100 * row["count"] / base
        half = 0.5 * 10 ** -decimals
        if abs(computed - row["printed_share"]) > half + 1e-9:
            out.append(f"row {row['name']!r}: printed {row['printed_share']:g}% but {row['count']} / {base} = {computed:.{decimals}f}%")
    return out


def _value(module, fid: str, given: dict) -> float:
    from engine.numeric.evaluate import evaluate

    meta = module.FORMULAS[fid]
    return evaluate(meta, module, given).outputs[meta["output"]["symbol"]].value


def figures(record: dict, module) -> list[dict]:
    """Per category: its count, share of the base (FX500), job MTBF in s (FX501) and per-GPU MTBF in s (FX502)."""
    period = record["period"]["days"] * DAY_S
    base, gpus = share_base(record), record["gpus"]["count"]
    out = []
    for row in record["categories"]:
        in_base = base and (row["kind"] == "unexpected" or record["interruptions"].get("share_base") != "unexpected")
        share = _value(module, SHARE, {"category_interruption_count": row["count"], "interruption_count": base}) if in_base else None
        mtbf = _value(module, CATEGORY_MTBF, {"observation_period": period, "category_interruption_count": row["count"]}) if row["count"] else None
        per_gpu = _value(module, PER_GPU_MTBF, {"per_gpu_mtbf_basis": "category", "category_mtbf": mtbf, "n_gpus": gpus}) if mtbf else None
        out.append({"name": row["name"], "component": row["component"], "kind": row["kind"], "count": row["count"],
                    "printed_share": row.get("printed_share"), "share": share, "mtbf_s": mtbf, "per_gpu_mtbf_s": per_gpu})
    return out


def job_mtbf_s(record: dict, kind: str = "unexpected") -> float:
    """The job's MTBF over the window for the interruptions of ``kind`` (``all`` for every one): period / count."""
    counts = record["interruptions"]
    n = counts["total"] if kind == "all" else counts[kind]
    return record["period"]["days"] * DAY_S / n


def find(table: dict, text: str) -> dict:
    """The record named ``text`` (``llama3-405b`` or ``ft:llama3-405b``); InputError naming the known ones."""
    from engine.core.errors import InputError
    from engine.core.suggest import known

    name = text[3:] if text.startswith("ft:") else text
    if ":" in name or not name:
        raise InputError("ID", f"expected a failure taxonomy id such as llama3-405b or ft:llama3-405b, got {text!r}")
    if f"ft:{name}" not in table:
        raise InputError("ID", f"no failure taxonomy {text!r} ({known(name, [i.split(':', 1)[1] for i in sorted(table)])})")
    return table[f"ft:{name}"]
