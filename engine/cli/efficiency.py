"""The one rule for an efficiency nobody gave (issue 28): the calibrated value for the device's generation.

Every command that turns a peak into a time needs a share of it: ``calc serving-fleet``, ``calc inference-capacity``, ``calc energy-per-token``
and ``calc speculative-decoding`` (``mfu``, ``mbu``), ``calc training-duration`` (``mfu``), ``plan serve`` (``--mfu``,
``--mbu``) and ``plan`` (``--compute-efficiency``). When the user gives none, each takes the value
``aiinfra validate`` fitted on the published measurements (knowledge/calibration/fitted.json, read through
engine.measure.fitted and engine.measure.generations) for the device's generation, or the fit over every generation
('shared') where the generation has none, and says which value, from where, and whether it fell back:

  serving   mfu <- serve e_prefill (the prefill matrix efficiency), mbu <- serve e_hbm (the weight-streaming share)
  training  mfu / compute efficiency <- train e_train for the generation and precision class (16-bit, low-precision)
  collective  eff_bandwidth <- the device's link per direction x collective e_link for the link's fabric (below)

A training run on a device whose record carries its own measured MFU band at that precision keeps that band (a
measurement of the same quantity on that device). Nothing is 100 % of peak unless the user asks (``--mfu 1``).
The module sits in the CLI layer because the planners and presets (engine.plan, engine.domain) sit below
engine.measure; they take the value as an argument.
"""

from __future__ import annotations

from engine.core.errors import InputError
from engine.core.record import dataclass

SERVE = {"mfu": "e_prefill", "mbu": "e_hbm"}
TRAIN = {"mfu": "e_train"}
SERVE_CALCULATORS = frozenset({"calc:serving-fleet", "calc:inference-capacity", "calc:speculative-decoding", "calc:energy-per-token"})
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


def calc_presets(root, calculator: str, device: str | None, precision: str, presets: dict, given=()) -> dict:
    """mfu / mbu (eff_bandwidth) presets for a calculator under the rule above (``presets``: what the model and device
    filled; ``given``: the symbols the user set). Without
    a device there is no generation to take: the calculator keeps its formulas' own defaults, as the site's forms do,
    so a run without --device prints the same numbers as the calculator page."""
    out = {}
    if not device:
        return out
    if calculator in COLLECTIVE_CALCULATORS:
        if "eff_bandwidth" in presets or "eff_bandwidth" in given:  # a measured busBw on the device record stays
            return out
        link = collective_bandwidth(root, device)
        if isinstance(link, str):  # the record's limit, said as such (never a request for a value it should hold)
            raise InputError("--device", f"{link}, so {calculator} has no eff_bandwidth for it: give --set eff_bandwidth=B/s "
                                         "(a measured busBw of the group)")
        if link is not None:
            out["eff_bandwidth"] = (link.value, "preset " + link.note())
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
    if calculator in STEP_CALCULATORS:
        fixed = step_overhead(root, presets)
        if fixed is not None:
            out["step_overhead_time"] = fixed
    return out


# the calculators whose TPOT takes FX78's step_overhead_time
STEP_CALCULATORS = frozenset({"calc:serving-fleet", "calc:inference-capacity", "calc:energy-per-token"})


def step_overhead(root, presets: dict) -> tuple[float, str] | None:
    """step_overhead_time preset: the calibrated step's fixed cost for the model's layers (engine.plan.step_model:
    overhead + layers x overhead_layer + MoE layers x overhead_moe, the fit over every engine, as plan serve takes it
    without --engine); None without a serving calibration or the model's layers."""
    def value(key):
        v = presets.get(key)
        return v[0] if isinstance(v, tuple) else v

    layers = value("layers")
    got = serve_step(root, None, None)
    if got is None or not isinstance(layers, int | float) or layers < 1:
        return None
    moe = int(layers) - int(value("n_dense_layers") or 0) if value("model_arch") == "moe" else 0
    v = got.values
    total = v["overhead"] + layers * v["overhead_layer"] + moe * v["overhead_moe"]
    return (total, f"preset: the calibrated fixed cost of a step, {v['overhead'] * 1e6:.0f} us + {int(layers)} layers x {v['overhead_layer'] * 1e6:.1f} us"
                   + (f" + {moe} MoE layers x {v['overhead_moe'] * 1e3:.3f} ms" if moe else "")
                   + f" (the fit over every engine; knowledge/calibration/fitted.json, aiinfra validate; plan serve --engine fits one engine); "
                   f"the engine's host time per sequence ({v['overhead_seq'] * 1e6:.2f} us x the batch) is not included; "
                   "--set step_overhead_time=0 for the bare roofline")


