"""The Accuracy page (``accuracy.md``), generated from ``aiinfra validate`` (issue 26).

``render(result, files, records)`` is a pure function of a validate result, the measurement
files' headers and the measurement records: the page text and one SVG scatter per kind and unit,
placed beside the page. ``pages(root)`` runs :func:`engine.measure.validate.run` (about half a minute)
only when the rendered page is not in the user's cache (``engine.core.cache``) under a digest of
everything the run reads: the root's measurements, models, hardware and formulas, and the engine's
Python source outside the CLI and the site (the site modules this page is rendered with included). A root without
measurement files has no Accuracy page, and the calculator pages then do not link to one.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from pathlib import Path

from engine.core.humanize import friendly, number
from engine.site.accuracy_causes import cause, evidence
from engine.site.context import Page, md_escape, rel, source_page

ACCURACY_PAGE = "accuracy.md"
WORST = 15
MEASUREMENTS = "knowledge/measurements"
ROOT_INPUTS = (MEASUREMENTS, "knowledge/models", "knowledge/hardware", "formulas")
ENGINE_SKIPPED = ("cli", "site")  # engine folders the validate run never imports
SITE_MODULES = ("accuracy_pages.py", "accuracy_causes.py", "context.py")  # ... but the page is rendered with these
CACHE_PREFIX = "site_accuracy_"
SPLIT_ORDER = ("held_out", "held_out_family", "in_sample")  # the summary's splits, as far as it has them
SCORES = (("n", "rows", "{:d}"), ("mape", "MAPE %", "{:.1f}"), ("median_error_factor", "median ×", "{:.2f}"),
          ("within_15", "≤15 %", "{:.0f}"), ("within_30", "≤30 %", "{:.0f}"), ("within_50", "≤50 %", "{:.0f}"), ("spearman", "Spearman", "{:.3f}"))
KIND_TITLES = {"serve": "Serving", "train": "Training", "gemm": "GEMM", "hbm": "HBM bandwidth", "collective": "Collectives"}


def available(root) -> bool:
    """Whether ``root`` has measurement files, hence an Accuracy page."""
    base = Path(root) / MEASUREMENTS
    return base.is_dir() and any(base.glob("*.yaml"))


def scatter_path(kind: str, unit: str) -> str:
    """``accuracy-serve-tokens-s.svg``: one log-log panel per kind and measured unit, beside the page."""
    return f"accuracy-{kind}-{re.sub(r'[^a-z0-9]+', '-', unit.lower()).strip('-') or 'ratio'}.svg"


# ---------------------------------------------------------------------- cached generation


def pages(root, run=None) -> tuple[list[Page], dict[str, str]]:
    """The Accuracy page and its SVG files for ``root`` (none without measurements); ``run`` replaces validate.run."""
    if not available(root):
        return [], {}
    from engine.core import cache

    name = f"{CACHE_PREFIX}{digest(root)}.json"
    stored = cache.read_json(name)
    if not (isinstance(stored, dict) and isinstance(stored.get("text"), str) and isinstance(stored.get("files"), dict)):
        stored = _compute(root, run)
        if cache.write_json(name, stored):
            cache.prune(CACHE_PREFIX, ".json", keep=4)
    return [_page(stored["text"])], dict(stored["files"])


def _page(text: str) -> Page:
    return Page(ACCURACY_PAGE, text, "Accuracy", MEASUREMENTS, 0)


def _compute(root, run=None) -> dict:
    from engine.domain import measurements

    records, problems = measurements.load(root)
    if problems:
        return {"text": _refused(f"{len(problems)} problems in the measurement records; first: {problems[0]}"), "files": {}}
    if run is None:
        from engine.measure.validate import run
    from engine.core.errors import AiinfraError

    try:
        result = run(root, records=records)
    except AiinfraError as exc:
        return {"text": _refused(str(exc)), "files": {}}
    text, files = render(result, headers(root), {m.id: m for m in records})
    return {"text": text, "files": files}


def _refused(why: str) -> str:
    return "\n".join(["# Accuracy", "", f"`aiinfra validate` did not run on this root, so no accuracy is published: {md_escape(why)}", ""])


def digest(root) -> str:
    """A BLAKE2b digest of what a validate run reads: the root's inputs and the engine's source."""
    from _blake2 import blake2b  # as engine.core.cache: hashlib would load OpenSSL

    import engine

    h = blake2b(digest_size=16)
    base = Path(root)
    for folder in ROOT_INPUTS:
        for path in sorted((base / folder).rglob("*.yaml")) if (base / folder).is_dir() else ():
            _feed(h, path.relative_to(base).as_posix(), path)
    package = Path(engine.__file__).parent
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        if parts[0] in ENGINE_SKIPPED and not (parts[0] == "site" and path.name in SITE_MODULES):
            continue
        _feed(h, "engine/" + "/".join(parts), path)
    return h.hexdigest()


def _feed(h, name: str, path: Path) -> None:
    data = path.read_bytes()
    h.update(f"{name}\0{len(data)}\0".encode())
    h.update(data)


def headers(root) -> dict[str, dict]:
    """``meas:<file>`` -> the file's id, title, source, family, as_of, notes and path (the rows are not read)."""
    from engine.kb.yamlio import load_yaml

    base = Path(root)
    out = {}
    for path in sorted((base / MEASUREMENTS).glob("*.yaml")):
        rel_path = path.relative_to(base).as_posix()
        data, _ = load_yaml(path, rel_path)
        if not isinstance(data, dict):
            continue
        fid = str(data.get("id", f"meas:{path.stem}"))
        out[fid] = {"id": fid, "file": rel_path, "title": str(data.get("title", "")), "source": str(data.get("source", "")),
                    "family": str(data.get("family") or fid.split(":", 1)[-1]), "as_of": str(data.get("as_of", "")),
                    "notes": str(data.get("notes", ""))}
    return out


