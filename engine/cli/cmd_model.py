"""``aiinfra model list|show|import``: model records and their parameter counts."""

from __future__ import annotations

import json
import os
import re

from engine.cli.common import emit, one_record, root_of, write_atomic
from engine.cli.render import table, to_json
from engine.core.errors import InputError
from engine.core.humanize import number

_NAME = re.compile(r"[a-z0-9][a-z0-9_.+-]*")


def list_(args) -> int:
    from engine.domain.models import load_models, parameter_count

    root = root_of(args)
    models = load_models(root)
    rows = []
    for rid in sorted(models):
        rec = models[rid]
        counted = parameter_count(rec, root)
        rows.append(dict(id=rid.split(":", 1)[1], name=rec["name"], family=rec["derived"]["family"], attention=rec["derived"]["attention"],
                         layers=rec["config"]["num_hidden_layers"], hidden=rec["config"]["hidden_size"],
                         parameters=counted["total"], active=counted["active"], matches=rec["parameters"]["matches"]))
    cols = [("id", "id"), ("family", "family"), ("attention", "attention"), ("layers", "layers"), ("hidden", "hidden"),
            ("parameters", "parameters"), ("active", "active")]
    if args.format in ("json", "csv"):
        cols += [("name", "name"), ("matches", "matches")]
    else:
        rows = [{**r, "parameters": billions(r["parameters"]), "active": billions(r["active"])} for r in rows]
    text = table(rows, cols, args.format, droppable=("hidden", "layers", "attention"))  # narrow terminals lose these first
    emit(text if rows or args.format in ("json", "csv") else "no models")
    return 0


def billions(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.1f}M"


def describe(rec: dict, root) -> dict:
    """The record plus what the engine computes from it (the JSON of ``model show``)."""
    from engine.domain.models import kv_bytes_per_token, parameter_count, reproduces

    counted = parameter_count(rec, root)
    reproduced = reproduces(rec, counted["total"])
    computed = {"total": counted["total"], "active": counted["active"], "reproduces_reference": reproduced, "parts": counted["parts"],
                "formulas": counted["formulas"], "extra_formulas": counted["extra_formulas"], "missing_formulas": counted["missing_formulas"],
                "kv_bytes_per_token_bf16": kv_bytes_per_token(rec, root, 2)}
    return {**rec, "computed": computed}


def show(args) -> int:
    from engine.domain.models import find
    from engine.kb.knowledge import load_single_folder

    root = root_of(args)
    k = load_single_folder(root, "models", strict=False)
    d = describe(one_record(lambda: find(k.models, args.id), k.problems), root)
    if args.format == "json":
        emit(to_json(d))
    elif args.format == "csv":
        emit(table(list(_flat(d)), [("field", "field"), ("value", "value")], "csv"))
    else:
        emit(_document(d, md=args.format == "md"))
    return 0


def _flat(value, prefix: str = ""):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _flat(inner, f"{prefix}.{key}" if prefix else key)
    elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
        for i, inner in enumerate(value):
            yield from _flat(inner, f"{prefix}[{i}]")
    else:
        yield {"field": prefix, "value": json.dumps(value) if isinstance(value, bool | type(None)) else value}


