"""NVIDIA aiconfigurator beside aiinfra on the published serving measurements (a comparison, not a test).

Each ``kind: serve`` record of ``knowledge/measurements/*.yaml`` (or ``--records DIR``) is mapped,
where it can be, to one aiconfigurator estimate (``aiconfigurator.cli.api.cli_estimate``: its
database of measured kernels per GPU system, backend and version): model id -> a Hugging Face
name whose config.json aiconfigurator ships, device -> its system, engine -> its backend, the
layout -> tp / pp / attention-DP / MoE tp and ep, the workload -> ISL, OSL and the batch per
instance (closed-loop concurrency over the replicas), precision -> its GEMM / MoE / KV-cache
quant modes. One JSON line per record goes to ``--out``:
``{id, metric, measured, aiconfigurator_predicted, ratio, mapped, why_not, ...}`` (ratio =
predicted / measured, canonical units s and tokens/s), then a summary per metric group (share
within +-30%, MAPE, median error factor) and the reasons records could not be mapped.
Where ``aiinfra validate --kind serve --format json`` exists, our own prediction is printed
beside it. aiconfigurator's figures are never expected values of a test.

aiconfigurator lives in its own virtualenv, never in the project's:
    python3 -m venv /work/aic-venv && /work/aic-venv/bin/pip install aiconfigurator
Run from the project venv (aiconfigurator is driven in a subprocess of the aic venv's python):
    .venv/bin/python benchmarks/aiconfigurator_compare.py [--records DIR] [--out FILE]
or with the aic venv's python (records are read by a subprocess of the project's venv).
Without aiconfigurator it prints how to install it and exits 0.

Choices (stated, not hidden): aiconfigurator's default database version for each backend is used
whatever engine_version the record names (it has only a few recent versions); a closed-loop
concurrency larger than what aiconfigurator's memory model lets fit (trtllm-bench
max-throughput runs list concurrency = all requests) is capped at the largest batch that fits
(``batch_used`` in the line); its figures are steady-state means, so p90+ records are left out;
speculative decoding without a stated acceptance is left out; mean/median latencies are compared
with the one estimate.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_AIC_PYTHON = os.environ.get("AIC_PYTHON", "/work/aic-venv/bin/python")
INSTALL = ("aiconfigurator is not installed. Install it into its own virtualenv (not the project's):\n"
           "    python3 -m venv /work/aic-venv && /work/aic-venv/bin/pip install aiconfigurator\n"
           "then rerun, or pass --aic-python PATH (or set AIC_PYTHON).")

# our model id -> the Hugging Face name whose config.json aiconfigurator 0.12 ships (model_configs/)
MODELS = {
    "llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B",
    "llama-3.1-405b": "meta-llama/Meta-Llama-3.1-405B",
    "deepseek-r1-distill-llama-70b": "meta-llama/Meta-Llama-3.1-70B",  # same architecture fields
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "deepseek-v3.2": "deepseek-ai/DeepSeek-V3.2",
    "deepseek-v4-flash": "deepseek-ai/DeepSeek-V4-Flash",
    "kimi-k2-instruct": "moonshotai/Kimi-K2-Instruct",
    "kimi-k3": "moonshotai/Kimi-K3",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-v0.1",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
    "qwen3.5-35b-a3b": "Qwen/Qwen3.5-35B-A3B",
    "qwen3.6-35b-a3b": "nvidia/Qwen3.6-35B-A3B-NVFP4",  # the only Qwen3.6-35B config it ships
    "gpt-oss-20b": "openai/gpt-oss-20b",
    "gpt-oss-120b": "openai/gpt-oss-120b",
}
# models whose checkpoint config already carries its quantization (fp8 block, mxfp4, ...): leave it to aiconfigurator
SELF_QUANT = ("deepseek-", "kimi-", "gpt-oss-", "qwen3.6-")
# our device id -> aiconfigurator system (systems/*.yaml with a data directory)
DEVICES = {"h100-sxm": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm", "b300": "b300_sxm", "gb200": "gb200",
           "gb300": "gb300", "a100-sxm-80gb": "a100_sxm", "l40s": "l40s"}
BACKENDS = {"tensorrt-llm": "trtllm", "trtllm": "trtllm", "trt-llm": "trtllm", "vllm": "vllm", "sglang": "sglang"}
GROUPS = {"ttft": "ttft", "tpot": "tpot", "itl": "tpot", "e2e_latency": "e2e_latency",
          "output_throughput_per_gpu": "throughput", "total_throughput_per_gpu": "throughput",
          "output_throughput": "throughput", "request_throughput": "throughput"}


# ---------------------------------------------------------------- records (project venv)

def record_dicts(records_dir: Path | None) -> list[dict]:
    """The serve records as plain dicts, read with engine.domain.measurements (here or in the project venv)."""
    try:
        from engine.domain.measurements import load  # noqa: F401
    except Exception:
        py = ROOT / ".venv" / "bin" / "python"
        cmd = [str(py), str(Path(__file__).resolve()), "--dump-records"] + (["--records", str(records_dir)] if records_dir else [])
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if out.returncode:
            sys.exit(f"could not read the records with {py}: {out.stderr.strip()[-2000:]}")
        return json.loads(out.stdout)
    return _load_records(records_dir)


def _load_records(records_dir: Path | None) -> list[dict]:
    from engine.domain.measurements import Measurement, load

    names = [n for n in getattr(Measurement, "__slots__", ()) if not n.startswith("_")] or list(Measurement.__annotations__)

    files = sorted(Path(records_dir).glob("*.yaml")) if records_dir else None
    if records_dir and not files:
        sys.exit(f"no *.yaml under {records_dir}")
    rows, problems = load(ROOT, files)
    for p in problems:
        print(f"record problem: {p}", file=sys.stderr)
    return [{n: getattr(r, n) for n in names} for r in rows if r.kind == "serve"]


# ---------------------------------------------------------------- mapping

def _quant(rec: dict) -> tuple[dict, str | None]:
    """aiconfigurator quant-mode arguments for the record's precision, or why not."""
    prec = rec.get("precision") or {}
    w = str(prec.get("weights", "")).lower()
    kv = str(prec.get("kv_cache", "")).lower()
    out: dict = {}
    model = rec["model"]
    if model.startswith(SELF_QUANT):
        if model.startswith("deepseek-") and w.startswith("nvfp4"):
            out["moe_quant_mode"] = "nvfp4"
    elif w.startswith(("fp8", "e4m3")):
        out["gemm_quant_mode"] = "fp8"
        out["moe_quant_mode"] = "fp8"
    elif w.startswith(("nvfp4", "fp4")):
        out["gemm_quant_mode"] = "nvfp4"
        out["moe_quant_mode"] = "nvfp4"
    elif w.startswith(("bf16", "fp16", "float16", "bfloat16")) or not w:
        out["gemm_quant_mode"] = "bfloat16"
        out["moe_quant_mode"] = "bfloat16"
    else:
        return {}, f"weights {w!r} have no aiconfigurator quant mode here"
    if kv.startswith("fp8"):
        out["kvcache_quant_mode"] = "fp8"
    elif kv.startswith(("bf16", "fp16")):
        out["kvcache_quant_mode"] = "bfloat16"
    elif kv:
        return {}, f"kv cache {kv!r} has no aiconfigurator quant mode here"
    return out, None


