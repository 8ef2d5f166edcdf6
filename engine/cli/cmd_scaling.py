"""``aiinfra scaling list|fit|optimum|band|lifecycle``: the Chinchilla parametric loss (FX430)
fitted to published points with the largest-compute points held out, the compute-optimal
allocation of a budget (FX431, FX432), the over-training band of a model size (FX433, FX434,
FX437, FX438) and the lifecycle compute of training plus inference (FX435, FX436).

Parsers are added by :func:`add_parsers` (engine.cli.main imports this module only to build them,
so the top of this module imports nothing heavy); each handler reads knowledge/scaling_laws/ and
the compiled formulas.
"""

from __future__ import annotations

DEFAULT_LAW = "besiroglu2024"
GOPHER_BUDGET = "5.76e23"  # Hoffmann et al. 2022 Table 3: the compute budget of Gopher (and Chinchilla)
FLAGS = {"compute": "--compute", "params": "--params", "overhead": "--overhead", "target_loss": "--loss",
         "inference_tokens": "--inference-tokens", "holdout": "--holdout", "law": "--law", "compare": "--compare"}
PLAN_COLUMNS = [("label", "plan"), ("params", "params"), ("tokens", "tokens"), ("tokens_per_param", "tokens/param"),
                ("train_flops", "train FLOPs"), ("loss", "loss")]
LIFE_COLUMNS = PLAN_COLUMNS + [("inference_flops", "inference FLOPs"), ("total_flops", "total FLOPs"), ("vs_chinchilla", "vs Chinchilla %")]
HELD_COLUMNS = [("params", "params"), ("tokens", "tokens"), ("flops", "train FLOPs"), ("loss", "loss"), ("predicted", "predicted"), ("error_pct", "error %")]
CONSTANT_COLUMNS = [("symbol", "constant"), ("name", "symbol"), ("fitted", "fitted"), ("published", "published")]
LIST_COLUMNS = [("id", "id"), ("name", "name"), ("fit", "published fit"), ("points", "points")]
SYMBOLS = {"loss_irreducible": "E", "loss_param_coeff": "A", "loss_data_coeff": "B", "loss_param_exponent": "alpha", "loss_data_exponent": "beta"}

EXAMPLES = {
    "fit": """examples:
  aiinfra scaling fit                                  # Besiroglu et al.'s 240 points, the 2 of largest compute held out
  aiinfra scaling fit --holdout 4 --compute 1e24 --overhead 25%
  aiinfra scaling fit --full-grid --format json        # Hoffmann et al.'s 4,500 starts (about a minute)
""",
    "optimum": """examples:
  aiinfra scaling optimum --compute 5.76e23            # Gopher's budget: 72.2B parameters, 1.33T tokens (refit)
  aiinfra scaling optimum --compute 5.76e23 --law hoffmann2022   # the paper's rounded constants: 32.2B
  aiinfra scaling optimum --compute 1e24 --format csv
""",
    "band": """examples:
  aiinfra scaling band --params 7e9                    # tokens within 10% extra compute of the optimum's loss
  aiinfra scaling band --params 70e9 --overhead 50% --law hoffmann2022
""",
    "lifecycle": """examples:
  aiinfra scaling lifecycle --params 13e9 --tokens 260e9 --inference-tokens 2T --compare 7e9
                                                       # Sardana et al.'s Figure 1 scenario: 13B and 7B at one loss
  aiinfra scaling lifecycle --loss 2.0 --inference-tokens 10T --format json
""",
}


