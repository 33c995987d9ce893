"""Block alignment of routed token ids per expert, in Triton (no CUDA extension).

The grouped GEMMs walk the (token, expert) pairs sorted by expert, each expert's run padded to a
multiple of the token tile. This module builds that layout on the device with no host
synchronisation: every buffer is sized for the worst case from host-known numbers, so the whole
thing can be captured in a CUDA graph.

Layout produced (the same contract as upstream's ``moe_align_block_size``):

- ``sorted_ids`` [padded_len] int32: pair indices ``token * top_k + j`` grouped by expert, each
  expert's run padded to a multiple of ``block_size`` with the sentinel ``num_pairs``.
- ``expert_ids`` [padded_len // block_size] int32: the expert of each block, -1 past the end.
- ``num_padded`` [1] int32: the used length of ``sorted_ids``.

Pairs whose expert id is outside ``[0, num_experts)`` are dropped (as in expert parallelism with
experts owned by another rank); the GEMMs never see them and the reduce skips them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

# Every token-count-derived integer is listed in do_not_specialize so that one variant serves
# every M (an int equal to 1 or divisible by 16 would otherwise be a separate specialization).


# Demoting num_pairs is costly in code (jitguard's price check: its masked topk-id load goes from one
# 64-bit to two 32-bit accesses per thread) and free in time, so it stays: H200, 2026-11-30,
# moe_align_block_size at 256 experts top-8, 1-16384 tokens (6.5-43.7 us) as shipped vs this kernel
# and the scatter kernel specialized: 0.99-1.02x, 1.07x once at 8 tokens (6.62 vs 6.20 us)
# (benchmarks/results/kernel_demotions.md). These kernels are latency-bound; one load is not the cost.
@triton.jit(do_not_specialize=["num_pairs", "padded_len"])
def _moe_count_kernel(
    topk_ids_ptr,
    counts_ptr,
    rank_ptr,
    sorted_ids_ptr,
    num_pairs,
    padded_len,
    num_experts,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    # Pre-fill with the sentinel; the scatter kernel (launched after) overwrites the real slots.
    # The bound is rounded up to 16 (the buffer has room): a mask the compiler knows to be
    # constant over 16-element groups keeps the store vectorized although padded_len is demoted.
    fill_len = (padded_len + 15) // 16 * 16
    tl.store(sorted_ids_ptr + offs, num_pairs, mask=offs < fill_len)
    in_range = offs < num_pairs
    expert = tl.load(topk_ids_ptr + offs, mask=in_range, other=-1).to(tl.int32)
    valid = in_range & (expert >= 0) & (expert < num_experts)
    safe_expert = tl.where(valid, expert, 0)
    rank = tl.atomic_add(counts_ptr + safe_expert, 1, mask=valid)
    tl.store(rank_ptr + offs, rank, mask=valid)


@triton.jit(do_not_specialize=["num_blocks", "block_size"])
def _moe_block_experts_kernel(
    counts_ptr,
    starts_ptr,
    expert_ids_ptr,
    num_padded_ptr,
    num_experts,
    block_size,
    num_blocks,
    E_POW2: tl.constexpr,
    CHUNK: tl.constexpr,
):
    # Each program recomputes the (tiny) padded prefix sum over experts and labels its chunk of
    # blocks, so the labelling is parallel and needs no second pass.
    pid = tl.program_id(0)
    experts = tl.arange(0, E_POW2)
    counts = tl.load(counts_ptr + experts, mask=experts < num_experts, other=0)
    padded = (counts + block_size - 1) // block_size * block_size
    ends = tl.cumsum(padded, 0)
    total = tl.sum(padded, 0)
    if pid == 0:
        tl.store(starts_ptr + experts, ends - padded, mask=experts < num_experts)
        tl.store(num_padded_ptr, total)
    blocks = pid * CHUNK + tl.arange(0, CHUNK)
    first_pos = blocks * block_size
    expert = tl.sum((ends[None, :] <= first_pos[:, None]).to(tl.int32), axis=1)
    expert = tl.where(first_pos < total, expert, -1)
    tl.store(expert_ids_ptr + blocks, expert, mask=blocks < num_blocks)


# num_pairs: costly in code, free in time, kept (see _moe_count_kernel's note and
# benchmarks/results/kernel_demotions.md).
@triton.jit(do_not_specialize=["num_pairs"])
def _moe_scatter_kernel(
    topk_ids_ptr,
    rank_ptr,
    starts_ptr,
    sorted_ids_ptr,
    num_pairs,
    num_experts,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    in_range = offs < num_pairs
    expert = tl.load(topk_ids_ptr + offs, mask=in_range, other=-1).to(tl.int32)
    valid = in_range & (expert >= 0) & (expert < num_experts)
    safe_expert = tl.where(valid, expert, 0)
    rank = tl.load(rank_ptr + offs, mask=valid, other=0)
    start = tl.load(starts_ptr + safe_expert, mask=valid, other=0)
    tl.store(sorted_ids_ptr + start + rank, offs, mask=valid)


@dataclass(frozen=True)
class AlignedRouting:
    """Pairs sorted by expert and padded to the token tile (see the module docstring)."""

    sorted_ids: torch.Tensor
    expert_ids: torch.Tensor
    num_padded: torch.Tensor
    block_size: int
    num_pairs: int


def max_padded_len(num_pairs: int, num_experts: int, block_size: int) -> int:
    """Worst-case length of ``sorted_ids``: every used expert wastes at most block_size - 1 slots.

    At most ``min(num_pairs, num_experts)`` experts are used, which keeps decode buffers small.
    Rounded up to a whole number of blocks.
    """
    worst = num_pairs + min(num_pairs, num_experts) * (block_size - 1)
    return triton.cdiv(worst, block_size) * block_size


_ALIGN_BLOCK = 256
_LABEL_CHUNK = 32


def moe_align_block_size(
    topk_ids: torch.Tensor, num_experts: int, block_size: int
) -> AlignedRouting:
    """Sort (token, expert) pairs by expert and pad each expert's run to ``block_size``.

    >>> r = moe_align_block_size(torch.tensor([[1, 0]], device="cuda"), 4, 16)  # doctest: +SKIP
    >>> r.sorted_ids[:2].tolist(), r.expert_ids[:2].tolist()  # doctest: +SKIP
    ([1, 2], [0, 1])
    """
    if topk_ids.dim() != 2:
        raise ValueError(
            f"moe_align_block_size: topk_ids must be 2-D [tokens, top_k], got shape {tuple(topk_ids.shape)}"
        )
    if topk_ids.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"moe_align_block_size: topk_ids must be int32 or int64, got {topk_ids.dtype}")
    if num_experts < 1:
        raise ValueError(f"moe_align_block_size: num_experts must be >= 1, got {num_experts}")
    if block_size < 1:
        raise ValueError(f"moe_align_block_size: block_size must be >= 1, got {block_size}")
    ids = topk_ids.contiguous().view(-1)
    num_pairs = ids.numel()
    device = ids.device
    padded_len = max_padded_len(num_pairs, num_experts, block_size)
    num_blocks = padded_len // block_size

    counts = torch.zeros(num_experts, dtype=torch.int32, device=device)
    starts = torch.empty(num_experts, dtype=torch.int32, device=device)
    rank = torch.empty(max(num_pairs, 1), dtype=torch.int32, device=device)
    # Room for the count kernel's fill, which runs to padded_len rounded up to 16.
    sorted_ids = torch.empty(triton.cdiv(padded_len, 16) * 16, dtype=torch.int32, device=device)[:padded_len]
    expert_ids = torch.empty(num_blocks, dtype=torch.int32, device=device)
    num_padded = torch.empty(1, dtype=torch.int32, device=device)

    _moe_count_kernel[(triton.cdiv(padded_len, _ALIGN_BLOCK),)](
        ids, counts, rank, sorted_ids, num_pairs, padded_len, num_experts, BLOCK=_ALIGN_BLOCK
    )
    _moe_block_experts_kernel[(triton.cdiv(num_blocks, _LABEL_CHUNK),)](
        counts,
        starts,
        expert_ids,
        num_padded,
        num_experts,
        block_size,
        num_blocks,
        E_POW2=triton.next_power_of_2(num_experts),
        CHUNK=_LABEL_CHUNK,
    )
    _moe_scatter_kernel[(triton.cdiv(max(num_pairs, 1), _ALIGN_BLOCK),)](
        ids, rank, starts, sorted_ids, num_pairs, num_experts, BLOCK=_ALIGN_BLOCK
    )
    return AlignedRouting(sorted_ids, expert_ids, num_padded, block_size, num_pairs)


def moe_align_reference(
    topk_ids: torch.Tensor, num_experts: int, block_size: int
) -> dict[int, list[int]]:
    """Plain-torch reference: for each used expert, the sorted list of its pair indices."""
    ids = topk_ids.reshape(-1).tolist()
    by_expert: dict[int, list[int]] = {}
    for pair, expert in enumerate(ids):
        if 0 <= expert < num_experts:
            by_expert.setdefault(expert, []).append(pair)
    return by_expert
