"""A test-fixture family, to show that a new architecture family is one module plus one registry line: cross-layer
K/V sharing (CLA; Brandon et al. 2024, "Reducing Transformer Key-Value Cache Size with Cross-Layer Attention"), where
every ``share`` adjacent layers read one K/V cache. Its weights are a standard decoder's; its K/V per token is F8 over
the layers that keep a cache; the forward ledger and the calculators, which hold one cache per layer, refuse it.

Nothing in engine/ names it: ``test_families_fixture.py`` registers it in FAMILIES for the length of a test.
"""

from __future__ import annotations

from engine.domain.families import standard
from engine.domain.families.base import Defaults, Use
from engine.domain.families.state_rows import LayerKind, RequestState


class CrossLayer(Defaults):
    name = "cross_layer"
    derived_families = ("cross_layer_dense",)
    uses = frozenset({Use.COUNT, Use.KV_PER_TOKEN, Use.STATE})

    def cached_layers(self, shape) -> int:
        return shape.layers // shape.derived["kv_sharing"]["share"]

    def count(self, shape, ev) -> dict:
        return standard.FAMILY.count(shape, ev)  # the same weights as a standard decoder

    def kv_per_token(self, shape, ev, kv_bytes: float) -> int:
        return ev("F8", **dict(shape.f8(kv_bytes), layers=self.cached_layers(shape)))

    def request_state(self, shape, ev, context_tokens: int, kv_bytes: float, state_bytes: float | None) -> RequestState:
        cached = self.cached_layers(shape)
        per_token = self.kv_per_token(shape, ev, kv_bytes)
        kv = ev("FX70", kv_bytes_per_token=per_token, layers=cached, window_layers=0, context_tokens=context_tokens, sliding_window=context_tokens)
        total = ev("FX801", kv_bytes_per_request=kv, recurrent_layers=0, recurrent_state_bytes_per_layer=0)
        return RequestState(shape.id, context_tokens, kv_bytes, (LayerKind("full_attention", cached, context_tokens, kv, "F8"),), total,
                            ("F8", "FX70", "FX801"))

    def what(self, shape) -> str:
        return f"cross-layer K/V sharing (one K/V cache per {shape.derived['kv_sharing']['share']} layers)"


FAMILY = CrossLayer()
