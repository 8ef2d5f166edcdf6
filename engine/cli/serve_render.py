"""``plan serve`` text for a person: the Pareto front thinned to its knee and points spread along it, and,
where no layout meets the targets, the best value each target reaches."""

from __future__ import annotations

from engine.cli.render import prose, table
from engine.plan.front import knee, spread

MARK = ("mark", "")  # the column that marks the knee's row


def front_table(front, rows: list[dict], columns: list, fmt: str, every: bool) -> str:
    """The front as a table in ``fmt`` (text or md): every row with ``every``, else the rows of
    ``engine.plan.front.spread``, with a footer saying how many were left out; the knee's row marked."""
    k = knee(front)
    shown = list(range(len(front))) if every else spread(front)
    # a narrow terminal loses first the columns the others imply or the JSON keeps: TP comm (inside TPOT), the split's
    # prefill TP, the fleet size, the speculative extras, then EP
    body = table([{**rows[i], MARK[0]: "knee" if i == k else ""} for i in shown], [*columns, MARK], fmt,
                 droppable=("tp_comm_ms", "tp_prefill", "fleet_gpus", "tpot_plain_ms", "spec_breakeven", "ep", "ttft_ms"))
    left = len(front) - len(shown)
    if not left:
        return body
    foot = (f"{len(shown):,} of the front's {len(front):,} points shown (both ends, the knee, the rest spread evenly along it), "
            f"{left:,} left out:\n--all prints every point, as --format json and csv do")
    return f"{body}\n\n{foot if fmt == 'md' else prose(foot)}"


def knee_line(front) -> str:
    """One line naming the knee (engine.plan.front.knee) and what it is."""
    x = front[knee(front)]
    return (f"knee of the front: {where(x)} ({x['user_tokens_per_s']:,.1f} tok/s per user, {x['tokens_per_s_per_gpu']:,.1f} tok/s per GPU),\n"
            "  the point nearest the best of both at once (each axis scaled to the front's range)")


def where(x: dict) -> str:
    return f"{x['mode']} TP {x['tp']}" + (f" x EP {x['ep']}" if x["ep"] > 1 else "") + f", batch {x['batch']}"


def reach_text(reach: dict, ttft: float, tpot: float, bullet: str) -> str:
    """Where nothing meets the targets: the lowest TTFT and TPOT a layout that fits reaches, against each
    target; where no layout fits in memory, the least memory per GPU against the usable memory."""
    if reach["ttft"] is None:
        m = reach["memory"]
        return ("no configuration meets the targets: no layout fits in memory; the least is "
                f"{m['memory'] / 2**30:,.2f} GiB per GPU ({where(m)}) against {reach['usable'] / 2**30:,.2f} GiB usable")
    lines = ["no configuration meets the targets; the best each target reaches over the layouts that fit in memory:"]
    for name, key, target, digits in (("TTFT", "ttft", ttft, 1), ("TPOT", "tpot", tpot, 2)):
        x = reach[key]
        verdict = "met" if x[key] <= target else "missed"
        lines.append(f"{bullet}lowest {name} {1e3 * x[key]:,.{digits}f} ms with {where(x)} (target {1e3 * target:g} ms: {verdict})")
    return "\n".join(lines)
