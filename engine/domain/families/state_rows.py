"""The persistent bytes of one request by layer kind (``LayerKind`` rows summed into a ``RequestState``), as every
family's ``request_state`` returns them (``engine.domain.state`` re-exports both)."""

from __future__ import annotations

from engine.core.record import dataclass


@dataclass(frozen=True)
class LayerKind:
    kind: str            # full_attention | sliding_attention | mla_latent | recurrent | indexer_keys | csa | hca
    layers: int
    tokens_held: int     # tokens of this request each layer keeps (0 for a recurrent state; csa, hca: window plus compressed entries)
    bytes_per_request: int
    formula: str


@dataclass(frozen=True)
class RequestState:
    model: str
    context_tokens: int
    kv_bytes: float
    rows: tuple[LayerKind, ...]
    total: int
    formulas: tuple[str, ...]

    def to_json(self) -> dict:
        return {"model": self.model, "context_tokens": self.context_tokens, "kv_bytes": self.kv_bytes,
                "layer_kinds": [r.__dict__ for r in self.rows], "bytes_per_request": self.total, "formulas": list(self.formulas)}