@dataclass(frozen=True, slots=True)
class ServeStep:
    """The serving calibration's step constants for a device and an engine (engine.plan.step_model reads them)."""
    values: dict  # constant -> value
    generation: str  # the device's generation, or 'shared' where it has no fit of its own
    engine: str  # the engine group the overheads came from ('shared': the fit over every engine)

    def note(self, device: str | None) -> str:
        v = self.values
        return (f"step: the calibrated step of aiinfra validate (engine.plan.step_model; knowledge/calibration/fitted.json) for {device} "
                f"(generation {self.generation}) and {'engine ' + self.engine if self.engine != 'shared' else 'no --engine (the fit over every engine)'}: "
                f"matrix products max(FLOPs at e_decode {v['e_decode']:.3f} of the peak, weights at e_hbm {v['e_hbm']:.3f} of the HBM bandwidth) "
                f"+ attention max(FLOPs at e_decode, K/V reads at e_kv {v['e_kv']:.3f}) + TP all-reduces (FX50, {v['ar_latency'] * 1e6:.2f} us per "
                f"ring step, links at e_link {v['e_link']:.3f}) + EP All2All + a fixed {v['overhead'] * 1e6:.0f} us + {v['overhead_layer'] * 1e6:.0f} us "
                f"per layer + {v['overhead_moe'] * 1e3:.2f} ms per MoE layer + {v['overhead_seq'] * 1e6:.2f} us per sequence; prefill at e_prefill "
                f"{v['e_prefill']:.3f}; give --mfu, --mbu or --allreduce-latency (or --step-model roofline) for the book's FX75 roofline instead")


def serve_step(root, device: str | None, engine: str | None) -> ServeStep | None:
    """The calibrated step constants (engine.plan.step_model.PARAMETERS) for ``device``'s generation and ``engine``
    (vllm, sglang, tensorrt-llm; None: the fit over every engine), each constant from its own group as validate fits it:
    efficiencies by generation, overheads by engine (an unversioned engine takes its own group, an unknown one the
    shared value). None without a serving calibration."""
    from engine.measure.fitted import calibration
    from engine.measure.generations import generation
    from engine.plan.step_model import PARAMETERS

    fitted = ((calibration(root) or {}).get("serve") or {}).get("parameters")
    if not fitted or any(p not in fitted for p in PARAMETERS):
        return None
    gen = generation(device) if device else "shared"
    name = (engine or "unstated").strip().lower()
    # each constant is fitted by one grouping (efficiencies by generation, overheads by engine, the rest shared), so its
    # table holds the generation's key or the engine's or neither: the first present, else the fit over all (as
    # engine.measure.calibrate.values_for takes an unversioned engine or a generation; no NumPy on this path)
    values = {p: float(next((fitted[p][k] for k in (gen, name) if k in fitted[p]), fitted[p]["shared"])) for p in PARAMETERS}
    return ServeStep(values, gen if gen in fitted["e_decode"] else "shared", name if name in fitted["overhead_layer"] else "shared")


# ------------------------------------------------------------------ calc collective's eff_bandwidth
#
# eff_bandwidth is the per-rank, one-direction bandwidth of the slowest link the group spans, the busBw nccl-tests
# reports (knowledge/calculators/collective.yaml, FX50). aiinfra validate times a collective as S x factor / (link x
# e_link) at the protocol that uses the whole link (engine.measure.kernels.collective_times), so busBw = S x factor /
# time = link x e_link: the product is already a bus bandwidth per direction, with no algorithm-bandwidth factor to
# take out. The link is the record's per-direction figure: the scale-up interconnect where there is one (NVLink on
# NVIDIA devices, Infinity Fabric xGMI on AMD Instinct), the PCIe link otherwise (the interconnect itself where the
# record names PCIe as it, else host_link), as validate maps its rows; any other fabric (TPU ICI, Gaudi's RoCE,
# Huawei HCCS) has no fit of its own and takes the fit over every fabric ('shared').
COLLECTIVE_CALCULATORS = frozenset({"calc:collective"})
FABRIC_BY_VENDOR = {"NVIDIA": "nvlink", "AMD": "xgmi"}


