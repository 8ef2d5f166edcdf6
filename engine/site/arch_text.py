"""The text of one reference architecture (``aiinfra arch show`` and its site page): plain text or Markdown."""

from __future__ import annotations


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def document(report, md: bool = False) -> str:
    from engine.domain import archs

    rec = report.record
    h2, h3 = ("## ", "### ") if md else ("", "")
    item = "- " if md else "  "
    lines = [f"{'# ' if md else ''}{rec['id']} · {rec['title']} ({rec['title_zh']})", ""]
    lines.append(f"tier: {rec['tier']} · trains: {_yes(rec['trains'])} · serves: {_yes(rec['serves'])}")
    if rec.get("scale"):
        lines.append(f"scale: {rec['scale']}")
    lines.append(f"source: {rec['source']}")
    lines += ["", f"{h2}Hardware"]
    for p in report.pools:
        power = f"; node power {p['node_power']['value']} ({p['node_power']['source']})" if p.get("node_power") else ""
        lines.append(f"{item}{p['name']}: {p['nodes']} node(s) x {p['gpus_per_node']} x {archs.short(p['device'])} ({p['device_name']}) = {p['gpus']} cards{power}")
    if rec["hardware"].get("why"):
        lines.append(f"{item}why this device: {rec['hardware']['why']}")
    for name, cited in rec.get("counts", {}).items():
        lines.append(f"{item}{name}: {cited['value']} ({cited['source']})")
    lines += ["", f"{h2}Network"] + [f"{item}{k}: {rec['network'][k]}" for k in ("scale_up", "scale_out", "storage", "note") if rec["network"].get(k)]
    lines += ["", f"{h2}Workload"]
    for w in rec["workload"]:
        lines.append(f"{item}{w['task']}" + (f" [{w['model']}]" if w.get("model") else ""))
    lines += ["", f"{h2}Failure domain", rec["failure_domain"], "", f"{h2}Capacity, power and cost (calculator runs)"]
    for run in report.runs:
        lines += [""] + _run_lines(run, h3, item)
    lines += ["", f"{h2}Failure boundaries"]
    for b in report.boundaries:
        lines += _boundary_lines(b, item)
    lines += ["", f"{h2}Upgrade path"]
    for step in report.upgrade_path:
        target = step["to"] or f"beyond the seven tiers: {step.get('beyond', '')}"
        lines.append(f"{item}{step['direction']} -> {target} (when: {', '.join(step['when'])})")
    if rec.get("notes"):
        lines += ["", f"{h2}Notes", rec["notes"]]
    return "\n".join(lines)


def _run_lines(run, h3: str, item: str) -> list[str]:
    from engine.core.humanize import friendly, value_range

    head = f"{h3}[{run.id}] {run.calculator}: {run.label}"
    if run.status != "ok":
        return [head, f"{item}{run.status}: {run.message}"] + ([f"{item}note: {run.note}"] if run.note else [])
    lines = [head] + ([f"{item}note: {run.note}"] if run.note else [])
    for name, v in run.result.outputs.items():
        extra = friendly(v.value, v.unit)
        unit = "" if v.unit in ("", "1") else f" {v.unit}"
        lines.append(f"{item}{name} = {value_range(v)}{unit}" + (f" ({extra})" if extra else ""))
    if run.book:
        lines.append(f"{item}{_book_text(run.book)}")
    lines.append(f"{item}inputs:")
    for n, v in run.result.inputs.items():
        unit = "" if v.unit in ("", "1") else f" {v.unit}"
        lines.append(f"{_sub(item)}{n} = {value_range(v)}{unit}  <- {v.source}")
    lines.append(f"{item}formulas: {' -> '.join(run.result.formulas)}")
    lines += [f"{item}warning: {w}" for w in run.result.warnings]
    return lines


def _sub(item: str) -> str:
    """The prefix of a nested line: a nested list item in Markdown, an indent in text."""
    return "  - " if item == "- " else item + "    "


def _friendly(value, unit: str) -> str:
    from engine.core.humanize import friendly

    return friendly(value, unit)


def _book_text(book: dict) -> str:
    from engine.core.humanize import friendly, number

    if book.get("agrees") is None:
        return f"book prints {book['printed']}: {book.get('message', '')}"
    ours = friendly(book["ours"], book["unit"]) or f"{number(book['ours'])} {book['unit']}"
    verdict = "agrees" if book["agrees"] else f"DIFFERS (ours / book = {book['ratio']:.3g})"
    text = f"book prints {book['printed']} ({book['source']}); ours {ours}: {verdict}"
    if book.get("erratum"):
        text += f". Erratum: {book['erratum']}"
    return text


def _boundary_lines(b, item: str) -> list[str]:
    from engine.core.humanize import number

    def shown(value, unit):
        return _friendly(value, unit) or (number(value) if unit in ("", "1") else f"{number(value)} {unit}")

    target = b.upgrade or f"beyond the seven tiers ({b.beyond})"
    zh = f" ({b.condition_zh})" if b.condition_zh else ""
    lines = [f"{item}[{b.status}] {b.id}: {b.condition}{zh} -> {b.direction}: {target}"]
    ev = b.evidence
    if ev and "value" in ev:
        text = f"evidence: {ev['run']}.{ev['output']} = {shown(ev['value'], ev['unit'])}"
        if b.threshold:
            limit = shown(b.threshold["value"], b.threshold["unit"])
            same = limit == b.threshold["text"]
            text += f"; threshold {b.threshold['op']} {b.threshold['text']}{'' if same else f' (= {limit})'}: {b.threshold['source']}"
        lines.append(f"{_sub(item)}{text}")
    elif ev:
        lines.append(f"{_sub(item)}evidence: {ev['run']}.{ev['output']} not available ({ev.get('message', '')})")
    lines.append(f"{_sub(item)}source: {b.source}")
    return lines
