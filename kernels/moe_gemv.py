"""The decode MoE layer for a few (token, expert) pairs in two launches: matrix-vector streaming.

At M = 1..2 on a many-small-experts model (Qwen3-30B: 8 of 128 experts, 75 MB of weights per
layer) the grouped path's fixed costs (a routing launch, tile padding, two GEMM ramps) are a
third of the layer's time. This path has no routing launch and no alignment:

1. ``moe_gemv_gate_up_kernel``, grid (pairs, gate_up column tiles): each program routes its own
   token (``softmax_topk_row``, the same selection and tie rule as every other path; the logits
   row is 0.5 KB, so recomputing it per program costs less than a launch), takes the expert of its
   slot, streams that expert's gate and up rows for its column tile against the token's
   activations on the CUDA cores, and writes ``silu(gate) * up`` for the pair. Programs of the
   first column tile record the routing in the workspace. Pairs vary fastest in the grid, so
   tokens routed to one expert read its rows at about the same time (L2 serves the repeats).
2. ``moe_gemv_down_kernel``, grid (tokens, output column tiles): routes its token again, streams
   the ``top_k`` experts' down rows for its column tile and sums ``weight * (act @ w2.T)`` over
   the slots in registers: the reduce is in the GEMM, in a fixed order, with no atomics and no
   per-pair buffer. Launched with programmatic dependent launch where Triton offers it
   (``launch_pdl``): launch 1 lets it start at once, it loads its first weight chunk (which
   depends only on the routing, not on launch 1) and then waits (``griddepcontrol.wait``) for
   launch 1's activations, so its start-up overlaps launch 1's tail.

bf16/fp16 only (FP8 stays on the grouped path). No argument depends on the token count (the
grid does), so every M compiles to one variant per tile. The tiles per shape class come from
:data:`GEMV_TILE_TABLE`, measured on an H200 (``benchmarks/bench_moe_layer.py --gemv-sweep``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from .moe_routing import softmax_topk_row

__all__ = ["GEMV_LAUNCHES", "GEMV_TILE_TABLE", "GemvTiles", "gemv_launches", "pdl_supported", "select_gemv_tiles"]

GEMV_LAUNCHES = 2

_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


@dataclass(frozen=True)
class GemvTiles:
    """Column tile, K chunk and warps of each of the two launches."""

    up_block_n: int
    up_block_k: int
    up_warps: int
    down_block_n: int
    down_block_k: int
    down_warps: int

    def check(self, where: str) -> None:
        """Raise ValueError naming ``where`` for a tile the kernels cannot compile."""
        for name, v in vars(self).items():
            if v < 1 or v & (v - 1):
                raise ValueError(f"{where}: {name} must be a power of two, got {v}")
        for name in ("up_block_k", "down_block_k"):
            if getattr(self, name) < 16:
                raise ValueError(f"{where}: {name} must be >= 16, got {getattr(self, name)}")


# (expert class) -> tiles; "many" = E > 16 small experts (Qwen3-like), "few" = large experts (Mixtral-like).
GEMV_TILE_TABLE: dict[str, GemvTiles] = {
    "many": GemvTiles(32, 256, 4, 16, 128, 4),
    "few": GemvTiles(8, 512, 4, 4, 256, 4),
}


def select_gemv_tiles(num_experts: int) -> GemvTiles:
    """The table's tiles for a layer with ``num_experts`` experts."""
    return GEMV_TILE_TABLE["many" if num_experts > 16 else "few"]


def pdl_supported() -> bool:
    """Whether this Triton's NVIDIA launcher takes ``launch_pdl`` (programmatic dependent launch)."""
    if _INTERPRETED:
        return False
    try:
        from triton.backends.nvidia.compiler import CUDAOptions
    except ImportError:
        return False
    return "launch_pdl" in getattr(CUDAOptions, "__dataclass_fields__", {})


@triton.jit
def _grid_dependency(WAIT: tl.constexpr):
    """PTX griddepcontrol: WAIT blocks until the previous launch has completed with its writes
    visible; otherwise lets the next launch (if launched with PDL) start. Both are no-ops when
    the launches are not PDL-linked."""
    if WAIT:
        tl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
    else:
        tl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=tl.int32,
                                  is_pure=False, pack=1)


