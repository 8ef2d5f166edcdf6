"""Reading paths (with Mermaid diagrams), the concept index, and the hardware and model tables."""

from __future__ import annotations

from collections import defaultdict

from engine.core.humanize import number
from engine.site.context import (
    CONCEPTS_PAGE,
    HARDWARE_PAGE,
    MODELS_PAGE,
    Page,
    SiteData,
    anchor_name,
    md_escape,
    path_page,
    rel,
    split_place,
)

PATHS_INDEX = "paths/index.md"
KIND_TITLES = {"goal": "Goal paths (阅读路径)", "problem": "Problem-first index (问题索引)", "role": "Role routes"}


def pages(data: SiteData) -> list[Page]:
    out = [paths_index(data)] + [path(data, pid) for pid in sorted(data.k.paths)]
    out += [concepts(data), hardware_table(data), models_table(data)]
    return out


# ---------------------------------------------------------------------- reading paths


def mermaid_label(text: str) -> str:
    """Text safe inside a Mermaid ``["..."]`` label."""
    return str(text).replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;").replace("\n", " ")


def path_mermaid(data: SiteData, p) -> list[str]:
    lines = ["```mermaid", "flowchart LR"]
    prev = None
    for i, step in enumerate(p.steps):
        node = f"s{i}"
        if step.to:
            label = f"{step.to.split(':', 1)[1]} {data.title(step.to)}"
        else:
            label = step.placeholder
        if step.revisit:
            label += " (revisit)"
        shape = f'{node}(["{mermaid_label(label)}"])' if step.condition else f'{node}["{mermaid_label(label)}"]'
        lines.append(f"  {shape}")
        if prev is not None:
            edge = f' -- "{mermaid_label(step.condition)}" --> ' if step.condition else " --> "
            lines.append(f"  {prev}{edge}{node}")
        prev = node
    lines += ["```", ""]
    return lines


def paths_index(data: SiteData) -> Page:
    here = PATHS_INDEX
    k = data.k
    lines = ["# Reading paths", "", "Routes through the books by goal, by problem and by role, with the action-word index. "
             "Each path respects the chapters' dependency declarations or marks the step it revisits.", ""]
    by_kind = defaultdict(list)
    for _pid, p in sorted(k.paths.items()):
        by_kind[p.kind].append(p)
    for kind in ("goal", "problem", "role", *sorted(set(by_kind) - {"goal", "problem", "role"})):
        if kind not in by_kind:
            continue
        lines += [f"## {KIND_TITLES.get(kind, kind)}", "", "| path | 中文 | book | steps |", "|---|---|---|---|"]
        for p in by_kind[kind]:
            steps = " → ".join((s.to.split(":", 1)[1] if s.to else s.placeholder) for s in p.steps)
            lines.append(f"| [{md_escape(p.title)}]({rel(here, path_page(p.id))}) | {p.title_zh} | {p.book.split(':', 1)[1]} | {md_escape(steps)} |")
        lines.append("")
    if k.actions:
        lines += ["## Action words (高频动作词落点)", "", "| word | 中文 | read |", "|---|---|---|"]
        for a in k.actions.values():
            lines.append(f"| {md_escape(a.word)} | {a.word_zh} | {data.links(here, a.targets)} |")
        lines.append("")
    return Page(here, "\n".join(lines), "Reading paths", "knowledge/paths.yaml", 1)


def path(data: SiteData, pid: str) -> Page:
    p = data.k.paths[pid]
    here = path_page(pid)
    lines = [f"# {md_escape(p.title)}", "", f"**{p.title_zh}**", "", f"`{pid}` · {p.kind} path · {data.link(here, p.book, with_title=True)}", ""]
    if p.audience:
        lines += [f"**For:** {md_escape(p.audience)}", ""]
    lines += path_mermaid(data, p)
    lines += ["## Steps", ""]
    for i, step in enumerate(p.steps, 1):
        target = data.link(here, step.to, with_title=True) if step.to else f"*{md_escape(step.placeholder)}*"
        extra = []
        if step.condition:
            extra.append(f"when {md_escape(step.condition)}")
        if step.revisit:
            extra.append("revisit")
        if step.note:
            extra.append(md_escape(step.note))
        lines.append(f"{i}. {target}" + (f" — {'; '.join(extra)}" if extra else ""))
    lines.append("")
    lines += _path_labs(data, here, p)
    if p.source:
        lines += [f"*Source: {md_escape(p.source)}*", ""]
    file, line = split_place(p.place)
    return Page(here, "\n".join(lines), p.title, file, line)


def _path_labs(data: SiteData, here: str, p) -> list[str]:
    """The labs whose chapters the path's steps land on (engine.reading.labs), one line each."""
    from engine.reading.labs import labs_on_path

    found = labs_on_path(getattr(data.k, "labs", None) or {}, p)
    if not found:
        return []
    return ["## Labs on this path", ""] + [f"- {data.link(here, lab['id'], with_title=True)}: step {lab['step']}, {data.link(here, lab['to'])}"
                                           for lab in found] + [""]


# ---------------------------------------------------------------------- concepts


