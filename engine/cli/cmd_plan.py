"""``aiinfra plan``: search parallel layouts for training a model on a cluster.

Parsers are added by :func:`add_parsers` (engine.cli.main imports this module only to build
them; nothing heavy at the top); the handler loads the planner.
"""

from __future__ import annotations

EXAMPLES = """examples:
  aiinfra plan --model llama-3.1-405b --device h100-sxm --gpus 16384 --global-batch 2048 --seq 8192
  aiinfra plan --model llama-3.1-405b --device h100-sxm --gpus 16384 --global-batch 128 --seq 131072
  aiinfra plan --model llama-3.1-70b --device h100-sxm --gpus 1024 --global-batch 1024 --executor process --format json
  aiinfra plan serve --model llama-3.1-70b --device h100-sxm --prompt 4096 --output 512 --ttft 2s --tpot 60ms --demand 200000
  aiinfra plan serve --model llama-3.1-70b --device b200 --prompt 4096 --output 512 --ttft 2s --tpot 30ms --weights nvfp4 --kv-cache fp8 --precision nvfp4 --mfu 0.4
  aiinfra plan serve --model mixtral-8x7b --device h100-sxm --prompt 1024 --output 256 --ttft 1s --tpot 50ms --qps 10 --format csv
  aiinfra plan serve --model llama-3.1-70b --device h100-sxm --prompt 2048 --output 512 --ttft 2s --tpot 30ms --speculative draft_len=3,acceptance=0.7,draft_cost=0.05
  aiinfra plan serve --model deepseek-v3 --device h200 --prompt 2048 --output 512 --ttft 2s --tpot 50ms --speculative method=mtp,acceptance=0.85
  aiinfra plan serve --model llama-3.1-70b --device h200 --prompt 4096 --output 512 --ttft 2s --tpot 50ms --max-qps --gpus 64
  aiinfra plan --model llama-3.1-405b --device h100-sxm --gpus 16384 --global-batch 2048 --seq 8192 --max-tokens --days 54
Every point of TP x CP x PP x V (interleaved chunks) x EP x micro-batch x ZeRO stage x recompute is checked (DP = GPUs / (TP x CP x PP));
the fastest that fit are printed with what limits each, and why the first beats the second; layouts
that differ only by ZeRO stage and tie are folded (--all lists them).
serve: co-located or prefill/decode-split instances of TP (x EP) x decode batch against TTFT/TPOT;
the Pareto front of tokens/s per GPU vs per user (its knee and about ten points spread along it; --all
for every point), the fewest GPUs for --demand/--qps, and how many points FX134's batch bound and the
pd-disaggregation tree pruned; where nothing meets the targets, the lowest TTFT and TPOT any layout reaches.
"""


