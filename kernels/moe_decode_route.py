"""Launch 1 of the decode MoE layer (``moe_decode``'s grouped path): routing, activation scales, alignment.

``moe_decode_route_kernel`` runs one program per token and one more: softmax top-k (ties to the
lower expert index), the activation scales of ``x`` for FP8 (per token, per 128-column group, or a
tensor absmax; with block scales also x as e4m3), zeroed absmax slots for the intermediate, and the
expert-sorted, tile-padded pair layout of ``moe_align`` for all tokens at once. The host side (grid,
buffers, switches) is ``moe_decode.plan_fused_moe_decode``.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .moe_quant import row_absmax
from .moe_routing import HAS_BATCHED_TOPK, softmax_topk_row, softmax_topk_rows
from .pdl import launch_dependents, wait_for_prior_launch

__all__ = ["moe_decode_route_kernel"]

# tl.gather (Triton >= 3.3): the last arriver looks up each pair's expert start in registers;
# without it, through memory (one more round trip).
HAS_GATHER = tl.constexpr(hasattr(tl, "gather"))


# `tl.gather` in a function of its own, defined only where it exists (as moe_routing's _bitonic_topk:
# Triton 3.2's source hash); without it the stand-in is never called (the caller is under GATHER).
if HAS_GATHER:
    @triton.jit
    def _gather(x, index, axis: tl.constexpr):
        return tl.gather(x, index, axis)
else:
    @triton.jit
    def _gather(x, index, axis: tl.constexpr):
        return x


@triton.jit
def _store_x_group_scales(v, groups, cols, token, hidden, x_scale_ptr, stride_xsm, xq_ptr, GROUP: tl.constexpr,
                          FP8_MAX_C: tl.constexpr, MIN_AMAX: tl.constexpr, WRITE_XQ: tl.constexpr):
    """Scales of x's 128-column groups in ``v`` [groups, GROUP] (fp32), and with WRITE_XQ x as e4m3."""
    scale = tl.maximum(tl.max(tl.abs(v), axis=1), MIN_AMAX) / FP8_MAX_C
    tl.store(x_scale_ptr + token * stride_xsm + groups, scale, mask=groups * GROUP < hidden)
    if WRITE_XQ:
        q = tl.clamp(v / scale[:, None], -FP8_MAX_C, FP8_MAX_C).to(tl.float8e4nv)
        tl.store(xq_ptr + token * hidden + cols, q, mask=cols < hidden)


