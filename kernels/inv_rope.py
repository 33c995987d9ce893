"""Fused inverse RoPE + FP8 e4m3 quantization, one compiled variant for every token count.

For each (token, head) row of ``o`` [T, H, D] (bf16), rotate the rope slice by -theta
(GPT-J interleaved or NeoX half-split pairs, cos/sin from ``cos_sin_cache[positions]``), then
quantize the row to FP8 e4m3 per ``group_size`` elements (or per head) with fp32,
power-of-two, or packed UE8M0 scales.

Why it never recompiles across T: the only token-count-derived argument is ``num_tokens``
(``do_not_specialize``); every size derived from it (rows, tiles, the output's group stride
``T * d``, the padded scale stride ``align(T, 4)``) is computed inside the kernel, and the
grid is not part of Triton's key. The positions pointer is exempt from alignment
specialization because callers slice it out of persistent buffers.

Layouts: the output buffer is ``[n_groups, T, H / n_groups * D]`` (n_groups=1 is plain
``[T, H, D]``; n_groups>1 is upstream vLLM's grouped layout for the o-projection). Scales are
``[T, H * chunks]`` row-major, or MN-major (stride 1 along T, T padded to a multiple of 4,
padding rows zero) as DeepGEMM's TMA-aligned scale layout. ``fused_inv_rope_fp8_quant``
reproduces upstream vLLM's function signature and outputs.

Example::

    out, scales = inv_rope_fp8(o, positions, cos_sin_cache)        # [T, H, D] fp8, [T, H, 4]
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = float(torch.finfo(FP8_DTYPE).max)
AMAX_EPS = 1e-10
SCALE_FORMATS = ("fp32", "pow2", "ue8m0_packed")
SCALE_LAYOUTS = ("row", "mn_major")
STYLES = ("gptj", "neox")
INPUT_DTYPES = (torch.bfloat16, torch.float16)
CACHE_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
POSITION_DTYPES = (torch.int64, torch.int32)

# Measured on an H200 (benchmarks/results/inv_rope_fp8.md): one (token, head) row of 512 per
# one-warp program, 32 programs per SM (the resident-block limit) looping over rows, with the
# next row's loads issued before the current one is computed, beat wider tiles and more warps;
# and at mid sizes, two tiles per program beat one (see launch_inv_rope_fp8's grid).
_ELEMENTS_PER_TILE = 512
_PROGRAMS_PER_SM = 32
_PREFETCH = True
# Prefetch only while programs have at most this many tiles each (0: always). Two H100s
# (inv_rope_fp8.md): no prefetch (184 instructions a row against 213) 2.2-4.5% faster at T = 8192-65536 and 0.7-5%
# slower at T = 256 and 1024-4096; the switch (both loops inlined in the one variant) got that gain only at
# 8192-16384 and ran as slow as the prefetching loop at 32768-65536. With the loops called apart (not inlined:
# `_one_row_loop_apart`, each compiled as if alone), 16 tiles on an H100 (inv_rope_fp8.md): no prefetch's gain at
# every T >= 8192 and the prefetch's lead at 256, but 40 ns slower at one token (1.83 against 1.79 us, behind
# vLLM's 1.82). Off: not measured on an H200, where the 255-instruction loop had no prefetch 3-4% slower at
# 1024-8192.
_PREFETCH_MAX_TILES = 0
# The output rows are stored streaming (st.global.cs, evict first from L2: nothing here reads them
# again). H200, two calls side by side (inv_rope_fp8.md): T = 256 12-14% faster,
# within 1% of the plain store at every other T measured.
_STORE_CACHE = ".cs"
# No clamp before the fp8 cast (it saturates, and the values are in range up to rounding). H200,
# side by side in three calls (inv_rope_fp8.md): 1.0-2.5% faster at T >= 256, level
# below, the output bytes equal the clamped kernel's at every T.
_CLAMP_FP8 = False
# Fewer instructions a row (sm_90, Triton 3.6: the tile loop 255 -> 214 instructions):
# the power-of-two inverse scale from its exponent instead of a division, the rope columns left out of the
# row's load (its absmax then needs no select), a rope chunk's absmax in one reduction over both halves of its
# pairs. Each gives the same bytes. H100, side by side with the kernel before (inv_rope_fp8.md): level at T <= 4096,
# 1.6-1.7% faster at 8192-16384; not yet measured on an H200. Tried offline and
# dropped, never timed: with more instructions, the row's absmax and scaling on its bf16 values (217: the abs
# costs an HFMA2 a pair and the fp8 cast still needs fp32), the row carried as int32 words of two bf16 so the
# prefetched tile needs no PRMT to unpack (248: the joined words take another layout, and shuffles), row indices
# in int32 (211: the addresses stay 64-bit); with 3% fewer, not worth inline assembly, a word-aligned input and
# a second path for the interpreter and fp16 inputs, the row loaded as int32 words of two bf16, unpacked by a
# shift and a mask and stored through `cvt.rn.satfinite.e4m3x2` (Triton 3.6: 206 with the
# prefetch, 177 without, against 213 and 184; 3.9: 212 and 183 against 220 and 191).
_POW2_INVERSE_BITS = True
_ROPE_MASKED_LOAD = True
_ROPE_ONE_REDUCTION = True
_DEFAULT_SM_COUNT = 132  # H100/H200; used when tensors are not on a GPU (offline backend).
# Refuted, removed (last in commit 17fa1a5): token runs a row at a time (a tile one head's run
# of RUN consecutive tokens, unrolled, its MN-major scales kept until the run's last row and stored as one column
# of contiguous words; 187 sm_90 instructions a row against 213, 60 registers against 51). Three H100s
# (inv_rope_fp8.md), runs of 4 against the shipped loop: 6-60% slower at
# T <= 1024, level at 4096, at best 1.5% faster at 8192 and up to 1.7% slower above. No H200 measured it.
# Refuted, removed: with MN-major scales, tiles of one head's run of 2-8 consecutive tokens (so each scale
# column is one store of contiguous words; _MN_MAJOR_TOKEN_RUN, launch_inv_rope_fp8(token_run=)). H200,
# 2026-12-03 (benchmarks/results/inv_rope_fp8.md), vLLM's layout, one row a tile against
# runs of 2 on 1 warp, 4 on 1 warp, 4 on 2 warps, 8 on 2 warps: T = 4096 29.71 us against 30.48 / 32.50 /
# 33.52 / 41.37, T = 16384 108.40 against 110.24 / 114.40 / 120.84 / 136.30: slower at every run length.


@triton.jit
def _tile_rows(tile, n_rows, NUM_HEADS: tl.constexpr, ROWS: tl.constexpr):
    """A tile's rows as (token, head, in range), each [ROWS] int64."""
    rows = tl.arange(0, ROWS).to(tl.int64) + tile * ROWS
    return rows // NUM_HEADS, rows % NUM_HEADS, rows < n_rows


