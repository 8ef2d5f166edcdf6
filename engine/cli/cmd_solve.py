"""``aiinfra formula solve ID --for SYMBOL [--set ...] [--eq V | --le V | --ge V]``."""

from __future__ import annotations

from engine.cli.cmd_formula import find
from engine.cli.common import emit, parse_sets, root_of
from engine.cli.render import to_json
from engine.core.humanize import number
from engine.kb.knowledge import Knowledge


def run(args) -> int:
    from engine.numeric.solve import solve

    k = Knowledge.load(root_of(args))
    f = find(k, args.id)
    relation, bound = next(((r, getattr(args, r)) for r in ("eq", "le", "ge") if getattr(args, r) is not None), ("eq", None))
    sol = solve(f, args.target, parse_sets(args.sets), relation, bound)
    if args.format == "json":
        emit(to_json(sol.to_json()))
        return 0
    md = args.format == "md"
    out = [f"{'## ' if md else ''}{f.id} · {f.name}: solved for {sol.target} [{sol.unit}]", ""]
    for text, tex in zip(sol.closed_form, sol.closed_form_latex, strict=True):
        out.append(f"$$ {tex} $$" if md else f"  {text}")
    given = ", ".join(f"{n}={number(v)}" for n, v in sol.inputs.items())
    target_rel = {"eq": "=", "le": "<=", "ge": ">="}[sol.relation]
    if sol.bound is not None:
        out += ["", f"with {f.output.symbol} {target_rel} {number(sol.bound)} {f.output.unit_text}" + (f" and {given}" if given else "") + ":"]
    unit = "" if sol.unit == "1" else f" {sol.unit}"
    for v in sol.values:
        out.append(f"  {sol.target} = {number(v)}{unit}")
    if sol.interval:
        out.append(f"  {sol.target} in {sol.interval}{unit}")
    if sol.method:
        out.append(f"  method: {sol.method.replace('_', ' ')}")
    for note in sol.notes:
        out.append(f"  note: {note}")
    emit("\n".join(out))
    return 0
