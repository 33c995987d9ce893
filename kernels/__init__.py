"""jitguard.kernels: Triton kernels that compile one variant for every token count.

Entry points (each loaded on first use: ``import jitguard.kernels`` imports neither torch nor Triton):

- ``fused_moe(x, w13, w2, topk_weights, topk_ids, ...)``: the MoE layer as a chain of launches
  (alignment, FP8 quantization, two grouped GEMMs, top-k sum), any M (``moe_chain``);
- ``fused_moe_decode(x, router_logits, w13, w2, top_k, ...)``: routing to output in two or three
  launches, M <= 64 (``moe_decode``);
- ``fused_moe_from_logits(x, router_logits, w13, w2, top_k, ...)``: any M, whichever of the two
  measured faster (``moe_dispatch``);
- ``inv_rope_fp8(o, positions, cos_sin_cache, ...)``: inverse RoPE + FP8 e4m3 quantization, and
  ``fused_inv_rope_fp8_quant(...)``, the same with upstream vLLM's signature (``inv_rope``).

Modules, each importing only those before it: ``pdl`` (programmatic dependent launch),
``device_clock`` (``%globaltimer`` stamps, which the GEMMs store for probes when asked),
``moe_configs`` (tile table), ``moe_quant``, ``moe_align``, ``moe_gemm`` (the grouped GEMM kernel
and its launch), ``moe_routing``, ``moe_inputs`` (input checks of both MoE paths), ``moe_chain``,
``moe_decode_route`` (the decode layer's routing launch), ``moe_decode_gluon`` (its FP8 block-scaled and bf16
GEMMs in Gluon, Triton >= 3.5), ``moe_decode``, ``moe_dispatch``;
``inv_rope`` stands alone. Each kernel's plain-torch reference, ``<entry point>_reference``, lives
in the module of its kernel.
"""

from __future__ import annotations

import importlib
from typing import Any

_ENTRY_POINTS = {
    "fused_moe": "moe_chain",
    "fused_moe_decode": "moe_decode",
    "fused_moe_from_logits": "moe_dispatch",
    "inv_rope_fp8": "inv_rope",
    "fused_inv_rope_fp8_quant": "inv_rope",
}

__all__ = list(_ENTRY_POINTS)


def __getattr__(name: str) -> Any:
    module = _ENTRY_POINTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
