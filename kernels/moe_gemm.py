"""Grouped expert GEMMs over expert-sorted token tiles, and the weighted top-k reduce.

One Triton kernel, ``moe_grouped_gemm_kernel``, serves both GEMMs of an MoE layer:

- gate_up (``GATED``): rows of w13 are read interleaved (gate row c, up row c, gate row c+1, ...)
  so one dot covers both halves; the epilogue splits them and writes ``silu(gate) * up``. Because
  both halves sit in one tile, a 64-row weight tile is 32 output columns: twice the thread blocks
  of a split layout at decode, and no separate activation kernel.
- down (``MUL_WEIGHT``): multiplies each row by its routing weight and writes one row per pair.

``SWAP_AB`` computes the tile as weights x tokens^T: the weight tile (BLOCK_N >= 64 rows) takes
wgmma's M slot and the token tile (8..32 tokens) its N slot, so small token tiles still run on
Hopper's wgmma (and, for FP8, on FP8 tensor cores instead of an f16 conversion).

Quantization (``QUANT``): 0 none; 1 per-tensor (one activation scale, one weight scale per
expert); 2 per-channel (one activation scale per row, one weight scale per output row);
3 block (activation scales per row and 128 columns, weight scales per 128x128 block).

Every token-count-derived integer is in ``do_not_specialize``: the kernel compiles once per tile
configuration for every M.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from .device_clock import stamp
from .moe_align import AlignedRouting
from .moe_configs import TileConfig
from .pdl import launch_dependents, wait_for_prior_launch

# Triton 3.9's interpreter (TRITON_INTERPRET=1) returns garbage for tl.dot on bf16 operands
# (fp16, fp32 and fp8 are right): under the interpreter only, bf16 tiles are upcast first.
_INTERPRETER_BF16_DOT_IS_WRONG = os.environ.get("TRITON_INTERPRET") == "1"

QUANT_NONE = 0
QUANT_TENSOR = 1
QUANT_CHANNEL = 2
QUANT_BLOCK = 3


# ---- building blocks shared by this grouped GEMM and moe_decode's (Triton inlines them) ----------

@triton.jit
def moe_tile_of_program(N, OUT_N: tl.constexpr):
    """(pid_m, pid_n, num_pid_m): this program's token tile and output-column tile, column tiles varying
    fastest (the order the decode tiles were timed with), and the number of token tiles. Scalar code
    only: the Gluon decode GEMMs (``moe_decode_gluon``) call it too."""
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, OUT_N)
    return pid // num_pid_n, pid % num_pid_n, tl.num_programs(0) // num_pid_n


@triton.jit
def moe_weight_rows(pid_n, N, BLOCK_N: tl.constexpr, GATED: tl.constexpr):
    """Weight rows of column tile ``pid_n``; GATED interleaves gate (even) and up (odd) rows.

    Rows past N wrap around instead of being masked: the loads stay unmasked along N (as wide as
    possible) and the wrapped columns are dropped at the store.
    """
    offs_bn = tl.arange(0, BLOCK_N)
    if GATED:
        out_col = (pid_n * (BLOCK_N // 2) + offs_bn // 2) % N
        b_rows = (offs_bn % 2) * N + out_col
    else:
        b_rows = (pid_n * BLOCK_N + offs_bn) % N
    return b_rows


@triton.jit
def moe_tile_pointers(a_ptr, a_rows, b_base, b_rows, stride_am, stride_bn, BLOCK_K: tl.constexpr,
                      SWAP_AB: tl.constexpr):
    """First K step's A and B tile pointers: [BLOCK_K, BLOCK_M] / [BLOCK_N, BLOCK_K] when SWAP_AB
    (weights in the MMA's M slot, tokens in its N slot), else [BLOCK_M, BLOCK_K] / [BLOCK_K, BLOCK_N]."""
    offs_k = tl.arange(0, BLOCK_K)
    if SWAP_AB:
        a_ptrs = a_ptr + a_rows[None, :] * stride_am + offs_k[:, None]
        b_ptrs = b_base + b_rows[:, None].to(tl.int64) * stride_bn + offs_k[None, :]
    else:
        a_ptrs = a_ptr + a_rows[:, None] * stride_am + offs_k[None, :]
        b_ptrs = b_base + b_rows[None, :].to(tl.int64) * stride_bn + offs_k[:, None]
    return a_ptrs, b_ptrs


@triton.jit
def moe_acc_zeros(BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SWAP_AB: tl.constexpr):
    """The fp32 accumulator, [BLOCK_N, BLOCK_M] when SWAP_AB."""
    if SWAP_AB:
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    return acc


@triton.jit
def moe_load_a(a_ptrs, pair_mask, k_mask, SWAP_AB: tl.constexpr):
    """The activation tile; rows of padding pairs and columns past K read 0."""
    if SWAP_AB:
        mask = pair_mask[None, :] & k_mask[:, None]
    else:
        mask = pair_mask[:, None] & k_mask[None, :]
    return tl.load(a_ptrs, mask=mask, other=0.0)


@triton.jit
def moe_load_b(b_ptrs, k_mask, SWAP_AB: tl.constexpr):
    """The weight tile; columns past K read 0 (rows are never masked, see moe_weight_rows)."""
    if SWAP_AB:
        b = tl.load(b_ptrs, mask=k_mask[None, :], other=0.0)
    else:
        b = tl.load(b_ptrs, mask=k_mask[:, None], other=0.0)
    return b


@triton.jit
def moe_dot(acc, a, b, a_s, b_s, BLOCK_SCALED: tl.constexpr, SWAP_AB: tl.constexpr):
    """acc plus this K step's product; BLOCK_SCALED scales it by the step's per-row ``a_s``
    [BLOCK_M] and per-weight-row ``b_s`` [BLOCK_N] (FP8 block scales), else accumulates in the MMA."""
    if BLOCK_SCALED:
        if SWAP_AB:
            acc += tl.dot(b, a) * b_s[:, None] * a_s[None, :]
        else:
            acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
    else:
        if SWAP_AB:
            acc = tl.dot(b, a, acc)
        else:
            acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def moe_block_scales(a_scale_rows, b_scale_rows, pair_mask, kb, stride_bsk, a_other, BLOCK_K: tl.constexpr,
                     SCALE_BLOCK_K: tl.constexpr):
    """FP8 block scales of K step ``kb``: per token row (``a_scale_rows``, padding rows read
    ``a_other``) and per weight row (``b_scale_rows``). Loading them one step ahead of their use
    measured slower on the H200, and so did loading every K group's scales before the K loop
    (benchmarks/results/moe_layer.md, 2026-12-01 and 2026-12-02), so each step loads
    its own."""
    k_group = (kb * BLOCK_K) // SCALE_BLOCK_K
    a_s = tl.load(a_scale_rows + k_group, mask=pair_mask, other=a_other)
    b_s = tl.load(b_scale_rows + k_group * stride_bsk)
    return a_s, b_s


@triton.jit
def moe_scale_step(kb, k_last, K_UNROLL: tl.constexpr):
    """The K step whose block scales step ``kb`` reads: with K_UNROLL steps per iteration the last
    iteration's steps past K (their tiles read 0) read the last step's, which exist."""
    if K_UNROLL > 1:
        kb = tl.minimum(kb, k_last)
    return kb


@triton.jit
def moe_scale_epilogue(acc, a_s, b_scale_ptr, expert, b_rows, stride_bse, stride_bsn, QUANT: tl.constexpr):
    """[BLOCK_M, BLOCK_N] acc times its per-tensor (QUANT 1: ``a_s`` one value) or per-channel
    (QUANT 2: ``a_s`` per row) scales; block scales (3) were applied per K step."""
    if QUANT == 1:
        acc = acc * (a_s * tl.load(b_scale_ptr + expert * stride_bse))
    elif QUANT == 2:
        b_s = tl.load(b_scale_ptr + expert * stride_bse + b_rows * stride_bsn)
        acc = acc * a_s[:, None] * b_s[None, :]
    return acc


@triton.jit
def moe_silu_mul(acc, BLOCK_M: tl.constexpr, OUT_N: tl.constexpr):
    """silu(gate) * up of an accumulator whose columns interleave gate and up (moe_weight_rows)."""
    gate, up = tl.split(tl.reshape(acc, (BLOCK_M, OUT_N, 2)))
    return gate / (1.0 + tl.exp(-gate)) * up



@triton.jit(do_not_specialize=["num_pairs"])
def moe_grouped_gemm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    a_scale_ptr,
    b_scale_ptr,
    topk_weights_ptr,
    sorted_ids_ptr,
    expert_ids_ptr,
    num_padded_ptr,
    num_pairs,
    N,
    K,
    stride_am,
    stride_be,
    stride_bn,
    stride_cm,
    stride_asm,
    stride_bse,
    stride_bsn,
    stride_bsk,
    A_ROWS_PER_PAIR_DIV: tl.constexpr,
    GATED: tl.constexpr,
    MUL_WEIGHT: tl.constexpr,
    QUANT: tl.constexpr,
    SCALE_BLOCK_N: tl.constexpr,
    SCALE_BLOCK_K: tl.constexpr,
    SWAP_AB: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    DOT_IN_FP32: tl.constexpr = False,
    K_UNROLL: tl.constexpr = 1,
    PDL: tl.constexpr = False,
    STAMPS: tl.constexpr = False,
    stamps_ptr=None,
):
    """C[pair, n] = sum_k A[pair // DIV, k] * B[expert(pair), n, k] over expert-sorted tiles.

    ``N`` is the number of output columns (for ``GATED``, half of B's rows). A row of A is
    ``pair // A_ROWS_PER_PAIR_DIV`` (top_k for the gate_up GEMM, 1 for the down GEMM).
    K_UNROLL: K steps per loop iteration (FP8 block scales with a tile block_k of 128 * K_UNROLL;
    each step is one scale group). PDL (launched with ``launch_pdl``): lets the next PDL-linked
    launch start, then waits for the previous launch before reading anything.
    STAMPS (probes): each program stores ``device_clock`` stamps at ``stamps_ptr`` (start, set-up
    done, wait done, K loop done, end; here the wait comes before the set-up); off, the same code.
    """
    stamp(stamps_ptr, tl.program_id(0), 0, STAMPS)
    # Tried and removed (benchmarks/results/moe_layer.md): the decode chain's down
    # loading its first 2 or 3 K steps of weights into registers before this wait. The layer gained
    # 0.5-0.75 us at the gate_up -> down junction, but down alone streamed 0.9-4.8 us slower (its
    # registers), so the layer was slower: Qwen3-30B-FP8 M = 64 152.0 -> 153.2 / 156.4 us.
    if PDL:
        launch_dependents()
        wait_for_prior_launch()
    stamp(stamps_ptr, tl.program_id(0), 2, STAMPS)
    pid = tl.program_id(0)
    # For GATED the weight tile holds BLOCK_N rows but yields BLOCK_N // 2 output columns.
    OUT_N: tl.constexpr = BLOCK_N // 2 if GATED else BLOCK_N
    num_pid_n = tl.cdiv(N, OUT_N)
    num_pid_m = tl.num_programs(0) // num_pid_n
    # Grouped ordering: GROUP_M token tiles share each weight tile while it is in L2.
    pids_per_group = GROUP_M * num_pid_n
    group = pid // pids_per_group
    first_m = group * GROUP_M
    group_m = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % pids_per_group) % group_m
    pid_n = (pid % pids_per_group) // group_m

    num_padded = tl.load(num_padded_ptr)
    if pid_m * BLOCK_M >= num_padded:
        return
    expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    if expert < 0:
        return

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    pairs = tl.load(sorted_ids_ptr + offs_m)
    pair_mask = pairs < num_pairs
    a_rows = (pairs // A_ROWS_PER_PAIR_DIV).to(tl.int64)
    a_rows = tl.where(pair_mask, a_rows, 0)

    b_rows = moe_weight_rows(pid_n, N, BLOCK_N, GATED)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs, b_ptrs = moe_tile_pointers(a_ptr, a_rows, b_ptr + expert * stride_be, b_rows, stride_am, stride_bn,
                                       BLOCK_K, SWAP_AB)
    acc = moe_acc_zeros(BLOCK_M, BLOCK_N, SWAP_AB)

    if QUANT == 3:
        a_scale_rows = a_scale_ptr + a_rows * stride_asm
        b_scale_rows = b_scale_ptr + expert * stride_bse + (b_rows // SCALE_BLOCK_N) * stride_bsn

    stamp(stamps_ptr, pid, 1, STAMPS)
    # K_UNROLL K steps per iteration (block scales: 128-deep steps, each with its own scales):
    # their weight loads are issued together, K_UNROLL * 128 contiguous bytes of each row.
    k_last = tl.cdiv(K, BLOCK_K) - 1
    for ku in range(tl.cdiv(K, BLOCK_K * K_UNROLL)):
        for u in tl.static_range(K_UNROLL):
            kb = ku * K_UNROLL + u
            k_mask = offs_k < K - kb * BLOCK_K
            a = moe_load_a(a_ptrs + u * BLOCK_K, pair_mask, k_mask, SWAP_AB)
            b = moe_load_b(b_ptrs + u * BLOCK_K, k_mask, SWAP_AB)
            if DOT_IN_FP32:
                a = a.to(tl.float32)
                b = b.to(tl.float32)
            if QUANT == 3:
                a_s, b_s = moe_block_scales(a_scale_rows, b_scale_rows, pair_mask,
                                            moe_scale_step(kb, k_last, K_UNROLL), stride_bsk, 0.0, BLOCK_K,
                                            SCALE_BLOCK_K)
                acc = moe_dot(acc, a, b, a_s, b_s, True, SWAP_AB)
            else:
                acc = moe_dot(acc, a, b, 0.0, 0.0, False, SWAP_AB)
        a_ptrs += BLOCK_K * K_UNROLL
        b_ptrs += BLOCK_K * K_UNROLL

    stamp(stamps_ptr, pid, 3, STAMPS)
    if SWAP_AB:
        acc = tl.trans(acc)  # back to [BLOCK_M, BLOCK_N]

    if QUANT == 1:
        acc = moe_scale_epilogue(acc, tl.load(a_scale_ptr), b_scale_ptr, expert, b_rows, stride_bse, stride_bsn, 1)
    elif QUANT == 2:
        a_s = tl.load(a_scale_ptr + a_rows * stride_asm, mask=pair_mask, other=0.0)
        acc = moe_scale_epilogue(acc, a_s, b_scale_ptr, expert, b_rows, stride_bse, stride_bsn, 2)

    if GATED:
        out = moe_silu_mul(acc, BLOCK_M, OUT_N)
    else:
        out = acc
    if MUL_WEIGHT:
        w = tl.load(topk_weights_ptr + pairs, mask=pair_mask, other=0.0).to(tl.float32)
        out = out * w[:, None]

    offs_cn = pid_n * OUT_N + tl.arange(0, OUT_N)
    c_ptrs = c_ptr + pairs[:, None].to(tl.int64) * stride_cm + offs_cn[None, :]
    tl.store(c_ptrs, out.to(c_ptr.dtype.element_ty), mask=pair_mask[:, None] & (offs_cn[None, :] < N))
    stamp(stamps_ptr, pid, 4, STAMPS)


@triton.jit(do_not_specialize=["num_tokens"])
def moe_topk_reduce_kernel(
    pair_out_ptr,
    topk_ids_ptr,
    out_ptr,
    num_tokens,
    H,
    num_experts,
    stride_pm,
    stride_om,
    TOP_K: tl.constexpr,
    BLOCK_H: tl.constexpr,
    PDL: tl.constexpr = False,
    ZERO_COUNTS: tl.constexpr = False,
    counts_ptr=None,
):
    """out[t, :] = sum over j of pair_out[t * TOP_K + j, :], skipping dropped experts (fp32 sum).

    PDL: waits for the previous (PDL-linked) launch first, as the GEMM does. ZERO_COUNTS: program (0, 0)
    also zeroes the num_experts per-expert pair counters at ``counts`` once the launch before has
    completed (the decode layer's Gluon GEMMs find their tiles from them: ``moe_decode.takes_tiles_from_counts``)."""
    if PDL:
        launch_dependents()
        wait_for_prior_launch()
    if ZERO_COUNTS:
        if (tl.program_id(0) == 0) & (tl.program_id(1) == 0):
            for e0 in range(0, num_experts, BLOCK_H):
                experts = e0 + tl.arange(0, BLOCK_H)
                tl.store(counts_ptr + experts, tl.zeros((BLOCK_H,), dtype=tl.int32), mask=experts < num_experts)
    token = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    h_mask = offs < H
    acc = tl.zeros((BLOCK_H,), dtype=tl.float32)
    for j in tl.static_range(TOP_K):
        expert = tl.load(topk_ids_ptr + token * TOP_K + j)
        used = (expert >= 0) & (expert < num_experts)
        # Rows of dropped pairs were never written: load (in bounds) and discard.
        row = tl.load(pair_out_ptr + (token * TOP_K + j) * stride_pm + offs, mask=h_mask, other=0.0)
        acc += tl.where(used, row.to(tl.float32), 0.0)
    tl.store(out_ptr + token * stride_om + offs, acc.to(out_ptr.dtype.element_ty), mask=h_mask)


def weight_scale_strides(quant: int, w_scale) -> tuple[int, int, int]:
    """(expert, row, K-group) strides of a weight scale as both GEMM kernels read it.

    Strides of scales the kernels do not read are 0, so they add no variants.
    """
    if quant == QUANT_BLOCK:
        return w_scale.stride(0), w_scale.stride(1), w_scale.stride(2)
    if quant == QUANT_CHANNEL:
        return w_scale.stride(0), w_scale.stride(1), 0
    if quant == QUANT_TENSOR:
        return w_scale.stride(0), 0, 0
    return 0, 0, 0


def launch_moe_gemm(
    a: torch.Tensor,
    w: torch.Tensor,
    out: torch.Tensor,
    routing: AlignedRouting,
    cfg: TileConfig,
    *,
    gated: bool,
    a_rows_per_pair_div: int,
    topk_weights: torch.Tensor | None = None,
    quant: int = QUANT_NONE,
    a_scale: torch.Tensor | None = None,
    w_scale: torch.Tensor | None = None,
    scale_block: tuple[int, int] = (128, 128),
    pdl: bool = False,
    stamps: torch.Tensor | None = None,
) -> None:
    """Launch ``moe_grouped_gemm_kernel`` over ``routing`` (an AlignedRouting) with ``cfg``.

    ``a`` [rows, K] and ``w`` [E, rows_w, K] need contiguous K; ``out`` [pairs, N] contiguous N.
    The grid is sized from host-known numbers only (worst-case padded length), so the launch is
    CUDA-graph capturable; surplus programs exit after reading ``routing.num_padded``.
    ``pdl``: a programmatic dependent launch (``pdl.pdl_supported()`` must be true), which may
    start while the launch before it runs and waits for it before reading.
    ``stamps`` (probes): an int64 buffer of ``device_clock.N_STAMPS`` slots per program, which
    each program fills with its timestamps (a variant of its own).
    """
    if routing.block_size != cfg.block_m:
        raise ValueError(
            f"launch_moe_gemm: routing was aligned to blocks of {routing.block_size} "
            f"but the tile has block_m={cfg.block_m}"
        )
    K = a.shape[1]
    n_out = out.shape[1]
    out_n_per_tile = cfg.block_n // 2 if gated else cfg.block_n
    num_m_tiles = routing.sorted_ids.numel() // cfg.block_m
    grid = (num_m_tiles * triton.cdiv(n_out, out_n_per_tile),)
    if grid[0] == 0:
        return
    block_k = cfg.block_k
    k_unroll = 1
    if quant == QUANT_BLOCK:
        # A tile deeper than a scale group: that many one-group steps per iteration.
        block_k = min(block_k, scale_block[1])
        k_unroll = max(1, cfg.block_k // block_k)
    stride_asm = a_scale.stride(0) if quant in (QUANT_BLOCK, QUANT_CHANNEL) else 0
    stride_bse, stride_bsn, stride_bsk = weight_scale_strides(quant, w_scale)
    moe_grouped_gemm_kernel[grid](
        a,
        w,
        out,
        a_scale if a_scale is not None else a,
        w_scale if w_scale is not None else a,
        topk_weights if topk_weights is not None else a,
        routing.sorted_ids,
        routing.expert_ids,
        routing.num_padded,
        routing.num_pairs,
        n_out,
        K,
        a.stride(0),
        w.stride(0),
        w.stride(1),
        out.stride(0),
        stride_asm,
        stride_bse,
        stride_bsn,
        stride_bsk,
        A_ROWS_PER_PAIR_DIV=a_rows_per_pair_div,
        GATED=gated,
        MUL_WEIGHT=topk_weights is not None,
        QUANT=quant,
        SCALE_BLOCK_N=scale_block[0],
        SCALE_BLOCK_K=scale_block[1],
        SWAP_AB=cfg.swap_ab,
        BLOCK_M=cfg.block_m,
        BLOCK_N=cfg.block_n,
        BLOCK_K=block_k,
        GROUP_M=cfg.group_m,
        DOT_IN_FP32=_INTERPRETER_BF16_DOT_IS_WRONG and a.dtype == torch.bfloat16,
        K_UNROLL=k_unroll,
        PDL=pdl,
        **({"STAMPS": True, "stamps_ptr": stamps} if stamps is not None else {}),
        num_warps=cfg.num_warps,
        num_stages=cfg.num_stages,
        **({"launch_pdl": True} if pdl else {}),
    )


_REDUCE_BLOCK_H = 1024


def launch_topk_reduce(pair_out: torch.Tensor, topk_ids: torch.Tensor, out: torch.Tensor, num_experts: int,
                       pdl: bool = False, zero_counts: torch.Tensor | None = None) -> None:
    """out[t] = sum_j pair_out[t * top_k + j] over the used experts of token t (``pdl`` as in launch_moe_gemm);
    with ``zero_counts`` ([num_experts] int32) those counters zeroed too, after the launch before.

    Both need contiguous columns; their rows may be strided."""
    topk_ids = topk_ids.contiguous()  # read as [tokens * top_k]
    num_tokens, top_k = topk_ids.shape
    H = out.shape[1]
    if num_tokens == 0:
        return
    grid = (num_tokens, triton.cdiv(H, _REDUCE_BLOCK_H))
    moe_topk_reduce_kernel[grid](
        pair_out, topk_ids, out, num_tokens, H, num_experts, pair_out.stride(0), out.stride(0), TOP_K=top_k,
        BLOCK_H=_REDUCE_BLOCK_H, PDL=pdl,
        **({"ZERO_COUNTS": True, "counts_ptr": zero_counts} if zero_counts is not None else {}),
        **({"launch_pdl": True} if pdl else {}),
    )
