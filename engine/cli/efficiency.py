"""The one rule for an efficiency nobody gave (issue 28): the calibrated value for the device's generation.

Every command that turns a peak into a time needs a share of it: ``calc serving-fleet``, ``calc inference-capacity``
and ``calc speculative-decoding`` (``mfu``, ``mbu``), ``calc training-duration`` (``mfu``), ``plan serve`` (``--mfu``,
``--mbu``) and ``plan`` (``--compute-efficiency``). When the user gives none, each takes the value
``aiinfra validate`` fitted on the published measurements (knowledge/calibration/fitted.json, read through
engine.measure.fitted and engine.measure.generations) for the device's generation, or the fit over every generation
('shared') where the generation has none, and says which value, from where, and whether it fell back:

  serving   mfu <- serve e_prefill (the prefill matrix efficiency), mbu <- serve e_hbm (the weight-streaming share)
  training  mfu / compute efficiency <- train e_train for the generation and precision class (16-bit, low-precision)

A training run on a device whose record carries its own measured MFU band at that precision keeps that band (a
measurement of the same quantity on that device). Nothing is 100 % of peak unless the user asks (``--mfu 1``).
The module sits in the CLI layer because the planners and presets (engine.plan, engine.domain) sit below
engine.measure; they take the value as an argument.
"""

from __future__ import annotations

from engine.core.record import dataclass

SERVE = {"mfu": "e_prefill", "mbu": "e_hbm"}
TRAIN = {"mfu": "e_train"}
SERVE_CALCULATORS = frozenset({"calc:serving-fleet", "calc:inference-capacity", "calc:speculative-decoding"})
TRAIN_CALCULATORS = frozenset({"calc:training-duration"})
_WHAT = {"e_prefill": "prefill matrix efficiency", "e_hbm": "HBM share of the decode weight reads", "e_train": "training matrix efficiency",
         "e_dequant": "weight-only kernels' share of the matrix rate"}


@dataclass(frozen=True, slots=True)
class Efficiency:
    value: float
    kind: str  # serve | train
    parameter: str  # e_prefill | e_hbm | e_train
    group: str  # the fitted group used: a generation ('hopper', 'hopper:16-bit') or 'shared'
    fallback: bool  # True when the device's generation has no fit of its own

    def note(self, symbol: str, device: str | None) -> str:
        why = (f"{device or 'no device'}: generation {self.group.split(':')[0] if not self.fallback else 'without a fit of its own'}"
               + (", so the fit over every generation ('shared')" if self.fallback else ""))
        return (f"{symbol} {self.value:.3f}: calibrated {self.kind} {self.parameter} ({_WHAT[self.parameter]}) for {self.group} ({why}; "
                f"knowledge/calibration/fitted.json, aiinfra validate); not a measurement of this run, give {symbol} to override")


def calibrated(root, kind: str, parameter: str, device: str | None, precision: str | None = None) -> Efficiency | None:
    """The fitted ``parameter`` of ``kind`` for ``device``'s generation ('shared' where it has none); None without a calibration."""
    from engine.measure.fitted import calibration
    from engine.measure.generations import generation, precision_class

    by = ((calibration(root) or {}).get(kind) or {}).get("parameters", {}).get(parameter)
    if not by or "shared" not in by:
        return None
    gen = generation(device) if device else "all"
    key = f"{gen}:{precision_class(precision)}" if kind == "train" else gen
    if key in by:
        return Efficiency(float(by[key]), kind, parameter, key, False)
    return Efficiency(float(by["shared"]), kind, parameter, "shared", True)


def calc_presets(root, calculator: str, device: str | None, precision: str, presets: dict) -> dict:
    """mfu / mbu presets for a calculator under the rule above (``presets``: what the model and device filled). Without
    a device there is no generation to take: the calculator keeps its formulas' own defaults, as the site's forms do,
    so a run without --device prints the same numbers as the calculator page."""
    out = {}
    if not device:
        return out
    if calculator in SERVE_CALCULATORS:
        wanted = SERVE
    elif calculator in TRAIN_CALCULATORS and "mfu" not in presets:  # a measured band on the device record stays
        wanted = TRAIN
    else:
        return out
    kind = "serve" if wanted is SERVE else "train"
    for symbol, parameter in wanted.items():
        e = calibrated(root, kind, parameter, device, precision)
        if e is not None:
            out[symbol] = (e.value, "preset " + e.note(symbol, device))
    return out
