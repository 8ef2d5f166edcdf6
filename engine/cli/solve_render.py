"""Text, Markdown and JSON of ``calc ID --solve INPUT --where ...`` (an engine.numeric.calc_solve.CalcSolution)."""

from __future__ import annotations

import math

from engine.cli.render import table, to_json
from engine.core.humanize import friendly, number, value_range

DIGITS = 9  # significant digits shown: the compiled floor/ceiling's 1e-9 relative snap stays out of sight (JSON keeps every digit)
METHODS = {"closed_form": "closed form (SymPy)", "interval": "exact interval (SymPy, at the given values)",
           "numeric": "numeric bracket (SciPy brentq on the compiled chain)"}


def render_solution(sol, fmt: str) -> str:
    if fmt == "json":
        return to_json(sol.to_json())
    md = fmt == "md"
    unit = "" if sol.unit in ("", "1") else f" {sol.unit}"
    head = f"{sol.calculator} · solve {sol.target}{f' [{sol.unit}]' if unit else ''} ({sol.domain})"
    lines = [f"## {head}" if md else head, ""]
    for a in sol.answers:
        c = a.condition
        lines.append(f"{'- ' if md else ''}{c.text.strip()}: {METHODS[a.method]}")
        if a.closed_form:
            lines += [f"  $$ {tex} $$" for tex in a.closed_form_latex] if md else [f"    {text}" for text in a.closed_form]
        lines.append(f"    {sol.target} in {_interval(a.pieces, unit)}")
        if a.brackets:
            lines.append("    bracketed between samples " + ", ".join(f"[{number(lo, DIGITS)}, {number(hi, DIGITS)}]" for lo, hi in a.brackets))
        lines += [f"    note: {n}" for n in a.notes]
    lines.append("")
    lines.append(f"{'**' if md else ''}{sol.target} in {_interval(sol.pieces, unit)}{'**' if md else ''} (every condition)")
    lines += _answer(sol, unit)
    if sol.over_range:
        lines += _over_range(sol, unit)
    lines.append("")
    rows = [dict(name=n, value=value_range(v), unit=v.unit, source=v.source) for n, v in sol.inputs.items()]
    lines += [table(rows, [("name", "input"), ("value", "value"), ("unit", "unit"), ("source", "source")], "md" if md else "text"), ""]
    lines.append("Formulas: " + " -> ".join(sol.formulas))
    for title, items in (("Notes", sol.notes), ("Warnings", sol.warnings)):
        if items:
            lines += ["", f"### {title}" if md else f"{title}:"] + [f"- {x}" for x in items]
    return "\n".join(lines)


def _interval(pieces, unit: str) -> str:
    if not pieces:
        return "no value (empty)"
    parts = []
    for lo, hi, li, hin in pieces:
        if lo == hi:
            parts.append(f"{{{number(lo, DIGITS)}}}")
        else:
            parts.append(f"{'[' if li else '('}{_end(lo)}, {_end(hi)}{']' if hin else ')'}")
    return " ∪ ".join(parts) + unit


def _end(v: float) -> str:
    return "inf" if v == math.inf else "-inf" if v == -math.inf else number(v, DIGITS)


def _answer(sol, unit: str) -> list[str]:
    if sol.value is None:
        if len(sol.pieces) != 1 or not sol.binding:
            return []
        lo, hi = sol.pieces[0][:2]
        return [f"answer: the {'smallest' if side == 'low' else 'largest'} {sol.target} is {number(lo if side == 'low' else hi, DIGITS)}{unit}, "
                f"bound by {sol.binding[side]}" for side in ("low", "high") if side in sol.binding]
    which = next(iter(sol.binding), "value")
    word = {"low": "smallest", "high": "largest", "value": "only"}[which]
    shown = friendly(sol.value, sol.unit)
    out = [f"answer: the {word} {sol.target} is {number(sol.value, DIGITS)}{unit}" + (f" ({shown})" if shown else "")
           + (f", bound by {sol.binding[which]}" if sol.binding.get(which) else "")]
    units = {a.condition.output: a.condition.unit for a in sol.answers}
    for name, v in sol.at_answer.items():
        u = "" if units[name] in ("", "1") else f" {units[name]}"
        shown = "" if v is None else friendly(v, units[name])
        out.append(f"  there {name} = " + ("no value" if v is None else f"{number(v, DIGITS)}{u}" + (f" ({shown})" if shown else "")))
    return out


def _over_range(sol, unit: str) -> list[str]:
    r = sol.over_range
    how = "corners; the outputs are proven monotone in each" if r["method"] == "exact" else "corners and seeded samples"
    out = [f"over the ranges of {', '.join(r['ranged'])} ({r['points']} points: {how}):",
           f"  for every value: {sol.target} in {r['every_text']}", f"  for some value:  {sol.target} in {r['some_text']}"]
    for key, word in (("low", "lower end"), ("high", "upper end")):
        ends = r.get(key)
        if ends and math.isfinite(ends[0]) and ends[0] != ends[1]:
            out.append(f"  {word} moves over {number(ends[0], DIGITS)} .. {number(ends[1], DIGITS)}{unit}")
    return out