@triton.jit
def _load_rows(
    o_ptr, positions_ptr, token, head, row_ok, o_stride_token, o_stride_head, cols, col_ok, col_a, col_b, pair_ok,
):
    """Raw loads of one tile's rows: the rows, their rope pairs (re-read, L1 hits) and positions."""
    row_ptr = o_ptr + (token * o_stride_token + head * o_stride_head)[:, None]
    pair_mask = row_ok[:, None] & pair_ok[None, :]
    x = tl.load(row_ptr + cols[None, :], mask=row_ok[:, None] & col_ok[None, :], other=0.0)
    a = tl.load(row_ptr + col_a[None, :], mask=pair_mask, other=0.0)
    b = tl.load(row_ptr + col_b[None, :], mask=pair_mask, other=0.0)
    pos = tl.load(positions_ptr + token, mask=row_ok, other=0).to(tl.int64)
    return x, a, b, pos


@triton.jit
def _scaled(values, inverse, CLAMP: tl.constexpr, FP8_MAX_VALUE: tl.constexpr):
    """Values times their group's inverse scale, clamped to the fp8 range with CLAMP."""
    if CLAMP:
        return tl.clamp(values * inverse, -FP8_MAX_VALUE, FP8_MAX_VALUE)
    return values * inverse


@triton.jit
def _row_outputs(
    x_raw, a_raw, b_raw, pos, token, head, row_ok, cos_sin_ptr, cache_stride_pos, out_ptr, group_stride,
    cols, keep_cols, pair, pair_ok, col_a, col_b, chunk_a, chunk_b, chunk_ids,
    NUM_HEADS: tl.constexpr, HEADS_PER_GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, ROPE_START: tl.constexpr,
    HALF_ROPE: tl.constexpr, HALF_ROPE_P2: tl.constexpr, GROUP: tl.constexpr, CHUNKS: tl.constexpr,
    CHUNKS_P2: tl.constexpr,
    QUANTIZE: tl.constexpr, POW2_SCALES: tl.constexpr, PACKED_SCALES: tl.constexpr, FP8_MAX_VALUE: tl.constexpr,
    EPS: tl.constexpr, ROWS: tl.constexpr, STORE_CACHE: tl.constexpr, CLAMP_FP8: tl.constexpr,
    POW2_INVERSE_BITS: tl.constexpr, ROPE_MASKED_LOAD: tl.constexpr, ROPE_ONE_REDUCTION: tl.constexpr,
):
    """One tile's rows rotated, quantized and stored; returns their scale entries, [ROWS, CHUNKS_P2] fp32 (or
    [ROWS, CHUNKS_P2 // 4] int32 words of four UE8M0 bytes when packed; zeros when not quantizing)."""
    D_TILE: tl.constexpr = CHUNKS_P2 * GROUP
    ROPE_END: tl.constexpr = ROPE_START + 2 * HALF_ROPE
    ROW_WIDTH: tl.constexpr = HEADS_PER_GROUP * HEAD_DIM
    out_base = (head // HEADS_PER_GROUP) * group_stride + token * ROW_WIDTH + (head % HEADS_PER_GROUP) * HEAD_DIM
    x = x_raw.to(tl.float32)
    a = a_raw.to(tl.float32)
    b = b_raw.to(tl.float32)
    pair_mask = row_ok[:, None] & pair_ok[None, :]
    cache_row = cos_sin_ptr + pos * cache_stride_pos
    cos = tl.load(cache_row[:, None] + pair[None, :], mask=pair_mask, other=1.0).to(tl.float32)
    sin = tl.load(cache_row[:, None] + HALF_ROPE + pair[None, :], mask=pair_mask, other=0.0).to(tl.float32)
    # Inverse rotation (by -theta).
    new_a = a * cos + b * sin
    new_b = b * cos - a * sin

    keep_mask = row_ok[:, None] & keep_cols[None, :]
    out_rows = out_ptr + out_base
    if QUANTIZE:
        if ROPE_MASKED_LOAD:
            kept_abs = tl.abs(x)
        else:
            kept_abs = tl.where(keep_cols[None, :], tl.abs(x), 0.0)
        amax = tl.max(tl.reshape(kept_abs, (ROWS, CHUNKS_P2, GROUP)), axis=2)
        for c in tl.static_range(ROPE_START // GROUP, (ROPE_END - 1) // GROUP + 1):
            abs_a = tl.where((chunk_a == c)[None, :], tl.abs(new_a), 0.0)
            abs_b = tl.where((chunk_b == c)[None, :], tl.abs(new_b), 0.0)
            if ROPE_ONE_REDUCTION:
                rope_amax = tl.max(tl.maximum(abs_a, abs_b), axis=1)
            else:
                rope_amax = tl.maximum(tl.max(abs_a, axis=1), tl.max(abs_b, axis=1))
            amax = tl.where((chunk_ids == c)[None, :], tl.maximum(amax, rope_amax[:, None]), amax)
        scale = tl.maximum(amax, EPS) * (1.0 / FP8_MAX_VALUE)
        if POW2_SCALES:
            # Exact round-up to a power of two (log2/exp2 are approximate on the GPU).
            bits = scale.to(tl.int32, bitcast=True)
            exponent = ((bits >> 23) & 0xFF) + ((bits & 0x7FFFFF) != 0).to(tl.int32)
            scale = (exponent << 23).to(tl.float32, bitcast=True)
        if POW2_SCALES and POW2_INVERSE_BITS:
            # 1 / 2^(e - 127) = 2^(127 - e): exponent field 254 - e (0, i.e. 0.0, for an infinite scale).
            inverse = ((254 - tl.minimum(exponent, 254)) << 23).to(tl.float32, bitcast=True)
        else:
            inverse = tl.math.div_rn(tl.full(scale.shape, 1.0, tl.float32), scale)

        inverse_cols = tl.reshape(
            tl.broadcast_to(inverse[:, :, None], (ROWS, CHUNKS_P2, GROUP)), (ROWS, D_TILE)
        )
        CLAMP: tl.constexpr = CLAMP_FP8 or out_ptr.dtype.element_ty != tl.float8e4nv
        q = _scaled(x, inverse_cols, CLAMP, FP8_MAX_VALUE)
        tl.store(out_rows[:, None] + cols[None, :], q.to(out_ptr.dtype.element_ty), mask=keep_mask,
                 cache_modifier=STORE_CACHE)

        inverse_a = tl.zeros((ROWS, HALF_ROPE_P2), dtype=tl.float32)
        inverse_b = tl.zeros((ROWS, HALF_ROPE_P2), dtype=tl.float32)
        for c in tl.static_range(ROPE_START // GROUP, (ROPE_END - 1) // GROUP + 1):
            inverse_c = tl.sum(tl.where((chunk_ids == c)[None, :], inverse, 0.0), axis=1)
            inverse_a = tl.where((chunk_a == c)[None, :], inverse_c[:, None], inverse_a)
            inverse_b = tl.where((chunk_b == c)[None, :], inverse_c[:, None], inverse_b)
        q_a = _scaled(new_a, inverse_a, CLAMP, FP8_MAX_VALUE)
        q_b = _scaled(new_b, inverse_b, CLAMP, FP8_MAX_VALUE)
        tl.store(out_rows[:, None] + col_a[None, :], q_a.to(out_ptr.dtype.element_ty), mask=pair_mask,
                 cache_modifier=STORE_CACHE)
        tl.store(out_rows[:, None] + col_b[None, :], q_b.to(out_ptr.dtype.element_ty), mask=pair_mask,
                 cache_modifier=STORE_CACHE)

        if PACKED_SCALES:
            exponents = (scale.to(tl.int32, bitcast=True) >> 23) & 0xFF
            shifts = (tl.arange(0, 4) * 8)[None, None, :]
            words = tl.sum(tl.reshape(exponents, (ROWS, CHUNKS_P2 // 4, 4)) << shifts, axis=2)
            scale_values = words
        else:
            scale_values = scale
    else:
        tl.store(out_rows[:, None] + cols[None, :], x.to(out_ptr.dtype.element_ty), mask=keep_mask)
        tl.store(out_rows[:, None] + col_a[None, :], new_a.to(out_ptr.dtype.element_ty), mask=pair_mask)
        tl.store(out_rows[:, None] + col_b[None, :], new_b.to(out_ptr.dtype.element_ty), mask=pair_mask)
        scale_values = tl.zeros((ROWS, CHUNKS_P2), dtype=tl.float32)
    return scale_values


@triton.jit
def _row_columns(
    HEAD_DIM: tl.constexpr, ROPE_START: tl.constexpr, HALF_ROPE: tl.constexpr, HALF_ROPE_P2: tl.constexpr,
    NEOX: tl.constexpr, GROUP: tl.constexpr, CHUNKS_P2: tl.constexpr, ROPE_MASKED_LOAD: tl.constexpr,
):
    """A row's column indices and masks: (cols, x_cols (the columns ``x`` is loaded from), keep_cols (outside the
    rope slice), pair, pair_ok, col_a, col_b (each rope pair's two columns), chunk_a, chunk_b, chunk_ids)."""
    D_TILE: tl.constexpr = CHUNKS_P2 * GROUP
    ROPE_END: tl.constexpr = ROPE_START + 2 * HALF_ROPE
    cols = tl.arange(0, D_TILE)
    col_ok = cols < HEAD_DIM
    keep_cols = col_ok & ((cols < ROPE_START) | (cols >= ROPE_END))
    pair = tl.arange(0, HALF_ROPE_P2)
    pair_ok = pair < HALF_ROPE
    if NEOX:
        col_a = ROPE_START + pair
        col_b = ROPE_START + HALF_ROPE + pair
    else:
        col_a = ROPE_START + 2 * pair
        col_b = ROPE_START + 2 * pair + 1
    x_cols = keep_cols if ROPE_MASKED_LOAD else col_ok
    return cols, x_cols, keep_cols, pair, pair_ok, col_a, col_b, col_a // GROUP, col_b // GROUP, tl.arange(0, CHUNKS_P2)


@triton.jit
def _one_row_loop(
    o_ptr, positions_ptr, cos_sin_ptr, out_ptr, scale_ptr, n_tokens, o_stride_token, o_stride_head, cache_stride_pos,
    padded_tokens, group_stride,
    NUM_HEADS: tl.constexpr, HEADS_PER_GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, ROPE_START: tl.constexpr,
    HALF_ROPE: tl.constexpr, HALF_ROPE_P2: tl.constexpr, NEOX: tl.constexpr, GROUP: tl.constexpr,
    CHUNKS: tl.constexpr, CHUNKS_P2: tl.constexpr,
    QUANTIZE: tl.constexpr, POW2_SCALES: tl.constexpr, PACKED_SCALES: tl.constexpr, FP8_MAX_VALUE: tl.constexpr,
    EPS: tl.constexpr, ROWS: tl.constexpr, STORE_CACHE: tl.constexpr, CLAMP_FP8: tl.constexpr,
    POW2_INVERSE_BITS: tl.constexpr, ROPE_MASKED_LOAD: tl.constexpr, ROPE_ONE_REDUCTION: tl.constexpr,
    PREFETCH: tl.constexpr, SCALE_MN_MAJOR: tl.constexpr,
):
    """The tile loop: ROWS rows a tile, every grid-th tile, each tile's scales stored with it."""
    cols, x_cols, keep_cols, pair, pair_ok, col_a, col_b, chunk_a, chunk_b, chunk_ids = _row_columns(
        HEAD_DIM, ROPE_START, HALF_ROPE, HALF_ROPE_P2, NEOX, GROUP, CHUNKS_P2, ROPE_MASKED_LOAD,
    )
    SCALES_PER_ROW: tl.constexpr = CHUNKS // 4 if PACKED_SCALES else CHUNKS
    pid = tl.program_id(0)
    num_programs = tl.num_programs(0)
    n_rows = n_tokens * NUM_HEADS
    n_tiles = (n_rows + ROWS - 1) // ROWS
    if PREFETCH:
        token, head, row_ok = _tile_rows(pid, n_rows, NUM_HEADS, ROWS)
        x_next, a_next, b_next, pos_next = _load_rows(
            o_ptr, positions_ptr, token, head, row_ok, o_stride_token, o_stride_head, cols, x_cols, col_a, col_b,
            pair_ok,
        )
    for tile in range(pid, n_tiles, num_programs):
        if PREFETCH:
            # This tile's loads were issued one iteration ago; issue the next tile's now, so
            # each program keeps a tile of reads in flight while it computes.
            x_raw, a_raw, b_raw, pos = x_next, a_next, b_next, pos_next
            next_token, next_head, next_ok = _tile_rows(tile + num_programs, n_rows, NUM_HEADS, ROWS)
            x_next, a_next, b_next, pos_next = _load_rows(
                o_ptr, positions_ptr, next_token, next_head, next_ok, o_stride_token, o_stride_head, cols, x_cols,
                col_a, col_b, pair_ok,
            )
        token, head, row_ok = _tile_rows(tile, n_rows, NUM_HEADS, ROWS)
        if not PREFETCH:
            x_raw, a_raw, b_raw, pos = _load_rows(
                o_ptr, positions_ptr, token, head, row_ok, o_stride_token, o_stride_head, cols, x_cols, col_a,
                col_b, pair_ok,
            )
        scale_values = _row_outputs(
            x_raw, a_raw, b_raw, pos, token, head, row_ok, cos_sin_ptr, cache_stride_pos, out_ptr, group_stride,
            cols, keep_cols, pair, pair_ok, col_a, col_b, chunk_a, chunk_b, chunk_ids,
            NUM_HEADS, HEADS_PER_GROUP, HEAD_DIM, ROPE_START, HALF_ROPE, HALF_ROPE_P2, GROUP, CHUNKS, CHUNKS_P2,
            QUANTIZE, POW2_SCALES, PACKED_SCALES, FP8_MAX_VALUE, EPS, ROWS, STORE_CACHE, CLAMP_FP8,
            POW2_INVERSE_BITS, ROPE_MASKED_LOAD, ROPE_ONE_REDUCTION,
        )
        if QUANTIZE:
            # Scale column of (head, chunk) is head * SCALES_PER_ROW + chunk for every grouping.
            word_ids = tl.arange(0, CHUNKS_P2 // 4 if PACKED_SCALES else CHUNKS_P2)
            scale_col = head[:, None] * SCALES_PER_ROW + word_ids[None, :]
            scale_mask = row_ok[:, None] & (word_ids < SCALES_PER_ROW)[None, :]
            if SCALE_MN_MAJOR:
                scale_addr = scale_col * padded_tokens + token[:, None]
            else:
                scale_addr = token[:, None] * (NUM_HEADS * SCALES_PER_ROW) + scale_col
            tl.store(scale_ptr + scale_addr, scale_values, mask=scale_mask)


# The same loop as a function of its own (not inlined), for the prefetch switch: inlined, both loops compiled
# into one body took each other's registers and address arithmetic (sm_90, Triton 3.6: the no-prefetch loop 195
# instructions on the uniform datapath against 184 built alone) and ran 4-5% slower than the lone build at
# T >= 32768 on two H100s. Apart, each loop compiles as alone, give or take a few
# instructions (Triton 3.6: 182 and 217 against 184 and 213; 3.9: 189 and 220 against 191 and 220), for one call a
# program. Not yet timed.
_one_row_loop_apart = triton.jit(noinline=True)(_one_row_loop.fn)


@triton.jit
def _one_row_tiles(
    o_ptr, positions_ptr, cos_sin_ptr, out_ptr, scale_ptr, n_tokens, o_stride_token, o_stride_head, cache_stride_pos,
    padded_tokens, group_stride,
    NUM_HEADS: tl.constexpr, HEADS_PER_GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, ROPE_START: tl.constexpr,
    HALF_ROPE: tl.constexpr, HALF_ROPE_P2: tl.constexpr, NEOX: tl.constexpr, GROUP: tl.constexpr,
    CHUNKS: tl.constexpr, CHUNKS_P2: tl.constexpr,
    QUANTIZE: tl.constexpr, POW2_SCALES: tl.constexpr, PACKED_SCALES: tl.constexpr, FP8_MAX_VALUE: tl.constexpr,
    EPS: tl.constexpr, ROWS: tl.constexpr, STORE_CACHE: tl.constexpr, CLAMP_FP8: tl.constexpr,
    POW2_INVERSE_BITS: tl.constexpr, ROPE_MASKED_LOAD: tl.constexpr, ROPE_ONE_REDUCTION: tl.constexpr,
    PREFETCH: tl.constexpr, SCALE_MN_MAJOR: tl.constexpr, PREFETCH_MAX_TILES: tl.constexpr,
):
    """``_one_row_loop`` with PREFETCH, or, with PREFETCH_MAX_TILES > 0, prefetching only while programs have at
    most that many tiles each: both loops compiled as functions apart (``_one_row_loop_apart``), the choice a
    runtime branch on the token count."""
    if PREFETCH and PREFETCH_MAX_TILES > 0:
        if (n_tokens * NUM_HEADS + ROWS - 1) // ROWS <= PREFETCH_MAX_TILES * tl.num_programs(0):
            _one_row_loop_apart(
                o_ptr, positions_ptr, cos_sin_ptr, out_ptr, scale_ptr, n_tokens, o_stride_token, o_stride_head,
                cache_stride_pos, padded_tokens, group_stride,
                NUM_HEADS, HEADS_PER_GROUP, HEAD_DIM, ROPE_START, HALF_ROPE, HALF_ROPE_P2, NEOX, GROUP, CHUNKS,
                CHUNKS_P2,
                QUANTIZE, POW2_SCALES, PACKED_SCALES, FP8_MAX_VALUE, EPS, ROWS, STORE_CACHE, CLAMP_FP8,
                POW2_INVERSE_BITS, ROPE_MASKED_LOAD, ROPE_ONE_REDUCTION,
                True, SCALE_MN_MAJOR,
            )
        else:
            _one_row_loop_apart(
                o_ptr, positions_ptr, cos_sin_ptr, out_ptr, scale_ptr, n_tokens, o_stride_token, o_stride_head,
                cache_stride_pos, padded_tokens, group_stride,
                NUM_HEADS, HEADS_PER_GROUP, HEAD_DIM, ROPE_START, HALF_ROPE, HALF_ROPE_P2, NEOX, GROUP, CHUNKS,
                CHUNKS_P2,
                QUANTIZE, POW2_SCALES, PACKED_SCALES, FP8_MAX_VALUE, EPS, ROWS, STORE_CACHE, CLAMP_FP8,
                POW2_INVERSE_BITS, ROPE_MASKED_LOAD, ROPE_ONE_REDUCTION,
                False, SCALE_MN_MAJOR,
            )
    else:
        _one_row_loop(
            o_ptr, positions_ptr, cos_sin_ptr, out_ptr, scale_ptr, n_tokens, o_stride_token, o_stride_head,
            cache_stride_pos, padded_tokens, group_stride,
            NUM_HEADS, HEADS_PER_GROUP, HEAD_DIM, ROPE_START, HALF_ROPE, HALF_ROPE_P2, NEOX, GROUP, CHUNKS,
            CHUNKS_P2,
            QUANTIZE, POW2_SCALES, PACKED_SCALES, FP8_MAX_VALUE, EPS, ROWS, STORE_CACHE, CLAMP_FP8,
            POW2_INVERSE_BITS, ROPE_MASKED_LOAD, ROPE_ONE_REDUCTION,
            PREFETCH, SCALE_MN_MAJOR,
        )


@triton.jit(do_not_specialize=["num_tokens"], do_not_specialize_on_alignment=["positions_ptr"])
def inv_rope_fp8_kernel(
    o_ptr,
    positions_ptr,
    cos_sin_ptr,
    out_ptr,
    scale_ptr,
    num_tokens,
    o_stride_token,
    o_stride_head,
    cache_stride_pos,
    NUM_HEADS: tl.constexpr,
    HEADS_PER_GROUP: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    ROPE_START: tl.constexpr,
    HALF_ROPE: tl.constexpr,
    HALF_ROPE_P2: tl.constexpr,
    NEOX: tl.constexpr,
    GROUP: tl.constexpr,
    CHUNKS: tl.constexpr,
    CHUNKS_P2: tl.constexpr,
    QUANTIZE: tl.constexpr,
    POW2_SCALES: tl.constexpr,
    PACKED_SCALES: tl.constexpr,
    SCALE_MN_MAJOR: tl.constexpr,
    FP8_MAX_VALUE: tl.constexpr,
    EPS: tl.constexpr,
    SCALE_COLS_P2: tl.constexpr,
    ROWS: tl.constexpr,
    PREFETCH: tl.constexpr,
    STORE_CACHE: tl.constexpr,
    CLAMP_FP8: tl.constexpr = False,
    POW2_INVERSE_BITS: tl.constexpr = False,
    ROPE_MASKED_LOAD: tl.constexpr = False,
    ROPE_ONE_REDUCTION: tl.constexpr = False,
    PREFETCH_MAX_TILES: tl.constexpr = 0,
):
    """Rows are (token, head) pairs, ``ROWS`` per tile; programs stride over tiles.

    STORE_CACHE: the quantized rows' store cache modifier (``_STORE_CACHE``: streaming).
    CLAMP_FP8: clamp to the fp8 range before an fp8 cast as well (``_CLAMP_FP8``: no). The scaled
    values are within fp8's range up to rounding (|x| <= amax, times 448 / amax), which the cast
    rounds to +-448, and it saturates by itself (``cvt.rn.satfinite``); an fp32 output, the
    interpreter's check of the maths, is clamped either way, as the reference is.
    POW2_INVERSE_BITS: with power-of-two scales, the inverse scale built from the exponent (exact, as
    ``div_rn`` is) instead of a division. ROPE_MASKED_LOAD: the row's rope columns not loaded into
    ``x`` (zeros there), so its absmax needs no select; the rope pairs come from their own loads.
    ROPE_ONE_REDUCTION: a rope chunk's absmax over both halves of its pairs in one reduction (max is
    exact: the same values).
    PREFETCH_MAX_TILES: with PREFETCH and more than 0, the next tile's
    loads are issued ahead only while programs have at most that many tiles each (a runtime branch too).
    """
    ROW_WIDTH: tl.constexpr = HEADS_PER_GROUP * HEAD_DIM
    SCALES_PER_ROW: tl.constexpr = CHUNKS // 4 if PACKED_SCALES else CHUNKS
    pid = tl.program_id(0)
    n_tokens = tl.cast(num_tokens, tl.int64)  # a constexpr under default specialization
    # Derived here, not passed: both vary with T and would flip Triton's int classes.
    padded_tokens = (n_tokens + 3) // 4 * 4
    group_stride = n_tokens * ROW_WIDTH

    if QUANTIZE and SCALE_MN_MAJOR:
        if pid == 0:
            # TMA-aligned scales: zero the 0..3 padding tokens so consumers read finite data.
            # One padding token per trip of a runtime loop: its bound, not a mask over contiguous
            # tokens, depends on num_tokens, so demoting num_tokens costs no vector width.
            pad_cols = tl.arange(0, SCALE_COLS_P2)
            pad_mask = pad_cols < NUM_HEADS * SCALES_PER_ROW
            if PACKED_SCALES:
                zeros = tl.zeros((SCALE_COLS_P2,), dtype=tl.int32)
            else:
                zeros = tl.zeros((SCALE_COLS_P2,), dtype=tl.float32)
            for pad_t in range(n_tokens, padded_tokens):
                tl.store(scale_ptr + pad_cols.to(tl.int64) * padded_tokens + pad_t, zeros, mask=pad_mask)

    _one_row_tiles(
        o_ptr, positions_ptr, cos_sin_ptr, out_ptr, scale_ptr, n_tokens, o_stride_token, o_stride_head,
        cache_stride_pos, padded_tokens, group_stride,
        NUM_HEADS, HEADS_PER_GROUP, HEAD_DIM, ROPE_START, HALF_ROPE, HALF_ROPE_P2, NEOX, GROUP, CHUNKS,
        CHUNKS_P2,
        QUANTIZE, POW2_SCALES, PACKED_SCALES, FP8_MAX_VALUE, EPS, ROWS, STORE_CACHE, CLAMP_FP8,
        POW2_INVERSE_BITS, ROPE_MASKED_LOAD, ROPE_ONE_REDUCTION,
        PREFETCH, SCALE_MN_MAJOR, PREFETCH_MAX_TILES,
    )


@dataclass(frozen=True)
class InvRopeFp8Layout:
    """Everything about one call that is fixed per model: becomes the kernel's constexprs.

    Built by :func:`plan_inv_rope_fp8`; none of it depends on the token count.
    """

    num_heads: int
    head_dim: int
    n_groups: int
    rope_start: int
    rope_dim: int
    style: str
    group_size: int | None
    scale_format: str
    scale_layout: str
    quantize: bool

    @property
    def group(self) -> int:
        """Elements per quantization group (the power-of-two tile width for per-head)."""
        return triton.next_power_of_2(self.head_dim) if self.group_size is None else self.group_size

    @property
    def chunks(self) -> int:
        """Quantization groups per head."""
        return 1 if self.group_size is None else self.head_dim // self.group_size

    @property
    def scales_per_head(self) -> int:
        """Scale entries per head: chunks, or int32 words of four UE8M0 bytes."""
        return self.chunks // 4 if self.scale_format == "ue8m0_packed" else self.chunks

    @property
    def heads_per_group(self) -> int:
        """Heads in one output group."""
        return self.num_heads // self.n_groups

    def constexprs(self) -> dict[str, Any]:
        """The kernel's compile-time arguments for this layout."""
        chunks_p2 = triton.next_power_of_2(self.chunks)
        return dict(
            NUM_HEADS=self.num_heads,
            HEADS_PER_GROUP=self.heads_per_group,
            HEAD_DIM=self.head_dim,
            ROPE_START=self.rope_start,
            HALF_ROPE=self.rope_dim // 2,
            HALF_ROPE_P2=triton.next_power_of_2(max(self.rope_dim // 2, 1)),
            NEOX=self.style == "neox",
            GROUP=self.group,
            CHUNKS=self.chunks,
            CHUNKS_P2=chunks_p2,
            QUANTIZE=self.quantize,
            POW2_SCALES=self.scale_format != "fp32",
            PACKED_SCALES=self.scale_format == "ue8m0_packed",
            SCALE_MN_MAJOR=self.scale_layout == "mn_major",
            SCALE_COLS_P2=triton.next_power_of_2(self.num_heads * self.scales_per_head),
            FP8_MAX_VALUE=FP8_MAX,
            EPS=AMAX_EPS,
        )


def _fail(argument: str, message: str) -> None:
    raise ValueError(f"inv_rope_fp8: {argument}: {message}")


def _fail_type(argument: str, message: str) -> None:
    raise TypeError(f"inv_rope_fp8: {argument}: {message}")


def plan_inv_rope_fp8(
    o: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    *,
    rope_dim: int | None = None,
    rope_start: int | None = None,
    style: str = "gptj",
    group_size: int | None = 128,
    scale_format: str = "fp32",
    scale_layout: str = "row",
    n_groups: int = 1,
    quantize: bool = True,
) -> InvRopeFp8Layout:
    """Check the inputs and options; raise a one-line ``TypeError``/``ValueError`` naming the
    argument on anything the kernel cannot take. Returns the layout for :func:`launch_inv_rope_fp8`.
    """
    for name, tensor in (("o", o), ("positions", positions), ("cos_sin_cache", cos_sin_cache)):
        if not isinstance(tensor, torch.Tensor):
            _fail_type(name, f"expected a torch.Tensor, got {type(tensor).__name__}")
    if o.dtype not in INPUT_DTYPES:
        _fail_type("o", f"dtype must be bfloat16 or float16, got {o.dtype}")
    if o.dim() != 3:
        _fail("o", f"expected [tokens, heads, head_dim], got shape {tuple(o.shape)}")
    if o.shape[-1] > 1 and o.stride(-1) != 1:
        _fail("o", f"last dimension must be contiguous (stride 1), got strides {o.stride()}")
    num_tokens, num_heads, head_dim = o.shape
    if positions.dtype not in POSITION_DTYPES:
        _fail_type("positions", f"dtype must be int64 or int32, got {positions.dtype}")
    if positions.dim() != 1 or positions.shape[0] != num_tokens:
        _fail("positions", f"expected shape [{num_tokens}] (one per token of o), got {tuple(positions.shape)}")
    if cos_sin_cache.dtype not in CACHE_DTYPES:
        _fail_type("cos_sin_cache", f"dtype must be float32, bfloat16 or float16, got {cos_sin_cache.dtype}")
    if cos_sin_cache.dim() != 2:
        _fail("cos_sin_cache", f"expected [max_position, rope_dim], got shape {tuple(cos_sin_cache.shape)}")
    if cos_sin_cache.shape[1] > 1 and cos_sin_cache.stride(1) != 1:
        _fail("cos_sin_cache", f"last dimension must be contiguous, got strides {cos_sin_cache.stride()}")
    for name, tensor in (("positions", positions), ("cos_sin_cache", cos_sin_cache)):
        if tensor.device != o.device:
            _fail(name, f"is on {tensor.device} but o is on {o.device}")
    rope_dim = cos_sin_cache.shape[1] if rope_dim is None else rope_dim
    if rope_dim != cos_sin_cache.shape[1]:
        _fail("rope_dim", f"{rope_dim} does not match cos_sin_cache's last dimension {cos_sin_cache.shape[1]}")
    if rope_dim <= 0 or rope_dim % 2:
        _fail("rope_dim", f"must be a positive even number, got {rope_dim}")
    rope_start = head_dim - rope_dim if rope_start is None else rope_start
    if rope_start < 0 or rope_start + rope_dim > head_dim:
        _fail("rope_dim", f"rope slice [{rope_start}, {rope_start + rope_dim}) does not fit in head_dim {head_dim}")
    if style not in STYLES:
        _fail("style", f"must be one of {STYLES}, got {style!r}")
    if scale_format not in SCALE_FORMATS:
        _fail("scale_format", f"must be one of {SCALE_FORMATS}, got {scale_format!r}")
    if scale_layout not in SCALE_LAYOUTS:
        _fail("scale_layout", f"must be one of {SCALE_LAYOUTS}, got {scale_layout!r}")
    if group_size is not None:
        if group_size <= 0 or group_size & (group_size - 1) or head_dim % group_size:
            _fail("group_size", f"must be a power of two dividing head_dim {head_dim} (or None), got {group_size}")
    chunks = 1 if group_size is None else head_dim // group_size
    if scale_format == "ue8m0_packed" and chunks % 4:
        _fail("scale_format", f"'ue8m0_packed' packs 4 groups per head; head_dim {head_dim} has {chunks}")
    if n_groups <= 0 or num_heads % n_groups:
        _fail("n_groups", f"must divide the number of heads {num_heads}, got {n_groups}")
    return InvRopeFp8Layout(
        num_heads=num_heads,
        head_dim=head_dim,
        n_groups=n_groups,
        rope_start=rope_start,
        rope_dim=rope_dim,
        style=style,
        group_size=group_size,
        scale_format=scale_format,
        scale_layout=scale_layout,
        quantize=quantize,
    )


def check_positions_in_range(positions: torch.Tensor, max_position: int) -> None:
    """Raise ``ValueError`` if a position indexes outside ``cos_sin_cache`` (syncs the device)."""
    if positions.numel() == 0:
        return
    low, high = (int(v) for v in torch.aminmax(positions))
    if low < 0 or high >= max_position:
        _fail("positions", f"values must lie in [0, {max_position}) (cos_sin_cache rows), got [{low}, {high}]")


def allocate_inv_rope_fp8_outputs(
    layout: InvRopeFp8Layout, num_tokens: int, device: torch.device, input_dtype: torch.dtype = torch.bfloat16
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh output and scale buffers for ``num_tokens`` tokens.

    Output buffer ``[n_groups, T, heads_per_group * D]`` (fp8; the input dtype when not
    quantizing); scale buffer ``[T, H * scales_per_head]`` row-major or
    ``[H * scales_per_head, align(T, 4)]`` MN-major (fp32; int32 when packed).
    """
    out_dtype = FP8_DTYPE if layout.quantize else input_dtype
    out = torch.empty(
        (layout.n_groups, num_tokens, layout.heads_per_group * layout.head_dim), dtype=out_dtype, device=device
    )
    scale_dtype = torch.int32 if layout.scale_format == "ue8m0_packed" else torch.float32
    scale_cols = layout.num_heads * layout.scales_per_head
    if not layout.quantize:
        scales = torch.empty(0, dtype=scale_dtype, device=device)
    elif layout.scale_layout == "mn_major":
        scales = torch.empty((scale_cols, (num_tokens + 3) // 4 * 4), dtype=scale_dtype, device=device)
    else:
        scales = torch.empty((num_tokens, scale_cols), dtype=scale_dtype, device=device)
    return out, scales


def inv_rope_grid(n_tiles: int, sms: int, programs_per_sm: int = _PROGRAMS_PER_SM) -> int:
    """Programs to launch for ``n_tiles`` tiles (the grid is not part of Triton's key: no recompiles).

    At most ``programs_per_sm`` per SM (the resident cap); past half of it, programs take two
    tiles each (the second prefetched): half as many one-warp programs to schedule, and the
    prefetch then has work to overlap. Tried and dropped (inv_rope_fp8.md): the
    grid lowered so every program runs the same number of tiles (level or up to 1.5% slower).
    """
    cap = sms * programs_per_sm
    return min(n_tiles, cap, max(cap // 2, triton.cdiv(n_tiles, 2)))


@functools.cache
def _sm_count(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return _DEFAULT_SM_COUNT


def launch_inv_rope_fp8(
    layout: InvRopeFp8Layout,
    o: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    out: torch.Tensor,
    scales: torch.Tensor,
    *,
    kernel: Any = None,
    rows_per_tile: int | None = None,
    num_warps: int | None = None,
    programs_per_sm: int = _PROGRAMS_PER_SM,
    prefetch: bool = _PREFETCH,
    store_cache: str | None = None,
    clamp_fp8: bool = _CLAMP_FP8,
    pow2_inverse_bits: bool = _POW2_INVERSE_BITS,
    rope_masked_load: bool = _ROPE_MASKED_LOAD,
    rope_one_reduction: bool = _ROPE_ONE_REDUCTION,
    prefetch_max_tiles: int = _PREFETCH_MAX_TILES,
) -> None:
    """Launch the kernel into buffers from :func:`allocate_inv_rope_fp8_outputs`.

    ``out`` may have another dtype than fp8 (fp32 keeps the pre-cast values, used to check
    the maths under ``TRITON_INTERPRET=1``). ``kernel`` swaps in another build of the same
    function (the interpreter, or a copy with default specialization for comparisons);
    ``rows_per_tile``, ``num_warps``, ``programs_per_sm``, ``prefetch``, ``store_cache`` (the
    output rows' store cache modifier, ``_STORE_CACHE`` unless given; "" the plain store), ``clamp_fp8`` (a
    clamp before the fp8 cast too), ``pow2_inverse_bits``, ``rope_masked_load`` and ``rope_one_reduction``
    (the kernel's constexprs of those names) are tuning knobs for benchmarks. ``prefetch_max_tiles`` (0: no
    limit) stops the prefetch where programs have more tiles each than that.
    """
    num_tokens = o.shape[0]
    if num_tokens == 0:
        return
    constexprs = layout.constexprs()
    tile_width = constexprs["CHUNKS_P2"] * constexprs["GROUP"]
    rows = rows_per_tile or max(1, _ELEMENTS_PER_TILE // tile_width)
    num_warps = num_warps or min(4, max(1, rows * tile_width // 1024))
    n_tiles = triton.cdiv(num_tokens * layout.num_heads, rows)
    grid = (inv_rope_grid(n_tiles, _sm_count(o.device), programs_per_sm),)
    # With one token the token stride is never used; normalise it so a view's odd stride
    # cannot become a new specialization.
    token_stride = o.stride(0) if num_tokens > 1 else layout.num_heads * o.stride(1)
    (kernel or inv_rope_fp8_kernel)[grid](
        o,
        positions,
        cos_sin_cache,
        out,
        scales,
        num_tokens,
        token_stride,
        o.stride(1),
        cos_sin_cache.stride(0),
        ROWS=rows,
        PREFETCH=prefetch,
        STORE_CACHE=_STORE_CACHE if store_cache is None else store_cache,
        CLAMP_FP8=clamp_fp8,
        POW2_INVERSE_BITS=pow2_inverse_bits,
        ROPE_MASKED_LOAD=rope_masked_load,
        ROPE_ONE_REDUCTION=rope_one_reduction,
        PREFETCH_MAX_TILES=prefetch_max_tiles,
        num_warps=num_warps,
        # No fma contraction: the GPU then rounds exactly like the torch reference.
        enable_fp_fusion=False,
        **constexprs,
    )


def output_views(
    layout: InvRopeFp8Layout, out: torch.Tensor, scales: torch.Tensor, num_tokens: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The user-facing views of the buffers from :func:`allocate_inv_rope_fp8_outputs`.

    ``out``: ``[T, H, D]`` (n_groups=1) or ``[T, n_groups, heads_per_group * D]``;
    ``scales``: ``[T, H, scales_per_head]`` or ``[T, n_groups, heads_per_group * scales_per_head]``.
    """
    if layout.n_groups == 1:
        out_view = out.view(num_tokens, layout.num_heads, layout.head_dim)
        inner, outer = layout.scales_per_head, layout.num_heads
    else:
        out_view = out.transpose(0, 1)
        inner, outer = layout.heads_per_group * layout.scales_per_head, layout.n_groups
    if not layout.quantize:
        return out_view, scales
    if layout.scale_layout == "mn_major":
        padded = scales.shape[1]
        strides = (1, inner * padded, padded)
    else:
        strides = (outer * inner, inner, 1)
    return out_view, scales.as_strided((num_tokens, outer, inner), strides)


def inv_rope_fp8(
    o: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    *,
    rope_dim: int | None = None,
    rope_start: int | None = None,
    style: str = "gptj",
    group_size: int | None = 128,
    scale_format: str = "fp32",
    scale_layout: str = "row",
    n_groups: int = 1,
    quantize: bool = True,
    check_positions: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inverse RoPE on the rope slice of each head, then FP8 e4m3 quantization.

    Args:
        o: ``[T, H, D]`` bf16/fp16; any strides with the last dimension contiguous.
        positions: ``[T]`` int64 (or int32) rows of ``cos_sin_cache``.
        cos_sin_cache: ``[max_position, rope_dim]``, cos half then sin half.
        rope_dim, rope_start: the rotated slice (default: the last ``rope_dim`` dims).
        style: "gptj" (interleaved pairs) or "neox" (half-split pairs).
        group_size: elements per scale (a power of two dividing D), or None for one per head.
        scale_format: "fp32" (amax / 448), "pow2" (rounded up to a power of two, fp32) or
            "ue8m0_packed" (four exponent bytes per int32, lowest first).
        scale_layout: "row" ([T, ...] contiguous) or "mn_major" (stride 1 along T, T padded
            to a multiple of 4 with zero scales, DeepGEMM's TMA-aligned layout).
        n_groups: >1 gives upstream vLLM's grouped output ``[T, n_groups, H/n_groups*D]``,
            a view of a ``[n_groups, T, ...]`` buffer.
        quantize: False returns the rotated values in the input dtype and empty scales.
        check_positions: verify positions are inside the cache (one device sync; skipped
            while a CUDA graph is being captured).

    Returns:
        ``(out, scales)``: out ``[T, H, D]`` fp8 (``[T, n_groups, H/n_groups*D]`` when
        grouped); scales ``[T, H, scales_per_head]`` (``[T, n_groups, ...]`` when grouped).
    """
    layout = plan_inv_rope_fp8(
        o,
        positions,
        cos_sin_cache,
        rope_dim=rope_dim,
        rope_start=rope_start,
        style=style,
        group_size=group_size,
        scale_format=scale_format,
        scale_layout=scale_layout,
        n_groups=n_groups,
        quantize=quantize,
    )
    capturing = o.device.type == "cuda" and torch.cuda.is_current_stream_capturing()
    if check_positions and not capturing:
        check_positions_in_range(positions, cos_sin_cache.shape[0])
    num_tokens = o.shape[0]
    out, scales = allocate_inv_rope_fp8_outputs(layout, num_tokens, o.device, o.dtype)
    launch_inv_rope_fp8(layout, o, positions, cos_sin_cache, out, scales)
    return output_views(layout, out, scales, num_tokens)


def fused_inv_rope_fp8_quant(
    o: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    n_groups: int,
    heads_per_group: int,
    nope_dim: int = 448,
    rope_dim: int = 64,
    quant_group_size: int = 128,
    tma_aligned_scales: bool = False,
    quantize: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Drop-in for vLLM's DeepSeek-V4 ``fused_inv_rope_fp8_quant`` (same arguments and outputs).

    Output ``[T, n_groups, heads_per_group * D]`` fp8; scales ``[T, n_groups, k]``,
    power-of-two fp32 (``k`` = groups) or packed UE8M0 int32 when ``tma_aligned_scales``,
    MN-major with T padded to 4.
    """
    if o.dim() == 3 and o.shape[1] != n_groups * heads_per_group:
        _fail("o", f"has {o.shape[1]} heads, expected n_groups * heads_per_group = {n_groups * heads_per_group}")
    if o.dim() == 3 and o.shape[2] != nope_dim + rope_dim:
        _fail("o", f"head_dim {o.shape[2]} != nope_dim + rope_dim = {nope_dim + rope_dim}")
    return inv_rope_fp8(
        o,
        positions,
        cos_sin_cache,
        rope_dim=rope_dim,
        rope_start=nope_dim,
        style="gptj",
        group_size=quant_group_size,
        scale_format="ue8m0_packed" if tma_aligned_scales else "pow2",
        scale_layout="mn_major",
        n_groups=n_groups,
        quantize=quantize,
        check_positions=False,
    )


# ---- plain-torch reference ---------------------------------------------------------------------
# The arithmetic the kernel follows step for step (fp32 maths, ``amax * (1 / fp8_max)`` for the
# scale, an exact round-up to a power of two, a reciprocal per group multiplied in), so its fp8
# cast is the kernel's expected output up to ties; also the "plain torch" baseline of
# benchmarks/bench_inv_rope_fp8.py. Any torch device; logical layout: outputs [T, H, D], scales
# [T, H, chunks] as fp32 values.

@dataclass(frozen=True)
class InvRopeFp8Reference:
    """What the reference computes.

    ``out``: fp8 ``[T, H, D]`` (bf16 rotated values when ``quantize=False``);
    ``scales``: fp32 ``[T, H, chunks]`` (empty when ``quantize=False``);
    ``precast``: fp32 ``[T, H, D]``, the scaled and clamped values just before the fp8 cast
    (the rotated fp32 values when ``quantize=False``).
    """

    out: torch.Tensor
    scales: torch.Tensor
    precast: torch.Tensor


def round_up_to_power_of_two(scale: torch.Tensor) -> torch.Tensor:
    """Smallest power of two >= each positive fp32 value, computed exactly on the bits.

    ``log2``/``exp2`` are approximate on GPUs; the kernel and this reference both bump the
    exponent when the mantissa is non-zero instead.
    """
    bits = scale.contiguous().view(torch.int32)
    exponent = (bits >> 23) & 0xFF
    exponent = exponent + ((bits & 0x7FFFFF) != 0).to(torch.int32)
    return (exponent << 23).view(torch.float32)


def unpack_ue8m0(packed: torch.Tensor) -> torch.Tensor:
    """Expand int32 words holding four UE8M0 exponent bytes (lowest byte first) to fp32 scales.

    ``[..., k]`` int32 -> ``[..., 4 * k]`` fp32, each ``2 ** (byte - 127)``.
    """
    if packed.dtype != torch.int32:
        raise TypeError(f"unpack_ue8m0: packed must be int32, got {packed.dtype}")
    shifts = torch.arange(4, device=packed.device, dtype=torch.int32) * 8
    exponents = (packed.unsqueeze(-1) >> shifts) & 0xFF
    scales = (exponents << 23).view(torch.float32)
    return scales.reshape(*packed.shape[:-1], packed.shape[-1] * 4)


def inverse_rope_reference(
    o: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    *,
    rope_dim: int | None = None,
    rope_start: int | None = None,
    style: str = "gptj",
) -> torch.Tensor:
    """Rotate the rope slice of every head by -theta; returns fp32 ``[T, H, D]``."""
    if style not in STYLES:
        raise ValueError(f"inverse_rope_reference: style must be one of {STYLES}, got {style!r}")
    head_dim = o.shape[-1]
    rope_dim = cos_sin_cache.shape[-1] if rope_dim is None else rope_dim
    rope_start = head_dim - rope_dim if rope_start is None else rope_start
    half = rope_dim // 2
    x = o.float()
    rows = cos_sin_cache.index_select(0, positions.long()).float()
    cos = rows[:, None, :half]
    sin = rows[:, None, half : 2 * half]
    rope = x[..., rope_start : rope_start + rope_dim]
    if style == "gptj":
        first, second = rope[..., 0::2], rope[..., 1::2]
    else:
        first, second = rope[..., :half], rope[..., half:]
    # Inverse rotation: (a, b) -> (a cos + b sin, b cos - a sin).
    new_first = first * cos + second * sin
    new_second = second * cos - first * sin
    if style == "gptj":
        rotated = torch.stack((new_first, new_second), dim=-1).flatten(-2)
    else:
        rotated = torch.cat((new_first, new_second), dim=-1)
    out = x.clone()
    out[..., rope_start : rope_start + rope_dim] = rotated
    return out


def inv_rope_fp8_reference(
    o: torch.Tensor,
    positions: torch.Tensor,
    cos_sin_cache: torch.Tensor,
    *,
    rope_dim: int | None = None,
    rope_start: int | None = None,
    style: str = "gptj",
    group_size: int | None = 128,
    scale_format: str = "fp32",
    quantize: bool = True,
) -> InvRopeFp8Reference:
    """Inverse RoPE then FP8 e4m3 quantization per (token, head) or per ``group_size`` group.

    ``group_size=None`` quantizes each head as one group. ``scale_format`` "fp32" keeps
    ``amax / 448``; "pow2" and "ue8m0_packed" round it up to a power of two (the values are
    returned as fp32 here either way).
    """
    if scale_format not in SCALE_FORMATS:
        raise ValueError(
            f"inv_rope_fp8_reference: scale_format must be one of {SCALE_FORMATS}, got {scale_format!r}"
        )
    rotated = inverse_rope_reference(
        o, positions, cos_sin_cache, rope_dim=rope_dim, rope_start=rope_start, style=style
    )
    num_tokens, num_heads, head_dim = rotated.shape
    if not quantize:
        empty = torch.empty(0, dtype=torch.float32, device=o.device)
        return InvRopeFp8Reference(rotated.to(o.dtype), empty, rotated)
    group = head_dim if group_size is None else group_size
    grouped = rotated.reshape(num_tokens, num_heads, head_dim // group, group)
    amax = grouped.abs().amax(dim=-1).clamp_min(AMAX_EPS)
    scales = amax * torch.tensor(1.0 / FP8_MAX, dtype=torch.float32)
    if scale_format != "fp32":
        scales = round_up_to_power_of_two(scales)
    inverse = torch.ones((), dtype=torch.float32, device=o.device) / scales
    precast = (grouped * inverse.unsqueeze(-1)).clamp(-FP8_MAX, FP8_MAX)
    precast = precast.reshape(num_tokens, num_heads, head_dim)
    return InvRopeFp8Reference(precast.to(FP8_DTYPE), scales, precast)