def add_parsers(verbs, Parser, shared) -> None:
    import argparse

    raw = argparse.RawDescriptionHelpFormatter
    scaling = verbs.add_parser("scaling", help="Chinchilla scaling law: fit, compute-optimal allocation, over-training band, lifecycle compute",
                               description="The Chinchilla parametric loss L = E + A/N^alpha + B/D^beta (FX430): published fits and points "
                                           "(knowledge/scaling_laws/), a refit with held-out points, the compute-optimal N and D of a budget, "
                                           "the over-training band of a model size and the model that minimises training plus inference FLOPs.")
    sverbs = scaling.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    sverbs.required = True
    p = sverbs.add_parser("list", help="the scaling-law records", description="List the scaling-law records: id, name, whether they publish constants, how many points.")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_scaling:list_")
    p = sverbs.add_parser("fit", help="fit FX430 to a record's points, holding out those of largest compute", formatter_class=raw, epilog=EXAMPLES["fit"],
                          description="Fit the Chinchilla loss to the record's points as Hoffmann et al. did (Huber loss, delta 1e-3, on log loss; "
                                      "quasi-Newton from a grid of starts), the --holdout points of largest training compute left out and predicted; "
                                      "then the fitted law's compute-optimal allocation of --compute and the over-training band of that N*.")
    _law(p)
    p.add_argument("--holdout", type=int, default=2, metavar="K", help="points of largest training compute held out of the fit and predicted (default 2)")
    p.add_argument("--full-grid", action="store_true", help="start from all 4,500 points of Hoffmann et al.'s grid (default: a 72-start subset)")
    p.add_argument("--compute", default=GOPHER_BUDGET, metavar="C", help=f"training budget in FLOP for the allocation (default {GOPHER_BUDGET}, Gopher's and Chinchilla's)")
    p.add_argument("--overhead", default="10%", metavar="X", help="extra training compute the band allows (default 10%%)")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_scaling:fit")
    p = sverbs.add_parser("optimum", help="compute-optimal N and D of a training budget", formatter_class=raw, epilog=EXAMPLES["optimum"],
                          description="N* = G (C/6)^(beta/(alpha+beta)), D* = G^-1 (C/6)^(alpha/(alpha+beta)), G = (alpha A / (beta B))^(1/(alpha+beta)) "
                                      "(Hoffmann et al. 2022 section 3.3; FX431, FX432), tokens per parameter (FX425) and the loss there (FX430).")
    _law(p)
    p.add_argument("--compute", required=True, metavar="C", help="training budget in FLOP (C = 6 N D), e.g. 1e24 or 5.76e23FLOP")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_scaling:optimum")
    p = sverbs.add_parser("band", help="over-training band of a model size", formatter_class=raw, epilog=EXAMPLES["band"],
                          description="For a model of --params parameters: the training tokens over which it reaches its loss with at most --overhead "
                                      "more training compute than the compute-optimal run of the same loss (de Vries 2023, 'Go smol or go home': "
                                      "FX433, FX434), from the under-training edge to the over-training edge, beside the tokens that make it compute-optimal.")
    _law(p)
    p.add_argument("--params", required=True, metavar="N", help="parameters of the model, e.g. 7e9 or 7G")
    p.add_argument("--overhead", default="10%", metavar="X", help="extra training compute allowed, e.g. 10%% or 0.5 (default 10%%)")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_scaling:band")
    p = sverbs.add_parser("lifecycle", help="model size minimising training plus lifetime inference FLOPs", formatter_class=raw, epilog=EXAMPLES["lifecycle"],
                          description="Sardana et al. 2023 (Beyond Chinchilla-Optimal): minimise 6 N D + 2 N x inference tokens (FX435) over N with "
                                      "L(N, D) = the target loss (D from FX436). The target is --loss, or the loss of --params trained on --tokens.")
    _law(p)
    p.add_argument("--loss", metavar="L", help="target pre-training loss (nats per token, on the law's data)")
    p.add_argument("--params", metavar="N", help="with --tokens: a reference model whose loss is the target")
    p.add_argument("--tokens", metavar="D", help="with --params: the reference model's training tokens")
    p.add_argument("--inference-tokens", required=True, metavar="T", help="tokens served over the model's life, e.g. 2T or 2e12")
    p.add_argument("--compare", action="append", default=[], metavar="N", help="also cost a model of N parameters trained to the target (repeatable)")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_scaling:lifecycle")


def _law(p) -> None:
    p.add_argument("--law", default=DEFAULT_LAW, metavar="ID",
                   help=f"scaling-law record of knowledge/scaling_laws (default {DEFAULT_LAW}, Besiroglu et al.'s refit; hoffmann2022 for the paper's rounded constants)")


