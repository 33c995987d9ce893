"""Input checks shared by both MoE paths (``moe_chain.fused_moe`` and ``moe_decode.fused_moe_decode``).

Shapes and dtypes of x and the expert weights, the FP8 scheme named by ``use_fp8_w8a8`` /
``per_channel_quant`` / ``block_shape``, and the weight scales' layout; every error is one line
naming the argument at fault.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .moe_gemm import QUANT_BLOCK, QUANT_CHANNEL, QUANT_NONE, QUANT_TENSOR
from .moe_quant import FP8_DTYPE

__all__ = ["ACT_DTYPES", "MoeLayerShape", "check_moe_inputs", "normalize_w_scale", "quant_scheme"]

ACT_DTYPES = (torch.bfloat16, torch.float16)


@dataclass(frozen=True)
class MoeLayerShape:
    """Validated sizes and quantization scheme of one fused-MoE call."""

    num_tokens: int
    hidden: int
    intermediate: int
    num_experts: int
    top_k: int
    quant: int
    scale_block: tuple[int, int]

    @property
    def fp8(self) -> bool:
        return self.quant != QUANT_NONE

    @property
    def precision(self) -> str:
        """The tile table's precision class: "bf16", "fp8" or "fp8-block"."""
        return {QUANT_NONE: "bf16", QUANT_BLOCK: "fp8-block"}.get(self.quant, "fp8")


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def quant_scheme(use_fp8_w8a8: bool, per_channel_quant: bool, block_shape) -> tuple[int, tuple[int, int]]:
    """(QUANT_* of moe_gemm, scale block (block_n, block_k)) of a call's FP8 arguments; ValueError if they conflict."""
    if not use_fp8_w8a8:
        if per_channel_quant or block_shape is not None:
            raise ValueError("fused_moe: per_channel_quant/block_shape need use_fp8_w8a8=True")
        return QUANT_NONE, (128, 128)
    if block_shape is not None:
        if per_channel_quant:
            raise ValueError("fused_moe: choose one of per_channel_quant and block_shape, not both")
        if len(block_shape) != 2:
            raise ValueError(f"fused_moe: block_shape must be [block_n, block_k], got {block_shape!r}")
        bn, bk = int(block_shape[0]), int(block_shape[1])
        for name, v in (("block_n", bn), ("block_k", bk)):
            if v < 16 or v & (v - 1):
                raise ValueError(f"fused_moe: block_shape {name} must be a power of two >= 16, got {v}")
        return QUANT_BLOCK, (bn, bk)
    if per_channel_quant:
        return QUANT_CHANNEL, (128, 128)
    return QUANT_TENSOR, (128, 128)


def normalize_w_scale(scale, name: str, E: int, rows: int, K: int, quant: int, blk: tuple[int, int]) -> torch.Tensor:
    """``scale`` of a weight [E, rows, K] checked and made contiguous in the layout its scheme's kernels read."""
    if scale is None:
        raise ValueError(f"fused_moe: {name} is required with use_fp8_w8a8=True")
    if scale.dtype != torch.float32:
        raise TypeError(f"fused_moe: {name} must be float32, got {scale.dtype}")
    if quant == QUANT_TENSOR:
        if scale.numel() != E:
            raise ValueError(f"fused_moe: per-tensor {name} must have one scale per expert ({E}), "
                             f"got shape {_shape(scale)}")
        return scale.reshape(E).contiguous()
    if quant == QUANT_CHANNEL:
        if scale.numel() != E * rows or scale.shape[0] != E or scale.shape[1] != rows:
            raise ValueError(f"fused_moe: per-channel {name} must be [{E}, {rows}] (or [{E}, {rows}, 1]), "
                             f"got shape {_shape(scale)}")
        return scale.reshape(E, rows).contiguous()
    want = (E, -(-rows // blk[0]), -(-K // blk[1]))
    if _shape(scale) != want:
        raise ValueError(f"fused_moe: block {name} must be {list(want)} for block_shape {list(blk)}, "
                         f"got shape {_shape(scale)}")
    return scale.contiguous()


def check_moe_inputs(
    x: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    *,
    use_fp8_w8a8: bool = False,
    per_channel_quant: bool = False,
    block_shape=None,
) -> MoeLayerShape:
    """Validate shapes and dtypes; raise a one-line error naming the argument at fault."""
    if x.dim() != 2:
        raise ValueError(f"fused_moe: x must be [tokens, hidden], got shape {_shape(x)}")
    if x.dtype not in ACT_DTYPES:
        raise TypeError(f"fused_moe: x must be bfloat16 or float16, got {x.dtype}")
    if w13.dim() != 3 or w2.dim() != 3:
        raise ValueError(f"fused_moe: w13 must be [E, 2I, H] and w2 [E, H, I], got {_shape(w13)} and {_shape(w2)}")
    M, H = x.shape
    E, two_i, h13 = w13.shape
    if h13 != H:
        raise ValueError(f"fused_moe: w13 {_shape(w13)} does not match hidden size {H} of x {_shape(x)}")
    if two_i % 2:
        raise ValueError(f"fused_moe: w13 rows (2I) must be even (gate then up), got {two_i}")
    I = two_i // 2
    if w2.shape[0] != E:
        raise ValueError(f"fused_moe: w13 has {E} experts but w2 has {w2.shape[0]}")
    if _shape(w2)[1:] != (H, I):
        raise ValueError(f"fused_moe: w2 must be [E, {H}, {I}] to match w13 {_shape(w13)}, got {_shape(w2)}")
    quant, blk = quant_scheme(use_fp8_w8a8, per_channel_quant, block_shape)
    want_w = FP8_DTYPE if quant != QUANT_NONE else x.dtype
    for name, w in (("w13", w13), ("w2", w2)):
        if w.dtype != want_w:
            hint = " (set use_fp8_w8a8=True for FP8 weights)" if w.dtype == FP8_DTYPE else ""
            raise TypeError(f"fused_moe: {name} must be {want_w} to match x {x.dtype}, got {w.dtype}{hint}")
        if w.stride(2) != 1:
            raise ValueError(f"fused_moe: {name} needs a contiguous last dimension, got strides {w.stride()}")
    if topk_ids.dim() != 2 or topk_ids.shape[0] != M:
        raise ValueError(f"fused_moe: topk_ids must be [{M}, top_k], got shape {_shape(topk_ids)}")
    if _shape(topk_weights) != _shape(topk_ids):
        raise ValueError(f"fused_moe: topk_weights {_shape(topk_weights)} and topk_ids {_shape(topk_ids)} "
                         "differ in shape")
    if topk_ids.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"fused_moe: topk_ids must be int32 or int64, got {topk_ids.dtype}")
    if not topk_weights.is_floating_point():
        raise TypeError(f"fused_moe: topk_weights must be floating point, got {topk_weights.dtype}")
    top_k = topk_ids.shape[1]
    if not 1 <= top_k <= E:
        raise ValueError(f"fused_moe: top_k must be in [1, {E}] experts, got {top_k}")
    return MoeLayerShape(M, H, I, E, top_k, quant, blk)
