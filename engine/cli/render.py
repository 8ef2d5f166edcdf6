"""Renderers: tables and documents to text, Markdown, CSV and JSON (one table per format)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence

TERMINAL = "terminal"  # table(width=TERMINAL): fit a text table to terminal_width()
NARROWEST = 8  # a free-text column is never shortened below this, its header or its widest number
ELLIPSIS = "…"


def to_json(data: object) -> str:
    import json

    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def table(rows: Sequence[dict], columns: Sequence[tuple[str, str]], fmt: str, width: int | str | None = TERMINAL,
          droppable: Sequence[str] = ()) -> str:
    """``rows`` (dicts) with ``columns`` ((key, header) pairs) in the requested format. A text table wider than
    ``width`` columns (default: terminal_width(); None: no limit) has its free-text columns shortened with an
    ellipsis, the longest first; numbers, headers and one-word columns are kept whole. Where that is not enough, the
    ``droppable`` columns (keys, the first given goes first) are left out one at a time until the table fits. JSON,
    CSV and Markdown are never shortened."""
    if fmt != "text":
        return _TABLES[fmt](rows, columns)
    limit = terminal_width() if width == TERMINAL else width
    text = _text(rows, columns, limit)
    drop = list(droppable)
    while limit is not None and drop and max(map(display_width, text.splitlines()), default=0) > limit:
        gone = drop.pop(0)
        columns = [c for c in columns if c[0] != gone]
        text = _text(rows, columns, limit)
    return text


def prose(text: str, width: int | str | None = TERMINAL) -> str:
    """``text`` with each of its lines wider than ``width`` (default: terminal_width(); None: no limit) wrapped at spaces,
    the continuation indented two past the line's own indent (so a "- " bullet's text lines up under it). For the sentences
    around a table (heads, notes, assumptions), never for the table itself; on a pipe without $COLUMNS nothing changes."""
    limit = terminal_width() if width == TERMINAL else width
    if limit is None:
        return text
    import textwrap

    out = []
    for line in text.split("\n"):
        if display_width(line) <= limit:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        room = limit
        while True:  # textwrap counts characters; a wide (CJK) character takes two columns, so narrow until it fits
            wrapped = textwrap.fill(line.strip(), width=room, initial_indent=indent, subsequent_indent=" " * (len(indent) + 2),
                                    break_long_words=False, break_on_hyphens=False)
            over = max(display_width(x) for x in wrapped.split("\n")) - limit
            if over <= 0 or room <= 20 or line.isascii():
                break
            room -= max(1, min(over, room - 20))
        out.append(wrapped)
    return "\n".join(out)


_RULE = re.compile(r"^-+(  -+)*$")


def prose_around_tables(parts: Sequence[str], width: int | str | None = TERMINAL) -> list[str]:
    """``parts`` (the blocks of a text report) with every block that is not a text table (whose second line is the
    dashed rule ``table`` draws) wrapped by :func:`prose`; the tables stay as ``table`` fitted them."""
    out = []
    for part in parts:
        lines = part.split("\n")
        out.append(part if len(lines) > 1 and _RULE.match(lines[1]) else prose(part, width))
    return out


def prose_text(text: str, width: int | str | None = TERMINAL) -> str:
    """A whole text report with its sentences wrapped (:func:`prose`) and its tables left as :func:`table` fitted them:
    a table is the line above a dashed rule, the rule, and the rows down to the next blank line that are no wider than
    the rule; a fenced block stays whole too."""
    limit = terminal_width() if width == TERMINAL else width
    if limit is None or "\n" not in text and display_width(text) <= limit:
        return text
    lines = text.split("\n")
    keep = [False] * len(lines)
    fenced = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            keep[i] = True
        elif fenced:
            keep[i] = True
        elif _RULE.match(line) and i:
            keep[i - 1] = True
            j, rule = i, display_width(line)
            while j < len(lines) and lines[j].strip():  # a row is never wider than the rule (cells are padded to it)
                keep[j] = keep[j] or display_width(lines[j]) <= rule
                j += 1
    return "\n".join(line if keep[i] else prose(line, limit) for i, line in enumerate(lines))


def terminal_width(environ: Mapping[str, str] | None = None, stream=None) -> int | None:
    """The columns a text table should fit: ``$COLUMNS`` where set (on a pipe too), else the terminal's width
    where standard output is a terminal; None (no limit) on a pipe or a file."""
    given = (os.environ if environ is None else environ).get("COLUMNS", "").strip()
    if given.isdigit() and int(given) > 0:
        return int(given)
    try:
        tty = (sys.stdout if stream is None else stream).isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return None
    return shutil.get_terminal_size().columns if tty else None


def display_width(text: str) -> int:
    """Terminal columns of ``text``: East Asian wide and full-width characters take two."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _text(rows, columns, width: int | None = None) -> str:
    cells = [[h for _, h in columns]] + [[_cell(r.get(k)) for k, _ in columns] for r in rows]
    widths = [max(display_width(row[i]) for row in cells) for i in range(len(columns))]
    if width is not None and sum(widths) + 2 * (len(widths) - 1) > width:
        widths = _fitted(cells, widths, width)
        cells = [[_clip(c, w) for c, w in zip(row, widths, strict=True)] for row in cells]
    lines = ["  ".join(c + " " * (w - display_width(c)) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


_NUMBER = re.compile(r"[-+~≈<>]?[.\d]")
_BETWEEN = frozenset({"=", "±", "..", "x", "×", "/", "-", "–", "to"})  # what may join two quantities in one number cell


def _numeric(cell: str) -> bool:
    """Whether ``cell`` is a number, with its units: '1.133e11', '105.5 GiB = 113.3 GB', '2.56 ktokens/s', '8x b200'. Each
    word is a number, a unit (ASCII) right after one, or a joining sign; '192x Huawei Kunpeng (Arm)' and '64–128 卡训练集群'
    start with a number and are prose."""
    after_number = False
    for i, word in enumerate(cell.split()):
        if _NUMBER.match(word):
            after_number = True
        elif (after_number and all(ch.isascii() or ch in "µ°·²³" for ch in word)) or (i and word in _BETWEEN):
            after_number = False
        else:
            return False
    return bool(cell.strip())


def _fitted(cells: list[list[str]], widths: list[int], width: int) -> list[int]:
    """Column widths within ``width`` (two spaces between columns): one column at a time, the widest of the
    free-text ones (some cell holds a space or CJK text, and not every cell is a number) loses a column, down to its floor
    (NARROWEST, its header, its widest number); as close as the floors allow."""
    floors = []
    for i, natural in enumerate(widths):
        body = [row[i] for row in cells[1:] if row[i] not in ("", "-")]
        numbers = [display_width(c) for c in body if _numeric(c)]
        prose = any(" " in c or not c.isascii() for c in body) and len(numbers) < len(body)
        floors.append(min(natural, max(NARROWEST, display_width(cells[0][i]), *numbers)) if prose else natural)
    out, excess = list(widths), sum(widths) + 2 * (len(widths) - 1) - width
    while excess > 0:
        wide = [i for i in range(len(out)) if out[i] > floors[i]]
        if not wide:
            break
        i = max(wide, key=lambda j: (out[j], j))  # the widest; ties: the rightmost
        out[i] -= 1
        excess -= 1
    return out


def _clip(text: str, width: int) -> str:
    """``text`` in at most ``width`` terminal columns, ending in an ellipsis where it was cut."""
    if display_width(text) <= width:
        return text
    kept, used = [], 0
    for ch in text:
        w = display_width(ch)
        if used + w > width - 1:
            break
        kept.append(ch)
        used += w
    return "".join(kept).rstrip() + ELLIPSIS


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
