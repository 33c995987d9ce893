"""Dynamic FP8 (e4m3) activation quantization for the MoE GEMMs: per tensor, per row, per group.

Scales are fp32 with ``x ~= q * scale``; ``scale = absmax / 448`` (the e4m3fn maximum). Row
counts are token-count-derived, so they are never specialized: one variant for every M.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .pdl import launch_dependents, wait_for_prior_launch

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = 448.0
_MIN_AMAX = 1e-10


@triton.jit
def row_absmax(row_ptr, n, BLOCK: tl.constexpr):
    """The largest |value| (fp32) of the ``n`` values at ``row_ptr``, read BLOCK at a time."""
    amax = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        amax = tl.maximum(amax, tl.abs(tl.load(row_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)))
    return tl.max(amax, 0)


@triton.jit
def _absmax_kernel(
    x_ptr,
    amax_ptr,
    topk_ids_ptr,
    K,
    stride_xm,
    num_experts,
    SKIP_DROPPED_ROWS: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    if SKIP_DROPPED_ROWS:
        # Rows of dropped pairs were never written: keep their garbage out of the tensor scale.
        expert = tl.load(topk_ids_ptr + row)
        if (expert < 0) | (expert >= num_experts):
            return
    tl.atomic_max(amax_ptr, row_absmax(x_ptr + row * stride_xm, K, BLOCK_K))


@triton.jit
def _quant_rows_kernel(
    x_ptr,
    y_ptr,
    scale_ptr,
    K,
    stride_xm,
    stride_ym,
    SCALE_MODE: tl.constexpr,
    FP8_MAX_C: tl.constexpr,
    MIN_AMAX: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    # SCALE_MODE 0: one dynamic scale per row, written to scale_ptr[row];
    # 1: one given tensor scale at scale_ptr[0]; 2: scale_ptr[0] holds the tensor absmax and is
    # turned into the scale here (program 0 writes it back for the GEMM).
    row = tl.program_id(0).to(tl.int64)
    if SCALE_MODE == 0:
        scale = tl.maximum(row_absmax(x_ptr + row * stride_xm, K, BLOCK_K), MIN_AMAX) / FP8_MAX_C
        tl.store(scale_ptr + row, scale)
    elif SCALE_MODE == 1:
        scale = tl.load(scale_ptr)
    else:
        scale = tl.maximum(tl.load(scale_ptr), MIN_AMAX) / FP8_MAX_C
    inv = 1.0 / scale
    for k0 in range(0, K, BLOCK_K):
        offs = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + row * stride_xm + offs, mask=offs < K, other=0.0).to(tl.float32)
        q = tl.clamp(x * inv, -FP8_MAX_C, FP8_MAX_C)
        tl.store(y_ptr + row * stride_ym + offs, q.to(y_ptr.dtype.element_ty), mask=offs < K)


@triton.jit
def _write_tensor_scale_kernel(scale_ptr, FP8_MAX_C: tl.constexpr, MIN_AMAX: tl.constexpr):
    tl.store(scale_ptr, tl.maximum(tl.load(scale_ptr), MIN_AMAX) / FP8_MAX_C)


@triton.jit
def _quant_groups_kernel(
    x_ptr,
    y_ptr,
    scale_ptr,
    K,
    stride_xm,
    stride_ym,
    stride_sm,
    GROUP: tl.constexpr,
    GROUPS_PER_PROGRAM: tl.constexpr,
    FP8_MAX_C: tl.constexpr,
    MIN_AMAX: tl.constexpr,
    PDL: tl.constexpr = False,
):
    if PDL:
        launch_dependents()
        wait_for_prior_launch()
    row = tl.program_id(0).to(tl.int64)
    groups = tl.program_id(1) * GROUPS_PER_PROGRAM + tl.arange(0, GROUPS_PER_PROGRAM)
    cols = groups[:, None] * GROUP + tl.arange(0, GROUP)[None, :]
    mask = cols < K
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(x), axis=1), MIN_AMAX) / FP8_MAX_C
    q = tl.clamp(x / scale[:, None], -FP8_MAX_C, FP8_MAX_C)
    tl.store(y_ptr + row * stride_ym + cols, q.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(scale_ptr + row * stride_sm + groups, scale, mask=groups * GROUP < K)


_ROW_BLOCK = 1024
_GROUPS_PER_PROGRAM = 8


def launch_quantize_groups(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor, group_size: int = 128, *,
                           pdl: bool = False) -> None:
    """``quantize_fp8``'s "group" mode into given buffers: ``q`` (e4m3, x's shape) and ``scale``
    ([rows, ceil(K / group_size)] fp32, any row stride), both with contiguous rows; ``pdl`` as in
    ``quantize_fp8``. No allocation, so it can run inside a captured CUDA graph's fixed buffers."""
    rows, K = x.shape
    if rows:
        grid = (rows, triton.cdiv(triton.cdiv(K, group_size), _GROUPS_PER_PROGRAM))
        _quant_groups_kernel[grid](
            x, q, scale, K, x.stride(0), q.stride(0), scale.stride(0),
            GROUP=group_size, GROUPS_PER_PROGRAM=_GROUPS_PER_PROGRAM,
            FP8_MAX_C=FP8_MAX, MIN_AMAX=_MIN_AMAX, PDL=pdl, **({"launch_pdl": True} if pdl else {}),
        )