# ---------------------------------------------------------------------- the page


def render(result, files: dict[str, dict], records: dict | None = None) -> tuple[str, dict[str, str]]:
    """The page text and its SVG files (site path -> text) for a validate ``Result``."""
    records = records or {}
    lines = _intro(result, files) + _overview(result)
    svgs = {}
    for kind in result.summary:
        lines += _kind_section(result, kind)
        figures = []
        for unit in sorted({r["unit"] for r in result.rows if r["kind"] == kind}):
            path = scatter_path(kind, unit)
            svgs[path] = _scatter([r for r in result.rows if r["kind"] == kind and r["unit"] == unit])
            figures.append(f"[![{kind}, measured in {unit}: predicted (held out) against measured, log-log]({path})]({path})")
        lines += [" ".join(figures), ""] if figures else []
    lines += _worst(result, files, records) + _unmapped(result) + _calibration(result) + _sources(result, files)
    return "\n".join(lines), svgs


def splits(result) -> list[tuple[str, str]]:
    """(key, label) of the summary's splits: 'held out' alone is by family; beside 'held_out_family' it is by table."""
    have = {key for kind in result.summary.values() for key in kind if key in SPLIT_ORDER}
    by_table = "held_out_family" in have
    labels = {"held_out": "held out (table)" if by_table else "held out", "held_out_family": "held out (family)", "in_sample": "in-sample"}
    return [(key, labels[key]) for key in SPLIT_ORDER if key in have]


def _intro(result, files) -> list[str]:
    kinds = ", ".join(KIND_TITLES.get(k, k) for k in result.summary)
    family = ("each row is predicted by a fit made *without its publisher family*: every table of the same performance page or "
              "benchmark series is left out together (leave-one-family-out), so no release of a page informs its own prediction. "
              "This is the figure to expect for a configuration nobody has measured.")
    if dict(splits(result)).get("held_out_family"):
        held = ["- **Held out (table)**: each row is predicted by a fit made *without its own table* (leave-one-table-out): "
                "nothing of the published table it comes from reaches its prediction.",
                f"- **Held out (family)**, stricter: {family}"]
    else:
        held = [f"- **Held out**: {family}"]
    return ["# Accuracy", "",
            f"How far to trust the times this site and `aiinfra` predict: {len(result.rows)} published measurements ({kinds}), "
            f"from {len(files)} tables in `{MEASUREMENTS}/`, each run through the engine with the layout, precision and workload "
            f"its source states, and compared with what was measured. {len(result.unmapped)} more rows cannot be evaluated "
            "as stated and are [counted by reason](#not-evaluable-as-stated), never scored.", "",
            "- **What is measured**: serving TTFT, time per output token, end-to-end latency and throughput; training step time, "
            "tokens/s and TFLOP/s per GPU; GEMM TFLOP/s; HBM bandwidth; collective bus bandwidth and time. Each record names "
            "what ran and where in its source the number was read.",
            "- **Calibration**: the engine's efficiencies (per device generation, per fabric for collectives) are fitted by "
            "least squares on log(predicted / measured); the [constants](#calibration) are listed below.",
            *held,
            "- **In-sample**: the fit on every table, the row's own included. It shows how well the model can describe the "
            "data, not how well it predicts new data.", "",
            "MAPE is the mean of |predicted / measured − 1|; the median error factor (median ×) is the median of max(ratio, "
            "1/ratio); *≤30 %* is the share of rows whose ratio lies in 0.7–1.3; Spearman is the rank correlation of predicted "
            "and measured. Each scatter plots one kind in one unit, predicted held out: the dashed line is predicted = measured, "
            "the green band ±30 %. Reproduce with `aiinfra validate` (`--format json` lists every row, `--svg FILE` draws the "
            "scatter).", ""]