@triton.jit(do_not_specialize=["num_tokens", "num_pairs", "padded_len", "num_blocks", "block_m"])
def moe_decode_route_kernel(
    logits_ptr,
    x_ptr,
    topk_ids_ptr,
    topk_weights_ptr,
    sorted_ids_ptr,
    expert_ids_ptr,
    num_padded_ptr,
    counts_ptr,
    starts_ptr,
    x_scale_ptr,
    x_amax_ptr,
    a2_amax_ptr,
    arrivals_ptr,
    xq_ptr,
    num_tokens,
    num_experts,
    hidden,
    stride_lm,
    stride_xm,
    stride_xsm,
    a2_amax_cols,
    num_pairs,
    padded_len,
    num_blocks,
    block_m,
    TOP_K: tl.constexpr,
    K_POW2: tl.constexpr,
    E_POW2: tl.constexpr,
    P_POW2: tl.constexpr,
    RENORMALIZE: tl.constexpr,
    QUANT: tl.constexpr,
    GROUP: tl.constexpr,
    BLOCK_H: tl.constexpr,
    FILL_BLOCK: tl.constexpr,
    FP8_MAX_C: tl.constexpr,
    MIN_AMAX: tl.constexpr,
    LAUNCH_DEPENDENTS: tl.constexpr,
    WRITE_XQ: tl.constexpr = False,
    HIDDEN_POW2: tl.constexpr = 0,
    FEW_TOKENS: tl.constexpr = 8,
    FEW_ELEMENTS: tl.constexpr = 1024,
    ranks_ptr=None,
    ROUTE: tl.constexpr = True,
    ZERO_PAIR_READY: tl.constexpr = False,
    pair_ready_ptr=None,
    WAIT_PRIOR: tl.constexpr = False,
    ROUTE_TOKENS: tl.constexpr = False,
    ROUTERS_APART: tl.constexpr = False,
    EXPERT_PAIRS: tl.constexpr = False,
    expert_pairs_ptr=None,
):
    """Routing of token ``program_id`` and its activation scales; then the alignment of every pair.

    Up to FEW_TOKENS tokens and FEW_ELEMENTS logits (not with per-tensor scales), one program (the
    last of num_tokens + 1, else program 0) routes every token at once and aligns the pairs in
    registers while each token's program quantizes its row: no arrival counter, no round trip
    between programs. Otherwise each program routes its own token and takes its pairs' ranks from the
    per-expert counters (zero between calls) before it arrives (an atomic counter); the last one to arrive
    reads ranks and counts in one round trip, aligns every pair and resets the counters.
    WRITE_XQ (block scales): also writes the token's e4m3 row to ``xq`` so gate_up loads FP8 directly.
    ROUTE=False: each program only quantizes its token's row (the pairs path's GEMMs route themselves);
    with ZERO_PAIR_READY it also zeroes its pairs' ``pair_ready`` counters (moe_decode's per-pair handoff);
    with ROUTE_TOKENS it also routes its token into ``topk_ids`` / ``topk_weights`` (no alignment: the
    Gluon GEMMs of the pairs path read each pair's expert there), or with ROUTERS_APART (a grid of
    2 * num_tokens) program num_tokens + t routes token t while program t quantizes its row.
    ROUTE with ROUTERS_APART (a grid of 2 * num_tokens, not with a tensor scale): program num_tokens + t
    routes token t and takes its pairs' ranks, program t quantizes its row, and the last router to
    arrive aligns every pair (no few-token path). With EXPERT_PAIRS no router waits for the others and
    nothing is aligned: each stores its pairs at their ranks in ``expert_pairs`` ([E, num_tokens]: each
    expert's pairs in rank order) and the counters keep each expert's count for the Gluon GEMMs, which
    find their token tile from them (``moe_decode_gluon``'s TILES_FROM_COUNTS); the layer's last launch
    zeroes the counters after down has read them.
    WAIT_PRIOR (a PDL launch of its own): waits for the launch before (which wrote x and the logits)
    before anything else, and only then lets the next launch start.
    """
    if WAIT_PRIOR:
        wait_for_prior_launch()
    if LAUNCH_DEPENDENTS:
        launch_dependents()
    token = tl.program_id(0).to(tl.int64)
    X_ONE_PASS: tl.constexpr = (QUANT == 3) and (BLOCK_H >= HIDDEN_POW2)
    x_row = tl.zeros((BLOCK_H // GROUP, GROUP), dtype=tl.float32)
    if X_ONE_PASS:
        # Issued before the routing's loads so both are in flight together.
        groups1 = tl.arange(0, BLOCK_H // GROUP)
        cols1 = groups1[:, None] * GROUP + tl.arange(0, GROUP)[None, :]
        row_len = tl.where(token < num_tokens, hidden, 0)  # the routing's own program has no row
        x_row = tl.load(x_ptr + token * stride_xm + cols1, mask=cols1 < row_len, other=0.0).to(tl.float32)
    if ROUTERS_APART or (not ROUTE):
        # Program t quantizes token t's row (and without routers apart, with ROUTE_TOKENS, routes it too). With
        # ROUTERS_APART program num_tokens + t routes token t; with ROUTE the router also takes its pairs' ranks
        # and arrives: the last router to arrive aligns every pair, without waiting for any row (so never with a
        # tensor scale, whose value needs every row's absmax: the host does not ask for it then).
        if token < num_tokens:
            _quantize_x_row(x_ptr, x_row, token, hidden, stride_xm, stride_xsm, x_scale_ptr, x_amax_ptr, a2_amax_ptr,
                            a2_amax_cols, xq_ptr, TOP_K, K_POW2, QUANT, GROUP, BLOCK_H, FP8_MAX_C, MIN_AMAX, WRITE_XQ,
                            X_ONE_PASS)
            if ROUTE_TOKENS and (not ROUTERS_APART):
                _route_token(logits_ptr, topk_ids_ptr, topk_weights_ptr, token, num_experts, stride_lm, TOP_K,
                             K_POW2, E_POW2, RENORMALIZE)
            if ZERO_PAIR_READY:
                _zero_pair_ready(pair_ready_ptr, token, TOP_K, K_POW2)
        else:
            # Nested, not one condition: Triton 3.2 compiles no branch mixing a constexpr with a runtime value.
            if ROUTERS_APART:
                routed = token - num_tokens
                ids = _route_token(logits_ptr, topk_ids_ptr, topk_weights_ptr, routed, num_experts, stride_lm, TOP_K,
                                   K_POW2, E_POW2, RENORMALIZE)
                if ROUTE:
                    slots = tl.arange(0, K_POW2)
                    ranks = tl.atomic_add(counts_ptr + ids, 1, mask=slots < TOP_K, sem="relaxed", scope="gpu")
                    if EXPERT_PAIRS:
                        # A rank is below num_tokens (a token takes an expert once) unless the counters were
                        # not zero at the start (a launch replayed alone): never stored out of the buffer.
                        tl.store(expert_pairs_ptr + ids * num_tokens + ranks, routed * TOP_K + slots,
                                 mask=(slots < TOP_K) & (ranks < num_tokens))
                    else:
                        tl.store(ranks_ptr + routed * TOP_K + slots, ranks, mask=slots < TOP_K)
                        _arrive_and_align_last(arrivals_ptr, num_tokens, topk_ids_ptr, ranks_ptr, sorted_ids_ptr,
                                               expert_ids_ptr, num_padded_ptr, counts_ptr, starts_ptr, x_scale_ptr,
                                               x_amax_ptr, num_pairs, num_experts, padded_len, num_blocks, block_m,
                                               E_POW2, P_POW2, FILL_BLOCK, QUANT, FP8_MAX_C, MIN_AMAX)
        return
    # Per-tensor scales need every token's absmax before the scale: they keep the counter path.
    # Parenthesised: Triton 3.2 takes no chained boolean operators.
    FEW_PATH: tl.constexpr = (QUANT != 1) and HAS_BATCHED_TOPK
    if FEW_PATH:
        # One program's top-k over [tokens, experts] grows with both: past FEW_ELEMENTS the routing
        # spread over the programs wins (H200: DeepSeek's 8 x 256 took 12 us here, 6.8 spread out).
        few_tokens = (num_tokens <= FEW_TOKENS) & (num_tokens * E_POW2 <= FEW_ELEMENTS)
    else:
        few_tokens = num_tokens < 0
    # A grid of num_tokens + 1 programs gives the routing a program of its own, the last.
    router = num_tokens if tl.num_programs(0) > num_tokens else 0
    if few_tokens:
        # FEW_PATH (a constexpr) alone, outside the runtime test: Triton 3.2 (no tl.topk) compiles
        # a branch whose condition mixes a false constexpr with a runtime value.
        if FEW_PATH:
            if token == router:
                # Tiles of 1, 2, 4 or FEW_TOKENS rows: one token pays for one row's top-k, not eight.
                if num_tokens == 1:
                    _route_and_align_few_tokens(logits_ptr, topk_ids_ptr, topk_weights_ptr, sorted_ids_ptr,
                                                expert_ids_ptr, num_padded_ptr, num_tokens, num_experts, stride_lm,
                                                num_pairs, padded_len, num_blocks, block_m, TOP_K, K_POW2, E_POW2,
                                                RENORMALIZE, FILL_BLOCK, 1)
                elif num_tokens == 2:
                    _route_and_align_few_tokens(logits_ptr, topk_ids_ptr, topk_weights_ptr, sorted_ids_ptr,
                                                expert_ids_ptr, num_padded_ptr, num_tokens, num_experts, stride_lm,
                                                num_pairs, padded_len, num_blocks, block_m, TOP_K, K_POW2, E_POW2,
                                                RENORMALIZE, FILL_BLOCK, 2)
                elif num_tokens <= 4:
                    _route_and_align_few_tokens(logits_ptr, topk_ids_ptr, topk_weights_ptr, sorted_ids_ptr,
                                                expert_ids_ptr, num_padded_ptr, num_tokens, num_experts, stride_lm,
                                                num_pairs, padded_len, num_blocks, block_m, TOP_K, K_POW2, E_POW2,
                                                RENORMALIZE, FILL_BLOCK, 4)
                else:
                    _route_and_align_few_tokens(logits_ptr, topk_ids_ptr, topk_weights_ptr, sorted_ids_ptr,
                                                expert_ids_ptr, num_padded_ptr, num_tokens, num_experts, stride_lm,
                                                num_pairs, padded_len, num_blocks, block_m, TOP_K, K_POW2, E_POW2,
                                                RENORMALIZE, FILL_BLOCK, FEW_TOKENS)
        if token < num_tokens:
            _quantize_x_row(x_ptr, x_row, token, hidden, stride_xm, stride_xsm, x_scale_ptr, x_amax_ptr, a2_amax_ptr,
                            a2_amax_cols, xq_ptr, TOP_K, K_POW2, QUANT, GROUP, BLOCK_H, FP8_MAX_C, MIN_AMAX, WRITE_XQ,
                            X_ONE_PASS)
    elif token < num_tokens:
        ids = _route_token(logits_ptr, topk_ids_ptr, topk_weights_ptr, token, num_experts, stride_lm, TOP_K, K_POW2,
                           E_POW2, RENORMALIZE)
        slots = tl.arange(0, K_POW2)
        # Each pair's rank among its expert's pairs (any order is a valid layout); the result is
        # first used after the row is quantized, so the round trip overlaps that work.
        ranks = tl.atomic_add(counts_ptr + ids, 1, mask=slots < TOP_K, sem="relaxed", scope="gpu")
        _quantize_x_row(x_ptr, x_row, token, hidden, stride_xm, stride_xsm, x_scale_ptr, x_amax_ptr, a2_amax_ptr,
                        a2_amax_cols, xq_ptr, TOP_K, K_POW2, QUANT, GROUP, BLOCK_H, FP8_MAX_C, MIN_AMAX, WRITE_XQ,
                        X_ONE_PASS)
        tl.store(ranks_ptr + token * TOP_K + slots, ranks, mask=slots < TOP_K)
        _arrive_and_align_last(arrivals_ptr, num_tokens, topk_ids_ptr, ranks_ptr, sorted_ids_ptr, expert_ids_ptr,
                               num_padded_ptr, counts_ptr, starts_ptr, x_scale_ptr, x_amax_ptr, num_pairs, num_experts,
                               padded_len, num_blocks, block_m, E_POW2, P_POW2, FILL_BLOCK, QUANT, FP8_MAX_C,
                               MIN_AMAX)


@triton.jit
def _arrive_and_align_last(arrivals_ptr, num_tokens, topk_ids_ptr, ranks_ptr, sorted_ids_ptr, expert_ids_ptr,
                           num_padded_ptr, counts_ptr, starts_ptr, x_scale_ptr, x_amax_ptr, num_pairs, num_experts,
                           padded_len, num_blocks, block_m, E_POW2: tl.constexpr, P_POW2: tl.constexpr,
                           FILL_BLOCK: tl.constexpr, QUANT: tl.constexpr, FP8_MAX_C: tl.constexpr,
                           MIN_AMAX: tl.constexpr):
    """One arrival of num_tokens (an atomic counter, reset by the last): the last to arrive writes the
    layout (by the ranks the routing programs took) and, with a tensor scale, x's scale from the absmax every
    token folded in."""
    # Every thread's stores precede the release of this program's arrival.
    tl.debug_barrier()
    arrived = tl.atomic_add(arrivals_ptr, 1, sem="acq_rel", scope="gpu")
    if arrived == num_tokens - 1:
        tl.store(arrivals_ptr, 0)
        tl.debug_barrier()
        _fill_layout(sorted_ids_ptr, expert_ids_ptr, num_pairs, padded_len, num_blocks, FILL_BLOCK)
        _align_by_ranks(topk_ids_ptr, ranks_ptr, sorted_ids_ptr, expert_ids_ptr, num_padded_ptr, counts_ptr,
                        starts_ptr, num_pairs, num_experts, block_m, E_POW2, P_POW2, HAS_GATHER)
        if QUANT == 1:
            x_amax = tl.load(x_amax_ptr, volatile=True)
            tl.store(x_scale_ptr, tl.maximum(x_amax, MIN_AMAX) / FP8_MAX_C)
            tl.store(x_amax_ptr, 0.0)


@triton.jit
def _zero_pair_ready(pair_ready_ptr, token, TOP_K: tl.constexpr, K_POW2: tl.constexpr):
    """Token ``token``'s pairs' ``pair_ready`` counters back to zero (moe_decode's per-pair handoff)."""
    slots = tl.arange(0, K_POW2)
    tl.store(pair_ready_ptr + token * TOP_K + slots, tl.zeros((K_POW2,), dtype=tl.int32), mask=slots < TOP_K)


@triton.jit
def _route_token(logits_ptr, topk_ids_ptr, topk_weights_ptr, token, num_experts, stride_lm, TOP_K: tl.constexpr,
                 K_POW2: tl.constexpr, E_POW2: tl.constexpr, RENORMALIZE: tl.constexpr):
    """Token ``token``'s softmax top-k into ``topk_ids`` / ``topk_weights``; returns its expert ids [K_POW2]."""
    ids, weights = softmax_topk_row(logits_ptr + token * stride_lm, num_experts, TOP_K, K_POW2, E_POW2, RENORMALIZE)
    slots = tl.arange(0, K_POW2)
    tl.store(topk_ids_ptr + token * TOP_K + slots, ids, mask=slots < TOP_K)
    tl.store(topk_weights_ptr + token * TOP_K + slots, weights, mask=slots < TOP_K)
    return ids


@triton.jit
def _quantize_x_row(x_ptr, x_row, token, hidden, stride_xm, stride_xsm, x_scale_ptr, x_amax_ptr, a2_amax_ptr,
                    a2_amax_cols, xq_ptr, TOP_K: tl.constexpr, K_POW2: tl.constexpr, QUANT: tl.constexpr,
                    GROUP: tl.constexpr, BLOCK_H: tl.constexpr, FP8_MAX_C: tl.constexpr, MIN_AMAX: tl.constexpr,
                    WRITE_XQ: tl.constexpr, X_ONE_PASS: tl.constexpr):
    """Token ``token``'s activation scales (and e4m3 row), and zeroed absmax slots of its pairs for
    gate_up's intermediate: QUANT 1 folds the row's absmax into ``x_amax``, 2 one scale per row,
    3 one per 128-column group (``x_row`` holds the row already when X_ONE_PASS). Only the tl gate_up
    folds atomic maxima into those slots; the Gluon GEMMs store whole scales (or down quantizes), so for
    them the zeroing is spare work (a few stores a token, left untimed)."""
    slots = tl.arange(0, K_POW2)
    if QUANT == 1:
        # Tensor scale: every token folds its absmax in; the last program turns it into the scale.
        tl.atomic_max(x_amax_ptr, row_absmax(x_ptr + token * stride_xm, hidden, BLOCK_H))
        if token == 0:
            tl.store(a2_amax_ptr, 0.0)
    elif QUANT == 2:
        tl.store(x_scale_ptr + token, tl.maximum(row_absmax(x_ptr + token * stride_xm, hidden, BLOCK_H), MIN_AMAX)
                 / FP8_MAX_C)
        tl.store(a2_amax_ptr + token * TOP_K + slots, tl.zeros((K_POW2,), dtype=tl.float32), mask=slots < TOP_K)
    elif QUANT == 3:
        if X_ONE_PASS:
            groups1 = tl.arange(0, BLOCK_H // GROUP)
            cols1 = groups1[:, None] * GROUP + tl.arange(0, GROUP)[None, :]
            _store_x_group_scales(x_row, groups1, cols1, token, hidden, x_scale_ptr, stride_xsm, xq_ptr, GROUP,
                                  FP8_MAX_C, MIN_AMAX, WRITE_XQ)
        else:
            for h0 in range(0, hidden, BLOCK_H):
                groups = h0 // GROUP + tl.arange(0, BLOCK_H // GROUP)
                cols = groups[:, None] * GROUP + tl.arange(0, GROUP)[None, :]
                v = tl.load(x_ptr + token * stride_xm + cols, mask=cols < hidden, other=0.0).to(tl.float32)
                _store_x_group_scales(v, groups, cols, token, hidden, x_scale_ptr, stride_xsm, xq_ptr, GROUP,
                                      FP8_MAX_C, MIN_AMAX, WRITE_XQ)
        for c0 in range(0, a2_amax_cols, 32):
            cols = c0 + tl.arange(0, 32)
            rows = token * TOP_K + slots
            tl.store(
                a2_amax_ptr + rows[:, None] * a2_amax_cols + cols[None, :],
                tl.zeros((K_POW2, 32), dtype=tl.float32),
                mask=(slots < TOP_K)[:, None] & (cols < a2_amax_cols)[None, :],
            )


@triton.jit
def _fill_layout(sorted_ids_ptr, expert_ids_ptr, num_pairs, padded_len, num_blocks, FILL_BLOCK: tl.constexpr):
    """Every slot of the padded layout empty (the sentinel pair ``num_pairs``), every tile unlabelled (-1)."""
    # padded_len is a multiple of block_m >= 8 and the workspace a multiple of 64: filling to the
    # next multiple of 16 stays inside it, and a bound the compiler knows to be a multiple of 16
    # keeps the stores vectorized although padded_len is demoted.
    fill_len = (padded_len + 15) // 16 * 16
    for f0 in range(0, fill_len, FILL_BLOCK):
        offs = f0 + tl.arange(0, FILL_BLOCK)
        tl.store(sorted_ids_ptr + offs, tl.zeros((FILL_BLOCK,), dtype=tl.int32) + num_pairs, mask=offs < fill_len)
    for f0 in range(0, num_blocks, FILL_BLOCK):
        offs = f0 + tl.arange(0, FILL_BLOCK)
        tl.store(expert_ids_ptr + offs, tl.zeros((FILL_BLOCK,), dtype=tl.int32) - 1, mask=offs < num_blocks)


@triton.jit
def _route_and_align_few_tokens(logits_ptr, topk_ids_ptr, topk_weights_ptr, sorted_ids_ptr, expert_ids_ptr,
                                num_padded_ptr, num_tokens, num_experts, stride_lm, num_pairs, padded_len,
                                num_blocks, block_m, TOP_K: tl.constexpr, K_POW2: tl.constexpr,
                                E_POW2: tl.constexpr, RENORMALIZE: tl.constexpr, FILL_BLOCK: tl.constexpr,
                                FEW_TOKENS: tl.constexpr):
    """Route up to FEW_TOKENS tokens in one top-k over their logits rows, store the routing, and
    write the expert-sorted, tile-padded layout from registers.

    A pair's rank is the number of earlier pairs with its expert; its expert's run starts after
    every smaller expert's tiles, and each tile is opened by the pair of rank 0, block_m, ... in it.
    """
    rows = tl.arange(0, FEW_TOKENS)
    ids, weights = softmax_topk_rows(logits_ptr, rows, rows < num_tokens, stride_lm, num_experts, TOP_K, K_POW2,
                                     E_POW2, RENORMALIZE)
    slots = tl.arange(0, K_POW2)
    pair_2d = rows[:, None] * TOP_K + slots[None, :]
    valid_2d = (rows < num_tokens)[:, None] & (slots < TOP_K)[None, :]
    tl.store(topk_ids_ptr + pair_2d, ids, mask=valid_2d)
    tl.store(topk_weights_ptr + pair_2d, weights, mask=valid_2d)
    _fill_layout(sorted_ids_ptr, expert_ids_ptr, num_pairs, padded_len, num_blocks, FILL_BLOCK)
    P: tl.constexpr = FEW_TOKENS * K_POW2
    pair = tl.reshape(pair_2d, (P,))
    valid = tl.reshape(valid_2d, (P,))
    expert = tl.where(valid, tl.reshape(ids, (P,)), -1)
    order = tl.arange(0, P)
    same_before = (expert[:, None] == expert[None, :]) & (order[None, :] < order[:, None]) & valid[None, :]
    rank = tl.sum(same_before.to(tl.int32), axis=1)
    opens_tile = valid & (rank % block_m == 0)
    tiles_before = tl.sum(((expert[None, :] < expert[:, None]) & opens_tile[None, :]).to(tl.int32), axis=1)
    pos = tiles_before * block_m + rank
    # The fills above precede these stores to the same slots.
    tl.debug_barrier()
    tl.store(num_padded_ptr, tl.sum(opens_tile.to(tl.int32), 0) * block_m)
    tl.store(sorted_ids_ptr + pos, pair, mask=valid)
    tl.store(expert_ids_ptr + pos // block_m, expert, mask=opens_tile)


@triton.jit
def _align_by_ranks(topk_ids_ptr, ranks_ptr, sorted_ids_ptr, expert_ids_ptr, num_padded_ptr, counts_ptr, starts_ptr,
                    num_pairs, num_experts, block_m, E_POW2: tl.constexpr, P_POW2: tl.constexpr,
                    GATHER: tl.constexpr):
    """The layout from each pair's rank and each expert's count, taken by the token programs; then
    the counters back to zero for the next call."""
    # The layout fills before this precede its stores.
    tl.debug_barrier()
    pairs = tl.arange(0, P_POW2)
    valid = pairs < num_pairs
    expert = tl.load(topk_ids_ptr + pairs, mask=valid, other=0, volatile=True)
    rank = tl.load(ranks_ptr + pairs, mask=valid, other=0, volatile=True)
    experts = tl.arange(0, E_POW2)
    e_mask = experts < num_experts
    counts = tl.load(counts_ptr + experts, mask=e_mask, other=0, volatile=True)
    padded = (counts + block_m - 1) // block_m * block_m
    starts = tl.cumsum(padded, 0) - padded
    tl.store(num_padded_ptr, tl.sum(padded, 0))
    if GATHER:
        start = _gather(starts, expert, 0)
    else:
        tl.store(starts_ptr + experts, starts, mask=e_mask)
        tl.debug_barrier()
        start = tl.load(starts_ptr + expert, mask=valid, other=0, volatile=True)
    pos = start + rank
    tl.store(sorted_ids_ptr + pos, pairs, mask=valid)
    # Each tile starts with a real pair (runs start tile-aligned): it labels the tile.
    tl.store(expert_ids_ptr + pos // block_m, expert, mask=valid & (rank % block_m == 0))
    # Every thread has read the counts before any is reset (a value may be held by several threads).
    tl.debug_barrier()
    tl.store(counts_ptr + experts, tl.zeros((E_POW2,), dtype=tl.int32), mask=e_mask)