def quantize_fp8(
    x: torch.Tensor,
    mode: str,
    *,
    group_size: int = 128,
    static_scale: torch.Tensor | None = None,
    row_expert_ids: torch.Tensor | None = None,
    num_experts: int = 0,
    pdl: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize a 2-D activation to FP8 e4m3; returns ``(q, scale)``.

    ``mode``: "tensor" (scale shape [1]; ``static_scale`` or dynamic absmax), "row" (scale [rows]),
    "group" (scale [rows, ceil(K / group_size)]). ``row_expert_ids`` (one id per row) makes a
    dynamic tensor scale ignore rows whose expert is outside ``[0, num_experts)``. ``pdl`` (mode
    "group" only, ``pdl.pdl_supported()`` true): a programmatic dependent launch that waits for the
    launch before it, as ``moe_gemm.launch_moe_gemm``'s.
    """
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError(f"quantize_fp8: x must be 2-D with contiguous rows, got shape {tuple(x.shape)}")
    if pdl and mode != "group":
        raise ValueError(f"quantize_fp8: pdl=True is for mode='group', got mode={mode!r}")
    rows, K = x.shape
    q = torch.empty((rows, K), dtype=FP8_DTYPE, device=x.device)
    if mode == "group":
        if group_size & (group_size - 1):
            raise ValueError(f"quantize_fp8: group_size must be a power of two, got {group_size}")
        scale = torch.empty((rows, triton.cdiv(K, group_size)), dtype=torch.float32, device=x.device)
        launch_quantize_groups(x, q, scale, group_size, pdl=pdl)
        return q, scale
    if mode == "row":
        scale = torch.empty((rows,), dtype=torch.float32, device=x.device)
        scale_mode = 0
    elif mode == "tensor":
        if static_scale is not None:
            if static_scale.numel() != 1:
                raise ValueError(
                    f"quantize_fp8: a static tensor scale must have one element, got shape {tuple(static_scale.shape)}"
                )
            scale = static_scale.reshape(1).to(torch.float32)
            scale_mode = 1
        else:
            scale = torch.zeros((1,), dtype=torch.float32, device=x.device)
            scale_mode = 2
            if rows:
                _absmax_kernel[(rows,)](
                    x, scale, row_expert_ids if row_expert_ids is not None else scale, K, x.stride(0),
                    num_experts, SKIP_DROPPED_ROWS=row_expert_ids is not None, BLOCK_K=_ROW_BLOCK,
                )
    else:
        raise ValueError(f"quantize_fp8: mode must be 'tensor', 'row' or 'group', got {mode!r}")
    if rows:
        _quant_rows_kernel[(rows,)](
            x, q, scale, K, x.stride(0), q.stride(0),
            SCALE_MODE=scale_mode, FP8_MAX_C=FP8_MAX, MIN_AMAX=_MIN_AMAX, BLOCK_K=_ROW_BLOCK,
        )
    if scale_mode == 2:
        # Every row program derived the same scale from the absmax; store it once for the GEMM.
        _write_tensor_scale_kernel[(1,)](scale, FP8_MAX_C=FP8_MAX, MIN_AMAX=_MIN_AMAX)
    return q, scale


def quantize_fp8_reference(
    x: torch.Tensor, mode: str, *, group_size: int = 128, static_scale: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Plain-torch twin of :func:`quantize_fp8` (same scale layout)."""
    xf = x.float()
    rows, K = xf.shape
    if mode == "tensor":
        if static_scale is not None:
            scale = static_scale.reshape(1).float()
        else:
            scale = (xf.abs().amax().clamp(min=_MIN_AMAX) / FP8_MAX).reshape(1)
        q = (xf / scale).clamp(-FP8_MAX, FP8_MAX).to(FP8_DTYPE)
        return q, scale
    if mode == "row":
        scale = xf.abs().amax(dim=1).clamp(min=_MIN_AMAX) / FP8_MAX
        q = (xf / scale[:, None]).clamp(-FP8_MAX, FP8_MAX).to(FP8_DTYPE)
        return q, scale
    n_groups = triton.cdiv(K, group_size)
    padded = torch.nn.functional.pad(xf, (0, n_groups * group_size - K)).view(rows, n_groups, group_size)
    scale = padded.abs().amax(dim=2).clamp(min=_MIN_AMAX) / FP8_MAX
    q = (padded / scale[:, :, None]).clamp(-FP8_MAX, FP8_MAX).reshape(rows, -1)[:, :K].to(FP8_DTYPE)
    return q, scale
