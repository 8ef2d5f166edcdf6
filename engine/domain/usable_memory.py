"""The total memory a device's runtime reports: measured where a record cites it, else derived by one rule.

Serving engines budget from the total the CUDA or HIP runtime reports (``torch.cuda.mem_get_info``,
``cudaMemGetInfo``, deviceQuery's "Total amount of global memory"; FX72's ``gpu_memory_total``), not from the
datasheet's nominal capacity. ``memory.driver_total`` in a hardware record is that figure as a cited log or
tool printed it: *measured*. A record without one gets a *derived* figure from the rule below, and every
output that uses it says "derived" (the preset's source text, ``hardware show``, the site's hardware page).

The rule, for HBM devices: the datasheet's "GB" of HBM are binary gigabytes (HBM stacks are built of
binary-sized dies: five 16 GiB HBM3 stacks make the 80 GB H100), less about 1 % that the driver and firmware
withhold, so

    derived total = the nominal number read as GiB x HBM_SHARE        (H200: 141 GB -> 141 x 0.99 = 139.59 GiB)

HBM_SHARE is fitted on the HBM records with a measured total, measured / nominal-as-GiB:

    H100 SXM    79.18 / 80     = 0.98975   (vLLM start-up log)
    V100 16GB   15.766 / 16    = 0.98535   (deviceQuery 16,928,342,016 B)
    A100 40GB   39.494 / 40    = 0.98734   (deviceQuery 40441 MiB)
    A100 80GB   79.256 / 80    = 0.99070   (deviceQuery 85,100,068,864 B)
    H100 NVL    93.003 / 94    = 0.98940   (deviceQuery 99,861,594,112 B)
    H200        139.718 / 141  = 0.99091   (deviceQuery 150,021,734,400 B)
    B200        178.35 / 180   = 0.99083   (PyTorch: total capacity 178.35 GiB)
    GH200 96GB  94.5 / 96      = 0.98438   (deviceQuery 101,468,602,368 B)
    MI300X      191.984 / 192  = 0.99992   (hipDeviceQuery 196,592 MiB; rocm-smi 206,141,652,992 B)

median 0.98975, rounded to 0.99: within 0.6 % of every NVIDIA figure (0.3 % of the seven Hopper, Ampere 80 GB and
Blackwell ones; GH200 96GB and V100 16GB withhold 0.5-0.6 % more) and 1.0 % below MI300X's (the one
device whose runtime withholds nothing). ``tests/domain/test_usable_memory.py`` fits it again from the shipped
records. GDDR is outside the rule: with ECC on, the driver keeps a further 1/16 (L4 0.915, L40S 0.928 of the
nominal as GiB, RTX 4090 with ECC off 0.985), so a GDDR or unified-memory record without a measured total has
none, and a calculator asks for ``gpu_memory_total``.
"""

from __future__ import annotations

from engine.core.errors import UnitError
from engine.core.record import dataclass
from engine.core.units import parse_quantity


def quantity(text: str, unit: str) -> float:
    """A record's quantity string in ``unit`` (engine.domain.hardware's reader; kept here so hardware may import this module)."""
    q = parse_quantity(text, unit)
    if q.is_range:
        raise UnitError(text, "is a range; a datasheet value is one number")
    return q.value

GIB = 2**30
HBM_SHARE = 0.99
RULE = ("derived, not measured: the nominal HBM capacity read in binary units (141 GB -> 141 GiB; HBM stacks hold "
        "binary gigabytes) x 0.99, the median share the driver reports over the 9 HBM devices with a measured total "
        "(within 0.6% of each NVIDIA figure, 1.0% of MI300X's; engine/domain/usable_memory.py)")
_BINARY = {"GB": 1, "GiB": 1, "TB": 1024, "TiB": 1024}  # the nominal number read in GiB


@dataclass(frozen=True, slots=True)
class DriverTotal:
    """One device's usable total: ``basis`` is 'measured' (a cited log) or 'derived' (:data:`RULE`)."""

    bytes: float
    text: str  # as recorded ("79.18GiB") or as derived ("139.59GiB")
    basis: str
    source: str  # the citation, or the rule

    @property
    def measured(self) -> bool:
        return self.basis == "measured"

    @property
    def label(self) -> str:
        return "driver-reported" if self.measured else "derived"


def nominal_gib(capacity: str) -> float:
    """The datasheet capacity's number read as GiB (``80GB`` -> 80, ``32GiB`` -> 32, ``1.5TB`` -> 1536)."""
    for unit in sorted(_BINARY, key=len, reverse=True):
        if capacity.endswith(unit):
            return float(capacity[: -len(unit)]) * _BINARY[unit]
    raise ValueError(f"{capacity!r} is not a capacity in GB, GiB, TB or TiB")


def derivable(memory: dict) -> bool:
    """The rule covers HBM (every type the records write as HBM, HBM2e, HBM3, HBM3e ...)."""
    return memory["type"].upper().startswith("HBM")


def derive(memory: dict) -> DriverTotal | None:
    """The derived total of a record's ``memory`` block, or None where the rule does not cover its memory type."""
    if not derivable(memory):
        return None
    gib = nominal_gib(memory["capacity"]) * HBM_SHARE
    return DriverTotal(gib * GIB, f"{gib:.2f}GiB", "derived", RULE)


def of(record: dict) -> DriverTotal | None:
    """The measured total where the record cites one, else the derived one (None: not HBM and not measured)."""
    memory = record["memory"]
    driver = memory.get("driver_total")
    if driver:
        return DriverTotal(quantity(driver["value"], "B"), driver["value"], "measured", driver["source"])
    return derive(memory)


def problems(record: dict) -> list[tuple[str, str]]:
    """A measured total above the nominal capacity read in binary units is a misread figure (GB for GiB, a package total)."""
    memory = record["memory"]
    driver = memory.get("driver_total")
    if not driver:
        return []
    ceiling = nominal_gib(memory["capacity"]) * GIB
    if quantity(driver["value"], "B") > ceiling:
        return [("memory.driver_total.value", f"{driver['value']} is more than the nominal {memory['capacity']} read in binary units "
                                              f"({ceiling / GIB:g} GiB); a runtime reports less than the stacks hold")]
    return []
