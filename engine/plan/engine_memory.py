"""The K/V budget of one GPU as each serving engine reserves it (issue 27, section 4).

FX72's subtraction (the driver-reported total, the engine's cap, the weights, the engine's own activations and
buffers), with each engine's documented default in place of one conservative rule (F7's nominal x 0.9 x 0.88)
applied to every engine:

  vllm          budget = total x gpu_memory_utilization (0.9) - weights - overhead (peak activation + non-torch)
  sglang        budget = total x mem_fraction_static - weights; mem_fraction_static = (total - reserved) / total,
                reserved = (9.5 + TP x PP / 2) GiB below 90 GiB of total, (12 + TP x PP / 2) GiB below 160 GiB,
                32 GiB above (activations, CUDA graphs and the chunked-prefill buffers live outside the static pool)
  tensorrt-llm  budget = free_gpu_memory_fraction (0.9) x (total - weights - overhead)

An engine this module does not know takes vLLM's rule (FX72's own), and says so. The budget holds the K/V
pages and, for recurrent layers, their per-request state.
"""

from __future__ import annotations

from engine.core.record import dataclass

GIB = 2**30
# FX72's default engine overhead: vLLM's profiled peak activation + non-torch memory at the default
# max_num_batched_tokens, median 5.2 GiB over the llm-d logs FX72 cites, rounded to 5 GiB
OVERHEAD = 5 * GIB

SOURCES = {
    "vllm": "vLLM engine argument gpu_memory_utilization (default 0.9) and its memory profiling (FX72: total x 0.9 - weights - "
            "peak activation - non-torch memory)",
    "sglang": "SGLang server_args (sgl-project/sglang python/sglang/srt/server_args.py, 2025): mem_fraction_static = (total - "
              "reserved) / total with reserved (9.5 + TP x PP / 2) GiB below 90 GiB, (12 + TP x PP / 2) GiB below 160 GiB, 32 GiB "
              "above; the static pool holds weights and K/V",
    "tensorrt-llm": "TensorRT-LLM KvCacheConfig.free_gpu_memory_fraction (default 0.9 of the memory free after the engine's "
                    "weights and activations are allocated; trtllm-bench --kv_cache_free_gpu_mem_fraction 0.90)",
}


@dataclass(frozen=True, slots=True)
class Budget:
    bytes: float  # K/V (and recurrent state) bytes one GPU may hold
    total: float  # the driver-reported total it was taken from
    total_basis: str  # 'measured' (a cited driver figure) or 'derived' (engine.domain.usable_memory's rule)
    rule: str  # which engine's rule


def driver_total(values: dict) -> tuple[float, str]:
    """The total the runtime reports for one GPU and how it is known: the device preset's ``gpu_memory_total``
    (value, source text), measured where the record cites it, else derived (engine.domain.usable_memory)."""
    from engine.core.errors import InputError

    if "gpu_memory_total" not in values:
        raise InputError("gpu_memory_total", "the device record has no driver-reported total and none can be derived (GDDR or unified memory)")
    value, text = values["gpu_memory_total"]
    return float(value), "derived" if "derived" in text else "measured"


def _sglang_reserved(total: float, world: int) -> float:
    gib = total / GIB
    if gib < 90:
        return (9.5 + world / 2) * GIB
    if gib < 160:
        return (12 + world / 2) * GIB
    return 32 * GIB


def kv_budget(engine: str | None, total: float, weights_per_gpu: float, world: int = 1, overhead: float = OVERHEAD) -> tuple[float, str]:
    """(bytes, rule) one GPU of an instance of ``world`` GPUs gives the K/V cache under ``engine``'s default memory rule."""
    name = (engine or "").lower()
    if name == "sglang":
        return total - _sglang_reserved(total, world) - weights_per_gpu, "sglang"
    if name in ("tensorrt-llm", "trtllm", "tensorrt_llm"):
        return 0.9 * (total - weights_per_gpu - overhead), "tensorrt-llm"
    return 0.9 * total - weights_per_gpu - overhead, "vllm" if name == "vllm" else f"vllm (FX72's rule; no rule for engine {engine!r})" if engine else "vllm (FX72's rule; engine unstated)"


def budget(values: dict, engine: str | None, weights_per_gpu: float, world: int = 1) -> Budget:
    """``values``: a device preset (symbol -> (value, source text), engine.domain.presets)."""
    total, basis = driver_total(values)
    b, rule = kv_budget(engine, total, weights_per_gpu, world)
    return Budget(bytes=b, total=total, total_basis=basis, rule=rule)


def batch_limits(engine: str | None, version: str | None, total: float, device: str) -> tuple[int, int | None]:
    """The engine's default caps on one step: (prompt tokens a step carries, requests running at once; None for no cap
    beyond its K/V pages), as the OpenAI-compatible server of each release sets them when the launch names none.

    vLLM's V1 engine (the default from 0.8.0) on a GPU of 70 GiB or more that is not an A100: max_num_batched_tokens 8192,
    max_num_seqs 1024; on any other GPU 2048 and 256 (vllm/engine/arg_utils.py, get_batch_defaults; vllm-project/vllm
    PR 16158, 2025-04, took max_num_seqs back to V0's 256 everywhere but the H100/H200 class). vLLM's V0 engine (before
    0.8): max_num_seqs 256. SGLang and TensorRT-LLM: chunked_prefill_size / max_num_tokens 8192 on these GPUs, running
    requests bounded by their K/V pool."""
    import re

    name = (engine or "").lower()
    if name == "vllm":
        v = re.match(r"v?(\d+)\.(\d+)", (version or "").strip())
        if v and (int(v.group(1)), int(v.group(2))) < (0, 8):
            return 8192, 256
        if total >= 70 * GIB and "a100" not in device.lower():
            return 8192, 1024
        return 2048, 256
    return 8192, None
