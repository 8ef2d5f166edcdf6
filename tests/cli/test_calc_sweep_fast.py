"""``calc --sweep`` on the fast path (issue 24): no argparse build, so no schema validation of every
calculator file, and CSV written column by column with the same bytes as csv.writer row by row."""

from __future__ import annotations

import csv
import io

import pytest

from engine.cli import cmd_calc
from engine.cli.main import main

# Qwen3-8B (config.json: 36 layers, 8 KV heads, head_dim 128) in BF16 on 80 GiB. Budget: 0.9 x 80 GiB - 16 GiB - 4 GiB
# = 55,834,574,848 B; a request of 4096 tokens holds 4096 x 147,456 = 603,979,776 B -> floor(92.44) = 92; at 8192 tokens 46
SWEEP = ["calc", "kv-concurrency", "--set", "layers=36", "--set", "kv_heads=8", "--set", "head_dim=128", "--set", "kv_bytes=2",
         "--set", "gpu_memory_total=80GiB", "--set", "weight_bytes=16GiB", "--set", "engine_overhead_bytes=4GiB",
         "--sweep", "context_tokens=4096..8192", "--points", "2"]


def test_a_sweep_is_read_without_the_full_parser():
    args = cmd_calc.fast_args([*SWEEP, "--log", "--plot", "out.svg", "--format", "csv"])
    assert args is not None
    assert (args.sweep, args.points, args.log, args.plot, args.format) == ("context_tokens=4096..8192", 2, True, "out.svg", "csv")
    assert cmd_calc.fast_args([*SWEEP[:-1], "two"]) is None  # the full parser names --points with its own message


def test_a_sweep_never_validates_every_calculator_file(capsys, monkeypatch):
    from engine.numeric import calc_records

    def refuse(*a, **k):
        raise AssertionError("the records were read through the schema check")

    assert main(SWEEP) == 0  # fills the cached records (a first run in a fresh cache folder reads them once)
    capsys.readouterr()
    monkeypatch.setattr(calc_records, "load_records", refuse)
    assert main(SWEEP) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    at = rows[0].index("max_concurrent_requests [requests]")
    assert [r[0] for r in rows[1:]] == ["4096", "8192"] and [r[at] for r in rows[1:]] == ["92", "46"]


@pytest.mark.parametrize("values", [[4096.0, 8192.0], [0.1, 1e-7, 123456789012.0, float("nan"), float("inf"), -2.5]])
def test_the_csv_is_what_csv_writer_writes_row_by_row(values):
    import numpy as np

    xs = np.asarray(values)
    ys = {"y": xs * 3, "z": np.floor(xs)}
    units = {"y": "B", "z": "1"}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["x [s]", "y [B]", "z"])
    for i, x in enumerate(xs):
        w.writerow([f"{x:.10g}", f"{ys['y'][i]:.10g}", f"{ys['z'][i]:.10g}"])
    assert cmd_calc._sweep_csv("x", "s", xs, ys, units) == buf.getvalue()


def test_a_sweep_over_tokens_steps_through_whole_tokens(capsys):
    """Issue 28: 4096..8192 in 4 points is 4096, 5461.33, 6826.67, 8192 as numbers; a token count is whole, so the
    rows are 4096, 5461, 6827, 8192. 5461 tokens in whole 16-token blocks is 5472 tokens x 147,456 B = 806,879,232 B
    per request: floor(55,834,574,848 / 806,879,232) = floor(69.20) = 69 requests (the budget of the comment above)."""
    argv = [*SWEEP[:-1], "4", "--format", "csv"]
    assert main(argv) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert [r[0] for r in rows[1:]] == ["4096", "5461", "6827", "8192"]
    col = rows[0].index(next(h for h in rows[0] if h.startswith("max_concurrent_requests ")))
    assert rows[2][col] == "69"
