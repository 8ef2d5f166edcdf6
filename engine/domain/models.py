"""Model architectures from Hugging Face ``config.json``: import, parameter count, KV bytes.

``import_config`` turns a config.json into a model record (``engine/kb/schemas/model.json``):
``config`` keeps the keys that shape the architecture under their Hugging Face names,
``derived`` records what was decided from them (family, attention, MLP, norms, biases,
head_dim, MoE, MLA, sliding window); ``derived.family`` names the architecture family
(``engine.domain.families``) that counts and sizes the record. Every key of the file is either known (it shapes the
architecture), ignored by the explicit ``IGNORED`` list, or noted as lying outside the
language model; anything else is refused with its name, and so is an unknown
``model_type``, so nothing unfamiliar is ever counted as a plain dense model. Architectures
the engine cannot count exactly (hybrid linear attention, Mamba hybrids, DeepSeek sparse
attention) are refused first, naming the field that shows them (``refuse_uncounted``).

The jobs live in their own modules and are importable from here: the known keys and layouts
(``engine.domain.model_layouts``), reading a config (``model_config``), the derived fields
(``model_derive``) and the counts (``model_count``: ``parameter_count`` from FX10-FX18 and FX870-FX880,
``kv_bytes_per_token`` from F8). This module builds a record and reads the shipped ones.
"""

from __future__ import annotations

import datetime

from engine.core.errors import InputError
from engine.domain.model_config import (  # noqa: F401  (public through this module)
    check_keys,
    fill,
    flatten,
    layout_of,
    refuse_uncounted,
    rename,
)
from engine.domain.model_count import (  # noqa: F401
    MISSING_FORMULAS,
    formula_module,
    kv_bytes_per_token,
    parameter_count,
)
from engine.domain.model_derive import derive  # noqa: F401
from engine.domain.model_layouts import (  # noqa: F401
    COMMON,
    IGNORED,
    KNOWN,
    LAYOUTS,
    OUTSIDE_LM,
    WRAPPERS,
    Layout,
)


# -------------------------------------------------------------------------------------- import
def import_config(config: dict, model_id: str, repo: str = "", revision: str = "unpinned", *,
                  params: int | None = None, root=None, name: str = "") -> dict:
    """A model record from a config.json dict; ``params``: an official total the architecture must reproduce."""
    from engine.kb.config_json import check_values

    if not isinstance(config, dict):
        raise InputError("config.json", "expected a JSON object")
    check_values(config)
    refuse_uncounted(config)
    text, notes = flatten(config)
    refuse_uncounted(text)
    layout = layout_of(text)
    text, renamed = rename(text, layout)
    check_keys(text, layout)
    cfg, defaults = fill(text, layout)
    record = {
        "id": f"model:{model_id}",
        "name": name or (repo.rsplit("/", 1)[-1] if repo else model_id),
        "source": {"repo": repo or "unknown", "revision": revision or "unpinned", "file": "config.json"},
        "as_of": datetime.date.today().strftime("%Y-%m-%d"),
        "config": cfg,
        "derived": derive(cfg, layout, root),
    }
    if defaults:
        record["source"]["defaults"] = defaults
    counted = parameter_count(record, root)
    record["parameters"] = _parameters(counted["total"], params)
    if notes or renamed:
        record["notes"] = " ".join(notes + renamed)
    _fits_schema(record)
    return record


def _fits_schema(record: dict) -> None:
    from engine.kb.schema import validate

    problems = validate("model", record, "config.json", record["id"])
    if problems:
        first = problems[0]
        raise InputError(first.path or "config.json", f"{first.message} (the record would not fit engine/kb/schemas/model.json)")


def _parameters(computed: int, given: int | None) -> dict:
    if given is None:
        return {"total": computed, "matches": "computed",
                "reference": "none checked: the architecture's own count (import with --params N to check an official total)"}
    if given != computed:
        raise InputError("--params", f"the architecture gives {computed} parameters, not {given}: check the config, "
                                     "or whether the total includes parts outside the language model (MTP layers, a vision tower, scales)")
    return {"total": given, "matches": "given", "reference": f"{given} given at import and reproduced exactly; name its source here"}


def reproduces(record: dict, total: int) -> bool:
    """Whether the architecture's count ``total`` reproduces the record's reference total (within
    ``rel_tol`` for a paper's rounded figure, exactly otherwise)."""
    ref = record["parameters"]
    if ref["matches"] == "paper_rounded":
        return abs(total - ref["total"]) <= ref.get("rel_tol", 0) * ref["total"]
    return total == ref["total"]


def problems(k) -> list:
    """Model records: the file is named for the id, and the architecture reproduces the recorded total."""
    from pathlib import Path

    from engine.core.errors import AiinfraError, Problem

    out = []
    for ident, record in sorted(getattr(k, "models", {}).items()):
        place = k.places.get(ident, "")
        name = ident.split(":", 1)[1]
        if place and Path(place.rsplit(":", 1)[0]).stem != name:
            out.append(Problem(place, ident, "id", f"the file should be named {name}.yaml"))
        try:
            total = parameter_count(record, k.root)["total"]
        except AiinfraError as exc:  # a record its layout refuses: the message names the field
            out.append(Problem(place, ident, "config", f"the parameters cannot be counted: {exc}"))
            continue
        if not reproduces(record, total):
            out.append(Problem(place, ident, "parameters.total", f"the architecture gives {total} parameters, not {record['parameters']['total']}"))
    return out


# -------------------------------------------------------------------------------- records
def load_models(root, strict: bool = True) -> dict:
    """The model records of ``root`` (id -> plain dict), schema-checked as ``Knowledge.load`` does.

    Reads only knowledge/models/, through the same single-record loader, so ``model list``
    and ``model show`` do not pay for loading the formulas and the books.
    """
    from engine.kb.knowledge import load_single_folder

    return load_single_folder(root, "models", strict).models


def find_one(root, text: str, field: str = "ID") -> dict:
    """``find`` in the models of ``root`` read leniently (#24): another model file that does not load is one
    warning on stderr; when ``text`` is not among those that load, their problems are the answer (exit 1)."""
    from engine.kb.folders import find_one as one

    return one(root, "models", lambda view: find(view.models, text, field))


def find(models: dict, text: str, field: str = "ID") -> dict:
    """The record for ``qwen3-8b`` or ``model:qwen3-8b``; an unknown id is an InputError on ``field`` (the option or
    argument the user typed it in) listing the known ones."""
    ident = text.strip().lower()
    ident = ident if ident.startswith("model:") else f"model:{ident}"
    if ident not in models:
        from engine.core.suggest import known

        raise InputError(field, f"no model {text!r} ({known(ident.split(':', 1)[1], sorted(m.split(':', 1)[1] for m in models))})")
    return models[ident]


def to_yaml(record: dict) -> str:
    import yaml

    return yaml.safe_dump(record, sort_keys=False, allow_unicode=True, width=100)
