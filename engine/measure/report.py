"""Renderings of a validate result: JSON, text and Markdown summaries, worst cases, and an SVG scatter.

The scatter is log-log, predicted (held out) against measured, one colour per kind, with the y = x line
and the +-30 % band; written by hand (no plotting library on this path).
"""

from __future__ import annotations

import math

KIND_COLOURS = {"serve": "#1f77b4", "train": "#d62728", "gemm": "#2ca02c", "hbm": "#9467bd", "collective": "#ff7f0e"}
SCORE_COLUMNS = (("n", "rows", "{:d}"), ("mape", "MAPE %", "{:.1f}"), ("median_error_factor", "median x", "{:.2f}"),
                 ("within_15", "<=15 %", "{:.0f}"), ("within_30", "<=30 %", "{:.0f}"), ("within_50", "<=50 %", "{:.0f}"), ("spearman", "Spearman", "{:.3f}"))


def to_json(result, worst: int = 10) -> dict:
    return {"summary": result.summary, "calibration": result.calibration, "held_out_by": "table (one measurement file); held_out_family: the publisher's series of tables, left out whole",
            "families": result.sources, "rows": list(result.rows), "unmapped": list(result.unmapped), "worst": worst_rows(result, worst)}


def worst_rows(result, n: int = 10) -> list[dict]:
    rows = sorted(result.rows, key=lambda r: -abs(math.log(r["ratio"])))
    return [dict(id=r["id"], kind=r["kind"], metric=r["metric"], measured=r["measured"], held_out=r["held_out"], ratio=r["ratio"]) for r in rows[:n]]


def summary_rows(result) -> list[dict]:
    out = []
    for kind, s in result.summary.items():
        for split in ("held_out", "held_out_family", "in_sample"):
            out.append(dict(kind=kind, split=split, **{k: s[split].get(k) for k, _, _ in SCORE_COLUMNS}))
        for metric, by in s.get("by_metric", {}).items():
            out.append(dict(kind=f"{kind}:{metric}", split="held_out", **{k: by["held_out"].get(k) for k, _, _ in SCORE_COLUMNS}))
    return out


def _cell(value, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def table_lines(result, markdown: bool) -> list[str]:
    head = ["kind", "split"] + [label for _, label, _ in SCORE_COLUMNS]
    rows = [[r["kind"], r["split"].replace("_", "-")] + [_cell(r[k], fmt) for k, _, fmt in SCORE_COLUMNS] for r in summary_rows(result)]
    if markdown:
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=False)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*head)] + [fmt.format(*r) for r in rows]


def text(result, worst: int = 10, markdown: bool = False) -> str:
    lines = ["held-out: each row predicted by the calibration fitted without its own table (leave one table out); held-out-family: "
             "without every table of its publisher's series (all releases of one page); in-sample: the fit on every table.", ""]
    lines += table_lines(result, markdown)
    lines += ["", f"{len(result.rows)} rows scored, {len(result.unmapped)} not evaluable as stated (--format json lists them with the reason)."]
    if worst:
        lines += ["", "Worst held-out rows:" if not markdown else "**Worst held-out rows**", ""]
        for r in worst_rows(result, worst):
            lines.append(f"{'- ' if markdown else '  '}{r['id']}  {r['metric']}: measured {r['measured']:.4g}, predicted {r['held_out']:.4g} (x{r['ratio']:.2f})")
    lines += ["", "Calibration (fitted on every family; a group with no measurement takes 'shared'):"]
    for kind, params in result.calibration.items():
        parts = [f"{name} " + ", ".join(f"{g} {v:.3g}" for g, v in sorted(by.items())) for name, by in params.items()]
        lines.append(f"{'- ' if markdown else '  '}{kind}: " + "; ".join(parts))
    return "\n".join(lines)


def svg(result, panel: int = 300) -> str:
    """One log-log panel per kind: predicted (held out) against measured, the y = x line and the +-30 % band."""
    kinds = [k for k in KIND_COLOURS if any(r["kind"] == k for r in result.rows)]
    pad, inner = 56, panel - 76
    width = max(1, len(kinds)) * panel
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{panel + 20}" viewBox="0 0 {width} {panel + 20}" '
           'font-family="sans-serif" font-size="10">']
    for i, kind in enumerate(kinds):
        rows = [r for r in result.rows if r["kind"] == kind and r["measured"] > 0 and r["held_out"] > 0]
        logs = [math.log10(v) for r in rows for v in (r["measured"], r["held_out"])]
        lo, hi = math.floor(min(logs)), math.ceil(max(logs))
        hi = hi if hi > lo else lo + 1
        x0, y0 = i * panel + pad, 24

        def px(v, lo=lo, hi=hi, x0=x0):
            return x0 + (math.log10(v) - lo) / (hi - lo) * inner

        def py(v, lo=lo, hi=hi, y0=y0):
            return y0 + inner - (math.log10(v) - lo) / (hi - lo) * inner

        out.append(f'<text x="{x0 + inner / 2}" y="14" text-anchor="middle" font-size="12">{kind} ({len(rows)} rows)</text>')
        out.append(f'<rect x="{x0}" y="{y0}" width="{inner}" height="{inner}" fill="none" stroke="#888"/>')
        a, b = 10 ** lo, 10 ** hi
        band = [(a, a * 1.3), (b, b * 1.3), (b, b / 1.3), (a, a / 1.3)]
        poly = " ".join(f"{px(m):.1f},{min(max(py(p), y0), y0 + inner):.1f}" for m, p in band)
        out.append(f'<polygon points="{poly}" fill="#2ca02c" fill-opacity="0.15"/>')
        out.append(f'<line x1="{px(a):.1f}" y1="{py(a):.1f}" x2="{px(b):.1f}" y2="{py(b):.1f}" stroke="#444" stroke-dasharray="4 3"/>')
        for r in rows:
            y = min(max(py(r["held_out"]), y0), y0 + inner)
            out.append(f'<circle cx="{px(r["measured"]):.1f}" cy="{y:.1f}" r="2" fill="{KIND_COLOURS[kind]}" fill-opacity="0.55"/>')
        for e in range(lo, hi + 1):
            out.append(f'<text x="{px(10 ** e):.1f}" y="{y0 + inner + 12}" text-anchor="middle">1e{e}</text>')
            out.append(f'<text x="{x0 - 4}" y="{py(10 ** e) + 3:.1f}" text-anchor="end">1e{e}</text>')
        out.append(f'<text x="{x0 + inner / 2}" y="{y0 + inner + 26}" text-anchor="middle">measured ({_unit(rows)})</text>')
        out.append(f'<text x="{x0 - 40}" y="{y0 + inner / 2}" transform="rotate(-90 {x0 - 40} {y0 + inner / 2})" text-anchor="middle">predicted, held out</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _unit(rows) -> str:
    units = sorted({r["unit"] for r in rows})
    return ", ".join(units)