# ---------------------------------------------------------------------- handlers


def _records(args) -> dict:
    from engine.cli.common import root_of
    from engine.kb.folders import folder_view

    return folder_view(root_of(args), "scaling_laws").scaling_laws


def _module(args):
    from engine.cli.common import root_of
    from engine.domain import scaling

    return scaling.formula_module(root_of(args))


def _flagged(call, *a, **kw):
    """``call(...)`` with a library error's parameter named by the flag the user typed."""
    from engine.core.errors import InputError

    try:
        return call(*a, **kw)
    except InputError as exc:
        raise InputError(FLAGS.get(exc.field, exc.field), exc.message) from None


def _quantity(text: str, unit: str, flag: str) -> float:
    from engine.cli.cmd_roofline import read_quantity

    return read_quantity(text, unit, flag)


def list_(args) -> int:
    from engine.cli.common import emit
    from engine.cli.render import table

    rows = [dict(id=i.split(":", 1)[1], name=r["name"], fit="yes" if "fit" in r else "-", points=len(r["points"]["rows"]) if "points" in r else "-")
            for i, r in sorted(_records(args).items())]
    emit(table(rows, LIST_COLUMNS, args.format))
    return 0


def fit(args) -> int:
    from engine.cli.common import emit
    from engine.cli.render import to_json
    from engine.core.errors import InputError
    from engine.domain import scaling, scaling_data, scaling_fit

    records = _records(args)
    record = _flagged(scaling_data.find, records, args.law)
    if "points" not in record:
        with_points = ", ".join(i.split(":", 1)[1] for i, r in sorted(records.items()) if "points" in r) or "none"
        raise InputError("--law", f"{record['id']} publishes constants but no points to fit (records with points: {with_points})")
    compute = _quantity(args.compute, "FLOP", "--compute")
    overhead = _quantity(args.overhead, "1", "--overhead")
    if args.holdout < 0:
        raise InputError("--holdout", f"expected 0 or more points to hold out, got {args.holdout}")
    module = _module(args)
    points = _flagged(scaling_data.points_of, record, _flop_per_param_token(module))
    result = _flagged(scaling_fit.fit, points, module, args.holdout, args.full_grid)
    best = _flagged(scaling.optimum, module, result.law, compute)
    zone = _flagged(scaling.band, module, result.law, best.params, overhead)
    published = scaling_data.law_of(record) if "fit" in record else None
    data = _fit_json(record, result, published, best, zone)
    if args.format == "json":
        emit(to_json(data))
    elif args.format == "csv":
        from engine.cli.render import table

        emit(table(data["constants"], CONSTANT_COLUMNS, "csv"))
    else:
        emit(_fit_document(data, args.format == "md"))
    return 0


def optimum(args) -> int:
    from engine.domain import scaling

    law, record = _law_of(args)
    compute = _quantity(args.compute, "FLOP", "--compute")
    best = _flagged(scaling.optimum, _module(args), law, compute)
    head = f"Compute-optimal allocation of {_n(compute)} FLOP under {record['id']} (FX431, FX432)"
    _emit_plans(args, head, [best], {"law": _law_json(record["id"], law), "compute": compute, "plan": _plan_json(best)}, law)
    return 0


def band(args) -> int:
    from engine.domain import scaling

    law, record = _law_of(args)
    params = _quantity(args.params, "1", "--params")
    overhead = _quantity(args.overhead, "1", "--overhead")
    zone = _flagged(scaling.band, _module(args), law, params, overhead)
    head = (f"Over-training band of a {_n(params)}-parameter model within {100 * overhead:g}% extra training compute under {record['id']} "
            f"(FX433, FX434): {_n(zone.under.tokens)} .. {_n(zone.over.tokens)} tokens, "
            f"{zone.under.tokens_per_param:.4g} .. {zone.over.tokens_per_param:.4g} tokens per parameter")
    extra = [f"model size over the compute-optimal size of its loss: {zone.fraction_under:.4g} at the under-training edge, "
             f"{zone.fraction_over:.4g} at the over-training edge; below {zone.min_fraction:.4g} no amount of data reaches that loss (FX438)"]
    data = {"law": _law_json(record["id"], law), "params": params, "overhead": overhead, "band": _band_json(zone)}
    _emit_plans(args, head, [zone.under, zone.optimal, zone.over], data, law, extra)
    return 0


