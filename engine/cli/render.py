"""Renderers: tables and documents to text, Markdown, CSV and JSON (one table per format)."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def to_json(data: object) -> str:
    import json

    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def table(rows: Sequence[dict], columns: Sequence[tuple[str, str]], fmt: str) -> str:
    """``rows`` (dicts) with ``columns`` ((key, header) pairs) in the requested format."""
    return _TABLES[fmt](rows, columns)


def display_width(text: str) -> int:
    """Terminal columns of ``text``: East Asian wide and full-width characters take two."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _text(rows, columns) -> str:
    cells = [[h for _, h in columns]] + [[_cell(r.get(k)) for k, _ in columns] for r in rows]
    widths = [max(display_width(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(c + " " * (w - display_width(c)) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _md(rows, columns) -> str:
    lines = ["| " + " | ".join(h for _, h in columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_cell(r.get(k)).replace("|", "\\|") for k, _ in columns) + " |" for r in rows]
    return "\n".join(lines)


def _csv(rows, columns) -> str:
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([k for k, _ in columns])
    for r in rows:
        writer.writerow([_cell(r.get(k)) for k, _ in columns])
    return buf.getvalue().rstrip("\n")


def _json(rows, columns) -> str:
    return to_json([{k: r.get(k) for k, _ in columns} for r in rows])


_TABLES: dict[str, Callable] = {"text": _text, "md": _md, "csv": _csv, "json": _json}


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return str(value)
