"""Reading a config.json: the language-model keys, the Layout of its model_type, the keys checked and filled."""

from __future__ import annotations

from engine.core.errors import InputError
from engine.domain.model_layouts import (
    COMMON,
    IGNORED,
    KNOWN,
    LAYOUTS,
    MLA_KEYS,
    MOE_KEYS,
    OUTSIDE_LM,
    PRETRAINED_DEFAULTS,
    UNCOUNTED_CLASSES,
    UNCOUNTED_KEYS,
    UNCOUNTED_LAYER_TYPES,
    UNCOUNTED_MODEL_TYPES,
    WRAPPED_AS,
    WRAPPERS,
    Layout,
    _refuse_key,
)


def flatten(config: dict) -> tuple[dict, list[str]]:
    """The language-model keys (``text_config`` lifted out of a multimodal wrapper) and notes on the rest.

    A wrapper's own keys join the text keys (the text side wins) and are checked like them,
    so an unknown tower such as ``audio_tower_config`` is refused by name.
    """
    notes = [_outside_note(key, config[key]) for key in config if key in OUTSIDE_LM and config[key] not in (None, 0, {})]
    if "text_config" not in config:
        return {k: v for k, v in config.items() if k not in OUTSIDE_LM}, notes
    text = config["text_config"]
    if not isinstance(text, dict):
        raise InputError("text_config", "expected a JSON object (the language model's config)")
    wrapper = config.get("model_type")
    if wrapper not in WRAPPERS:
        raise InputError("model_type", f"{wrapper!r} is not a multimodal wrapper the importer knows (known: {', '.join(sorted(WRAPPERS))})")
    notes += [_outside_note(key, text[key]) for key in text if key in OUTSIDE_LM and text[key] not in (None, 0, {})]
    merged = {"model_type": WRAPPERS[wrapper], **{k: v for k, v in text.items() if k not in OUTSIDE_LM}}
    if (wrapper, text.get("model_type")) in WRAPPED_AS:  # Kimi K3's text_config says kimi_linear, which it is not
        merged["model_type"] = WRAPPED_AS[(wrapper, text["model_type"])]
    for key, value in config.items():
        if key not in ("text_config", "model_type") and key not in OUTSIDE_LM:
            merged.setdefault(key, value)
    notes.insert(0, f"The language model is the text_config of the {wrapper} wrapper ({merged['model_type']}).")
    return merged, notes


def refuse_uncounted(cfg: dict) -> None:
    """An InputError naming the field and the architecture when ``cfg`` shows one the engine cannot count exactly."""
    found = _uncounted(cfg)
    if found:
        key, value, arch = found
        raise InputError(key, f"{value} shows {arch}. The engine cannot count this architecture exactly yet, so it refuses "
                              "the config rather than count it as a dense model")


def _uncounted(cfg: dict) -> tuple[str, str, str] | None:
    layout = LAYOUTS.get(cfg.get("model_type")) if isinstance(cfg.get("model_type"), str) else None
    counted = layout.keys if layout else frozenset()  # a layout that reads a key counts what it shows (qwen3_next's linear_*)
    for key, arch in UNCOUNTED_KEYS.items():
        if key in cfg and key not in counted:
            return key, "is present and", arch
    types = cfg.get("layer_types")
    for kind in types if isinstance(types, list) else ():
        if isinstance(kind, str) and kind in UNCOUNTED_LAYER_TYPES and not (kind == "linear_attention" and layout and layout.linear):
            return "layer_types", f"lists {kind!r}, which", UNCOUNTED_LAYER_TYPES[kind]
    model_type = cfg.get("model_type")
    if isinstance(model_type, str) and model_type in UNCOUNTED_MODEL_TYPES:
        return "model_type", f"{model_type!r}", UNCOUNTED_MODEL_TYPES[model_type]
    classes = cfg.get("architectures")
    for name in classes if isinstance(classes, list) else ():
        if isinstance(name, str) and name in UNCOUNTED_CLASSES:
            return "architectures", f"{name!r}", UNCOUNTED_CLASSES[name]
    return None


def _outside_note(key: str, value) -> str:
    if isinstance(value, dict):
        kind = value.get("model_type") or value.get("quant_method") or "unstated type"
        return f"{key} ({kind}): {OUTSIDE_LM[key]}."
    return f"{key} = {value}: {OUTSIDE_LM[key]}."