def _cell(value, fmt: str) -> str:
    return "–" if value is None else fmt.format(value)


def _score_cells(s: dict) -> list[str]:
    return [_cell(s.get(key), fmt) for key, _, fmt in SCORES]


def _overview(result) -> list[str]:
    head = "| kind | split | " + " | ".join(label for _, label, _ in SCORES) + " |"
    lines = ["## Summary", "", head, "|" + "---|" * (len(SCORES) + 2)]
    for kind, s in result.summary.items():
        for key, label in splits(result):
            if key in s:
                lines.append(f"| [{KIND_TITLES.get(kind, kind)}](#{_anchor(kind)}) | {label} | " + " | ".join(_score_cells(s[key])) + " |")
    return lines + [""]


def _anchor(kind: str) -> str:
    return f"kind-{kind}"


def _kind_section(result, kind: str) -> list[str]:
    s = result.summary[kind]
    head = "| metric, split | " + " | ".join(label for _, label, _ in SCORES) + " |"
    lines = [f"## {KIND_TITLES.get(kind, kind)} {{ #{_anchor(kind)} }}", "", head, "|" + "---|" * (len(SCORES) + 1)]
    for metric, by in [("all", s), *sorted(s.get("by_metric", {}).items())]:
        for key, label in splits(result):
            if key in by:
                lines.append(f"| {md_escape(str(metric))}, {label} | " + " | ".join(_score_cells(by[key])) + " |")
    return lines + [""]


def _scatter(rows: list[dict]) -> str:
    from engine.measure import report

    return report.svg(_Rows(tuple(rows)))


class _Rows:
    """What ``engine.measure.report.svg`` reads of a result: its rows."""

    __slots__ = ("rows",)

    def __init__(self, rows):
        self.rows = rows


def _worst(result, files, records) -> list[str]:
    rows = sorted(result.rows, key=lambda r: -abs(math.log(r["ratio"])) if r["ratio"] > 0 else -math.inf)[:WORST]
    lines = [f"## The {len(rows)} worst held-out predictions", "",
             "Ranked by the error factor max(ratio, 1/ratio) of the held-out prediction (ratio = predicted / measured). The cause "
             "is read from the record (its metric, layout, workload and its source's own words); where no rule applies it says "
             "*not diagnosed*.", "",
             "| ratio | row: what ran | measured | predicted | cause |", "|---|---|---|---|---|"]
    for r in rows:
        rec = records.get(r["id"])
        head = files.get(r["source"], {})
        words = f"{head.get('title', '')} {head.get('notes', '')}"
        layout = ", ".join(f"{k} {v}" for k, v in (r.get("layout") or {}).items())
        metric = r["metric"] + ("" if r.get("statistic") in (None, "single", "mean") else f" ({r['statistic']})")
        what = f"{metric} · {r['model'] or r['kind']} · {r['device']} × {r['gpus']}" + (f" · {layout}" if layout else "")
        lines.append(f"| ×{_ratio(r['ratio'])} | {_row_link(r, rec, files)}<br>{md_escape(what)} | {_value(r['measured'], r['unit'])} | "
                     f"{_value(r['held_out'], r['unit'])} | {md_escape(cause(evidence(r, rec, words)))} |")
    return lines + [""]


def _ratio(x: float) -> str:
    """``3.00``, ``0.45``; two significant digits below 0.1 (``0.00021``), so a tiny ratio never reads as zero."""
    return f"{x:.2f}" if x >= 0.1 else f"{x:.2g}"


def _row_link(row: dict, rec, files) -> str:
    name = row["id"].split(":", 1)[-1]
    place = getattr(rec, "place", "") or files.get(row["source"], {}).get("file", "")
    file, _, line = place.partition(":")
    if not file.startswith(MEASUREMENTS):
        return f"`{md_escape(name)}`"
    return f"[{md_escape(name)}]({rel(ACCURACY_PAGE, source_page(file), f'L{line}' if line.isdigit() else '')})"


def _value(value: float, unit: str) -> str:
    shown = friendly(value, unit) if unit != "1" else ""
    return md_escape(shown or f"{number(value)} {unit}".strip())


def reason_class(why: str) -> str:
    """An unmapped row's reason with its particulars (numbers, quoted values) replaced, so like reasons count together."""
    text = re.sub(r"(?<!\w)'[^']*'(?!\w)", "'…'", why)
    text = re.sub(r"(?<![\w.-])\d+(\.\d+)?(?![\w.-])", "N", text)
    return text if len(text) <= 220 else text[:217] + "…"


