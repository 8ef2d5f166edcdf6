"""Device generations, the groups calibrated efficiencies are fitted for.

A device with no measurement of its own takes its generation's fit, and says so; a generation with no
measurement takes the fit over every device (``all``), and says so. Nothing falls back to 100 % of peak.
The generation of each device is its vendor's architecture name, read in the device record's own sources
(NVIDIA Ampere/Hopper/Blackwell/Ada, AMD CDNA 3/4, Google TPU, AWS Trainium, Huawei Da Vinci, Intel Gaudi).
"""

from __future__ import annotations

GENERATION = {
    "v100-sxm2-32gb": "volta",
    "a100-pcie-80gb": "ampere", "a100-sxm-40gb": "ampere", "a100-sxm-80gb": "ampere",
    "h100-sxm": "hopper", "h100-pcie": "hopper", "h100-nvl": "hopper", "h200": "hopper", "h200-nvl": "hopper", "h20": "hopper", "h20-141gb": "hopper",
    "h800-sxm": "hopper", "gh200-hbm3e": "hopper",
    "b200": "blackwell", "b300": "blackwell", "gb200": "blackwell", "gb300": "blackwell", "rtx-5090": "blackwell",
    "l4": "ada", "l40s": "ada", "rtx-4090": "ada",
    "mi250x": "cdna2", "mi300x": "cdna3", "mi325x": "cdna3", "mi350x": "cdna4", "mi355x": "cdna4",
    "tpu-v4": "tpu", "tpu-v5e": "tpu", "tpu-v5p": "tpu", "tpu-v6e": "tpu", "tpu7x": "tpu",
    "trainium2": "trainium", "trainium3": "trainium",
    "ascend-910b": "davinci", "ascend-910c": "davinci", "ascend-950dt": "davinci",
    "gaudi2": "gaudi", "gaudi3": "gaudi",
}


class Unmapped(Exception):
    """A measurement the engine cannot evaluate as stated (the reason is reported, the row is not scored)."""


def generation(device: str) -> str:
    return GENERATION.get(device, "all")


# GPUs in one NVLink domain where it is not the 8 of an HGX board: NVIDIA GB200 NVL72 and GB300 NVL72 join 72 Blackwell
# GPUs in one NVLink switch domain (NVIDIA GB200 NVL72 and GB300 NVL72 product pages: "72 Blackwell GPUs ... a single
# NVLink domain")
NVLINK_DOMAIN = {"gb200": 72, "gb300": 72}


def nvlink_domain(device: str) -> int:
    return NVLINK_DOMAIN.get(device, 8)


LOW_PRECISION = ("fp8", "mxfp8", "nvfp4", "mxfp4", "fp4", "int8")


def precision_class(precision: str | None) -> str:
    """'low-precision' for the block-scaled and 8-bit matrix paths (whose end-to-end gain is below their peak's), else '16-bit'."""
    return "low-precision" if (precision or "bf16").lower() in LOW_PRECISION else "16-bit"
