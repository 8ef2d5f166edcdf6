"""Speculative decoding and multi-token prediction for ``plan serve --speculative``.

``parse`` reads the option's text (``draft_len=3,acceptance=0.7,draft_cost=0.05``, a rate per draft
position as ``acceptance=0.9/0.8/0.7``, ``method=mtp`` for one MTP module of the model as the draft);
``resolve`` turns it into a :class:`Speculation` for one model: the tokens per step (FX80, constant or
per position), the draft cost (given; Leviathan et al.'s 0.05 by default for a draft model; FX965 and
FX964 for an MTP module) and the draft length that maximises FX960 at that α and c.

The terms per layout (the verify pass FX962 with its communication, TPOT by FX78's speculative variant,
the speed-up FX960 and the roofline break-even batch FX963) are computed in engine.plan.serve_eval.
Errors name the field as ``speculative.<key>``; the CLI says which option that is.
"""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.record import dataclass

METHODS = ("draft", "mtp")
KEYS = ("method", "draft_len", "acceptance", "draft_cost")
MAX_POSITIONS = 8  # FX80's per_position variant holds spec_accept_pos1..8
LONGEST = 16  # draft lengths tried for the optimum
DRAFT_COST = 0.05
DRAFT_COST_SOURCE = ("Leviathan et al. 2023 section 3.3: c was always below 0.05 for drafts two orders of magnitude smaller than "
                     "the target (the default; measure it, or give draft_cost)")


@dataclass(frozen=True, slots=True)
class Speculation:
    method: str  # draft | mtp
    draft_len: int  # γ
    acceptance: tuple[float, ...]  # (α,) for one rate, else one conditional rate per draft position
    draft_cost: float  # c: one draft token's time over one plain target step
    draft_cost_source: str
    tokens_per_step: float  # E (FX80)
    ideal_speedup: float  # FX960 at v = 1 (verification free): the most this draft can gain
    optimal_draft_len: int  # the γ maximising FX960 at v = 1 for this α and c (0 for per-position rates)
    optimal_speedup: float

    def as_dict(self) -> dict:
        from engine.core.record import fields

        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["acceptance"] = list(self.acceptance)
        return out

    def describe(self) -> str:
        rates = "/".join(f"{a:g}" for a in self.acceptance)
        what = "one MTP module of the model" if self.method == "mtp" else "a draft model"
        acc = f"per-position acceptance {rates}" if len(self.acceptance) > 1 else f"acceptance α = {rates}"
        tokens = "draft token" if self.draft_len == 1 else "draft tokens"
        return f"{what}, γ = {self.draft_len} {tokens} per step, {acc}, draft cost c = {self.draft_cost:.4g}"


