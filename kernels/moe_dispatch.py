"""The MoE layer from router logits for any token count: the decode path or the chain, whichever is faster.

``fused_moe_from_logits(x, router_logits, w13, w2, top_k, ...)`` runs
``moe_decode.fused_moe_decode`` (routing to output in two or three launches, M <= 64) where it
measured faster on an H200, else ``softmax_topk`` + ``moe_chain.fused_moe``.
``from_logits_takes_decode`` is that choice, on its own.
"""

from __future__ import annotations

import torch

from .moe_chain import fused_moe
from .moe_decode import MAX_DECODE_TOKENS, DecodeConfig, MoeDecodeWorkspace, fused_moe_decode
from .moe_routing import check_router_logits, softmax_topk

__all__ = ["from_logits_takes_decode", "fused_moe_from_logits"]


# FP8 on the decode path, by H200 measurement (benchmarks/results/moe_layer.md): block scales only, at
# every M <= 64, where fused_moe_decode runs the grouped path up to 8 tokens (and at the counts above that
# GLUON_FP8_TOKENS lists, on Gluon GEMMs: 9-20 with Qwen3-sized experts, 10, 12, 13 with DeepSeek-sized ones)
# and the chain path above (the unfused chain's GEMMs without its routing, alignment and activation
# quantization launches; faster than softmax_topk + fused_moe at DeepSeek-V3-TP2 and Qwen3-30B-like
# M = 16 / 32 / 64 by 1-4%).
# Per-tensor / per-channel FP8 decode was not measured faster.


def from_logits_takes_decode(x: torch.Tensor, w13: torch.Tensor, fp8_kwargs: dict) -> bool:
    """Whether :func:`fused_moe_from_logits` runs this call on :func:`fused_moe_decode`."""
    if x.dim() != 2 or not 1 <= x.shape[0] <= MAX_DECODE_TOKENS:
        return False
    if not fp8_kwargs.get("use_fp8_w8a8", False):
        return True
    return fp8_kwargs.get("block_shape") is not None and w13.dim() == 3


def fused_moe_from_logits(
    x: torch.Tensor,
    router_logits: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    top_k: int,
    *,
    renormalize: bool = False,
    workspace: MoeDecodeWorkspace | None = None,
    config: DecodeConfig | None = None,
    **fp8_kwargs,
) -> torch.Tensor:
    """Any M, the faster path measured on an H200: :func:`fused_moe_decode` for bf16/fp16 up to 64
    tokens and where :func:`from_logits_takes_decode` says so for FP8, else ``softmax_topk`` + ``fused_moe``.

    ``workspace`` is the decode path's (:class:`MoeDecodeWorkspace`; none: the one kept for the layer's shape,
    ``moe_decode.cached_workspace``) and ``config`` its tables (``moe_decode.DecodeConfig``); ``fp8_kwargs`` as in
    ``fused_moe``.
    """
    if from_logits_takes_decode(x, w13, fp8_kwargs):
        return fused_moe_decode(x, router_logits, w13, w2, top_k, renormalize=renormalize, workspace=workspace,
                                config=config, **fp8_kwargs)
    check_router_logits(router_logits, top_k, "fused_moe_from_logits")
    weights, ids = softmax_topk(router_logits, top_k, renormalize)
    return fused_moe(x, w13, w2, weights, ids, **fp8_kwargs)
