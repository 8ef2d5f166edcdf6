"""Architecture families as a registry: ``FAMILIES`` maps each ``derived.family`` of a model record to the one module
that counts it, sizes its K/V and request state, fills calculator and serving inputs, and refuses what it cannot do.

| module | family | derived.family |
| --- | --- | --- |
| ``standard`` | dense, MoE and MLA decoders; sliding windows and DeepSeek Sparse Attention as flags | dense, moe, mla_moe |
| ``gated_deltanet`` | Gated DeltaNet beside gated attention (Qwen3-Next, Qwen3.5) | hybrid_moe |
| ``kda`` | Kimi Delta Attention beside MLA (Kimi Linear, Kimi K3) | hybrid_mla_moe |
| ``mamba`` | Mamba-2 beside attention and MLP blocks (Nemotron-H) | hybrid |
| ``compressed`` | DeepSeek-V4's compressed attention | compressed_moe |
| ``layerwise`` | layer-wise scaled widths (OpenELM) | layerwise_dense |

``base`` holds the ``Family`` protocol, the ``Use`` a caller asks for and the shared defaults; ``shape`` the
``ModelShape`` read once per record; ``counting``, ``recurrent``, ``state_rows`` and ``evaluate`` what families share.
A new family is one module and one line here (see README.md).
"""

from __future__ import annotations

from engine.core.errors import InputError

__all__ = ["FAMILIES", "Family", "ModelShape", "Use", "family_of", "refuse", "shape_of"]


def _registry() -> dict:
    """derived.family -> family, built on first use (the family modules are imported then, not with this package)."""
    table = globals().get("FAMILIES")
    if table is None:
        from engine.domain.families import (
            compressed,
            gated_deltanet,
            kda,
            layerwise,
            mamba,
            standard,
        )

        table = globals()["FAMILIES"] = {name: module.FAMILY for module in (standard, gated_deltanet, kda, mamba, compressed, layerwise)
                                         for name in module.FAMILY.derived_families}
    return table


def __getattr__(name: str):
    if name == "FAMILIES":
        return _registry()
    if name in ("Family", "Use", "FLAGS"):
        from engine.domain.families import base

        return getattr(base, name)
    if name in ("ModelShape", "shape_of"):
        from engine.domain.families import shape

        return getattr(shape, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def family_of(shape):
    """The family of a model's shape (its ``derived.family``); one that no module holds is refused by name."""
    table = _registry()
    family = table.get(shape.family)
    if family is None:
        raise InputError("derived.family", f"{shape.id}: {shape.family!r} is not a family the engine knows ({', '.join(sorted(table))})")
    return family


def refuse(use, shape) -> None:
    """Raise the family's own refusal where it does not support ``use``."""
    from engine.domain.families.base import FLAGS

    why = family_of(shape).refusal(use, shape)
    if why:
        raise InputError(FLAGS.get(use, "--model"), why)