def _number(key: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"speculative.{key}", f"{text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise InputError(f"speculative.{key}", f"{text!r} is not a finite number")
    return value


def _rate(text: str) -> float:
    value = _number("acceptance", text)
    if not 0 <= value <= 1:
        raise InputError("speculative.acceptance", f"{text!r} is not a probability in [0, 1]")
    return value


def parse(text: str) -> dict:
    """``key=value`` pairs separated by commas into {method, draft_len, acceptance (tuple), draft_cost}, each checked."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("speculative", "expected key=value pairs, e.g. draft_len=3,acceptance=0.7,draft_cost=0.05")
    out: dict = {}
    for part in text.split(","):
        key, eq, value = part.strip().partition("=")
        key, value = key.strip().lower().replace("-", "_"), value.strip()
        if not eq or not key or not value:
            raise InputError("speculative", f"{part.strip()!r} is not key=value (keys: {', '.join(KEYS)})")
        if key not in KEYS:
            raise InputError(f"speculative.{key}", f"is not a field (expected one of {', '.join(KEYS)})")
        if key in out:
            raise InputError(f"speculative.{key}", "is given twice")
        out[key] = value
    return _checked(out)


def _checked(raw: dict) -> dict:
    out: dict = {}
    method = raw.get("method", "draft").lower()
    if method not in METHODS:
        raise InputError("speculative.method", f"{method!r} is not one of {', '.join(METHODS)}")
    out["method"] = method
    if "acceptance" not in raw:
        raise InputError("speculative.acceptance", "is required: the per-token acceptance rate α, or one rate per draft position as 0.9/0.8/0.7")
    rates = tuple(_rate(t.strip()) for t in raw["acceptance"].split("/"))
    if len(rates) > MAX_POSITIONS:
        raise InputError("speculative.acceptance", f"{len(rates)} per-position rates; FX80 takes at most {MAX_POSITIONS}")
    out["acceptance"] = rates
    if "draft_len" in raw:
        n = _number("draft_len", raw["draft_len"])
        if n != int(n) or n < 1:
            raise InputError("speculative.draft_len", f"{raw['draft_len']!r} is not a positive integer")
        if n > LONGEST:
            raise InputError("speculative.draft_len", f"{int(n)} draft tokens per step; expected at most {LONGEST}")
        out["draft_len"] = int(n)
        if len(rates) > 1 and len(rates) != out["draft_len"]:
            raise InputError("speculative.draft_len", f"{out['draft_len']} does not match the {len(rates)} per-position acceptance rates")
    if "draft_cost" in raw:
        c = _number("draft_cost", raw["draft_cost"])
        if c < 0:
            raise InputError("speculative.draft_cost", f"{raw['draft_cost']!r} is not a non-negative ratio")
        out["draft_cost"] = c
    return out


def tokens_per_step(f, draft_len: int, acceptance: tuple[float, ...]) -> float:
    """FX80: one rate for every position (constant), else the conditional rate of each position (per_position)."""
    if len(acceptance) == 1:
        return float(f("FX80", "constant", spec_draft_len=float(draft_len), spec_acceptance_rate=acceptance[0]))
    return float(f("FX80", "per_position", **{f"spec_accept_pos{i + 1}": a for i, a in enumerate(acceptance)}))


def speedup(f, draft_len: int, tokens: float, draft_cost: float, verify: float = 1.0) -> float:
    """FX960: E / (γ c + v)."""
    return float(f("FX960", spec_tokens_per_step=tokens, spec_draft_len=float(draft_len), draft_cost_ratio=draft_cost, verify_cost_ratio=verify))


def optimal_draft_len(f, alpha: float, draft_cost: float, verify: float = 1.0, longest: int = LONGEST) -> tuple[int, float]:
    """The γ in 1..longest that maximises FX960 (Leviathan et al. section 3.5: γ is an integer, found numerically), and
    its speed-up. FX960 over γ is a concave increasing function over a positive affine one, so it rises to one peak and
    falls; with c = 0 it only rises, and ``longest`` is returned."""
    best = (1, -1.0)
    for g in range(1, longest + 1):
        s = speedup(f, g, tokens_per_step(f, g, (alpha,)), draft_cost, verify)
        if s > best[1]:
            best = (g, s)
    return best


def mtp_draft_cost(f, model: dict, field: str = "speculative.method") -> float:
    """One MTP module's FLOPs share of the target's (FX965 then FX964), the draft cost of a memory-bound draft step."""
    need = ("params_active", "layers", "hidden", "vocab_size")
    missing = [k for k in need if model.get(k) is None]
    if missing:
        raise InputError(field, f"mtp needs the model's {', '.join(missing)} to size one MTP module; give draft_cost instead")
    tie = str(model.get("tie_embeddings") or "untied")
    emb = float(f("FX14", tie if tie in ("tied", "untied") else "untied", vocab_size=float(model["vocab_size"]), hidden=float(model["hidden"])))
    module = float(f("FX965", params_active=float(model["params_active"]), embedding_params=emb, layers=float(model["layers"]),
                     hidden=float(model["hidden"]), vocab_size=float(model["vocab_size"])))
    return float(f("FX964", draft_params_active=module, params_active=float(model["params_active"])))


def resolve(f, fields: dict, model: dict) -> Speculation:
    """A :class:`Speculation` from ``parse``'s fields and the model's preset values (``model``: params_active, layers,
    hidden, vocab_size, tie_embeddings, read for method=mtp)."""
    fields = _checked({k: ("/".join(map(str, v)) if k == "acceptance" and isinstance(v, tuple) else str(v)) for k, v in fields.items()})
    method, rates = fields["method"], fields["acceptance"]
    draft_len = fields.get("draft_len") or (len(rates) if len(rates) > 1 else 1 if method == "mtp" else None)
    if draft_len is None:
        raise InputError("speculative.draft_len", "is required with one acceptance rate (tokens the draft proposes per step, e.g. draft_len=3)")
    if "draft_cost" in fields:
        cost, source = fields["draft_cost"], "given"
    elif method == "mtp":
        cost = mtp_draft_cost(f, model)
        source = ("one MTP module's active parameters over the model's (FX965: an average block, the 2h x h projection and the shared "
                  "head; FX964), a floor for the measured time ratio")
    else:
        cost, source = DRAFT_COST, DRAFT_COST_SOURCE
    tokens = tokens_per_step(f, draft_len, rates)
    best, best_s = optimal_draft_len(f, rates[0], cost) if len(rates) == 1 else (0, 0.0)
    return Speculation(method=method, draft_len=draft_len, acceptance=rates, draft_cost=cost, draft_cost_source=source, tokens_per_step=tokens,
                       ideal_speedup=speedup(f, draft_len, tokens, cost), optimal_draft_len=best, optimal_speedup=best_s)