@dataclass(frozen=True, slots=True)
class LinkBandwidth:
    device: str
    link: str  # the record's name of the link
    stated: str  # its per-direction figure as the record writes it
    nominal: float  # B/s per direction
    fabric: str  # nvlink | xgmi | pcie, or the link's name for a fabric without a fit
    group: str  # the fitted group used: the fabric, or 'shared'
    e_link: float

    @property
    def value(self) -> float:
        return self.nominal * self.e_link

    def note(self) -> str:
        if self.group == "shared":
            why = f"{self.link} is a fabric without a fit of its own, so the fit over every fabric ('shared')"
        elif self.fabric == "pcie":
            why = ("PCIe, as validate maps GPUs without a scale-up link: their peer traffic through host memory, as on GeForce "
                   "cards; a card with PCIe peer-to-peer can run faster")
        else:
            why = f"the fabric of {self.device}'s {self.link}"
        return (f"eff_bandwidth {self.value / 1e9:.1f} GB/s = {self.link} {self.stated} per direction x calibrated collective e_link "
                f"{self.e_link:.3f} for {self.group} ({why}; knowledge/calibration/fitted.json, aiinfra validate on nccl-tests/RCCL "
                "tables): the large-message bus bandwidth the fit predicts between the devices that link joins, not a measurement "
                "on this device; a group larger than that crosses a slower link; give eff_bandwidth (a measured busBw of the same "
                "size and group) to override")


def device_link(device) -> tuple[str, dict] | None:
    """(fabric, link block) of the link a collective between ``device``'s peers runs on, by the rule above; None
    where the record states no per-direction figure for any link to another device."""
    ic, host = device.interconnect or {}, device.record.get("host_link") or {}
    if ic.get("per_direction"):
        if ic.get("name", "").startswith("PCIe"):  # L4, L40S: the record's interconnect is the card's PCIe link
            return "pcie", ic
        return FABRIC_BY_VENDOR.get(device.vendor, ic.get("name", "interconnect")), ic
    if not ic and host.get("per_direction"):  # no scale-up link: peers exchange over PCIe
        return "pcie", host
    return None


def collective_bandwidth(root, device: str) -> LinkBandwidth | str | None:
    """eff_bandwidth for ``device`` by the rule above; a sentence naming what the record lacks where it states no
    per-direction link (its limit, said as such); None without a collective calibration."""
    from engine.domain import hardware
    from engine.kb.folders import find_one
    from engine.measure.fitted import calibration

    fitted = ((calibration(root) or {}).get("collective") or {}).get("parameters", {}).get("e_link")
    if not fitted or "shared" not in fitted:
        return None
    dev = find_one(root, "hardware", lambda v: hardware.find(v, device, "--device"), [])
    found = device_link(dev)
    if found is None:
        return link_gap(dev)
    fabric, link = found
    group = fabric if fabric in fitted else "shared"
    return LinkBandwidth(dev.short_id, link.get("name", "interconnect"), str(link["per_direction"]),
                         hardware.quantity(link["per_direction"], "B/s"), fabric, group, float(fitted[group]))


def link_gap(dev) -> str:
    """What ``dev``'s record lacks for eff_bandwidth: no link at all, or one stated without a direction."""
    for block in (dev.interconnect or {}, dev.record.get("host_link") or {}):
        if block.get("unspecified_direction"):
            return (f"{dev.short_id} has no per-direction link bandwidth: its record states {block.get('name', 'its link')} at "
                    f"{block['unspecified_direction']}, a figure its vendor does not give a direction for")
    return f"{dev.short_id} has no link to another device on record (no interconnect or host link bandwidth)"
