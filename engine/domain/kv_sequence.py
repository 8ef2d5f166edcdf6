"""One sequence's K/V cache over its life: a P-token prompt (C of it a prefix hit), then G one-token decode calls.

Every count is a formula of formulas/kv_sequence.yaml evaluated through the compiled module (no arithmetic
here): records read (FX1200), appended (FX1201), the final capacity (FX1202), the pairs the decode queries
see (FX1203), the prefill's rows and pairs after a prefix hit (FX1204, FX1205) and what the hit saves
(FX1206), the no-cache recompute (FX1207, FX1208); with bytes per token (F8) the bytes read, appended and
held (FX1209-FX1211), for the model's own attention and the MHA/MQA counterfactuals (F8's variants).
"""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.record import dataclass

FORMULAS = ("FX1200", "FX1201", "FX1202", "FX1203", "FX1204", "FX1205", "FX1206", "FX1207", "FX1208")
BYTE_FORMULAS = ("F8", "FX1209", "FX1210", "FX1211")
COUNTERFACTUALS = ("mha", "gqa", "mqa")  # F8's variants a standard attention model can be recast as


@dataclass(frozen=True, slots=True)
class Counts:
    """Records and pairs of one sequence (tokens, tokens^2); the conservation laws hold between them."""

    prompt_tokens: int
    decode_steps: int
    prefix_hit_tokens: int
    decode_kv_reads: int
    decode_kv_appends: int
    sequence_kv_tokens: int
    decode_visible_pairs: int
    prefill_computed_tokens: int
    prefill_visible_pairs: int
    prefill_full_pairs: int
    prefix_saved_pairs: int
    uncached_recompute_tokens: int
    uncached_recompute_pairs: int


@dataclass(frozen=True, slots=True)
class Bytes:
    """The bytes of one attention variant: F8's bytes per token times the records read, appended and held."""

    variant: str
    native: bool
    kv_bytes_per_token: float
    decode_kv_read_bytes: float
    decode_kv_append_bytes: float
    sequence_kv_bytes: float
    prefix_hit_bytes: float


@dataclass(frozen=True, slots=True)
class Sequence:
    counts: Counts
    bytes: tuple        # Bytes, the model's own variant first; () without bytes per token
    model: str | None
    notes: tuple

    @property
    def formulas(self) -> list[str]:
        return list(FORMULAS) + (list(BYTE_FORMULAS) if self.bytes else [])


def counts(prompt_tokens: int, decode_steps: int, prefix_hit_tokens: int = 0, module=None) -> Counts:
    """The counts of FX1200-FX1208 for one sequence."""
    _check(prompt_tokens, decode_steps, prefix_hit_tokens)
    ev = _Formulas(module)
    P, G, C = prompt_tokens, decode_steps, prefix_hit_tokens
    reads = ev("FX1200", prompt_tokens=P, decode_steps=G)
    appends = ev("FX1201", decode_steps=G)
    computed = ev("FX1204", prompt_tokens=P, prefix_hit_tokens=C)
    return Counts(P, G, C, reads, appends, ev("FX1202", prompt_tokens=P, decode_kv_appends=appends),
                  ev("FX1203", decode_kv_reads=reads, decode_kv_appends=appends), computed,
                  ev("FX1205", prefill_computed_tokens=computed, prefix_hit_tokens=C),
                  ev("FX1205", prefill_computed_tokens=P, prefix_hit_tokens=0), ev("FX1206", prefix_hit_tokens=C),
                  ev("FX1207", prompt_tokens=P, decode_steps=G), ev("FX1208", prompt_tokens=P, decode_steps=G))