def map_record(rec: dict, moe: set[str]) -> tuple[dict | None, str | None]:
    """(query, None) or (None, why not) for one serve record."""
    metric = rec["metric"]
    if metric not in GROUPS:
        return None, f"metric {metric} has no aiconfigurator figure"
    if rec.get("statistic") in ("p90", "p95", "p99", "max"):
        return None, f"{rec['statistic']} latency: aiconfigurator estimates steady-state means"
    if not rec.get("model") or rec["model"] not in MODELS:
        return None, f"model {rec.get('model')}: aiconfigurator ships no config for it"
    system = DEVICES.get(rec["device"])
    if not system:
        return None, f"device {rec['device']}: no aiconfigurator database"
    backend = BACKENDS.get(str(rec.get("engine") or "").lower())
    if not backend:
        return None, f"engine {rec.get('engine')}: not an aiconfigurator backend (trtllm, vllm, sglang)"
    text = f"{rec.get('note', '')} {rec.get('id', '')}".lower()
    if any(w in text for w in ("speculative", "mtp", "eagle")):
        return None, "speculative decoding: aiconfigurator needs an accepted-draft count the source does not state"
    lay = rec.get("layout") or {}
    if any(k in lay for k in ("prefill_workers", "decode_workers", "prefill_tp", "decode_tp")):
        return None, "disaggregated prefill/decode layout: not mapped (aiconfigurator disagg needs per-pool batches)"
    quant, why = _quant(rec)
    if why:
        return None, why
    tp, pp, dp, ep = (int(lay.get(k, 1)) for k in ("tp", "pp", "dp", "ep"))
    gpus = int(rec.get("gpus") or 1)
    is_moe = MODELS[rec["model"]] in moe or rec["model"] in moe
    if lay.get("attention_dp"):
        adp = dp if dp > 1 else tp
        attn_tp = max(1, tp // adp)
        width = attn_tp * adp * pp
        moe_ep = ep if ep > 1 else attn_tp * adp
    else:
        adp, attn_tp, width = 1, tp, tp * pp
        moe_ep = ep if ep > 1 else 1
        if dp > 1 and ep > tp and ep == tp * dp:  # vLLM-style DP + expert parallel: attention runs data parallel
            adp, width = dp, tp * dp * pp
    if is_moe:
        if (attn_tp * adp) % moe_ep:
            return None, f"expert parallel {moe_ep} does not divide the {attn_tp * adp} attention ranks"
        moe_tp = attn_tp * adp // moe_ep
    else:
        moe_tp = moe_ep = None
        if adp > 1:
            return None, "attention DP on a dense model"
    if width > gpus:
        return None, f"record covers {gpus} GPUs of a larger instance ({width} GPUs): partial deployment"
    if gpus % width:
        return None, f"{gpus} GPUs are not whole replicas of a {width}-GPU instance"
    replicas = gpus // width
    wl = rec.get("workload") or {}
    isl, osl = wl.get("prompt"), wl.get("output")
    conc, batch = wl.get("concurrency"), wl.get("batch")
    if conc:
        per_rank = math.ceil(conc / (replicas * adp))
    elif batch:
        per_rank = math.ceil(batch / adp)  # schema: batch is per instance
    elif wl.get("rate"):
        return None, "open-loop request rate only: aiconfigurator agg takes a concurrency"
    else:
        return None, "no concurrency or batch stated"
    static = bool(batch) and (not conc or conc == batch) and not wl.get("requests") and metric == "e2e_latency"
    q = {"model": MODELS[rec["model"]], "system": system, "backend": backend, "mode": "static" if static else "agg",
         "isl": int(isl), "osl": int(osl), "batch_size": int(per_rank), "tp_size": attn_tp, "pp_size": pp,
         "attention_dp_size": adp, "moe_tp_size": moe_tp, "moe_ep_size": moe_ep, **quant}
    return q, None


def predicted(metric: str, raw: dict, rec: dict) -> float | None:
    """The record's metric from aiconfigurator's result row, in our canonical unit (s, tokens/s, requests/s)."""
    gpus = int(rec.get("gpus") or 1)
    wl = rec["workload"]
    per_gpu_seq = raw.get("seq/s/gpu") or 0.0
    value = {
        "ttft": raw.get("ttft", 0) / 1e3,
        "tpot": raw.get("tpot", 0) / 1e3,
        "itl": raw.get("tpot", 0) / 1e3,
        "e2e_latency": raw.get("request_latency", 0) / 1e3,
        "output_throughput_per_gpu": raw.get("tokens/s/gpu"),
        "output_throughput": (raw.get("tokens/s/gpu") or 0) * gpus,
        "total_throughput_per_gpu": per_gpu_seq * (wl["prompt"] + wl["output"]),
        "request_throughput": per_gpu_seq * gpus,
    }.get(metric)
    return float(value) if value else None


# ---------------------------------------------------------------- aiconfigurator (aic venv)

def _bundled(model: str) -> str:
    """A model name aiconfigurator loads offline: its own name, or a folder with its shipped config.json."""
    from aiconfigurator_core.sdk.common import DefaultHFModels
    from aiconfigurator_core.sdk.utils import _get_model_config_path

    if model in DefaultHFModels:
        return model
    src = Path(str(_get_model_config_path()))
    stem = model.replace("/", "--")
    cfg = src / f"{stem}_config.json"
    if not cfg.exists():
        raise ValueError(f"aiconfigurator ships no config.json for {model}")
    import tempfile

    folder = Path(tempfile.gettempdir()) / "aic-model-configs" / stem
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(cfg.read_text())
    quant = src / f"{stem}_hf_quant_config.json"
    if quant.exists():
        (folder / "hf_quant_config.json").write_text(quant.read_text())
    return str(folder)


def _estimate(q: dict, bs: int):
    from aiconfigurator.cli.api import cli_estimate

    args = {k: v for k, v in q.items() if k not in ("model", "system", "key") and v is not None}
    args["batch_size"] = bs
    res = cli_estimate(_bundled(q["model"]), q["system"], backend_name=args.pop("backend"), **args)
    fits = not res.kv_cache_warning and not (res.summary is not None and res.summary.check_oom())
    return res, fits


def run_query(q: dict, capacity: dict) -> dict:
    """One estimate; an agg batch beyond what fits is lowered to the largest fitting batch (bisection)."""
    import numpy as np  # noqa: F401  (aiconfigurator's rows hold numpy floats)

    want = q["batch_size"]
    cfg = json.dumps({k: v for k, v in q.items() if k not in ("batch_size", "key")}, sort_keys=True)
    cap = capacity.get(cfg)
    bs = min(want, cap) if cap else want
    lo, hi, best, note = 0, None, None, ""
    for _ in range(16):
        try:
            res, fits = _estimate(q, bs)
        except RuntimeError as e:
            if "OOM" not in str(e):
                raise
            res, fits = None, False
        if q["mode"] != "agg" and res is not None:
            best = (res, bs)
            break
        if fits:
            best, lo = (res, bs), bs
            if bs == want or (hi and hi - lo <= max(1, lo // 8)):
                break
        else:
            hi = bs
            if lo == 0 and bs <= 1:
                break
        bs = (lo + hi) // 2 if hi and lo else max(1, bs // 4) if lo == 0 else want
        if bs in (lo, hi):
            break
    if best is None:
        return {"ok": False, "error": "does not fit in GPU memory at batch 1 (aiconfigurator memory model)"}
    res, used = best
    if used < want:
        capacity[cfg] = used
        note = f"batch {want} per rank does not fit in aiconfigurator's KV budget; estimated at {used}"
    raw = {k: (float(v) if hasattr(v, "__float__") and not isinstance(v, (str, bool)) else v) for k, v in res.raw.items()
           if k in ("ttft", "tpot", "tokens/s", "tokens/s/gpu", "tokens/s/user", "seq/s", "seq/s/gpu", "request_latency",
                    "concurrency", "global_bs", "num_total_gpus", "gemm", "moe", "kvcache", "fmha", "version", "memory")}
    return {"ok": True, "raw": raw, "batch_used": used, "note": note}


def worker() -> int:
    """Read queries (JSON list) on stdin, write one JSON result per line on stdout."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    queries = json.load(sys.stdin)
    capacity: dict = {}
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # aiconfigurator prints; keep stdout for results
    for q in queries:
        try:
            out = run_query(q, capacity)
        except Exception as e:  # one failing estimate must not stop the rest
            out = {"ok": False, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
        out["key"] = q["key"]
        real_stdout.write(json.dumps(out) + "\n")
        real_stdout.flush()
    return 0


def aic_python(given: str | None) -> list[str] | None:
    """The command that runs this file with aiconfigurator importable, or None."""
    try:
        import aiconfigurator  # noqa: F401

        return [sys.executable]
    except ImportError:
        pass
    py = given or DEFAULT_AIC_PYTHON
    if py and Path(py).exists():
        ok = subprocess.run([py, "-c", "import aiconfigurator.cli.api"], capture_output=True).returncode == 0
        if ok:
            return [py]
    return None


def moe_models(py: list[str]) -> set[str]:
    code = ("import json,logging;logging.disable(logging.WARNING)\n"
            "from aiconfigurator_core.sdk.utils import _get_model_config_path as get_model_config_path\n"
            "from pathlib import Path\nout=[]\n"
            "for p in Path(str(get_model_config_path())).glob('*_config.json'):\n"
            "    c=json.loads(p.read_text()); t=c.get('text_config', c)\n"
            "    if any(k in t for k in ('num_local_experts','num_experts','n_routed_experts')): out.append(p.name[:-12].replace('--','/'))\n"
            "print(json.dumps(out))")
    r = subprocess.run(py + ["-c", code], capture_output=True, text=True)
    return set(json.loads(r.stdout)) if r.returncode == 0 else set()


def run_all(py: list[str], queries: list[dict], jobs: int) -> dict:
    """Run the queries in ``jobs`` worker processes, split by (system, backend) so each loads few databases."""
    groups: dict = {}
    for q in queries:
        groups.setdefault((q["system"], q["backend"]), []).append(q)
    shares: list[list[dict]] = [[] for _ in range(max(1, jobs))]
    for g in sorted(groups.values(), key=len, reverse=True):
        min(shares, key=len).extend(g)
    procs = []
    for share in shares:
        if share:
            p = subprocess.Popen(py + [str(Path(__file__).resolve()), "--worker"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            p.stdin.write(json.dumps(share))
            p.stdin.close()
            procs.append((p, len(share)))
    results, total = {}, len(queries)
    import selectors

    sel = selectors.DefaultSelector()
    for p, _ in procs:
        sel.register(p.stdout, selectors.EVENT_READ)
    open_ = len(procs)
    while open_:
        for key, _ in sel.select():
            line = key.fileobj.readline()
            if not line:
                sel.unregister(key.fileobj)
                open_ -= 1
                continue
            r = json.loads(line)
            results[r["key"]] = r
            print(f"\r  aiconfigurator estimates: {len(results)}/{total}", end="", file=sys.stderr, flush=True)
    for p, _ in procs:
        p.wait()
    print(file=sys.stderr)
    return results


# ---------------------------------------------------------------- ours, summary

def our_predictions(saved: Path | None = None) -> dict[str, dict]:
    """{record id: row} from ``aiinfra validate --kind serve --format json`` (run now, or its output saved in ``saved``),
    or {} where there is none."""
    if saved is not None:
        return _rows(saved.read_text())
    exe = ROOT / ".venv" / "bin" / "aiinfra"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "engine"]
    try:
        if subprocess.run(cmd + ["validate", "--help"], capture_output=True, cwd=ROOT, timeout=120).returncode:
            return {}
        out = subprocess.run(cmd + ["validate", "--kind", "serve", "--format", "json"], capture_output=True, text=True,
                             cwd=ROOT, timeout=1800)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return _rows(out.stdout)


def _rows(text: str) -> dict[str, dict]:
    text = text.strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = [json.loads(line) for line in text.splitlines() if line.strip().startswith("{")]
    if isinstance(data, dict):
        data = data.get("records") or data.get("rows") or data.get("results") or []
    return {str(r["id"]): r for r in data if isinstance(r, dict) and "id" in r}


def stats(pairs: list[tuple[float, float]]) -> dict:
    """pairs of (predicted, measured): share within +-30%, MAPE, median error factor."""
    if not pairs:
        return {"n": 0}
    ratios = [p / m for p, m in pairs]
    return {"n": len(pairs), "within_30pct": sum(abs(r - 1) <= 0.3 for r in ratios) / len(ratios),
            "mape": statistics.fmean(abs(r - 1) for r in ratios),
            "median_error_factor": statistics.median(max(r, 1 / r) for r in ratios)}


def fmt(s: dict) -> str:
    if not s.get("n"):
        return "n=0"
    return f"n={s['n']:4d}  within±30% {s['within_30pct']:6.1%}  MAPE {s['mape']:7.1%}  median error x{s['median_error_factor']:.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=Path, help="folder of measurement *.yaml files (default: knowledge/measurements)")
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "aiconfigurator_compare.jsonl", help="JSON lines output")
    ap.add_argument("--aic-python", help=f"python of the aiconfigurator venv (default {DEFAULT_AIC_PYTHON} or $AIC_PYTHON)")
    ap.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)), help="aiconfigurator worker processes")
    ap.add_argument("--only", help="only records whose id contains one of these comma-separated texts")
    ap.add_argument("--no-ours", action="store_true", help="skip the aiinfra validate column")
    ap.add_argument("--ours", type=Path, help="read our column from this saved 'aiinfra validate --kind serve --format json' output "
                    "instead of running validate (about two minutes)")
    ap.add_argument("--rescore", type=Path, metavar="FILE", help="re-score a saved --out file: keep its aiconfigurator figures (a full "
                    "run takes over an hour on 2 cores), attach our current column (--ours, or a validate run now) and print the "
                    "report; aiconfigurator is not needed")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dump-records", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker()
    if a.dump_records:
        print(json.dumps(_load_records(a.records), default=str))
        return 0
    if a.rescore:
        return rescore(a.rescore, a.out, a.ours)
    py = aic_python(a.aic_python)
    if py is None:
        print(INSTALL)
        return 0
    only = [t for t in (a.only or "").split(",") if t]
    recs = [r for r in record_dicts(a.records) if not only or any(t in r["id"] for t in only)]
    moe = moe_models(py)
    rows, queries = [], {}
    for rec in recs:
        q, why = map_record(rec, moe)
        row = {"id": rec["id"], "metric": rec["metric"], "measured": rec["value"], "unit": rec["unit"],
               "aiconfigurator_predicted": None, "ratio": None, "mapped": q is not None, "why_not": why}
        if q:
            key = json.dumps(q, sort_keys=True)
            queries[key] = {**q, "key": key}
            row["query"] = q
        rows.append((rec, row))
    print(f"{len(recs)} serve records, {len(queries)} distinct aiconfigurator estimates to run ({py[0]})", file=sys.stderr)
    results = run_all(py, list(queries.values()), a.jobs) if queries else {}
    ours = {} if a.no_ours else our_predictions(a.ours)
    for rec, row in rows:
        if not row["mapped"]:
            continue
        res = results.get(json.dumps(row["query"], sort_keys=True), {"ok": False, "error": "no result"})
        if not res["ok"]:
            row.update(mapped=False, why_not=f"aiconfigurator failed: {res['error']}")
            continue
        value = predicted(rec["metric"], res["raw"], rec)
        if value is None:
            row.update(mapped=False, why_not="aiconfigurator gave no value for this metric")
            continue
        row.update(aiconfigurator_predicted=value, ratio=value / rec["value"], batch_used=res["batch_used"],
                   aic_version=res["raw"].get("version"), aic_quant={k: res["raw"].get(k) for k in ("gemm", "moe", "kvcache", "fmha")})
        if res.get("note"):
            row["note"] = res["note"]
        if rec.get("engine_version"):
            row["record_engine_version"] = rec["engine_version"]
    for _, row in rows:
        attach(row, ours)
    write([row for _, row in rows], a.out)
    report([row for _, row in rows], bool(ours))
    print(f"\nwrote {len(rows)} lines to {a.out}")
    return 0


def attach(row: dict, ours: dict) -> None:
    """Our held-out prediction beside the row (validate's rows carry the prediction of the fit without the row's own table,
    in the record's unit; the ratio carries it to the canonical unit of the row)."""
    row.pop("ours_ratio", None)
    row.pop("ours_predicted", None)
    o = ours.get(row["id"])
    mine = (o or {}).get("held_out", (o or {}).get("predicted"))
    if mine and o.get("measured"):
        row["ours_ratio"] = float(mine) / float(o["measured"])
        row["ours_predicted"] = row["ours_ratio"] * float(row["measured"])


def write(rows: list[dict], out: Path) -> None:
    """The JSON lines, written atomically (a temporary file in the same folder, then renamed)."""
    import tempfile

    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=out.parent, prefix=out.name, suffix=".tmp", delete=False) as f:
        for row in rows:
            f.write(json.dumps(row, default=str) + "\n")
    os.replace(f.name, out)


def rescore(saved: Path, out: Path, ours_file: Path | None) -> int:
    """A saved comparison with our current predictions beside aiconfigurator's saved ones."""
    try:
        rows = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        print(f"--rescore: cannot read {saved}: {exc}", file=sys.stderr)
        return 2
    ours = our_predictions(ours_file)
    for row in rows:
        attach(row, ours)
    write(rows, out)
    report(rows, bool(ours))
    print(f"\nwrote {len(rows)} lines to {out} (aiconfigurator's figures from {saved})")
    return 0


def report(rows: list[dict], have_ours: bool) -> None:
    done = [r for r in rows if r["ratio"] is not None]
    print(f"\n{len(rows)} serve records: {len(done)} compared, {len(rows) - len(done)} not mapped")
    print("\naiconfigurator vs measured, per metric group" + ("   |   aiinfra on the same records" if have_ours else ""))
    for group in ("ttft", "tpot", "e2e_latency", "throughput", "all"):
        sub = [r for r in done if group == "all" or GROUPS[r["metric"]] == group]
        line = f"  {group:12s} {fmt(stats([(r['aiconfigurator_predicted'], r['measured']) for r in sub]))}"
        if have_ours:
            both = [r for r in sub if r.get("ours_predicted")]
            line += f"   |   {fmt(stats([(r['ours_predicted'], r['measured']) for r in both]))}"
        print(line)
    by_source: dict = {}
    for r in done:
        by_source.setdefault(r["id"].split("/")[0], []).append(r)
    print("\nper source (aiconfigurator" + ("   |   aiinfra held out, on the same records)" if have_ours else ")"))
    for src, sub in sorted(by_source.items()):
        line = f"  {src:58s} {fmt(stats([(r['aiconfigurator_predicted'], r['measured']) for r in sub]))}"
        if have_ours:
            both = [r for r in sub if r.get("ours_predicted")]
            line += f"   |   {fmt(stats([(r['ours_predicted'], r['measured']) for r in both]))}"
        print(line)
    if have_ours and done:
        print("\nside by side (first 40 compared records): measured, aiconfigurator (ratio), aiinfra (ratio)")
        for r in done[:40]:
            ours = f"{r['ours_predicted']:.4g} (x{r['ours_ratio']:.2f})" if r.get("ours_predicted") else "-"
            print(f"  {r['id'][:70]:70s} {r['metric']:26s} {r['measured']:.4g}  {r['aiconfigurator_predicted']:.4g} (x{r['ratio']:.2f})  {ours}")
    reasons: dict = {}
    for r in rows:
        if r["ratio"] is None:
            reasons.setdefault(r["why_not"], []).append(r["id"])
    if reasons:
        print("\nnot mapped, by reason")
        for why, ids in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
            srcs = sorted({i.split("/")[0].removeprefix("meas:") for i in ids})
            print(f"  {len(ids):4d}  {why}\n        e.g. {', '.join(srcs[:4])}{' ...' if len(srcs) > 4 else ''}")


if __name__ == "__main__":
    sys.exit(main())