def lifecycle(args) -> int:
    from engine.core.errors import InputError
    from engine.domain import scaling

    law, record = _law_of(args)
    module = _module(args)
    inference = _quantity(args.inference_tokens, "tokens", "--inference-tokens")
    compare = [_quantity(c, "1", "--compare") for c in args.compare]
    if args.loss is not None:
        if args.params or args.tokens:
            raise InputError("--loss", "give the target either as --loss or as --params with --tokens, not both")
        target, reference = _quantity(args.loss, "1", "--loss"), None
    elif args.params and args.tokens:
        n, d = _quantity(args.params, "1", "--params"), _quantity(args.tokens, "tokens", "--tokens")
        reference = _flagged(scaling.plan, module, law, "reference", n, d, inference)
        target = reference.loss
    elif args.params or args.tokens:
        missing = "--tokens" if args.params else "--params"
        raise InputError(missing, "is missing (a reference model needs both --params and --tokens)")
    else:
        raise InputError("--loss", "is missing (expected --loss L, or --params N with --tokens D for a reference model)")
    life = _flagged(scaling.lifecycle, module, law, target, inference, compare)
    rows = [life.chinchilla, life.optimal] + ([reference] if reference else []) + list(life.compared)
    saving = life.chinchilla.total_flops - life.optimal.total_flops
    head = (f"Lifecycle compute at loss {target:.6g} with {_n(inference)} inference tokens under {record['id']} (FX435, FX436): "
            f"the optimum is {_n(life.optimal.params)} parameters on {_n(life.optimal.tokens)} tokens, "
            f"{_n(saving)} FLOP ({100 * saving / life.chinchilla.total_flops:.3g}%) below the Chinchilla-optimal model")
    data = {"law": _law_json(record["id"], law), "target_loss": target, "inference_tokens": inference,
            "plans": [_plan_json(p, life.chinchilla) for p in rows]}
    _emit_plans(args, head, rows, data, law, chinchilla=life.chinchilla)
    return 0


# ---------------------------------------------------------------------- rendering


def _law_of(args):
    from engine.domain import scaling_data

    record = _flagged(scaling_data.find, _records(args), args.law)
    return _flagged(scaling_data.law_of, record), record


def _flop_per_param_token(module) -> float:
    from engine.domain.scaling_data import FLOP_PER_PARAM_TOKEN

    return module.FORMULAS["F1"]["symbols"][FLOP_PER_PARAM_TOKEN]["default"][0]


def _n(x: float) -> str:
    from engine.core.humanize import number

    return number(x)


def _plan_json(p, chinchilla=None) -> dict:
    out = {"label": p.label, "params": p.params, "tokens": p.tokens, "tokens_per_param": p.tokens_per_param, "train_flops": p.train_flops,
           "loss": p.loss, "inference_flops": p.inference_flops, "total_flops": p.total_flops}
    if chinchilla is not None:
        out["vs_chinchilla"] = p.total_flops / chinchilla.total_flops - 1
    return out


def _law_json(ident: str, law) -> dict:
    return {"id": ident, **law.given(), "source": law.source}


def _band_json(zone) -> dict:
    return {"optimal": _plan_json(zone.optimal), "under": _plan_json(zone.under), "over": _plan_json(zone.over),
            "fraction_under": zone.fraction_under, "fraction_over": zone.fraction_over, "min_fraction": zone.min_fraction}


def _row(p, chinchilla=None) -> dict:
    row = {k: (p.label if k == "label" else _n(getattr(p, k))) for k, _ in PLAN_COLUMNS}
    if chinchilla is not None:
        row.update(inference_flops=_n(p.inference_flops), total_flops=_n(p.total_flops),
                   vs_chinchilla=f"{100 * (p.total_flops / chinchilla.total_flops - 1):+.2f}")
    return row


