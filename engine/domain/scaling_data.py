"""Scaling-law records (knowledge/scaling_laws/*.yaml): published fits of the Chinchilla
parametric loss (FX430) and the published (N, C or D, loss) points they were fitted to.

- ``law_of(record)``: the record's published constants as a :class:`Law`;
- ``points_of(record)``: its points as :class:`Points`, tokens from C = 6·N·D where the rows
  give FLOPs (F1 solved for D, as the source does), the source's exclusion applied;
- ``problems(k)``: the rules JSON Schema cannot state, as Problems;
- ``find(table, text)``: one record by id, ``besiroglu2024`` or ``sl:besiroglu2024``.
"""

from __future__ import annotations

from engine.core.errors import InputError, Problem
from engine.core.record import dataclass

# FX430's symbols, in the order a Law holds them
CONSTANTS = ("loss_irreducible", "loss_param_coeff", "loss_data_coeff", "loss_param_exponent", "loss_data_exponent")
LAW_FORMULA = "FX430"
FLOP_PER_PARAM_TOKEN = "flop_per_param_token"  # F1's symbol: the 6 of C = 6·N·D


@dataclass(frozen=True, slots=True)
class Law:
    """The five constants of L(N, D) = E + A/N^alpha + B/D^beta and where they come from."""

    loss_irreducible: float
    loss_param_coeff: float
    loss_data_coeff: float
    loss_param_exponent: float
    loss_data_exponent: float
    source: str

    def given(self) -> dict[str, float]:
        """The constants under FX430's symbol names (inputs of FX430-FX437)."""
        return {name: getattr(self, name) for name in CONSTANTS}


@dataclass(frozen=True, slots=True)
class Points:
    """Published runs: parameters, training tokens, training FLOPs and final loss, one list each,
    in the record's order, the excluded rows left out (``excluded`` says how many)."""

    params: tuple
    tokens: tuple
    flops: tuple
    loss: tuple
    excluded: int
    source: str

    def __len__(self) -> int:
        return len(self.params)


def law_of(record: dict) -> Law:
    fit = record.get("fit")
    if fit is None:
        raise InputError("law", f"{record['id']} publishes points but no fitted constants (fit them with: aiinfra scaling fit)")
    return Law(*(float(fit[name]) for name in CONSTANTS), source=fit["source"])


def points_of(record: dict, flop_per_param_token: float) -> Points:
    """The record's rows as columns; tokens = C / (flop_per_param_token · N) where the rows give C."""
    data = record.get("points")
    if data is None:
        raise InputError("law", f"{record['id']} publishes no points to fit")
    at = {name: i for i, name in enumerate(data["columns"])}
    rows = [tuple(float(v) for v in row) for row in data["rows"]]
    rows = _kept(rows, at["loss"], data.get("exclude"))
    params = tuple(r[at["params"]] for r in rows)
    if "train_tokens" in at:
        tokens = tuple(r[at["train_tokens"]] for r in rows)
        flops = tuple(flop_per_param_token * n * d for n, d in zip(params, tokens, strict=True))
    else:
        flops = tuple(r[at["train_flops"]] for r in rows)
        tokens = tuple(c / (flop_per_param_token * n) for n, c in zip(params, flops, strict=True))
    return Points(params, tokens, flops, tuple(r[at["loss"]] for r in rows), len(data["rows"]) - len(rows), data["source"])


def _kept(rows: list[tuple], loss_at: int, exclude: dict | None) -> list[tuple]:
    """Rows left after the source's exclusion: ``highest_loss`` drops every row whose loss is not
    below the count-th highest loss (the source's rule; ties at that loss go too)."""
    if not exclude:
        return rows
    threshold = sorted(r[loss_at] for r in rows)[-exclude["count"]]
    return [r for r in rows if r[loss_at] < threshold]


def record_problems(record: dict, formula_ids) -> list[tuple[str, str]]:
    """(field path, sentence) for each rule one record breaks."""
    out: list[tuple[str, str]] = []
    if formula_ids and record["law"] not in formula_ids:
        out.append(("law", f"refers to {record['law']}, which is not a formula of this root"))
    data = record.get("points")
    if data is None:
        if "fit" not in record:
            out.append(("fit", "the record has neither fit nor points (expected published constants, points, or both)"))
        return out
    columns = data["columns"]
    if "params" not in columns or "loss" not in columns:
        out.append(("points.columns", f"{columns} lacks params or loss (expected params, loss and train_tokens or train_flops)"))
    if "train_tokens" in columns and "train_flops" in columns:
        out.append(("points.columns", "gives both train_tokens and train_flops (expected one of them with params and loss)"))
    exclude = data.get("exclude")
    if exclude and "loss" in columns:
        kept = _kept([tuple(r) for r in data["rows"]], columns.index("loss"), exclude)
        if len(kept) < 6:
            out.append(("points.exclude.count", f"leaves {len(kept)} of {len(data['rows'])} points (a fit of five constants needs at least 6)"))
    return out


def problems(k) -> list[Problem]:
    formula_ids = set(getattr(getattr(k, "formulas", None), "by_id", {}) or {})
    out: list[Problem] = []
    for ident, record in sorted(getattr(k, "scaling_laws", {}).items()):
        place = k.places.get(ident, "")
        out += [Problem(place, ident, path, message) for path, message in record_problems(record, formula_ids)]
    return sorted(out)


def find(table: dict, text: str, option: str = "law") -> dict:
    """The record named ``text`` (``besiroglu2024`` or ``sl:besiroglu2024``); InputError naming the known ones."""
    from engine.core.suggest import known

    name = text[3:] if text.startswith("sl:") else text
    if ":" in name or not name:
        raise InputError(option, f"expected a scaling-law id such as besiroglu2024 or sl:besiroglu2024, got {text!r}")
    if f"sl:{name}" not in table:
        raise InputError(option, f"no scaling law {text!r} ({known(name, [i.split(':', 1)[1] for i in sorted(table)])})")
    return table[f"sl:{name}"]
