"""What the hybrids share (Gated DeltaNet, KDA and Mamba-2 layers beside attention layers): their K/V comes from the
attention layers alone and every request adds a fixed recurrent state (FX800 per layer, FX801 the total). The
calculators hold one kind of attention layer and refuse them by name, except calc kv-concurrency (FX71 hybrid)."""

from __future__ import annotations

from engine.core.errors import InputError
from engine.domain.families.base import Defaults, Use
from engine.domain.families.state_rows import LayerKind, RequestState


def default_state_bytes(config: dict) -> int:
    """Bytes per recurrent-state element an engine keeps: 4 where the config names mamba_ssm_dtype float32
    (Qwen3.5), else 2, the BF16 of the model's weights."""
    return 4 if config.get("mamba_ssm_dtype") == "float32" else 2


def hybrid_state(name: str, f8: dict, recurrent: int, per_layer: int, context_tokens: int, kv_bytes: float, ev) -> RequestState:
    """K/V of the attention layers (F8 over ``f8``'s layers, FX70 unwindowed) and ``recurrent`` layers of ``per_layer``
    bytes (FX800), summed by FX801."""
    attn = f8["layers"]
    kv = 0
    if attn:
        per_token = ev("F8", **f8)
        kv = ev("FX70", kv_bytes_per_token=per_token, layers=attn, window_layers=0, context_tokens=context_tokens, sliding_window=context_tokens)
    total = ev("FX801", kv_bytes_per_request=kv, recurrent_layers=recurrent, recurrent_state_bytes_per_layer=per_layer)
    rows = (LayerKind("full_attention", attn, context_tokens, kv, "F8"), LayerKind("recurrent", recurrent, 0, recurrent * per_layer, "FX800"))
    return RequestState(str(name), context_tokens, kv_bytes, tuple(r for r in rows if r.layers), total, ("F8", "FX70", "FX800", "FX801"))


def check_state_bytes(state_bytes: float) -> None:
    if not state_bytes > 0:
        raise InputError("--state-bytes", f"expected a positive number of bytes per state element, got {state_bytes!r}")


class Recurrent(Defaults):
    """A hybrid family: the module says how its layers are read (``recurrent``: the derived block of its recurrent
    layers), FX800's inputs (``state_per_layer``), its recurrent kind and the heads a TP split must divide."""

    hybrid = True
    uses = frozenset(Use) - {Use.CALCULATORS}
    recurrent_kind = ""

    def recurrent(self, shape) -> dict:
        raise NotImplementedError

    def state_per_layer(self, shape, ev, state_bytes: float) -> int:
        raise NotImplementedError

    def request_state(self, shape, ev, context_tokens: int, kv_bytes: float, state_bytes: float | None) -> RequestState:
        state_bytes = default_state_bytes(shape.config) if state_bytes is None else state_bytes
        check_state_bytes(state_bytes)
        layers = self.recurrent(shape)["layers"]
        return hybrid_state(shape.id, shape.f8(kv_bytes), layers, self.state_per_layer(shape, ev, state_bytes), context_tokens, kv_bytes, ev)

    def what(self, shape) -> str:
        return f"a hybrid ({shape.derived.get('layer_pattern', 'recurrent and attention layers')})"

    def refused(self, use: Use, shape) -> str:
        from engine.domain.families.base import calculators_refusal, ledger_refusal

        if use == Use.LEDGER:
            return ledger_refusal(shape, self.what(shape))
        return calculators_refusal(shape, self.what(shape), " (calc kv-concurrency sizes hybrids: K/V of the attention layers plus the fixed state)")

    def preset_values(self, shape, root, put) -> None:
        """The K/V layers and the state per request (FX800 x recurrent layers, at the state's default bytes)."""
        from engine.domain.families.evaluate import Evaluator, formula_module

        put("layers", shape.attention_layers,
            f"derived attention layers of the hybrid, the ones with a K/V cache ({shape.derived.get('layer_pattern', '')})")
        put("kv_layout", "hybrid", "derived: recurrent layers keep a fixed state beside the attention layers' K/V")
        size = default_state_bytes(shape.config)
        request = self.request_state(shape, Evaluator(formula_module(root)), 1, 2, size)
        recurrent = sum(r.bytes_per_request for r in request.rows if r.kind == "recurrent")
        layers = sum(r.layers for r in request.rows if r.kind == "recurrent")
        put("recurrent_state_bytes_per_request", recurrent,
            f"FX800 x {layers} recurrent layers at {size:g} B per state element ({'mamba_ssm_dtype float32' if size == 4 else 'BF16, the weights dtype'})")

    def serving_terms(self, shape, preset: dict) -> dict:
        """plan serve's layers: all of them, the attention ones (K/V and FX30's attention term), the recurrent ones with
        FX800's state per layer (the preset's per-request state), and the head counts TP must divide."""
        recurrent = int(self.recurrent(shape)["layers"])
        return dict(layers=int(shape.layers), attn_layers=int(preset["layers"]), recurrent_layers=recurrent,
                    state_bytes_layer=float(preset["recurrent_state_bytes_per_request"]) / recurrent,
                    state_heads=tuple(self.state_heads(shape).values()), recurrent_kind=self.recurrent_kind,
                    state_element_bytes=float(default_state_bytes(shape.config)))