def _int(text: str) -> int:
    import argparse

    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def _float(text: str) -> float:
    import argparse

    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def add_parsers(verbs, Parser, shared) -> None:
    import argparse

    p = verbs.add_parser("plan", help="search parallel layouts: training (TP x CP x PP x DP x EP ...) or serving (plan serve)",
                         description="Search the parallel layouts of a training job: memory per GPU (F4, FX104, F7), step time "
                                     "(F1, FX412, F13, F15-F20, FX720); print the fastest that fit, the binding constraint of each and why the best wins. "
                                     "`plan serve`: co-located or prefill/decode-split serving instances of TP x EP x decode batch against TTFT and "
                                     "TPOT targets (F6, F8, FX70, FX800, FX74-FX79, FX131-FX134, FX138); the Pareto front and the fewest GPUs.",
                         formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES)
    p.add_argument("mode", nargs="?", choices=("train", "serve"), default="train", help="train (default) or serve")
    p.add_argument("--model", required=True, metavar="ID", help="model id from knowledge/models, e.g. llama-3.1-70b")
    p.add_argument("--device", required=True, metavar="ID", help="device id from knowledge/hardware, e.g. h100-sxm")
    p.add_argument("--gpus", type=_int, metavar="N", help="train: GPUs in the job (DP x TP x CP x PP = N; required); plan serve --max-qps: GPUs of the fleet")
    p.add_argument("--global-batch", type=_int, metavar="B", help="sequences per optimizer step (default: one per GPU)")
    p.add_argument("--seq", type=_int, default=4096, metavar="S", help="sequence length in tokens (default 4096)")
    p.add_argument("--nvlink-domain", type=_int, default=8, metavar="G", help="GPUs per NVLink domain; TP stays inside one (default 8)")
    p.add_argument("--max-cp", type=_int, metavar="C", help="largest context-parallel group tried, a power of two (default: 16 from 32,768 "
                                                         "tokens, else 1, as Llama 3 ran CP 16 only for 128K sequences)")
    p.add_argument("--max-vp", type=_int, metavar="V", help="most model chunks per pipeline stage tried (interleaved 1F1B: 1, 2, 4, 8; default 4)")
    p.add_argument("--max-micro-batch", type=_int, default=16, metavar="M", help="largest micro-batch tried, in sequences (default 16)")
    p.add_argument("--scaleout-bandwidth", type=_float, metavar="GB/s", help="scale-out bandwidth per GPU in GB/s (default 50, the Llama 3 cluster's 400 Gb/s)")
    p.add_argument("--compute-efficiency", type=_float, metavar="F", help="share of the dense peak the kernels reach (default: the training "
                   "calibration's e_train for the device's generation and precision, knowledge/calibration/fitted.json)")
    p.add_argument("--no-flash", action="store_true", help="attention scores stored (unfused), not FlashAttention")
    p.add_argument("--precision", default="bf16", metavar="P", help="the matrix products' precision: the device's dense peak used (bf16, fp8, "
                                                                 "nvfp4, ...; default bf16); refused where the device states none")
    p.add_argument("--top", type=_int, default=5, metavar="K", help="configurations to print (default 5)")
    p.add_argument("--executor", choices=("serial", "process", "dask"), default="serial", help="serial (default, the reference), process (local pool) or dask")
    p.add_argument("--workers", type=_int, metavar="W", help="processes for --executor process|dask (default: CPUs; dask 2)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="with --executor dask: a running scheduler (default: a local cluster on 127.0.0.1)")
    p.add_argument("--tile", type=_int, default=1_000_000, metavar="P", help="points per tile, each reduced on its worker (default 1e6)")
    p.add_argument("--all", action="store_true", help="train: list layouts that differ only by ZeRO stage and tie on step time (default: folded); "
                   "serve: print every point of the Pareto front (default: its knee and about ten points spread along it; "
                   "--format json and csv hold every point)")
    t = p.add_argument_group("pin an axis to one value (the others are still searched; every axis given: that layout is evaluated and "
                             "explained even where the search beats it, with the calibrated times of `aiinfra validate`; JSON holds it under "
                             "\"pinned\"). plan serve takes --tp, --ep, --batch or --concurrency, --dp")
    t.add_argument("--tp", type=_int, metavar="T", help="tensor-parallel size (divides the heads and KV heads, within --nvlink-domain)")
    t.add_argument("--cp", type=_int, metavar="C", help="context-parallel size (2 x CP chunks divide the sequence)")
    t.add_argument("--pp", type=_int, metavar="P", help="pipeline stages (at most the layers; TP x CP x PP divides the GPUs)")
    t.add_argument("--vp", type=_int, metavar="V", help="model chunks per stage, interleaved 1F1B (any V with PP x V at most the layers)")
    t.add_argument("--ep", type=_int, metavar="E", help="expert-parallel size (divides the experts and DP; 1 for a dense model)")
    t.add_argument("--micro-batch", type=_int, metavar="M", help="sequences per micro-batch (DP x M divides the global batch)")
    t.add_argument("--zero", type=_int, metavar="Z", help="ZeRO stage 0-3 (above 0 needs DP > 1)")
    t.add_argument("--recompute", metavar="R", help="activation recomputation: none, selective or full")
    b = p.add_argument_group("bounds")
    b.add_argument("--max-qps", action="store_true", help="plan serve: the highest request rate --gpus N GPUs sustain within --ttft/--tpot, "
                   "and the layout (TP x EP, batch, replicas) that achieves it: max over layouts of replicas x FX138 goodput x the FX87 "
                   "waterline / output tokens")
    b.add_argument("--max-tokens", action="store_true", help="plan (train): the most tokens the cluster trains in --days D at the fastest "
                   "layout (D x 86,400 s x global batch x seq / step time; availability 100%%)")
    b.add_argument("--days", type=_float, metavar="D", help="with --max-tokens: the training time in days")
    s = p.add_argument_group("serve (aiinfra plan serve)")
    s.add_argument("--prompt", type=_int, metavar="P", help="prompt tokens per request")
    s.add_argument("--output", type=_int, metavar="O", help="output tokens per request")
    s.add_argument("--ttft", metavar="T", help="time-to-first-token target, e.g. 500ms")
    s.add_argument("--tpot", metavar="T", help="time-per-output-token target, e.g. 50ms")
    s.add_argument("--demand", type=_float, metavar="TOK/S", help="output tokens/s the fleet must serve (default: one replica)")
    s.add_argument("--qps", type=_float, metavar="REQ/S", help="requests/s instead of --demand (demand = qps x output, FX86)")
    s.add_argument("--max-batch", type=_int, default=256, metavar="B", help="largest decode batch tried (default 256)")
    s.add_argument("--batch", type=_int, metavar="B", help="pin the decode batch (sequences in flight) of one instance")
    s.add_argument("--concurrency", type=_int, metavar="C", help="pin the requests in flight over the whole deployment (closed loop, as benchmark "
                                                                 "clients run); each of the --dp instances holds C / DP")
    s.add_argument("--dp", type=_int, metavar="D", help="data-parallel instances (replicas) of TP x EP sharing --concurrency (default 1)")
    s.add_argument("--engine", metavar="NAME", help="the serving engine for the calibrated step overheads, per step, per layer and per MoE layer (tensorrt-llm, vllm, sglang; default: "
                                                    "the value shared over engines)")
    s.add_argument("--max-ep", type=_int, default=64, metavar="E", help="largest expert-parallel group tried for MoE models (default 64)")
    s.add_argument("--weights", metavar="FORMAT", help="storage format of the weights (bf16 default, fp8, int4_group, nvfp4, mxfp4, ...: "
                                                     "scales included, FX650); at most as wide as --precision (FX651)")
    s.add_argument("--kv-cache", metavar="FORMAT", help="storage format of the K/V cache (bf16 default, fp8, ...)")
    s.add_argument("--mfu", type=_float, metavar="F", help="prefill and decode-compute MFU (default: the serving calibration's e_prefill "
                   "for the device's generation, knowledge/calibration/fitted.json; 1 = the peak)")
    s.add_argument("--mbu", type=_float, metavar="F", help="share of peak HBM bandwidth decode reads reach (default: the serving "
                   "calibration's e_hbm for the device's generation; 1 = the datasheet bandwidth)")
    s.add_argument("--allreduce-latency", metavar="T", help="FX50 latency per ring step of a TP all-reduce, e.g. 5us (with --step-model roofline; "
                   "default: FX50's 20us)")
    s.add_argument("--step-model", choices=("calibrated", "roofline"), help="how a step is timed: calibrated (default where a serving "
                   "calibration exists and none of --mfu, --mbu, --allreduce-latency is given): validate's step, scored on published "
                   "measurements, with the fitted efficiencies and the per-layer and per-MoE-layer costs of --engine; roofline: the "
                   "book's FX75 max(compute at --mfu, HBM reads at --mbu) with FX50 ring all-reduces and no fixed cost")
    s.add_argument("--kv-link-bandwidth", type=_float, metavar="GB/s", help="split: KV transfer bandwidth per request in GB/s (default 50)")
    s.add_argument("--waterline", type=_float, metavar="F", help="FX87 capacity waterline (default: the record's 0.7)")
    s.add_argument("--no-split", action="store_true", help="co-located instances only (no prefill/decode pools)")
    s.add_argument("--prune", choices=("all", "bound", "none"), default="all",
                   help="all (default): FX134 batch bound and the pd-disaggregation tree; bound: FX134 only (never changes the result); none")
    s.add_argument("--svg", metavar="FILE.svg", help="also draw the Pareto front to FILE (needs matplotlib)")
    s.add_argument("--speculative", metavar="K=V,...", help="speculative decoding applied to every layout's TPOT: draft_len=3,acceptance=0.7"
                   "[,draft_cost=0.05] (c: one draft token's time over a plain step; default 0.05, Leviathan et al.), a rate per draft position "
                   "as acceptance=0.9/0.8/0.7, or method=mtp,acceptance=0.85 for one MTP module of the model as the draft (γ = 1, c from "
                   "its active parameters, FX965/FX964)")
    m = p.add_argument_group("simulate (plan serve --simulate: a discrete-event run of the pinned --tp/--ep layout under the serving calibration)")
    m.add_argument("--simulate", action="store_true", help="step the pinned layout request by request (continuous batching, chunked prefill, "
                   "K/V admission) at --concurrency (closed loop) or --qps (open loop) and print TTFT/TPOT/E2E percentiles")
    m.add_argument("--requests", type=_int, default=1000, metavar="N", help="requests simulated over the deployment (default 1000)")
    m.add_argument("--arrival", choices=("poisson", "gamma"), default="poisson", help="open-loop arrivals at --qps (default poisson)")
    m.add_argument("--cv", type=_float, default=1.0, metavar="CV", help="gamma arrivals: coefficient of variation of the gaps (default 1; >1 bursty)")
    m.add_argument("--lengths", choices=("fixed", "uniform", "lognormal"), default="fixed",
                   help="prompt and output lengths around --prompt/--output: fixed (default), uniform in [ratio x L, L], lognormal")
    m.add_argument("--range-ratio", type=_float, default=0.5, metavar="R", help="--lengths uniform: the lower end as a share of L (default 0.5)")
    m.add_argument("--sigma", type=_float, default=0.5, metavar="S", help="--lengths lognormal: sigma of log-length (default 0.5)")
    m.add_argument("--trace", metavar="FILE.csv", help="replay a trace: CSV with columns arrival_s,prompt,output (a header row is skipped)")
    m.add_argument("--seed", type=_int, default=0, metavar="S", help="random seed; the same seed gives the same run (default 0)")
    m.add_argument("--token-budget", type=_int, metavar="T", help="tokens one step carries, decodes and prompt chunks (default 8192, the "
                   "engines' max_num_batched_tokens / chunked_prefill_size)")
    m.add_argument("--admission", choices=("reserve", "on-demand"), help="K/V admission: reserve a request's whole length (SGLang, TensorRT-LLM) "
                   "or on-demand with preemption (vLLM); default by --engine, else reserve")
    m.add_argument("--schedule", choices=("mixed", "prefill-first"), help="step schedule: mixed prompt chunks and decodes in a step (vLLM V1, "
                   "TensorRT-LLM) or prompts in steps of their own while decodes wait (SGLang, vLLM V0); default by --engine, else mixed")
    m.add_argument("--percentile", type=_float, default=90.0, metavar="P", help="--simulate: the percentile --ttft and --tpot are checked at "
                   "(50, 90 or 99; default 90)")
    shared(p, False)
    p.set_defaults(handler="engine.cli.cmd_plan:run")


PINS = {"tp": "tp", "cp": "cp", "pp": "pp", "vp": "vp", "ep": "ep", "mb": "micro_batch", "zero": "zero", "recompute": "recompute"}  # axis -> args field

COLUMNS = [("rank", "#"), ("tp", "TP"), ("cp", "CP"), ("pp", "PP"), ("vp", "V"), ("dp", "DP"), ("ep", "EP"), ("mb", "mb"), ("n_micro", "micro-batches"), ("zero", "ZeRO"),
           ("recompute", "recompute"), ("step_s", "step s"), ("mfu_pct", "MFU %"), ("memory_gib", "memory GiB"), ("binding", "binding constraint")]


def run(args) -> int:
    from engine.cli.common import emit, root_of
    from engine.cli.render import to_json
    from engine.core.errors import InputError
    from engine.plan.pin import FLAGS
    from engine.plan.train import plan

    if args.mode != "serve":
        for flag, value in (("--batch", args.batch), ("--concurrency", args.concurrency), ("--dp", args.dp), ("--engine", args.engine)):
            if value is not None:
                raise InputError(flag, "pins a serving layout (aiinfra plan serve); plan train does not take it")
        if args.speculative is not None:
            raise InputError("--speculative", "applies to plan serve (decode TPOT); plan train does not take it")
        if args.max_qps:
            raise InputError("--max-qps", "applies to plan serve (the request rate of a fleet); for training give --max-tokens --days D")
        if args.max_tokens and args.days is None:
            raise InputError("--days", "is required with --max-tokens (the training time in days)")
        if args.days is not None and not args.max_tokens:
            raise InputError("--days", "goes with --max-tokens (the most tokens trained in D days)")
        if args.days is not None and not 0 < args.days < float("inf"):
            raise InputError("--days", f"{args.days:g} is not a positive number of days")
    if args.mode == "serve":
        for flag, value in (("--max-tokens", args.max_tokens or None), ("--days", args.days)):
            if value is not None:
                raise InputError(flag, "applies to plan (training); plan serve takes --max-qps --gpus N")
        if args.max_qps:
            return serve_max_qps(args)
        for axis in ("cp", "pp", "vp", "mb", "zero", "recompute"):
            if getattr(args, PINS[axis], None) is not None:
                raise InputError(FLAGS[axis], "pins a training layout (aiinfra plan); plan serve does not take it")
        return serve(args)
    if args.gpus is None:
        raise InputError("--gpus", "is required (GPUs in the job)")

    for flag, value in (("--weights", args.weights), ("--kv-cache", args.kv_cache)):
        if value is not None:
            raise InputError(flag, "applies to plan serve; plan train keeps mixed-precision weights, gradients and Adam states (F4: 2 + 2 + 12 B per parameter)")
    options = dict(global_batch=args.global_batch, seq=args.seq, nvlink_domain=args.nvlink_domain, micro_batches=args.max_micro_batch,
                   flash=not args.no_flash, precision=str(args.precision).strip().lower(), max_cp=args.max_cp)
    if args.max_vp is not None:
        options["max_vp"] = args.max_vp
    if args.scaleout_bandwidth is not None:
        options["scaleout_bandwidth"] = args.scaleout_bandwidth * 1e9
    if args.compute_efficiency is not None:
        options["compute_efficiency"] = args.compute_efficiency
    else:  # one rule (engine.cli.efficiency): the calibrated e_train for the device's generation and precision
        from engine.cli.efficiency import calibrated

        e = calibrated(root_of(args), "train", "e_train", args.device, options["precision"])
        if e is not None:
            options["compute_efficiency"], options["efficiency_note"] = e.value, e.note("--compute-efficiency", args.device)
    extra = {"address": args.scheduler} if args.scheduler and args.executor == "dask" else {}
    pins = {axis: getattr(args, dest) for axis, dest in PINS.items() if getattr(args, dest, None) is not None}
    result = plan(root_of(args), args.model, args.device, args.gpus, top=args.top, executor=args.executor, tile=args.tile,
                  workers=args.workers, fold=not args.all, pins=pins, **options, **extra)
    calibrated = _train_calibrated(args, result) if pins else None
    if args.max_tokens:
        from engine.plan.train import max_tokens

        bound = max_tokens(result, args.days)
        if args.format == "json":
            import json

            out = json.loads(render(result, "json", calibrated))
            emit(to_json({"max_tokens": bound["max_tokens"] if bound else None, "bound": bound, **out}))
            return 0
        if args.format != "csv":
            emit(_max_tokens_text(bound, result) + "\n\n" + render(result, args.format, calibrated))
            return 0
    emit(render(result, args.format, calibrated))
    return 0


def _max_tokens_text(bound: dict | None, result) -> str:
    if bound is None:
        return "max tokens: none (no layout fits the memory of one GPU)"
    b, s, r = bound, result.space, bound["layout"]
    return (f"max tokens in {b['days']:g} days on {s.gpus:,} GPUs: {b['max_tokens']:,.0f} "
            f"({b['max_tokens'] / 1e12:,.3f}T) = {b['days']:g} d x 86,400 s x {b['tokens_per_step']:,} tokens per step "
            f"({s.global_batch:,} x {s.seq:,}) / {b['step_time']:.4f} s per step ({b['tokens_per_s']:,.0f} tokens/s)\n"
            f"layout: TP {r['tp']} CP {r['cp']} PP {r['pp']} V {r['vp']} DP {r['dp']} EP {r['ep']} micro-batch {r['mb']} ZeRO {r['zero']} "
            f"recompute {r['recompute']} (the plan's #1)\n" + "\n".join("  " + a for a in b["assumptions"]))


def serve_max_qps(args) -> int:
    """plan serve --max-qps --gpus N: the highest request rate N GPUs sustain within the targets, and its layout."""
    from engine.cli.common import emit, root_of
    from engine.cli.render import to_json
    from engine.core.errors import InputError
    from engine.plan.serve import max_qps

    if args.gpus is None:
        raise InputError("--gpus", "is required with --max-qps (the GPUs of the fleet)")
    for name in ("prompt", "output"):
        if getattr(args, name) is None:
            raise InputError(f"--{name}", "is required for plan serve (tokens per request)")
    for flag, value in (("--demand", args.demand), ("--qps", args.qps), ("--simulate", args.simulate or None), ("--svg", args.svg),
                        ("--speculative", args.speculative), ("--concurrency", args.concurrency), ("--dp", args.dp)):
        if value is not None:
            raise InputError(flag, "does not go with --max-qps (it finds the request rate and the replicas for --gpus)")
    latency = None if args.allreduce_latency is None else _seconds(args.allreduce_latency, "--allreduce-latency")
    link = None if args.kv_link_bandwidth is None else args.kv_link_bandwidth * 1e9
    pin = _serve_pin(args)
    mfu, mfu_note = _serve_mfu(args)
    mbu, mbu_note = _serve_efficiency(args, "mbu", args.mbu)
    step = _serve_step(args)
    m = max_qps(root_of(args), args.model, args.device, args.gpus, executor=args.executor, workers=args.workers, tile_size=args.tile,
                prompt=args.prompt, output=args.output, ttft=_seconds(args.ttft, "--ttft"), tpot=_seconds(args.tpot, "--tpot"),
                nvlink_domain=args.nvlink_domain, max_batch=args.max_batch, max_ep=args.max_ep, mfu=mfu, mbu=1.0 if mbu is None else mbu,
                allreduce_latency=latency, kv_link_bandwidth=link, waterline=args.waterline, split=not args.no_split, prune=args.prune,
                weights=args.weights, kv_cache=args.kv_cache, precision=args.precision, pin=pin, dequant=_serve_dequant(args),
                step=None if step is None else step.values, engine=_engine(args))
    notes = tuple(n for n in (step.note(args.device) if step else None, mbu_note, mfu_note) if n) + m.assumptions
    x = m.layout
    if args.format == "json":
        keep = ("mode", "tp", "ep", "batch", "tp_prefill", "gpus_per_instance", "replicas", "prefill_instances", "gpus_used", "goodput", "qps",
                "output_tokens_per_s", "ttft", "tpot", "memory", "tokens_per_s_per_gpu", "user_tokens_per_s", "index")
        emit(to_json({"step_model": m.plan.step_model, "max_qps": m.max_qps, "gpus": m.gpus, "layout": {k: x[k] for k in keep} if x else None, "binding": m.binding,
                      "waterline": m.waterline, "points": m.plan.points, "feasible": m.plan.feasible, "assumptions": list(notes)}))
        return 0
    if x is None:
        emit(f"max request rate on {args.gpus:,} GPUs: none: no layout of at most {args.gpus:,} GPUs meets memory, TTFT and TPOT "
             f"({m.plan.feasible:,} of {m.plan.points:,} points meet them with more GPUs per instance)")
        return 0
    pool = f" + {_n(x['prefill_instances'], 'prefill instance')} of TP {x['tp_prefill']}" if x["mode"] == "split" else ""
    w = m.waterline
    lines = [f"max request rate on {args.gpus:,} GPUs: {m.max_qps:,.4g} req/s ({x['output_tokens_per_s']:,.0f} output tokens/s) within TTFT "
             f"{args.ttft} and TPOT {args.tpot}",
             f"layout: {x['mode']} TP {x['tp']}" + (f" x EP {x['ep']}" if x["ep"] > 1 else "") + f", batch {x['batch']}: "
             f"{_n(x['replicas'], 'replica')} of {x['gpus_per_instance']} GPU(s){pool}, {x['gpus_used']:,} of {args.gpus:,} GPUs used",
             f"= {x['replicas']:,} replicas x {x['goodput']:,.1f} output tok/s goodput each (FX138) x waterline {w:g} (FX87) / "
             f"{args.output} output tokens" + (" (capped by the prefill pool)" if x["mode"] == "split" and "prefill pool" in m.binding else ""),
             f"per replica: TTFT {1e3 * x['ttft']:.1f} ms, TPOT {1e3 * x['tpot']:.2f} ms, {x['memory'] / 2**30:.2f} GiB per GPU",
             f"binding target: {m.binding}"]
    bullet = "- " if args.format == "md" else "  "
    emit("\n".join(lines) + "\n\nassumptions:\n" + "\n".join(bullet + a for a in notes))
    return 0



def _train_calibrated(args, result) -> dict | None:
    """The pinned layout's step under the training calibration of `aiinfra validate`."""
    from engine.cli.common import root_of
    from engine.measure import predict

    r = result.pinned
    if r is None or "step_time" not in r:
        return None
    s = result.space
    layout = {"tp": r["tp"], "cp": r["cp"], "pp": r["pp"], "vp": r["vp"], "ep": r["ep"], "micro_batch": r["mb"], "zero": r["zero"],
              "recompute": r["recompute"], "global_batch": s.global_batch}
    return predict.train(root_of(args), args.model, args.device, gpus=s.gpus, layout=layout, seq=s.seq, precision=str(args.precision).strip().lower())


def _rows(result) -> list[dict]:
    out = []
    for r in result.rows:
        out.append(dict(r, step_s=round(r["step_time"], 4), mfu_pct=round(100 * r["mfu"], 1), memory_gib=round(r["memory"] / 2**30, 2),
                        n_micro=int(round(r["n_micro"]))))
    return out


def render(result, fmt: str, calibrated: dict | None = None) -> str:
    from engine.cli.render import table, to_json

    s, f = result.space, result.found
    head = (f"{s.gpus} GPUs, global batch {s.global_batch} x {s.seq} tokens; {_n(f.points, 'point')}, {_n(f.layouts, 'valid layout')} evaluated in "
            f"{_n(f.tiles, 'tile')} ({f.executor}), {f.feasible:,} fit")
    if fmt == "json":
        return to_json({"gpus": s.gpus, "global_batch": s.global_batch, "seq": s.seq, "points": f.points, "layouts": f.layouts, "feasible": f.feasible,
                        "tiles": f.tiles, "executor": f.executor, "configurations": list(result.rows), "folded": result.folded, "why": result.why,
                        "pinned": _pinned_json(result, calibrated), "assumptions": list(result.assumptions)})
    rows = _rows(result)
    if fmt == "csv":
        return table(rows, COLUMNS, "csv")
    # a narrow terminal loses the micro-batch count first (global batch / (DP x mb)), then EP where it is 1 everywhere,
    # then the binding constraint (JSON, CSV, --format md and a wider terminal keep it)
    drop = ("n_micro",) + (("ep",) if all(r["ep"] == 1 for r in rows) else ()) + ("binding",)
    body = table(rows, COLUMNS, fmt, droppable=drop) if rows else "no configuration fits the memory of one GPU"
    bullet = "- " if fmt == "md" else "  "
    notes = "\n".join(bullet + a for a in result.assumptions)
    fold = (f"\n{result.folded} layout(s) that differ only by ZeRO stage and tie on step time were folded into the rows above "
            "(the lowest-memory stage kept; --all lists them)") if result.folded else ""
    pinned = _pinned_text(result, bullet, calibrated) if result.pins else ""
    if fmt == "text":
        from engine.cli.render import prose

        head, pinned, fold, why, notes = (prose(x) for x in (head, pinned, fold, result.why, notes))
    else:
        why = result.why
    return f"{head}\n\n{pinned}{body}{fold}\n\n{why}\n\nassumptions:\n{notes}"


def _given(result) -> str:
    from engine.plan.pin import FLAGS

    return " ".join(f"{FLAGS[a]} {v}" for a, v in result.pins.items())


def _pinned_json(result, calibrated: dict | None = None) -> dict | None:
    if not result.pins:
        return None
    return {"given": {a: v for a, v in result.pins.items()}, "layout": result.pinned, "search_best": result.search_best, "versus": result.versus,
            "calibrated": calibrated}


def _pinned_text(result, bullet: str, calibrated: dict | None = None) -> str:
    """The pinned layout explained: its terms, memory, rates and binding constraint, then the search's best."""
    r = result.pinned
    if r is None or "step_time" not in r:
        return f"pinned ({_given(result)}): no layout with these values fits the memory of one GPU\n{bullet}{result.versus}\n\n"
    names = {"compute": "compute", "recompute_extra": "recompute", "tp_comm": "TP comm", "cp_comm": "CP comm", "bubble": "bubble",
             "pp_comm": "PP comm", "dp_comm": "DP comm", "ep_comm": "EP comm"}
    parts = " + ".join(f"{label} {r[t]:.4g}" for t, label in names.items())
    lines = [
        f"pinned ({_given(result)}): TP {r['tp']} CP {r['cp']} PP {r['pp']} V {r['vp']} DP {r['dp']} EP {r['ep']} micro-batch {r['mb']} "
        f"({int(round(r['n_micro']))} per step) ZeRO {r['zero']} recompute {r['recompute']}",
        f"{bullet}step {r['step_time']:.4f} s = {parts} s",
        f"{bullet}memory {r['memory'] / 2**30:.2f} GiB per GPU of {r['usable'] / 2**30:.2f} GiB usable ({'fits' if r['fits'] else 'DOES NOT FIT'}): "
        f"model states {r['states'] / 2**30:.2f} GiB + activations {r['activations'] / 2**30:.2f} GiB",
        f"{bullet}{r['tokens_per_s_per_gpu']:,.1f} tokens/s per GPU, {r['model_tflops_per_gpu']:.1f} model TFLOP/s per GPU, MFU {100 * r['mfu']:.1f}% "
        "(F1's model FLOPs over the dense peak)",
        f"{bullet}binding constraint: {r['binding']}",
        f"{bullet}{result.versus}",
    ]
    if calibrated is not None:
        from engine.measure import predict

        if calibrated.get("available"):
            t = calibrated["times"]
            lines.append(f"{bullet}calibrated: step {t['step_time']:.4f} s, {t['tokens_per_gpu_per_s']:,.1f} tokens/s per GPU, "
                         f"{t['model_tflops_per_gpu'] / 1e12:.1f} model TFLOP/s per GPU, MFU {100 * t['mfu']:.1f}%")
        lines.append(f"{bullet}{predict.describe(calibrated, 'train')}")
    return "\n".join(lines) + "\n\nsearched with the pinned values fixed:\n"


def _seconds(text, field: str) -> float:
    from engine.core.errors import InputError, UnitError
    from engine.core.units import parse_quantity

    if text is None:
        raise InputError(field, "is required for plan serve (a time, e.g. 50ms)")
    try:
        q = parse_quantity(text, "s")
    except (UnitError, ValueError) as exc:
        raise InputError(field, f"{text!r} is not a time ({exc})") from None
    if q.is_range:
        raise InputError(field, f"{text!r} is a range; give one target")
    return q.value


SERVE_COLUMNS = [("mode", "mode"), ("tp", "TP"), ("ep", "EP"), ("batch", "batch"), ("tp_prefill", "prefill TP"), ("ttft_ms", "TTFT ms"),
                 ("tpot_ms", "TPOT ms"), ("tp_comm_ms", "TP comm ms"), ("user_tokens_per_s", "tok/s per user"), ("tokens_per_s_per_gpu", "tok/s per GPU"),
                 ("fleet_gpus", "GPUs for demand")]


SPEC_COLUMNS = [("tpot_plain_ms", "plain TPOT ms"), ("spec_speedup", "spec x"), ("spec_breakeven", "spec break-even batch")]


def _serve_rows(front) -> list[dict]:
    rows = [dict(mode=x["mode"], tp=x["tp"], ep=x["ep"], batch=x["batch"], tp_prefill=x["tp_prefill"] or "-", ttft_ms=round(1e3 * x["ttft"], 2),
                 tpot_ms=round(1e3 * x["tpot"], 2), tp_comm_ms=round(1e3 * x["tp_comm"], 3), user_tokens_per_s=round(x["user_tokens_per_s"], 2),
                 tokens_per_s_per_gpu=round(x["tokens_per_s_per_gpu"], 2), fleet_gpus=x["fleet_gpus"]) for x in front]
    for row, x in zip(rows, front, strict=True):
        if "spec_speedup" in x:
            row.update(tpot_plain_ms=round(1e3 * x["tpot_plain"], 2), spec_speedup=round(x["spec_speedup"], 3), spec_breakeven=_breakeven_text(x["spec_breakeven_batch"]))
    return rows


def _breakeven_text(b: float) -> str:
    """FX963's signals in words: -1 pays at every batch, 0 never pays, else the batch (one decimal)."""
    return "never stops" if b < 0 else "never pays" if b == 0 else f"{b:.1f}"


def _spec_verdict(x: dict) -> str:
    """Whether speculation pays at this layout's batch, with its speed-up (FX960), v and the roofline break-even (FX963)."""
    b, s = x["spec_breakeven_batch"], x["spec_speedup"]
    where = (f"roofline break-even batch {b:.1f}" if b > 0 else "it pays at every batch on the roofline (K/V reads dominate)" if b < 0
             else "it never pays at this acceptance and draft cost")
    if s > 1:
        return f"pays at batch {x['batch']}: {s:.3f}x on the decode step (verify cost v = {x['spec_verify_ratio']:.3f}), TPOT {1e3 * x['tpot']:.2f} ms vs {1e3 * x['tpot_plain']:.2f} ms plain; {where}"
    return (f"STOPS PAYING at batch {x['batch']}: {s:.3f}x (verify cost v = {x['spec_verify_ratio']:.3f}), TPOT {1e3 * x['tpot']:.2f} ms vs "
            f"{1e3 * x['tpot_plain']:.2f} ms plain, so plain decoding is faster here; {where}")


def _speculative(text):
    """--speculative's text as engine.plan.speculative's fields (None when not given)."""
    if text is None:
        return None
    from engine.core.errors import InputError
    from engine.plan import speculative

    try:
        return speculative.parse(text)
    except InputError as exc:
        raise _speculative_flag(exc) from None


def _speculative_flag(exc):
    """A library error about speculative.<key> as the option the user typed."""
    from engine.core.errors import InputError

    if exc.field == "speculative" or exc.field.startswith("speculative."):
        return InputError(("--speculative " + exc.field.removeprefix("speculative").lstrip(".")).strip(), exc.message)
    return exc


def _speculative_json(r) -> dict:
    best = r.best or {}
    return {"note": "applied to every layout's TPOT (FX78 speculative); spec_* fields per row", "pays_at_best": best.get("spec_pays"),
            "pays_at_cheapest": (r.cheapest or {}).get("spec_pays"), **r.speculative}


def _layout(r: dict) -> str:
    text = f"{r['mode']} TP {r['tp']}" + (f" x EP {r['ep']}" if r["ep"] > 1 else "") + f", batch {r['batch']}"
    if r["mode"] == "split":
        return text + f": {_n(r['replicas'], 'decode replica')} + {_n(r['prefill_instances'], 'prefill instance')} of TP {r['tp_prefill']}"
    return text + f": {_n(r['replicas'], 'replica')}"


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def serve(args) -> int:
    from engine.cli.common import emit, root_of
    from engine.cli.render import table, to_json
    from engine.cli.serve_render import front_table, knee_line, reach_text
    from engine.core.errors import InputError
    from engine.plan.front import knee
    from engine.plan.serve import plan_serve

    for name in ("prompt", "output"):
        if getattr(args, name) is None:
            raise InputError(f"--{name}", "is required for plan serve (tokens per request)")
    if args.svg and not args.svg.endswith(".svg"):
        raise InputError("--svg", f"{args.svg!r} does not end in .svg")
    latency = None if args.allreduce_latency is None else _seconds(args.allreduce_latency, "--allreduce-latency")
    link = None if args.kv_link_bandwidth is None else args.kv_link_bandwidth * 1e9
    pin = _serve_pin(args)
    speculative = _speculative(args.speculative)
    mfu, mfu_note = _serve_mfu(args)
    mbu, mbu_note = _serve_efficiency(args, "mbu", args.mbu)
    step = _serve_step(args)
    try:
        r = plan_serve(root_of(args), args.model, args.device, executor=args.executor, workers=args.workers, tile_size=args.tile, keep_rows=False,
                       prompt=args.prompt, output=args.output, ttft=_seconds(args.ttft, "--ttft"), tpot=_seconds(args.tpot, "--tpot"), demand=args.demand,
                       qps=args.qps, nvlink_domain=args.nvlink_domain, max_batch=args.max_batch, max_ep=args.max_ep, mfu=mfu, mbu=1.0 if mbu is None else mbu,
                       allreduce_latency=latency, kv_link_bandwidth=link, waterline=args.waterline, split=not args.no_split, prune=args.prune,
                       weights=args.weights, kv_cache=args.kv_cache, precision=args.precision, pin=pin, speculative=speculative,
                       dequant=_serve_dequant(args), step=None if step is None else step.values, engine=_engine(args))
    except InputError as exc:
        raise _speculative_flag(exc) from None
    calibrated = _serve_calibrated(args, pin) if r.pinned else None
    simulated = _serve_simulated(args, pin) if args.simulate else None
    for note in (step.note(args.device) if step else None, mbu_note, mfu_note):
        if note:
            r = _with_note(r, note)
    if args.svg:
        _svg(r.front, args.svg)
    after = r.pruned_tree - r.pruned_early
    pruned = (f"pruned {r.pruned_bound + r.pruned_tree:,} of {r.points:,} points: {r.pruned_bound:,} by FX134's TPOT batch bound, "
              f"{r.pruned_tree:,} split points by the pd-disaggregation tree ("
              + (f"{r.pruned_early:,} before evaluation, where {' and '.join(r.early_conditions)} fails for their TP x EP; " if r.early_conditions else "")
              + f"{after:,} after" + (f": {', '.join(f'{k} {v:,}' for k, v in sorted(r.tree_leaves.items()))}" if r.tree_leaves else "") + ")")
    if args.format == "json":
        emit(to_json({"step_model": r.step_model, "speculative": _speculative_json(r) if speculative is not None else None, "points": r.points, "feasible": r.feasible, "pruned_bound": r.pruned_bound, "pruned_tree": r.pruned_tree,
                      "pruned_early": r.pruned_early, "early_conditions": list(r.early_conditions), "tree_leaves": r.tree_leaves, "tp_prefill": r.tp_prefill, "front": list(r.front), "best": r.best, "cheapest": r.cheapest,
                      "knee": r.front[knee(r.front)] if r.front else None, "reach": r.reach,
                      "min_gpus": r.min_gpus, "replicas": r.replicas, "tiles": r.tiles, "executor": r.executor, "assumptions": list(r.assumptions),
                      "pinned": {"given": pin, "dp": args.dp or 1, "points": list(r.pinned), "calibrated": calibrated} if pin else None,
                      "simulated": simulated}))
        return 0
    rows = _serve_rows(r.front)
    columns = SERVE_COLUMNS + (SPEC_COLUMNS if speculative is not None else [])
    if args.format == "csv":
        emit(table(rows, columns, "csv"))
        return 0
    bullet = "- " if args.format == "md" else "  "
    head = (_serve_pinned_text(r, calibrated, args) if r.pinned else "") + (_simulated_text(simulated, args) if simulated else "") + (
            f"{r.points:,} points (mode x TP x EP x batch), {r.feasible:,} meet memory, TTFT and TPOT; {pruned}.")
    if r.best is None:
        emit(_prose(head + "\n\n" + reach_text(r.reach, _seconds(args.ttft, "--ttft"), _seconds(args.tpot, "--tpot"), bullet), args))
        return 0
    head += "\nPareto front (tokens/s per GPU vs per user):"
    demand = f" for {args.demand:g} tok/s" if args.demand else (f" for {args.qps:g} req/s" if args.qps else " (one replica; give --demand or --qps)")
    tail = (f"{knee_line(r.front)}\n"
            f"best throughput per GPU: {_layout(r.best)} ({r.best['tokens_per_s_per_gpu']:.1f} tok/s per GPU)\n"
            f"fewest GPUs meeting the targets{demand}: {r.min_gpus} ({_layout(r.cheapest)})")
    if speculative is not None:
        tail += "\n" + "\n".join(f"speculative decoding at the {name}: {_spec_verdict(x)}" for name, x in (("best", r.best), ("fewest GPUs", r.cheapest)))
    emit(f"{_prose(head, args)}\n\n{front_table(r.front, rows, columns, args.format, every=args.all)}\n\n{_prose(tail, args)}\n\nassumptions:\n"
         + _prose("\n".join(bullet + a for a in r.assumptions), args))
    return 0


def _prose(text: str, args) -> str:
    """Sentences around a table wrapped at the terminal's width (engine.cli.render.prose); Markdown is left whole."""
    from engine.cli.render import prose

    return text if args.format == "md" else prose(text)


def _serve_mfu(args) -> tuple[float | None, str | None]:
    """--mfu, else the serving calibration's prefill efficiency for the device's generation (engine.cli.efficiency: one
    rule for every command), said in the notes; None without a calibration (plan serve then asks for --mfu)."""
    return _serve_efficiency(args, "mfu", args.mfu)


def _engine(args) -> str | None:
    """--engine in the calibration's spelling (tensorrt-llm for trtllm and tensorrt_llm), None when not given."""
    if args.engine is None:
        return None
    name = args.engine.strip().lower()
    return "tensorrt-llm" if name in ("trtllm", "tensorrt_llm", "trt-llm") else name


def _serve_step(args):
    """The calibrated step (engine.cli.efficiency.serve_step) unless the user times the step themselves: --step-model roofline,
    or any of --mfu, --mbu, --allreduce-latency (their own figures are the book's FX75 roofline's inputs); None then, and
    where there is no serving calibration (the roofline, as before)."""
    from engine.cli.common import root_of
    from engine.cli.efficiency import serve_step
    from engine.core.errors import InputError

    own = [flag for flag, v in (("--mfu", args.mfu), ("--mbu", args.mbu), ("--allreduce-latency", args.allreduce_latency)) if v is not None]
    if args.step_model == "roofline" or (own and args.step_model is None):
        return None
    if own:
        raise InputError("--step-model", f"calibrated takes its efficiencies and latencies from the calibration; drop {', '.join(own)} or give "
                                         "--step-model roofline")
    step = serve_step(root_of(args), args.device, _engine(args))
    if step is None and args.step_model == "calibrated":
        raise InputError("--step-model", "calibrated needs a serving calibration (knowledge/calibration/fitted.json; aiinfra validate --write-baseline)")
    return step


def _serve_dequant(args) -> float | None:
    """The calibrated e_dequant (the weight-only kernels' share of the matrix rate, fitted by validate) the search applies
    to a weight-only layout when the MFU is the calibration's; None when the user gave --mfu (their kernels' own figure)
    or there is no calibration. plan serve's notes say when it applies."""
    if args.mfu is not None:
        return None
    from engine.cli.common import root_of
    from engine.cli.efficiency import calibrated

    e = calibrated(root_of(args), "serve", "e_dequant", args.device, args.precision)
    return None if e is None else e.value


def _serve_efficiency(args, symbol: str, given) -> tuple[float | None, str | None]:
    if given is not None:
        return given, None
    from engine.cli.common import root_of
    from engine.cli.efficiency import SERVE, calibrated

    e = calibrated(root_of(args), "serve", SERVE[symbol], args.device, args.precision)
    return (None, None) if e is None else (e.value, e.note(f"--{symbol}", args.device))


def _with_note(r, note: str):
    from engine.core.record import replace

    return replace(r, assumptions=(note, *r.assumptions))


def _serve_pin(args) -> dict:
    """--tp, --ep and --batch (or --concurrency over --dp instances) as plan serve's pinned axes."""
    from engine.core.errors import InputError

    pin = {k: getattr(args, k) for k in ("tp", "ep", "batch") if getattr(args, k) is not None}
    dp = args.dp or 1
    if args.dp is not None and args.dp < 1:
        raise InputError("--dp", f"{args.dp} is not a positive integer")
    if args.concurrency is not None:
        if args.batch is not None:
            raise InputError("--concurrency", "give --batch (per instance) or --concurrency (the whole deployment), not both")
        if args.concurrency < 1 or args.concurrency % dp:
            raise InputError("--concurrency", f"{args.concurrency} is not a positive multiple of --dp {dp} (each instance holds C / DP requests)")
        pin["batch"] = args.concurrency // dp
    elif args.dp is not None and args.batch is None:
        raise InputError("--dp", "shares --concurrency between instances: give --concurrency too")
    return pin


def _serve_calibrated(args, pin: dict) -> dict:
    from engine.cli.common import root_of
    from engine.measure import predict

    dp = args.dp or 1
    conc = args.concurrency if args.concurrency is not None else pin["batch"] * dp
    return predict.serve(root_of(args), args.model, args.device, tp=pin["tp"], ep=pin.get("ep", 1), replicas=dp, concurrency=conc,
                         prompt=args.prompt, output=args.output, weights=args.weights, kv_cache=args.kv_cache, precision=args.precision, engine=args.engine)


def _read_trace(path: str):
    """arrival_s, prompt, output columns of a CSV trace (a header row is skipped); one clear error for a bad row."""
    import csv

    from engine.core.errors import InputError

    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except OSError as exc:
        raise InputError("--trace", f"cannot read {path!r}: {exc.strerror}") from None
    if rows and rows[0] and not rows[0][0].replace(".", "", 1).isdigit():
        rows = rows[1:]
    arr, pr, out = [], [], []
    for i, row in enumerate(rows, 1):
        try:
            a, p, o = float(row[0]), int(row[1]), int(row[2])
        except (ValueError, IndexError):
            raise InputError("--trace", f"row {i}: expected arrival_s,prompt,output (a number and two integers), got {','.join(row)!r}") from None
        if a < 0 or p < 1 or o < 1 or (arr and a < arr[-1]):
            raise InputError("--trace", f"row {i}: arrival times must be non-negative and non-decreasing, lengths positive")
        arr.append(a)
        pr.append(p)
        out.append(o)
    if not arr:
        raise InputError("--trace", f"{path!r} holds no rows")
    return arr, pr, out


def _serve_simulated(args, pin: dict) -> dict:
    from engine.cli.common import root_of
    from engine.core.errors import InputError
    from engine.measure import predict

    if "tp" not in pin:
        raise InputError("--simulate", "simulates one stated layout: give --tp (and --ep for a MoE model)")
    if args.percentile not in (50, 90, 99):
        raise InputError("--percentile", f"{args.percentile:g} is not one of 50, 90, 99")
    trace = _read_trace(args.trace) if args.trace else None
    if trace is None and args.concurrency is None and args.batch is None and args.qps is None:
        raise InputError("--simulate", "give the load: --concurrency (clients in flight) or --qps (arrivals per second), or --trace FILE")
    dp = args.dp or 1
    conc = None if (args.qps is not None or trace) else (args.concurrency if args.concurrency is not None else pin["batch"] * dp)
    out = predict.simulate_serve(root_of(args), args.model, args.device, tp=pin["tp"], ep=pin.get("ep", 1), replicas=dp, prompt=args.prompt,
                                 output=args.output, requests=args.requests, concurrency=conc, qps=args.qps, arrival=args.arrival, cv=args.cv,
                                 lengths=args.lengths, range_ratio=args.range_ratio, sigma=args.sigma, trace=trace, seed=args.seed,
                                 token_budget=args.token_budget, admission=args.admission, schedule=args.schedule, weights=args.weights, kv_cache=args.kv_cache,
                                 precision=args.precision, engine=args.engine)
    if out.get("available"):
        q = f"p{args.percentile:g}"
        s = out["summary"]
        out["targets"] = {"percentile": args.percentile, "ttft": _seconds(args.ttft, "--ttft"), "tpot": _seconds(args.tpot, "--tpot"),
                          "meets_ttft": bool(s["ttft"][q] <= _seconds(args.ttft, "--ttft")), "meets_tpot": bool(s["tpot"][q] <= _seconds(args.tpot, "--tpot"))}
    return out


def _simulated_text(sim: dict, args) -> str:
    if not sim.get("available"):
        return f"simulation: not available ({sim.get('why')})\n\n"
    s = sim["summary"]

    def pct(name, scale=1e3):
        d = s[name]
        return f"mean {scale * d['mean']:,.1f} / P50 {scale * d['p50']:,.1f} / P90 {scale * d['p90']:,.1f} / P99 {scale * d['p99']:,.1f} ms"

    load = (f"{args.concurrency or '?'} clients in a closed loop" if sim["loop"] == "closed" else
            (f"open loop, {args.arrival} arrivals at {args.qps:g} req/s" + (f" (cv {args.cv:g})" if args.arrival == "gamma" else "")) if not args.trace
            else f"trace {args.trace}")
    tg = sim.get("targets", {})
    q = f"P{tg.get('percentile', 90):g}"
    verdict = (f"targets at {q}: TTFT {'ok' if tg['meets_ttft'] else 'MISSED'}, TPOT {'ok' if tg['meets_tpot'] else 'MISSED'}" if tg else "")
    lines = [f"simulated ({sim['requests_per_instance']:,} requests per instance x {sim['replicas']}, {load}, {args.lengths} lengths, "
             f"{sim['admission']} K/V admission of {sim['capacity_tokens']:,.0f} tokens, {sim['schedule']} steps of {sim['token_budget']:,} tokens, "
             f"seed {sim['seed']}):",
             f"  TTFT {pct('ttft')}",
             f"  TPOT {pct('tpot')}",
             f"  E2E  {pct('e2e_latency', 1.0).replace(' ms', ' s')}",
             f"  {s['request_throughput']:.2f} req/s, {s['output_throughput']:,.0f} output tok/s ({s['output_throughput_per_gpu']:,.0f} per GPU); "
             f"{s['preemptions']} preemptions, K/V peak {100 * s['kv_peak']:.0f}%; Little's law: {s['little']['in_system']:.1f} in system = "
             f"{s['little']['rate_x_e2e']:.1f} (rate x mean E2E)",
             f"  {verdict}; serving calibration ({sim['group']}), held out {sim['band']:.0f}% of serving rows within +-30%"]
    return "\n".join(lines) + "\n\n"


def _serve_pinned_text(r, calibrated, args) -> str:
    from engine.measure import predict

    lines = []
    model = "calibrated-step" if r.step_model == "calibrated" else "roofline"
    for x in r.pinned:
        meets = ", ".join(f"{k} {'ok' if v else 'MISSED'}" for k, v in x["meets"].items())
        lines.append(f"pinned {x['mode']} TP {x['tp']} x EP {x['ep']}, batch {x['batch']}: {model} TTFT {1e3 * x['ttft']:.1f} ms (one prompt alone), "
                     f"TPOT {1e3 * x['tpot']:.2f} ms, {x['tokens_per_s_per_gpu']:,.0f} tok/s per GPU, {x['memory_bytes'] / 2**30:.1f} GiB per GPU ({meets})")
    if calibrated and calibrated.get("available"):
        t = calibrated["times"]
        cap = " (the batch is capped by the K/V pages that fit)" if calibrated.get("capped") else ""
        lines.append(f"calibrated, {args.dp or 1} instance(s) at {args.concurrency or r.pinned[0]['batch'] * (args.dp or 1)} requests in flight{cap}: "
                     f"TTFT {1e3 * t['ttft']:.0f} ms (with queueing), TPOT {1e3 * t['tpot']:.2f} ms, {t['output_throughput_per_gpu']:,.0f} output tok/s "
                     f"per GPU, {t['request_throughput']:.2f} req/s")
    if calibrated is not None:
        lines.append(predict.describe(calibrated, "serve"))
    return "\n".join(lines) + "\n\n"


def _svg(front, path: str) -> None:
    from engine.core.errors import InputError

    if not path.endswith(".svg"):
        raise InputError("--svg", f"{path!r} does not end in .svg")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--svg", "needs matplotlib (pip install 'aiinfra[plot]')") from None
    import io

    from engine.cli.common import write_atomic

    fig, ax = plt.subplots(figsize=(6, 4))
    for mode, style in (("colocate", "o-"), ("split", "s-")):
        pts = [r for r in front if r["mode"] == mode]
        if pts:
            ax.plot([r["user_tokens_per_s"] for r in pts], [r["tokens_per_s_per_gpu"] for r in pts], style, markersize=3, label=mode)
    ax.legend()
    ax.set_xlabel("tokens/s per user")
    ax.set_ylabel("tokens/s per GPU")
    ax.set_title("plan serve: Pareto front")
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    write_atomic(path, buf.getvalue(), "--svg")
