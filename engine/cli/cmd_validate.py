"""``aiinfra validate``: the measurement records run through the engine with their layouts pinned;
predicted (in-sample and held out) against measured, per record and per kind; the gate against the
committed baseline (``--gate``), the baseline rewritten (``--write-baseline``), an SVG scatter (``--svg``).

Parsers are added by :func:`add_parsers`; the handler imports the engine at call time.
"""

from __future__ import annotations

KINDS = ("serve", "train", "gemm", "hbm", "collective")
CSV_COLUMNS = [(k, k) for k in ("id", "kind", "metric", "statistic", "model", "device", "gpus", "engine", "measured", "unit", "in_sample", "held_out",
                                "held_out_family", "ratio", "source", "where")]


def add_parsers(verbs, Parser, shared) -> None:
    p = verbs.add_parser("validate", help="score the engine against published measurements (held out by source)",
                         description="Run every measurement record of knowledge/measurements/ through the engine with its layout pinned: "
                                     "per record the measured value, the in-sample prediction and the held-out ones (the calibration fitted "
                                     "without the record's own table, and without its publisher's whole series); per kind MAPE, median error factor, shares within +-15/30/50%, "
                                     "Spearman rank correlation. Exit 1 with --gate when a kind's held-out MAPE worsens by more than 5 points "
                                     "or its rank correlation drops by more than 0.05 against the committed baseline.")
    p.add_argument("--kind", action="append", choices=KINDS, help="only this kind (repeatable; default all)")
    p.add_argument("--device", metavar="ID", help="report only rows on this device (the fits still use every record)")
    p.add_argument("--model", metavar="ID", help="report only rows of this model (the fits still use every record)")
    p.add_argument("--worst", type=int, default=10, metavar="N", help="list the N worst held-out rows (default 10)")
    p.add_argument("--svg", metavar="FILE", help="write a log-log scatter of held-out predicted vs measured, one panel per kind (atomically)")
    p.add_argument("--gate", action="store_true", help="compare with the committed baseline; exit 1 on a regression")
    p.add_argument("--write-baseline", action="store_true", help="write this run's summary as the baseline (knowledge/calibration/validate-baseline.json) "
                                                                 "and the fitted constants with what they were fitted on (knowledge/calibration/fitted.json)")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_validate:validate")


def validate(args) -> int:
    import json
    import os
    import sys

    from engine.cli.common import emit, root_of, writable_target, write_atomic
    from engine.core.errors import InputError
    from engine.measure import gate, report
    from engine.measure.validate import run

    root = root_of(args)
    if args.worst < 0:
        raise InputError("--worst", f"{args.worst} is not a non-negative count")
    if args.write_baseline and (args.kind or args.device or args.model):
        raise InputError("--write-baseline", "the baseline is the whole run: give it without --kind, --device or --model")
    if args.svg:
        writable_target(args.svg, "--svg")  # before the run: a mistyped folder is refused at once, not after it
    if args.gate and (args.kind or args.device or args.model):
        raise InputError("--gate", "the gate compares the whole run: give it without --kind, --device or --model")
    result = run(root, kinds=args.kind, device=args.device, model=args.model)
    if args.svg:
        write_atomic(args.svg, report.svg(result), "--svg")
    fmt = getattr(args, "format", "text")
    if fmt == "json":
        emit(json.dumps(report.to_json(result, args.worst), indent=1, sort_keys=False))
    elif fmt == "csv":  # one line per scored record
        from engine.cli.render import table

        emit(table(list(result.rows), CSV_COLUMNS, "csv"))
    else:
        emit(report.text(result, args.worst, markdown=fmt == "md"))
    if args.write_baseline:
        write_atomic(os.path.join(root, gate.BASELINE), json.dumps(result.summary, indent=1, sort_keys=True) + "\n", "--write-baseline")
        write_atomic(os.path.join(root, gate.CALIBRATION), json.dumps(gate.calibration_record(result), indent=1, sort_keys=True) + "\n", "--write-baseline")
    if args.gate:
        base = gate.read(root)
        if base is None:
            raise InputError("--gate", f"no baseline at {gate.BASELINE} (write one with --write-baseline)")
        bad = gate.regressions(result.summary, base)
        for line in bad:
            print(f"gate: {line}", file=sys.stderr)
        return 1 if bad else 0
    return 0