def _document(d: dict, md: bool) -> str:
    c, dv, p, comp = d["config"], d["derived"], d["parameters"], d["computed"]
    head = f"{d['id']} · {d['name']}"
    src = d["source"]
    out = [f"# {head}" if md else head, "",
           f"source: {src['repo']} @ {src['revision']} ({src.get('file', 'config.json')}), as of {d['as_of']}"]
    out += [f"  note: {src['note']}"] if src.get("note") else []
    out += [f"  default: {x}" for x in src.get("defaults", [])]
    out += ["", "config (Hugging Face names):"]
    out.append(table([{"key": k, "value": _value(v)} for k, v in c.items()], [("key", "key"), ("value", "value")], "md" if md else "text"))
    out += ["", "derived:"]
    out.append(table([{"key": k, "value": _value(v)} for k, v in dv.items()], [("key", "decision"), ("value", "value")], "md" if md else "text"))
    out += ["", "parameters:"]
    parts = [{"part": k, "parameters": v, "formula": f"{comp['extra_formulas'][k]}: {comp['missing_formulas'][k]}" if k in comp["extra_formulas"] else ""}
             for k, v in comp["parts"].items()]
    out.append(table(parts, [("part", "part"), ("parameters", "parameters"), ("formula", "extra term: its formula, and why FX10-FX18 lack it")], "md" if md else "text"))
    verdict = "reproduces" if comp["reproduces_reference"] else "DOES NOT reproduce"
    out += ["", f"total {comp['total']} ({billions(comp['total'])}), active per token {comp['active']} ({billions(comp['active'])})",
            f"reference ({p['matches']}): {p['total']}" + (f" within {p['rel_tol']:g} relative" if p.get("rel_tol") else "")
            + f"; the architecture {verdict} it", f"  {p['reference']}"]
    for item in p.get("outside_lm", []):
        out.append(f"  outside the language model: {item['name']}: {item['parameters']} ({item['source']})")
    out += [f"formulas: {', '.join(comp['formulas'])}",
            f"{_kv_label(d)}: {number(comp['kv_bytes_per_token_bf16'])} B"]
    if d.get("notes"):
        out += ["", f"notes: {d['notes']}"]
    return "\n".join(out)


def _kv_label(record: dict) -> str:
    """What the K/V bytes per token are, in the words of the record's family (DeepSeek-V4: the growth once the windows
    are full; OpenELM: each layer's own K/V heads; F8's variant otherwise)."""
    from engine.domain.families import family_of, shape_of

    shape = shape_of(record)
    return family_of(shape).kv_label(shape)


def _value(v) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={_value(x)}" for k, x in v.items())
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    return str(v)


def import_(args) -> int:
    from engine.domain.models import import_config, to_yaml

    config = _read_config(args.config)
    model_id = _model_id(args)
    if args.params is not None and args.params < 1:
        raise InputError("--params", f"expected a whole number >= 1, got {args.params}")
    root = root_of(args)
    if args.out == "":
        raise InputError("--out", "is empty (expected a folder)")
    folder = args.out or os.path.join(root, "knowledge", "models")
    if not os.path.isdir(folder):
        raise InputError("--out", f"{folder!r} is not a folder")
    record = import_config(config, model_id, args.repo or "", args.revision, params=args.params, root=root)
    target = os.path.join(folder, f"{model_id}.yaml")
    replaced = os.path.exists(target)
    if replaced and not getattr(args, "force", False):
        raise InputError("--id", f"model {model_id!r} already has a record ({target}); give --force to replace it, or --id to name the new one")
    header = f"# Written by `aiinfra model import` from {os.path.basename(args.config)}; check source, parameters and notes by hand.\n"
    write_atomic(target, header + to_yaml(record))
    p, dv = record["parameters"], record["derived"]
    emit(f"{'replaced' if replaced else 'wrote'} {target}\n"
         f"{record['id']}: {dv['family']}, {dv['attention']}, {record['config']['num_hidden_layers']} layers, "
         f"{p['total']} parameters ({p['matches']})")
    return 0


def _read_config(path: str) -> dict:
    from engine.kb.config_json import parse_config, read_bytes

    return parse_config(read_bytes(path, "CONFIG_JSON", "a model's config.json"), path)


def _model_id(args) -> str:
    if args.model_id:
        text = args.model_id.strip()
        text = text.split(":", 1)[1] if text.startswith("model:") else text
        if not _NAME.fullmatch(text):
            raise InputError("--id", f"{args.model_id!r} is not a model id (lower-case letters, digits and . _ + -, e.g. qwen3-8b)")
        return text
    base = os.path.basename(os.path.abspath(args.config))
    guess = os.path.basename(os.path.dirname(os.path.abspath(args.config))) if base == "config.json" else os.path.splitext(base)[0]
    guess = guess.lower()
    if not _NAME.fullmatch(guess):
        raise InputError("--id", f"cannot make a model id from {guess!r}; give one, e.g. --id qwen3-8b")
    return guess