@triton.jit
def moe_gemv_gate_up_kernel(
    x_ptr,
    logits_ptr,
    w13_ptr,
    inter_ptr,
    topk_ids_ptr,
    topk_weights_ptr,
    num_experts,
    hidden,
    intermediate,
    stride_xm,
    stride_lm,
    stride_we,
    stride_wn,
    stride_im,
    TOP_K: tl.constexpr,
    K_POW2: tl.constexpr,
    E_POW2: tl.constexpr,
    RENORMALIZE: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GRID_DEPENDENCY: tl.constexpr,
):
    """inter[pair, cols] = silu(x[token] @ gate.T) * (x[token] @ up.T) for the expert of ``pair``."""
    pair = tl.program_id(0)
    pid_n = tl.program_id(1)
    if GRID_DEPENDENCY:
        _grid_dependency(False)
    token = (pair // TOP_K).to(tl.int64)
    slot = pair % TOP_K
    ids, weights = softmax_topk_row(logits_ptr + token * stride_lm, num_experts, TOP_K, K_POW2, E_POW2, RENORMALIZE)
    slots = tl.arange(0, K_POW2)
    expert = tl.sum(tl.where(slots == slot, ids, 0), 0)
    if pid_n == 0:
        tl.store(topk_ids_ptr + pair, expert)
        tl.store(topk_weights_ptr + pair, tl.sum(tl.where(slots == slot, weights, 0.0), 0))

    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < intermediate
    offs_k = tl.arange(0, BLOCK_K)
    gate_ptrs = w13_ptr + expert.to(tl.int64) * stride_we + cols[:, None].to(tl.int64) * stride_wn + offs_k[None, :]
    up_ptrs = gate_ptrs + intermediate * stride_wn
    x_row = x_ptr + token * stride_xm
    acc_gate = tl.zeros((BLOCK_N,), dtype=tl.float32)
    acc_up = tl.zeros((BLOCK_N,), dtype=tl.float32)
    k_mask = offs_k < hidden
    w_mask = col_mask[:, None] & k_mask[None, :]
    xv = tl.load(x_row + offs_k, mask=k_mask, other=0.0)
    gate = tl.load(gate_ptrs, mask=w_mask, other=0.0)
    up = tl.load(up_ptrs, mask=w_mask, other=0.0)
    for k0 in range(0, hidden, BLOCK_K):
        # The next chunk is in flight while this one is used (the last loads are all masked).
        k_mask = offs_k < hidden - (k0 + BLOCK_K)
        w_mask = col_mask[:, None] & k_mask[None, :]
        x_next = tl.load(x_row + (k0 + BLOCK_K) + offs_k, mask=k_mask, other=0.0)
        gate_next = tl.load(gate_ptrs + (k0 + BLOCK_K), mask=w_mask, other=0.0)
        up_next = tl.load(up_ptrs + (k0 + BLOCK_K), mask=w_mask, other=0.0)
        xf = xv.to(tl.float32)[None, :]
        acc_gate += tl.sum(gate.to(tl.float32) * xf, 1)
        acc_up += tl.sum(up.to(tl.float32) * xf, 1)
        xv, gate, up = x_next, gate_next, up_next
    act = acc_gate / (1.0 + tl.exp(-acc_gate)) * acc_up
    tl.store(inter_ptr + pair.to(tl.int64) * stride_im + cols, act.to(inter_ptr.dtype.element_ty), mask=col_mask)


@triton.jit
def moe_gemv_down_kernel(
    inter_ptr,
    logits_ptr,
    w2_ptr,
    out_ptr,
    num_experts,
    hidden,
    intermediate,
    stride_lm,
    stride_we,
    stride_wn,
    stride_im,
    stride_om,
    TOP_K: tl.constexpr,
    K_POW2: tl.constexpr,
    E_POW2: tl.constexpr,
    RENORMALIZE: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GRID_DEPENDENCY: tl.constexpr,
):
    """out[token, cols] = sum over slots j of weight_j * (inter[token, j] @ w2[expert_j, cols].T)."""
    token = tl.program_id(0).to(tl.int64)
    pid_n = tl.program_id(1)
    # The routing again, from the layer's input: the weights this program reads do not wait for launch 1.
    ids, weights = softmax_topk_row(logits_ptr + token * stride_lm, num_experts, TOP_K, K_POW2, E_POW2, RENORMALIZE)
    slots = tl.arange(0, K_POW2)
    slot_mask = slots < TOP_K
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < hidden
    offs_k = tl.arange(0, BLOCK_K)
    w_ptrs = (w2_ptr + ids.to(tl.int64)[:, None, None] * stride_we + cols[None, :, None].to(tl.int64) * stride_wn
              + offs_k[None, None, :])
    row_mask = slot_mask[:, None, None] & col_mask[None, :, None]
    a_ptrs = inter_ptr + (token * TOP_K + slots)[:, None] * stride_im + offs_k[None, :]
    w = tl.load(w_ptrs, mask=row_mask & (offs_k < intermediate)[None, None, :], other=0.0)
    if GRID_DEPENDENCY:
        _grid_dependency(True)
    acc = tl.zeros((K_POW2, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, intermediate, BLOCK_K):
        # The next chunk's weights are in flight while this chunk is used (the last load is all masked).
        next_k = offs_k < intermediate - (k0 + BLOCK_K)
        w_next = tl.load(w_ptrs + (k0 + BLOCK_K), mask=row_mask & next_k[None, None, :], other=0.0)
        a = tl.load(a_ptrs + k0, mask=slot_mask[:, None] & (offs_k < intermediate - k0)[None, :], other=0.0)
        acc += tl.sum(w.to(tl.float32) * a.to(tl.float32)[:, None, :], 2)
        w = w_next
    total = tl.sum(acc * weights[:, None], 0)
    tl.store(out_ptr + token * stride_om + cols, total.to(out_ptr.dtype.element_ty), mask=col_mask)


def gemv_launches(
    x: torch.Tensor,
    router_logits: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    top_k: int,
    renormalize: bool,
    inter: torch.Tensor,
    topk_ids: torch.Tensor,
    topk_weights: torch.Tensor,
    out: torch.Tensor,
    tiles: GemvTiles,
) -> list[tuple[str, Callable[[], object]]]:
    """The two launches, by stage name, for checked inputs (``fused_moe_decode`` checks them).

    ``inter`` [M * top_k, I] holds the activations between the launches; ``topk_ids`` and
    ``topk_weights`` (flat, >= M * top_k) receive the routing.
    """
    M, H = x.shape
    E, two_i, _ = w13.shape
    I = two_i // 2
    pairs = M * top_k
    pdl = pdl_supported()
    common = dict(TOP_K=top_k, K_POW2=triton.next_power_of_2(top_k), E_POW2=triton.next_power_of_2(E),
                  RENORMALIZE=bool(renormalize), GRID_DEPENDENCY=pdl)
    gate_up = functools.partial(
        moe_gemv_gate_up_kernel[(pairs, triton.cdiv(I, tiles.up_block_n))],
        x, router_logits, w13, inter, topk_ids, topk_weights,
        E, H, I, x.stride(0), router_logits.stride(0), w13.stride(0), w13.stride(1), inter.stride(0),
        BLOCK_N=tiles.up_block_n, BLOCK_K=tiles.up_block_k, num_warps=tiles.up_warps, **common,
    )
    down_kwargs = {"launch_pdl": True} if pdl else {}
    down = functools.partial(
        moe_gemv_down_kernel[(M, triton.cdiv(H, tiles.down_block_n))],
        inter, router_logits, w2, out,
        E, H, I, router_logits.stride(0), w2.stride(0), w2.stride(1), inter.stride(0), out.stride(0),
        BLOCK_N=tiles.down_block_n, BLOCK_K=tiles.down_block_k, num_warps=tiles.down_warps, **common,
        **down_kwargs,
    )
    return [("gate_up", gate_up), ("down", down)]
