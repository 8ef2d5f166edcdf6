"""The fitted constants as the commands read them (``knowledge/calibration/fitted.json``), without NumPy or SciPy.

Light on purpose: ``roofline --model`` prints its calibrated line from here and must not pay for the fitting stack.
"""

from __future__ import annotations

from engine.measure.generations import generation

CALIBRATION = "knowledge/calibration/fitted.json"


def calibration(root) -> dict | None:
    import json
    from pathlib import Path

    path = Path(root) / CALIBRATION
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def constants(root, kind: str, device: str) -> dict | None:
    """The calibrated constants of ``kind`` for ``device``'s generation (the shared value where its generation has no
    measurement), with which group each came from and the kind's held-out band; None without a calibration."""
    cal = (calibration(root) or {}).get(kind)
    if not cal:
        return None
    gen = generation(device)
    values, source = {}, {}
    for name, by in cal["parameters"].items():
        values[name] = by.get(gen, by["shared"])
        source[name] = gen if gen in by else "shared"
    return {"values": values, "from": source, "group": gen, "band": {"held_out_within_30": cal.get("held_out_within_30"),
            "held_out_median_error_factor": cal.get("held_out_median_error_factor")}, "fitted_on": len(cal.get("fitted_on", [])), "date": cal.get("date")}