def layout_of(cfg: dict) -> Layout:
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise InputError("model_type", "missing (every config.json names its architecture in model_type)")
    if model_type in LAYOUTS:
        return LAYOUTS[model_type]
    known = ", ".join(sorted(LAYOUTS))
    variant = [k for k in (*MOE_KEYS, *MLA_KEYS) if k in cfg]
    if variant:
        raise InputError("model_type", f"{model_type!r} is not a known architecture and its config has MoE/MLA keys "
                                       f"({', '.join(variant)}): an unknown attention or MoE variant is never counted as a dense model (known: {known})")
    raise InputError("model_type", f"{model_type!r} is not a known architecture (known: {known}); add a Layout for it to LAYOUTS in engine/domain/model_layouts.py")


def check_keys(cfg: dict, layout: Layout) -> None:
    unknown = sorted(k for k in cfg if k not in KNOWN and k not in IGNORED and k not in PRETRAINED_DEFAULTS)
    if unknown:
        raise _refuse_key(", ".join(unknown))
    for key, default in PRETRAINED_DEFAULTS.items():
        if key in cfg and cfg[key] != default:
            raise InputError(key, f"{_show(cfg[key])} differs from the transformers PretrainedConfig default {_show(default)}: an "
                                  "encoder-decoder, cross-attention or pruned-head variant the importer does not count")
    foreign = sorted(k for k in cfg if k in KNOWN and k not in COMMON and k not in layout.keys)
    if foreign:
        raise InputError(", ".join(foreign), f"is not used by model_type {cfg['model_type']!r}: the config describes an attention, "
                                             "MoE or layer variant the importer does not understand")


def rename(text: dict, layout: Layout) -> tuple[dict, list[str]]:
    """A layout's own names of common keys (OpenELM's model_dim) read as the common ones, in file order, and a note saying so.

    A file that gives both names of one key is refused: which of the two the model uses is not for the importer to guess."""
    if not layout.renames:
        return text, []
    out = {}
    for key, value in text.items():
        common = layout.renames.get(key)
        if common is not None and common in text:
            raise InputError(key, f"and {common} are both given: {text.get('model_type')} names {common} {key}, so the config contradicts itself")
        out[common or key] = value
    moved = [f"{key} as {common}" for key, common in layout.renames.items() if key in text]
    return out, [f"The importer keeps {text.get('model_type')}'s own key names under the common ones: {', '.join(moved)}."] if moved else []


def fill(text: dict, layout: Layout) -> tuple[dict, list[str]]:
    """Known keys in file order, plus defaults for architecture keys the file leaves out."""
    cfg = {k: v for k, v in text.items() if k in KNOWN}
    defaults = []
    for key, (value, origin) in {"tie_word_embeddings": (True, "transformers PretrainedConfig default"), **layout.defaults}.items():
        if key not in cfg:
            cfg[key] = list(value) if isinstance(value, list) else value
            defaults.append(f"{key} = {_show(value)} ({origin})")
    heads = () if layout.layerwise else ("num_attention_heads",)  # a layer-wise model states its heads per layer
    for key in ("hidden_size", "num_hidden_layers", *heads, "vocab_size"):
        _positive(cfg, key, required=True)
    if layout.ffn_ratio and layout.ffn_key not in cfg:
        cfg[layout.ffn_key] = layout.ffn_ratio * cfg["hidden_size"]
        defaults.append(f"{layout.ffn_key} = {cfg[layout.ffn_key]} ({cfg['model_type']} default: {layout.ffn_ratio} x hidden_size)")
    own = {common: key for key, common in layout.renames.items()}
    for key, expected in layout.fixed.items():
        if cfg.get(key, expected) != expected:
            name = own.get(key, key)  # the file's own name of a renamed key
            raise InputError(name, f"{cfg[key]!r} is a variant the importer does not understand (it counts {cfg['model_type']} models with "
                                   f"{name} = {_show(expected)})")
    return cfg, defaults


def _show(value) -> str:
    """A value as config.json writes it (true, null, [])."""
    import json

    return json.dumps(value)


def _positive(cfg: dict, key: str, required: bool = False) -> int | None:
    value = cfg.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(key, f"expected a whole number >= 1, got {value!r}")
    return value
