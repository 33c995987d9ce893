"""Softmax top-k routing for MoE layers, one compiled variant for every token count.

``softmax_topk(router_logits, top_k, renormalize=False)`` returns ``(topk_weights, topk_ids)``:
fp32 weights ``softmax(logits)[ids]`` (divided by their sum with ``renormalize``) and int32 expert
ids, in descending order of probability, as ``torch.topk(torch.softmax(logits.float(), -1), k)``.

Ties: among experts with equal probability the lower expert index comes first (and is the one
kept at the k-th place). This is a choice, not a copy of ``torch.topk``: torch documents no tie
order, and its CPU kernel does not use index order (``torch.topk(softmax([1, 3, 3, 2, 3, 0, 3]),
3)`` gives indices ``[1, 6, 4]`` on torch 2.13 CPU, where index order is ``[1, 2, 4]``).
:func:`softmax_topk_reference` states the rule in torch (a stable descending sort), and the H200
benchmark compares the kernel with CUDA ``torch.topk`` on tied logits in the same run.

Selection is done on the logits (softmax is increasing), through an integer key that orders
floats exactly, so equal logits are equal keys and the result never depends on the rounding of
``exp``: a bitonic top-k (``tl.topk``) over the key and the reversed expert index packed in 64
bits, or, on Triton without ``tl.topk``, successive argmaxes. The one case where this can differ
from ranking torch's fp32 probabilities: two *distinct* logits whose probabilities round to the
same fp32 value (logits one ulp apart, or both more than ~100 below the row maximum, where both
underflow to 0); the larger logit wins here, the lower index in the reference.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

__all__ = ["check_router_logits", "softmax_topk", "softmax_topk_reference", "softmax_topk_row"]

_INT32_MIN = tl.constexpr(-2147483648)
# Triton >= 3.3 has tl.topk (a bitonic top-k); before it, TOP_K successive argmaxes pick the same
# experts; tl.topk is the faster of the two on an H200 (benchmarks/results/moe_layer.md, fixed-cost probe).
_HAS_TOPK = tl.constexpr(hasattr(tl, "topk"))

# `tl.topk` is named in a function of its own, defined only where it exists: Triton 3.2 hashes a
# kernel's source by resolving every attribute the kernel and its callees name, and `tl.topk` does
# not resolve there even in a branch that never compiles. Without it the stand-in is never called
# (every caller is under _HAS_TOPK).
if _HAS_TOPK:
    @triton.jit
    def _bitonic_topk(x, k: tl.constexpr):
        return tl.topk(x, k)
else:
    @triton.jit
    def _bitonic_topk(x, k: tl.constexpr):
        return x


# softmax_topk_rows (several tokens in one top-k) exists only where tl.topk does.
HAS_BATCHED_TOPK = _HAS_TOPK


@triton.jit
def _order_key(x, in_range):
    """Order-preserving int32 key of fp32 logits: flip the magnitude bits of negative floats (+0.0
    folds -0.0 onto +0.0 so the two tie, as they do in torch); experts out of range sort last."""
    bits = (x + 0.0).to(tl.int32, bitcast=True)
    key = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    return tl.where(in_range, key, _INT32_MIN)


@triton.jit
def _topk_by_key(key, experts, K_POW2: tl.constexpr, E_POW2: tl.constexpr):
    """(expert ids, their logits) of the K_POW2 largest keys along the last axis (``experts`` broadcast
    to ``key``'s shape). One bitonic top-k over (key, reversed index) packed in 64 bits: larger key
    first, equal keys in index order; the logit is recovered from its key."""
    packed = (key.to(tl.int64) << 32) | (E_POW2 - 1 - experts).to(tl.int64)
    top = _bitonic_topk(packed, K_POW2)
    ids = (E_POW2 - 1 - (top & 0xFFFFFFFF)).to(tl.int32)
    top_key = (top >> 32).to(tl.int32)
    top_x = tl.where(top_key < 0, top_key ^ 0x7FFFFFFF, top_key).to(tl.float32, bitcast=True)
    return ids, top_x


@triton.jit
def softmax_topk_rows(
    logits_ptr,
    rows,
    row_mask,
    stride_lm,
    num_experts,
    TOP_K: tl.constexpr,
    K_POW2: tl.constexpr,
    E_POW2: tl.constexpr,
    RENORMALIZE: tl.constexpr,
):
    """Several tokens' routing at once (``rows`` [R] of the logits, R a power of two): (ids, weights)
    [R, K_POW2], the same selection and weights as :func:`softmax_topk_row` for each row; rows
    outside ``row_mask`` and slots >= TOP_K hold 0. Needs ``tl.topk`` (Triton >= 3.3)."""
    experts = tl.arange(0, E_POW2)
    in_range = (experts < num_experts)[None, :] & row_mask[:, None]
    x = tl.load(logits_ptr + rows[:, None].to(tl.int64) * stride_lm + experts[None, :], mask=in_range,
                other=float("-inf")).to(tl.float32)
    key = _order_key(x, in_range)
    row_max = tl.max(x, 1)
    row_max = tl.where(row_mask, row_max, 0.0)
    e = tl.where(in_range, tl.exp(x - row_max[:, None]), 0.0)
    inv_sum = 1.0 / tl.maximum(tl.sum(e, 1), 1e-30)
    ids, top_x = _topk_by_key(key, experts[None, :], K_POW2, E_POW2)
    keep = (tl.arange(0, K_POW2) < TOP_K)[None, :] & row_mask[:, None]
    ids = tl.where(keep, ids, 0)
    weights = tl.where(keep, tl.exp(top_x - row_max[:, None]) * inv_sum[:, None], 0.0)
    if RENORMALIZE:
        weights = weights / tl.maximum(tl.sum(weights, 1), 1e-30)[:, None]
    return ids, weights


@triton.jit
def softmax_topk_row(
    logits_row_ptr,
    num_experts,
    TOP_K: tl.constexpr,
    K_POW2: tl.constexpr,
    E_POW2: tl.constexpr,
    RENORMALIZE: tl.constexpr,
):
    """One token's routing: returns (expert ids [K_POW2] int32, weights [K_POW2] fp32), slots >= TOP_K zero.

    Called from other kernels (the decode MoE kernels inline it).
    """
    experts = tl.arange(0, E_POW2)
    in_range = experts < num_experts
    x = tl.load(logits_row_ptr + experts, mask=in_range, other=float("-inf")).to(tl.float32)
    key = _order_key(x, in_range)
    row_max = tl.max(x, 0)
    e = tl.where(in_range, tl.exp(x - row_max), 0.0)
    inv_sum = 1.0 / tl.sum(e, 0)
    slots = tl.arange(0, K_POW2)
    if _HAS_TOPK:
        ids, top_x = _topk_by_key(key, experts, K_POW2, E_POW2)
        ids = tl.where(slots < TOP_K, ids, 0)
        weights = tl.where(slots < TOP_K, tl.exp(top_x - row_max) * inv_sum, 0.0)
    else:
        ids = tl.zeros((K_POW2,), dtype=tl.int32)
        weights = tl.zeros((K_POW2,), dtype=tl.float32)
        for j in tl.static_range(TOP_K):
            # argmax takes the first maximum: equal keys go to the lower expert index.
            best = tl.argmax(key, 0, tie_break_left=True).to(tl.int32)
            p = tl.sum(tl.where(experts == best, e, 0.0), 0) * inv_sum
            ids = tl.where(slots == j, best, ids)
            weights = tl.where(slots == j, p, weights)
            # A taken expert drops below every float key (the lowest float key is above INT32_MIN).
            key = tl.where(experts == best, _INT32_MIN, key)
    if RENORMALIZE:
        weights = weights / tl.sum(weights, 0)
    return ids, weights


@triton.jit(do_not_specialize=["num_tokens"])
def moe_softmax_topk_kernel(
    logits_ptr,
    topk_ids_ptr,
    topk_weights_ptr,
    num_tokens,
    num_experts,
    stride_lm,
    TOP_K: tl.constexpr,
    K_POW2: tl.constexpr,
    E_POW2: tl.constexpr,
    RENORMALIZE: tl.constexpr,
):
    """One program per token: softmax over experts, top-k, optional renormalisation."""
    token = tl.program_id(0).to(tl.int64)
    ids, weights = softmax_topk_row(
        logits_ptr + token * stride_lm, num_experts, TOP_K, K_POW2, E_POW2, RENORMALIZE
    )
    slots = tl.arange(0, K_POW2)
    tl.store(topk_ids_ptr + token * TOP_K + slots, ids, mask=slots < TOP_K)
    tl.store(topk_weights_ptr + token * TOP_K + slots, weights, mask=slots < TOP_K)


_LOGIT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def check_router_logits(router_logits: torch.Tensor, top_k: int, where: str = "softmax_topk") -> None:
    """Raise a one-line ValueError/TypeError naming ``where`` for unusable router logits or top_k."""
    if router_logits.dim() != 2:
        raise ValueError(f"{where}: router_logits must be [tokens, experts], got shape {tuple(router_logits.shape)}")
    if router_logits.dtype not in _LOGIT_DTYPES:
        raise TypeError(f"{where}: router_logits must be float32, bfloat16 or float16, got {router_logits.dtype}")
    if router_logits.stride(1) != 1:
        raise ValueError(f"{where}: router_logits needs a contiguous expert dimension, "
                         f"got strides {router_logits.stride()}")
    E = router_logits.shape[1]
    if not isinstance(top_k, int) or not 1 <= top_k <= E:
        raise ValueError(f"{where}: top_k must be an int in [1, {E}] (the number of experts), got {top_k!r}")


def softmax_topk(
    router_logits: torch.Tensor, top_k: int, renormalize: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax top-k routing on the device: ``(topk_weights fp32 [M, k], topk_ids int32 [M, k])``.

    One launch, no host synchronisation, one compiled variant for every M.

    >>> w, ids = softmax_topk(torch.randn(4, 128, device="cuda"), 8, renormalize=True)  # doctest: +SKIP
    """
    check_router_logits(router_logits, top_k)
    M, E = router_logits.shape
    ids = torch.empty((M, top_k), dtype=torch.int32, device=router_logits.device)
    weights = torch.empty((M, top_k), dtype=torch.float32, device=router_logits.device)
    if M:
        moe_softmax_topk_kernel[(M,)](
            router_logits, ids, weights, M, E, router_logits.stride(0),
            TOP_K=top_k, K_POW2=triton.next_power_of_2(top_k), E_POW2=triton.next_power_of_2(E),
            RENORMALIZE=bool(renormalize),
        )
    return weights, ids


def softmax_topk_reference(
    router_logits: torch.Tensor, top_k: int, renormalize: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Plain torch: fp32 softmax, then the k largest with ties to the lower index (stable sort).

    Equal to ``torch.topk(torch.softmax(logits.float(), -1), k)`` wherever that has no ties.
    """
    check_router_logits(router_logits, top_k, "softmax_topk_reference")
    probs = torch.softmax(router_logits.float(), dim=-1)
    weights, ids = torch.sort(probs, dim=-1, descending=True, stable=True)
    weights, ids = weights[:, :top_k], ids[:, :top_k]
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids.to(torch.int32)
