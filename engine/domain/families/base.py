"""What every architecture family answers (``Family``), the uses a caller asks it for (``Use``), and the defaults
that most families share (``Defaults``): a family module overrides what differs and names what it refuses.

A caller never asks which family a record is; it asks the record's family (``engine.domain.families.family_of``)
for a count, a K/V size, a state, preset or serving terms, or whether a use is supported. An unsupported use is
refused by the family's own message (``refusal``), once, naming the model and what it is.
"""

from __future__ import annotations

from enum import StrEnum

TYPE_CHECKING = False  # typing costs about 4 ms to import; only type checkers need it
if TYPE_CHECKING:
    from engine.domain.families.shape import ModelShape
    from engine.domain.families.state_rows import RequestState


class Use(StrEnum):
    """What a caller uses a model for; each family supports it or refuses it by name."""

    COUNT = "count"                    # parameters (model show, check): every family
    KV_PER_TOKEN = "kv-per-token"      # K/V bytes one token adds (F8 and its family variants): every family
    STATE = "state"                    # persistent bytes of one request (aiinfra state): every family
    STATE_TP = "state-tp"              # that state split over tensor-parallel ranks (state --tp above 1)
    CALCULATORS = "calculators"        # --model presets of the calculators that hold one kind of attention layer
    KV_CONCURRENCY = "kv-concurrency"  # --model presets of calc kv-concurrency (hybrids, DSA)
    SERVE = "serve"                    # plan serve
    LEDGER = "ledger"                  # the forward ledger's operator templates (forward, generate)


# The option a refusal names; --model for every other use.
FLAGS = {Use.STATE_TP: "--tp"}


class Family:
    """The protocol every family module implements (``Defaults`` gives all but ``count``): a plain class rather than a
    ``typing.Protocol``, as typing costs about 4 ms to import on every command that reads a model."""

    name: str                          # the family's own name (standard, gated_deltanet, kda, mamba, compressed, layerwise)
    derived_families: tuple[str, ...]  # the derived.family values it holds: its keys in FAMILIES
    hybrid: bool                       # recurrent layers beside attention layers

    def derive(self, cfg: dict, layout) -> dict:
        """The family's own ``derived`` fields from a config (its layer kinds, windows, indexer)."""
        raise NotImplementedError

    def count(self, shape: ModelShape, ev) -> dict:
        """parameter_count's result: total, active, parts, extras, formulas."""
        raise NotImplementedError

    def kv_per_token(self, shape: ModelShape, ev, kv_bytes: float) -> int | float:
        """Bytes of K/V one token adds."""
        raise NotImplementedError

    def request_state(self, shape: ModelShape, ev, context_tokens: int, kv_bytes: float, state_bytes: float | None) -> RequestState:
        """The persistent bytes of one request, by layer kind."""
        raise NotImplementedError

    def what(self, shape: ModelShape) -> str:
        """What the model is, in a refusal ("" for a plain decoder)."""
        raise NotImplementedError

    def refusal(self, use: Use, shape: ModelShape) -> str:
        """"" where ``use`` is supported, else the one sentence that refuses it."""
        raise NotImplementedError

    def state_heads(self, shape: ModelShape) -> dict[str, int]:
        """The recurrent heads a tensor-parallel split of the state must divide."""
        raise NotImplementedError

    def preset_values(self, shape: ModelShape, root, put) -> None:
        """The calculators' inputs that are the family's own (``put(symbol, value, source)``)."""
        raise NotImplementedError

    def serving_terms(self, shape: ModelShape, preset: dict) -> dict:
        """plan serve's inputs that are the family's own."""
        raise NotImplementedError

    def kv_label(self, shape: ModelShape) -> str:
        """What ``kv_per_token`` is, for model show."""
        raise NotImplementedError

    def heads_text(self, shape: ModelShape) -> tuple[object, object]:
        """Query and K/V heads as the models page shows them."""
        raise NotImplementedError


def calculators_refusal(shape: ModelShape, what: str, also: str) -> str:
    """The refusal of a calculator whose formulas hold one kind of attention layer with a full K/V cache."""
    return (f"{shape.id} is {what}: the calculators' formulas hold one kind of attention layer with a full K/V cache, so it is "
            f"refused here rather than mis-sized{also}; `aiinfra state --model {shape.short_id}` gives its bytes per request and capacity")


def ledger_refusal(shape: ModelShape, what: str) -> str:
    """The refusal of the forward ledger where no operator template holds the family."""
    return (f"{shape.id} is {what}: the forward ledger has no operator template for it yet, so it is refused rather than counted "
            "as plain attention; `aiinfra model show` and `aiinfra state` cover it")


class Defaults(Family):
    """What a family does unless its module says otherwise: every use supported, F8 over the attention layers,
    no recurrent heads, no extra preset or serving terms."""

    name = ""
    derived_families: tuple[str, ...] = ()
    hybrid = False
    uses = frozenset(Use)

    def derive(self, cfg: dict, layout) -> dict:
        return {}

    def kv_per_token(self, shape: ModelShape, ev, kv_bytes: float) -> int | float:
        return ev("F8", **shape.f8(kv_bytes))

    def what(self, shape: ModelShape) -> str:
        return ""

    def refusal(self, use: Use, shape: ModelShape) -> str:
        """"" where ``use`` is supported, else the sentence that refuses it."""
        if use in self.uses:
            return ""
        return self.refused(use, shape)

    def refused(self, use: Use, shape: ModelShape) -> str:
        if use == Use.LEDGER:
            return ledger_refusal(shape, self.what(shape))
        return calculators_refusal(shape, self.what(shape), "")

    def state_heads(self, shape: ModelShape) -> dict[str, int]:
        return {}

    def preset_values(self, shape: ModelShape, root, put) -> None:
        put("layers", shape.layers, "config num_hidden_layers")

    def serving_terms(self, shape: ModelShape, preset: dict) -> dict:
        return {}

    def kv_label(self, shape: ModelShape) -> str:
        return f"KV cache per token (BF16, F8 {shape.attention})"

    def heads_text(self, shape: ModelShape) -> tuple[object, object]:
        heads = shape.config.get("num_attention_heads", "-")
        return heads, shape.config.get("num_key_value_heads", heads)