def _emit_plans(args, head: str, plans, data: dict, law, extra=(), chinchilla=None) -> None:
    from engine.cli.common import emit
    from engine.cli.render import table, to_json

    columns = LIFE_COLUMNS if chinchilla is not None else PLAN_COLUMNS
    if args.format == "json":
        emit(to_json(data))
        return
    if args.format == "csv":
        raw = [{**_plan_json(p, chinchilla)} for p in plans]
        emit(table(raw, columns, "csv"))
        return
    md = args.format == "md"
    out = [f"# {head}" if md else head, "", table([_row(p, chinchilla) for p in plans], columns, args.format,
                                                   droppable=("tokens_per_param", "inference_flops", "train_flops"))]
    out += [""] + [f"- {line}" if md else line for line in extra] if extra else []
    out += ["", f"Law: E {law.loss_irreducible:g}, A {law.loss_param_coeff:g}, B {law.loss_data_coeff:g}, alpha {law.loss_param_exponent:g}, "
                f"beta {law.loss_data_exponent:g} [{law.source}]"]
    emit("\n".join(out))


def _fit_json(record: dict, result, published, best, zone) -> dict:
    constants = [{"symbol": SYMBOLS[name], "name": name, "fitted": getattr(result.law, name),
                  "published": getattr(published, name) if published else None} for name in SYMBOLS]
    held = [{"params": h.params, "tokens": h.tokens, "flops": h.flops, "loss": h.loss, "predicted": h.predicted, "error": h.error} for h in result.held_out]
    return {"law": record["id"], "constants": constants, "published_source": published.source if published else None,
            "objective": result.objective, "starts": result.starts, "fitted_on": result.fitted_on, "excluded": result.excluded,
            "held_out": held, "max_abs_error": max((abs(h["error"]) for h in held), default=None),
            "optimum": _plan_json(best), "band": {**_band_json(zone), "overhead": zone.overhead}, "points_source": record["points"]["source"]}


def _fit_document(data: dict, md: bool) -> str:
    from engine.cli.render import table

    fmt = "md" if md else "text"
    head = (f"Fit of FX430 to {data['fitted_on']} points of {data['law']} ({data['excluded']} excluded by the source, "
            f"{len(data['held_out'])} of largest training compute held out)")
    out = [f"# {head}" if md else head,
           f"Huber loss (delta 1e-3) on log loss, BFGS from {data['starts']} starts; objective {data['objective']:.6g}", ""]
    out.append(table([{**c, "fitted": f"{c['fitted']:.6g}", "published": "-" if c["published"] is None else f"{c['published']:g}"}
                      for c in data["constants"]], CONSTANT_COLUMNS, fmt))
    if data["held_out"]:
        rows = [{**{k: _n(h[k]) for k in ("params", "tokens", "flops")}, "loss": f"{h['loss']:.6g}", "predicted": f"{h['predicted']:.6g}",
                 "error_pct": f"{100 * h['error']:+.3f}"} for h in data["held_out"]]
        out += ["", "Held out (largest training compute):" if not md else "## Held out (largest training compute)", table(rows, HELD_COLUMNS, fmt)]
    best, zone = data["optimum"], data["band"]
    out += ["", f"Fitted law at {_n(best['train_flops'])} FLOP: N* {_n(best['params'])}, D* {_n(best['tokens'])} tokens, "
                f"{best['tokens_per_param']:.4g} tokens per parameter, loss {best['loss']:.6g} (FX431, FX432)",
            f"Over-training band of N* within {100 * zone['overhead']:g}% extra compute: {_n(zone['under']['tokens'])} .. {_n(zone['over']['tokens'])} tokens, "
            f"{zone['under']['tokens_per_param']:.4g} .. {zone['over']['tokens_per_param']:.4g} tokens per parameter (FX433, FX434)",
            "", f"Points: {data['points_source']}"]
    if data["published_source"]:
        out.append(f"Published constants: {data['published_source']}")
    return "\n".join(out)