def concepts(data: SiteData) -> Page:
    here = CONCEPTS_PAGE
    k = data.k
    defined, extended, referenced = defaultdict(list), defaultdict(list), defaultdict(list)
    for s in k.sections.values():
        for c in s.defines:
            defined[c].append(s.id)
        for c in s.extends:
            extended[c].append(s.id)
        for c in s.references:
            referenced[c].append(s.id)
    lines = ["# Cross-cutting concepts", "", "**全书单点定义**: each concept is defined in exactly one section; other sections extend or "
             "reference it.", "", "| concept | 中文 | defined in |", "|---|---|---|"]
    ordered = sorted(k.concepts.values(), key=lambda c: c.name.lower())
    for c in ordered:
        lines.append(f"| [{md_escape(c.name)}](#{anchor_name(c.id)}) | {c.name_zh} | {data.links(here, defined.get(c.id, []))} |")
    lines.append("")
    for c in ordered:
        lines += [f"## {md_escape(c.name)} · {c.name_zh} {{#{anchor_name(c.id)}}}", ""]
        if c.summary:
            lines += [md_escape(c.summary), ""]
        lines += [f"- **Defined in:** {data.links(here, defined.get(c.id, []), with_title=True)}",
                  f"- **Extended in:** {data.links(here, extended.get(c.id, []), with_title=True)}",
                  f"- **Referenced in:** {data.links(here, referenced.get(c.id, []), with_title=True)}"]
        if c.source:
            lines.append(f"- **Source:** {md_escape(c.source)}")
        lines.append("")
    return Page(here, "\n".join(lines), "Concepts", "knowledge/concepts.yaml", 1)


# ---------------------------------------------------------------------- hardware and models


def hardware_table(data: SiteData) -> Page:
    from engine.domain import hardware

    here = HARDWARE_PAGE
    devices = sorted(hardware.devices(data.k).values(), key=lambda d: (d.vendor, d.id))
    lines = ["# Hardware", "", "Accelerators from `knowledge/hardware/`: dense peaks at the stated precision (sparse figures are never "
             "used as dense), memory in the vendor's own unit, per-direction link bandwidth, and each figure's source "
             "(`aiinfra hardware show ID` prints every peak record).", "", hardware.MEMORY_FIGURES, "",
             "| device | vendor | memory | bandwidth | BF16 dense | FP8 dense | interconnect (per direction) | TDP |",
             "|---|---|---|---|---|---|---|---|"]
    for d in devices:
        bf16, fp8 = d.headline("bf16"), d.headline("fp8")
        link = d.interconnect or {}
        ic = f"{link.get('name', '')} {link.get('per_direction', '')}".strip() or "-"
        tdp = d.record["tdp"]["value"] if d.tdp_w else "-"
        memory = f"{d.memory_text} {d.memory_type}" + (f" ({d.driver_total.label} {d.driver_total.text})" if d.driver_total else "")
        lines.append(f'| <a id="{anchor_name(d.id)}"></a>`{d.short_id}` {md_escape(d.name)} | {md_escape(d.vendor)} | {memory} | '
                     f"{d.bandwidth_text} | {bf16.text if bf16 else '-'} | {fp8.text if fp8 else '-'} | {md_escape(ic)} | {tdp} |")
    lines += ["", "## Sources", ""]
    for d in devices:
        file, line = split_place(data.k.places.get(d.id, ""))
        lines.append(f"- `{d.short_id}`: {md_escape(d.record['memory']['source'])} ([record]({rel(here, 'source/' + file + '.md')}))")
    return Page(here, "\n".join(lines) + "\n", "Hardware", "knowledge/hardware", 0)


def models_table(data: SiteData) -> Page:
    from engine.domain.families import family_of, shape_of
    from engine.domain.models import kv_bytes_per_token, parameter_count

    here = MODELS_PAGE
    lines = ["# Models", "", "Architectures from each model's `config.json` (`knowledge/models/`), with the parameter total the "
             "formula records compute and the reference it is checked against, and the KV-cache bytes per token at 2 bytes "
             "per element (F8 through the model's attention variant; DeepSeek-V4: what a request grows by per token once its windows "
             "are full, FX899).", "",
             "| model | family | attention | layers | hidden | heads / KV heads | parameters | active | KV B/token (BF16) | checked against |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for mid in sorted(data.k.models):
        rec = data.k.models[mid]
        counted = parameter_count(rec, data.root)
        cfg, der = rec["config"], rec["derived"]
        shape = shape_of(rec)
        heads, kv = family_of(shape).heads_text(shape)  # OpenELM: heads per layer, shown as their range
        kvb = kv_bytes_per_token(rec, data.root, 2)
        lines.append(f'| <a id="{anchor_name(mid)}"></a>`{mid.split(":", 1)[1]}` {md_escape(rec["name"])} | {der["family"]} | {der["attention"]} | '
                     f"{cfg['num_hidden_layers']} | {cfg['hidden_size']} | {heads} / {kv} | {_billions(counted['total'])} | "
                     f"{_billions(counted['active'])} | {number(kvb)} | {rec['parameters']['matches']} |")
    lines += ["", "## Sources", ""]
    for mid in sorted(data.k.models):
        src = data.k.models[mid].get("source", {})
        file, _ = split_place(data.k.places.get(mid, ""))
        where = f"{src.get('repo', '')}@{str(src.get('revision', ''))[:8]} {src.get('file', '')}".strip()
        lines.append(f"- `{mid.split(':', 1)[1]}`: {md_escape(where)} ([record]({rel(here, 'source/' + file + '.md')}))")
    return Page(here, "\n".join(lines) + "\n", "Models", "knowledge/models", 0)


def _billions(n) -> str:
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.1f} M"