def _unmapped(result) -> list[str]:
    lines = ["## Not evaluable as stated", ""]
    if not result.unmapped:
        return lines + ["Every measurement row was evaluated.", ""]
    counts, example, kinds = Counter(), {}, defaultdict(Counter)
    for u in result.unmapped:
        key = reason_class(u["why"])
        counts[key] += 1
        example.setdefault(key, u)
        kinds[key][u["kind"]] += 1
    lines += [f"{len(result.unmapped)} rows the engine refuses to evaluate with the stated inputs (a refusal, not a guess), "
              "counted by reason (numbers and quoted values generalised to N and '…'):", "",
              "| rows | kind | reason | example |", "|---|---|---|---|"]
    for key, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        kind = ", ".join(f"{k} {c}" if len(kinds[key]) > 1 else k for k, c in sorted(kinds[key].items()))
        ex = example[key]
        said = "" if ex["why"] == key else f": {md_escape(ex['why'])}"
        lines.append(f"| {n} | {kind} | {md_escape(key)} | `{md_escape(ex['id'].split(':', 1)[-1])}`{said} |")
    return lines + [""]


def _calibration(result) -> list[str]:
    lines = ["## Calibration", "", "The constants fitted on every table (the in-sample fit; each held-out prediction refits the same "
             "model without the rows held out). A parameter fitted per group (device generation, fabric or engine) lists each "
             "group's value; a group with no measurement takes the *shared* one.", ""]
    for kind, params in result.calibration.items():
        lines += [f"**{KIND_TITLES.get(kind, kind)}**", "", "| parameter | shared | per group |", "|---|---|---|"]
        for name, by in params.items():
            groups = ", ".join(f"{md_escape(g)} {v:.3g}" for g, v in sorted(by.items()) if g != "shared") or "–"
            lines.append(f"| `{name}` | {_cell(by.get('shared'), '{:.3g}')} | {groups} |")
        lines.append("")
    return lines


def _sources(result, files) -> list[str]:
    scored, refused = Counter(r["source"] for r in result.rows), Counter(u["id"].split("/", 1)[0] for u in result.unmapped)
    families = defaultdict(list)
    for fid, f in files.items():
        families[f["family"]].append(fid)
    lines = ["## Sources", "", "A family is the unit held out. Rows scored and rows not evaluable per family:", "",
             "| family | tables | kinds | rows scored | not evaluable |", "|---|---|---|---|---|"]
    kinds_of = defaultdict(set)
    for r in result.rows:
        kinds_of[r["source"]].add(r["kind"])
    for fam, fids in sorted(families.items()):
        kinds = ", ".join(sorted(set().union(*(kinds_of[f] for f in fids)))) or "–"
        lines.append(f"| `{fam}` | {len(fids)} | {kinds} | {sum(scored[f] for f in fids)} | {sum(refused[f] for f in fids)} |")
    lines += ["", "Every table, with its source as the file states it (the file name opens the record as this site was built from it):", "",
              "| table | family | as of | rows scored | not evaluable | title and source |", "|---|---|---|---|---|---|"]
    for fid, f in sorted(files.items()):
        link = f"[{md_escape(fid.split(':', 1)[-1])}]({rel(ACCURACY_PAGE, source_page(f['file']))})"
        lines.append(f"| {link} | `{f['family']}` | {md_escape(f['as_of'])} | {scored[fid]} | {refused[fid]} | "
                     f"{md_escape(f['title'])}: {source_links(f['source'])} |")
    return lines + [""]


_URL = re.compile(r"https?://[^\s<>\"'`|]+")
_REPO = re.compile(r"\b([A-Za-z0-9][\w.-]*/[\w.-]+)@([0-9a-f]{7,40})\b(?:\s+([\w./-]+\.\w+))?")


def source_links(text: str) -> str:
    """A source string, escaped for a table cell, with its URLs and ``owner/repo@commit path`` references linked (GitHub)."""
    out, pos = [], 0
    spans = sorted([(m.start(), m.end(), _url_link(m)) for m in _URL.finditer(text)]
                   + [(m.start(), m.end(), _repo_link(m)) for m in _REPO.finditer(text)])
    for start, end, link in spans:
        if start < pos:
            continue
        out += [md_escape(text[pos:start]), link]
        pos = end
    out.append(md_escape(text[pos:]))
    return "".join(out)


def _url_link(m) -> str:
    url = m.group(0).rstrip(".,;:)")
    tail = m.group(0)[len(url):]
    return f"[{md_escape(url)}]({url.replace(')', '%29').replace('(', '%28')}){md_escape(tail)}"


def _repo_link(m) -> str:
    repo, commit, path = m.group(1), m.group(2), m.group(3)
    url = f"https://github.com/{repo}/{'blob' if path else 'tree'}/{commit}" + (f"/{path}" if path else "")
    return f"[{md_escape(m.group(0))}]({url})"