def variant_bytes(c: Counts, variant: str, per_token: float, native: bool, module=None) -> Bytes:
    """FX1209-FX1211 for ``per_token`` bytes per token; the prefix hit's bytes are FX1211 over C tokens."""
    ev = _Formulas(module)
    return Bytes(variant, native, per_token, ev("FX1209", decode_kv_reads=c.decode_kv_reads, kv_bytes_per_token=per_token),
                 ev("FX1210", decode_kv_appends=c.decode_kv_appends, kv_bytes_per_token=per_token),
                 ev("FX1211", sequence_kv_tokens=c.sequence_kv_tokens, kv_bytes_per_token=per_token),
                 ev("FX1211", sequence_kv_tokens=c.prefix_hit_tokens, kv_bytes_per_token=per_token))


def sequence(prompt_tokens: int, decode_steps: int, prefix_hit_tokens: int = 0, *, record: dict | None = None,
             kv_bytes: float = 2, kv_bytes_per_token: float | None = None, root=None) -> Sequence:
    """The counts, and the bytes of a model ``record`` (its own attention and, for MHA/GQA/MQA models, the other
    two as counterfactuals with the same query heads and head width) or of a given ``kv_bytes_per_token``."""
    from engine.domain.families.evaluate import formula_module

    module = formula_module(root)
    c = counts(prompt_tokens, decode_steps, prefix_hit_tokens, module)
    if record is None:
        rows = () if kv_bytes_per_token is None else (variant_bytes(c, "given", kv_bytes_per_token, True, module),)
        return Sequence(c, rows, None, ())
    rows, notes = _model_bytes(c, record, kv_bytes, module, root)
    return Sequence(c, rows, record["id"], notes)


def _model_bytes(c: Counts, record: dict, kv_bytes: float, module, root) -> tuple[tuple, tuple]:
    from engine.domain.families import shape_of
    from engine.domain.model_count import kv_bytes_per_token

    shape = shape_of(record)
    if shape.window:
        raise InputError("--model", f"{shape.short_id} keeps only a sliding window in some layers; these full-history sums need every layer to keep every token")
    native = kv_bytes_per_token(record, root, kv_bytes)
    notes = []
    if shape.attention_layers != shape.layers:
        notes.append(f"{shape.short_id}: K/V in {shape.attention_layers} of {shape.layers} layers; the other layers' fixed state is not in these bytes (aiinfra state)")
    rows = [variant_bytes(c, shape.attention, native, True, module)]
    if shape.attention in COUNTERFACTUALS and shape.heads:
        ev = _Formulas(module)
        for variant in COUNTERFACTUALS:
            if variant != shape.attention:
                given = dict(shape.f8(kv_bytes), attention=variant)
                rows.append(variant_bytes(c, variant, ev("F8", **given), False, module))
        notes.append("mha/gqa/mqa other than the model's own are counterfactuals: the same query heads and head width, "
                     f"{shape.heads} K/V heads (mha) or 1 (mqa); the pairs, and so QK/PV work, are unchanged")
    else:
        notes.append(f"{shape.short_id} uses {shape.attention}: no MHA/MQA counterfactual (F8's variants recast only MHA/GQA/MQA)")
    return tuple(rows), tuple(notes)


def _check(P: int, G: int, C: int) -> None:
    for field, value, low in (("--prompt", P, 1), ("--steps", G, 0), ("--prefix-hit", C, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise InputError(field, f"expected a whole number >= {low}, got {value!r}")
    if C > P:
        raise InputError("--prefix-hit", f"{C} exceeds the prompt's {P} tokens (a prefix hit is part of the prompt)")


class _Formulas:
    """Calls a formula of the compiled module with plain numbers and returns its output (an int when whole)."""

    def __init__(self, module=None):
        if module is None:
            from engine.domain.families.evaluate import formula_module

            module = formula_module()
        self.module = module

    def __call__(self, fid: str, **given):
        from engine.numeric.evaluate import evaluate

        meta = self.module.FORMULAS[fid]
        (out,) = evaluate(meta, self.module, given).outputs.values()
        value = out.value
        return int(value) if float(value).is_integer() and abs(value) < 2**53 else value
