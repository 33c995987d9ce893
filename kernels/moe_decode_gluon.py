"""The decode MoE layer's FP8 block-scaled (and bf16) GEMMs written in Gluon, each K step's wgmma left in flight.

``moe_decode``'s pairs and grouped paths run their two GEMMs (gate_up with ``silu(gate) * up`` and the
intermediate's 128-column groups quantized in its epilogue; down with the routing weights and the
top-k sum) through ``moe_decode_gemm_kernel``; here down quantizes the intermediate instead, tile by tile
(its ``A_RAW``). With FP8 block scales that
kernel's ``tl.dot`` scales every K step's product before adding it, which makes Triton wait for each step's
wgmma before the next step's is issued (``wgmma.wait_group 0``; benchmarks/results/moe_layer.md).
This kernel issues the wgmma itself (``triton.experimental.gluon``): each step copies its weight and
activation tiles into a ring of shared-memory stages (``cp.async``), issues the step's wgmma into a
fresh product asynchronously, and folds the previous step's product into the fp32 accumulator with
its two scales only once the next step's tiles have landed, so the MMA runs while weights stream.

Scope: what those paths feed their GEMMs with block scales: e4m3 activations with one scale per row
and 128-column group (x from the layer's first launch, the intermediate from gate_up), e4m3 weights
with [E, N / 128, K / 128] scales, K a multiple of 128, tokens in the wgmma's N slot (swap-AB, 8-row
token tiles: the grouped path's sorted layout, or one pair a tile), one warpgroup. With ``BLOCK_SCALED``
off the same pipeline takes bf16 or fp16 activations and weights with no scales (x as the layer got it,
the intermediate as gate_up wrote it; 64 columns a stage). Where ``moe_decode`` takes it:
``moe_decode.DecodeConfig.gluon_fp8_gemms`` and ``gluon_bf16_gemms``. :func:`gluon_gemms_supported` says whether
this Triton has what it needs (Gluon's Hopper wgmma: Triton >= 3.5; never under the interpreter); ``moe_decode``
keeps its ``tl`` kernel elsewhere.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from .device_clock import stamp
from .moe_gemm import moe_tile_of_program
from .pdl import pdl_enter, wait_for_prior_launch

__all__ = ["GluonTile", "gluon_gemms_supported", "moe_decode_gemm_gluon_kernel"]

_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


@functools.cache
def gluon_gemms_supported() -> bool:
    """Whether this Triton ships Gluon with Hopper's wgmma and cp.async (Triton >= 3.5), uninterpreted."""
    if _INTERPRETED:
        return False
    try:
        from triton.experimental.gluon.language.nvidia import ampere, hopper  # noqa: F401
    except ImportError:
        return False
    return all(hasattr(hopper, n) for n in ("warpgroup_mma", "warpgroup_mma_wait", "fence_async_shared"))


@dataclass(frozen=True)
class GluonTile:
    """One Gluon GEMM launch's tile: ``out_n`` output columns a program and ``stages`` cp.async stages
    of 128 K columns, 4 warps (one warpgroup). Its wgmma takes the tile's weight rows, a multiple of
    64: gate_up's are 2 * out_n (its gate rows, then the same columns' up rows), down's out_n."""

    out_n: int
    stages: int

    def __post_init__(self) -> None:
        if self.out_n not in (32, 64, 128):
            raise ValueError(f"GluonTile: out_n must be 32, 64 or 128, got {self.out_n}")
        if not 2 <= self.stages <= 8:
            raise ValueError(f"GluonTile: stages must be in 2..8, got {self.stages}")


if gluon_gemms_supported():
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.ampere import async_copy
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        warpgroup_mma,
        warpgroup_mma_wait,
    )

    # Triton 3.5-3.6 name the CTA-wide barrier thread_barrier, later ones barrier.
    _cta_barrier = getattr(gl, "thread_barrier", None) or gl.barrier
    # cp.async into shared memory: async_copy_global_to_shared up to Triton 3.6, async_load after.
    _copy_to_shared = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared

    _SCALE_GROUP = gl.constexpr(128)  # block scales' group along K and N; also each stage's K depth in e4m3

    @gluon.jit
    def _copy_step(w_smem, a_smem, w_ptrs, a_ptrs, a_valid, kb, n_k, NUM_STAGES: gl.constexpr, K_STEP: gl.constexpr,
                   COPY_A: gl.constexpr = True):
        """cp.async of K step ``kb``'s weight and activation tiles (K_STEP columns) into stage
        ``kb % NUM_STAGES`` (the activation rows of padding, ``a_valid`` false, zero-filled unread; without
        COPY_A the weights only); past the last step nothing is read (the stage zero-filled) but the group is still
        committed, so every step waits for the same count."""
        stage = kb % NUM_STAGES
        live = kb < n_k
        offset = kb * K_STEP
        _copy_to_shared(w_smem.index(stage), w_ptrs + offset, mask=live)
        if COPY_A:
            _copy_to_shared(a_smem.index(stage), a_ptrs + offset, mask=a_valid & live)
        async_copy.commit_group()

    @gluon.jit
    def _issue_product(w_smem, a_smem, kb, acc_in, NUM_STAGES: gl.constexpr, A_SLOTS: gl.constexpr):
        """Step ``kb``'s wgmma, issued asynchronously (its A tile in slot ``kb % A_SLOTS``) into a fresh product in
        the registers of ``acc_in`` (its values unread)."""
        return warpgroup_mma(w_smem.index(kb % NUM_STAGES), a_smem.index(kb % A_SLOTS).permute((1, 0)), acc_in,
                             use_acc=False, is_async=True)

    @gluon.jit
    def _load_scales(a_scales, w_scales, kb, stride_bsk, BLOCK_SCALED: gl.constexpr, LOAD_A: gl.constexpr = True):
        """K step ``kb``'s block scales: one per token (A) and one per weight row (without BLOCK_SCALED
        none: the pointers, unread; without LOAD_A, A's as given: ``a_scales``)."""
        if BLOCK_SCALED:
            if LOAD_A:
                a_s = gl.load(a_scales + kb)
            else:
                a_s = a_scales
            w_s = gl.load(w_scales + kb * stride_bsk)
        else:
            a_s = a_scales
            w_s = w_scales
        return a_s, w_s

    @gluon.jit
    def _load_a_step(a_ptrs, a_valid, kb, n_k, K_STEP: gl.constexpr):
        """A_RAW: K step ``kb``'s bf16 A tile loaded into registers (padding rows and steps
        past the last zero)."""
        return gl.load(a_ptrs + kb * K_STEP, mask=a_valid & (kb < n_k), other=0.0)

    @gluon.jit
    def _e4m3_with_scales(v, AXIS: gl.constexpr, FP8_MAX_C: gl.constexpr, MIN_AMAX: gl.constexpr):
        """fp32 ``v`` as e4m3, with one scale for each slice along ``AXIS`` (its absmax, at least MIN_AMAX,
        over FP8_MAX_C): how every FP8 intermediate here is quantized, whichever launch does it."""
        scale = gl.maximum(gl.max(gl.abs(v), AXIS), MIN_AMAX) / FP8_MAX_C
        q = gl.minimum(gl.maximum(v / gl.expand_dims(scale, AXIS), -FP8_MAX_C), FP8_MAX_C).to(gl.float8e4nv)
        return q, scale

    @gluon.jit
    def _quantize_a_step(a_tile, aq_smem, kb, A_SLOTS: gl.constexpr, scale_layout: gl.constexpr,
                         FP8_MAX_C: gl.constexpr, MIN_AMAX: gl.constexpr):
        """A_RAW: K step ``kb``'s bf16 A tile (one 128-column group of each row) quantized
        in registers and written as e4m3 to slot ``kb % A_SLOTS`` of ``aq_smem`` for the step's wgmma; each
        row's scale (the one gate_up's last writer would compute) is returned in ``scale_layout``."""
        q, scale = _e4m3_with_scales(a_tile.to(gl.float32), 1, FP8_MAX_C, MIN_AMAX)
        aq_smem.index(kb % A_SLOTS).store(q)
        return gl.convert_layout(scale, scale_layout)

    @gluon.jit
    def _fold_product(acc, product, a_s, w_s, BLOCK_SCALED: gl.constexpr):
        """Wait for one step's product (in flight) and add it to the accumulator, with the step's scales
        where BLOCK_SCALED."""
        done = warpgroup_mma_wait(num_outstanding=0, deps=(product,))
        if BLOCK_SCALED:
            done = done * w_s[:, None] * a_s[None, :]
        return acc + done

    @gluon.jit
    def _land_step(w_smem, a_smem, aq_smem, w_ptrs, a_ptrs, a_valid, a_raw, a_s, kb, n_k,
                   NUM_STAGES: gl.constexpr, K_STEP: gl.constexpr, A_RAW: gl.constexpr, A_SLOTS: gl.constexpr,
                   scale_layout: gl.constexpr, FP8_MAX_C: gl.constexpr, MIN_AMAX: gl.constexpr):
        """K step ``kb`` made ready for its wgmma: the copy NUM_STAGES - 2 steps on issued, then step ``kb``'s
        tiles waited for and made visible to the MMA; with A_RAW its A tile (``a_raw``, in registers) quantized
        into its e4m3 slot. Returns step ``kb``'s A scales (``a_s`` as given without A_RAW)."""
        _copy_step(w_smem, a_smem, w_ptrs, a_ptrs, a_valid, kb + NUM_STAGES - 2, n_k, NUM_STAGES, K_STEP, not A_RAW)
        async_copy.wait_group(NUM_STAGES - 2)
        _cta_barrier()
        fence_async_shared()
        if A_RAW:
            a_s = _quantize_a_step(a_raw, aq_smem, kb, A_SLOTS, scale_layout, FP8_MAX_C, MIN_AMAX)
            fence_async_shared()
            _cta_barrier()
        return a_s

    @gluon.jit
    def _tile_weight_rows(pid_n, N, OUT_N: gl.constexpr, W_ROWS: gl.constexpr, GATED: gl.constexpr,
                          layout: gl.constexpr):
        """Weight row of each of the tile's W_ROWS rows: output columns ``pid_n * OUT_N + r`` (past N
        they wrap around), and with GATED the same columns' up rows (``N +``) after the OUT_N gate rows."""
        r = gl.arange(0, W_ROWS, layout=layout)
        col = (pid_n * OUT_N + r % OUT_N) % N
        if GATED:
            col = col + (r // OUT_N) * N
        return col

    @gluon.jit
    def _tile_pairs(sorted_ids_ptr, pid_m, num_pairs, BLOCK_M: gl.constexpr, PAIR_TILES: gl.constexpr,
                    layout: gl.constexpr, TILES_FROM_COUNTS: gl.constexpr = False, tile_pairs_ptr=None, rows_left=0):
        """The pair of each row of token tile ``pid_m`` (>= num_pairs: padding): from the sorted layout,
        with PAIR_TILES pair ``pid_m`` in row 0 alone, or with TILES_FROM_COUNTS the ``rows_left`` (at most
        BLOCK_M) pairs at ``tile_pairs_ptr`` (``_tile_of_counts``)."""
        rows = gl.arange(0, BLOCK_M, layout=layout)
        if PAIR_TILES:
            pairs = gl.where(rows == 0, pid_m, num_pairs)
        elif TILES_FROM_COUNTS:
            pairs = gl.load(tile_pairs_ptr + rows, mask=rows < rows_left, other=num_pairs)
        else:
            pairs = gl.load(sorted_ids_ptr + pid_m * BLOCK_M + rows)
        return pairs

    @gluon.jit
    def _add(a, b):
        return a + b

    @gluon.jit
    def _tile_of_counts(counts_ptr, expert_pairs_ptr, pid_m, num_experts, num_tokens, BLOCK_M: gl.constexpr,
                        E_POW2: gl.constexpr, NUM_WARPS: gl.constexpr):
        """TILES_FROM_COUNTS: token tile ``pid_m`` of the expert-sorted layout (each expert's pairs in tiles of
        BLOCK_M, experts in order), found from the route launch's per-expert pair counts instead of a layout it
        aligned: (expert, or -1 past the last tile; a pointer to the tile's first pair in ``expert_pairs``,
        [E, num_tokens] in rank order; how many of its rows hold pairs). Every warp holds all the counts, so the
        scan and sums stay within a warp."""
        layout: gl.constexpr = gl.BlockedLayout([(E_POW2 + 31) // 32], [32], [NUM_WARPS], [0])
        experts = gl.arange(0, E_POW2, layout=layout)
        # A count past num_tokens (counters not zero at a launch's start: one replayed alone) is cut to it.
        counts = gl.minimum(gl.load(counts_ptr + experts, mask=experts < num_experts, other=0), num_tokens)
        tiles = (counts + BLOCK_M - 1) // BLOCK_M
        # (associative_scan, not cumsum: Gluon has no cumsum before Triton 3.7.)
        before = gl.associative_scan(tiles, 0, _add) <= pid_m  # experts whose tiles all come before this one
        expert = gl.sum(before.to(gl.int32), 0)
        first_rank = (pid_m - gl.sum(gl.where(before, tiles, 0), 0)) * BLOCK_M
        count = gl.sum(gl.where(experts == expert, counts, 0), 0)
        in_use = expert < num_experts
        pairs_at = expert_pairs_ptr + gl.where(in_use, expert * num_tokens + first_rank, 0)
        return gl.where(in_use, expert, -1), pairs_at, gl.where(in_use, count - first_rank, 0)

    @gluon.jit
    def _a_rows(pairs, num_pairs, A_ROWS_PER_PAIR_DIV: gl.constexpr):
        """A's row of each pair (row 0 for padding: read, never stored)."""
        return gl.where(pairs < num_pairs, pairs // A_ROWS_PER_PAIR_DIV, 0).to(gl.int64)

    @gluon.jit(do_not_specialize=["num_pairs", "num_tokens"])
    def moe_decode_gemm_gluon_kernel(
        a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, c_ptr, topk_weights_ptr, sorted_ids_ptr, expert_ids_ptr,
        num_padded_ptr,
        num_pairs, num_tokens, N, K,
        stride_am, stride_asm, stride_be, stride_bn, stride_bse, stride_bsn, stride_bsk, stride_cm,
        A_ROWS_PER_PAIR_DIV: gl.constexpr, GATED: gl.constexpr, BLOCK_M: gl.constexpr, OUT_N: gl.constexpr,
        NUM_STAGES: gl.constexpr,
        FP8_MAX_C: gl.constexpr, MIN_AMAX: gl.constexpr, LAUNCH_DEPENDENTS: gl.constexpr,
        WAIT_PRIOR: gl.constexpr, PAIR_TILES: gl.constexpr = False, topk_ids_ptr=None,
        BLOCK_SCALED: gl.constexpr = True, STAMPS: gl.constexpr = False, stamps_ptr=None,
        TILES_FROM_COUNTS: gl.constexpr = False, counts_ptr=None,
        expert_pairs_ptr=None, num_experts=0, E_POW2: gl.constexpr = 1,
    ):
        """C = A B^T over expert-sorted token tiles with FP8 block scales (see the module docstring).

        GATED (gate_up): weight rows ``n`` (gate) and ``N + n`` (up) of each output column ``n``,
        ``silu(gate) * up`` written to ``c`` in its dtype (bf16 / fp16: down quantizes it with block scales).
        Otherwise (down): pair rows times their routing weight into ``c`` (in ``c``'s dtype); a launch after this
        one sums each token's pair rows. With BLOCK_SCALED, down takes gate_up's bf16 intermediate as A and
        quantizes each K step's tile (one 128-column group a row) in registers, writing the e4m3 tile to shared
        memory for its wgmma, with the scales the group quantization would compute.
        A (gate_up, BLOCK_SCALED): e4m3 rows (pair // A_ROWS_PER_PAIR_DIV) with scales [row, K / 128] at
        ``a_scale``.
        LAUNCH_DEPENDENTS / WAIT_PRIOR: PDL. WAIT_PRIOR 1: wait for the launch before at the start; 3: at
        the start, before letting the next launch start; 2 (down after a gate_up launched with 3): once
        the first K steps' weights are on their way, before anything the launch before wrote is read
        (the routing and layout, written two launches before, may be read first).
        PAIR_TILES (the pairs path): token tile ``pid_m`` is pair ``pid_m`` alone (its other rows padding),
        its expert ``topk_ids[pid_m]`` (routed by the launch before); no sorted layout is read.
        BLOCK_SCALED off: A and the weights in bf16 or fp16, no scales (``a_scale`` and ``b_scale`` unread); each
        stage is still 128 bytes of K. Either way one product is in flight, folded in once the next step's tiles
        have landed (with block scales, two products in flight make ptxas serialize every wgmma: C7514 / C7515).
        TILES_FROM_COUNTS (not with PAIR_TILES): no sorted layout; each
        program finds its token tile from the route launch's per-expert pair counts (``counts``, num_experts of
        them, E_POW2 their power of two) and each expert's pairs in rank order (``expert_pairs``), as the layout
        the route launch would have aligned would place them (``_tile_of_counts``).
        STAMPS (probes): each program stores ``device_clock`` stamps at ``stamps_ptr`` (start, set-up done,
        wait for the prior launch done, K loop done, end; a program with no tile in use only the first and
        last); off, the kernel is the same code.
        """
        NUM_WARPS: gl.constexpr = 4
        # Each stage and wgmma step: 128 bytes of each row's K (128 e4m3 columns: one scale group; 64 bf16).
        ELEM_BITS: gl.constexpr = b_ptr.dtype.element_ty.primitive_bitwidth
        K_STEP: gl.constexpr = 1024 // ELEM_BITS
        gl.static_assert((not BLOCK_SCALED) or (K_STEP == _SCALE_GROUP), "block scales take e4m3 operands")
        # GATED: the tile's weight rows are OUT_N gate rows then the same OUT_N columns' up rows, one wgmma.
        W_ROWS: gl.constexpr = 2 * OUT_N if GATED else OUT_N
        gl.static_assert(W_ROWS % 64 == 0, "one warpgroup's wgmma takes weight rows in multiples of 64")
        # Weight tiles: 16 bytes a thread, 8 threads a 128-byte row; activation tiles: BLOCK_M rows of K_STEP.
        w_layout: gl.constexpr = gl.BlockedLayout([1, 128 // ELEM_BITS], [4, 8], [NUM_WARPS, 1], [1, 0])
        A_VEC: gl.constexpr = BLOCK_M * K_STEP // (32 * NUM_WARPS)
        a_layout: gl.constexpr = gl.BlockedLayout([1, A_VEC], [32 * A_VEC // K_STEP, K_STEP // A_VEC],
                                                  [NUM_WARPS, 1], [1, 0])
        smem_layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=ELEM_BITS, rank=2)
        # wgmma's K: 32 bytes (32 e4m3, 16 bf16).
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                             instr_shape=[16, BLOCK_M, 256 // ELEM_BITS])
        # The epilogue's layout: a warp along 32 consecutive output columns of one token (contiguous stores).
        epi_layout: gl.constexpr = gl.BlockedLayout([1, 1], [32, 1], [1, NUM_WARPS], [0, 1])

        pid = gl.program_id(0)
        stamp(stamps_ptr, pid, 0, STAMPS)
        pid_m, pid_n, _ = moe_tile_of_program(N, OUT_N)
        # WAIT_PRIOR 3 before letting the next launch start: it may read what the launch before this one
        # wrote (routing, layout) before its own wait.
        pdl_enter(LAUNCH_DEPENDENTS, WAIT_PRIOR)

        gl.static_assert(not (TILES_FROM_COUNTS and PAIR_TILES), "the pairs path's tiles are its pairs")
        tile_pairs_ptr = sorted_ids_ptr
        rows_left = BLOCK_M
        if PAIR_TILES:
            expert = gl.load(topk_ids_ptr + pid_m).to(gl.int64)
            tile_in_use = expert >= 0
        elif TILES_FROM_COUNTS:
            expert32, tile_pairs_ptr, rows_left = _tile_of_counts(counts_ptr, expert_pairs_ptr, pid_m, num_experts,
                                                                  num_tokens, BLOCK_M, E_POW2, NUM_WARPS)
            expert = expert32.to(gl.int64)
            tile_in_use = expert >= 0
        else:
            num_padded = gl.load(num_padded_ptr)
            expert = gl.load(expert_ids_ptr + pid_m).to(gl.int64)
            tile_in_use = (pid_m * BLOCK_M < num_padded) & (expert >= 0)
        if tile_in_use:
            n_k = K // K_STEP
            # Weight row of each tile row, in the copy layout and in the accumulator's (for the scales):
            # columns past N wrap (dropped at the store); GATED adds N to the up rows.
            w_rows = _tile_weight_rows(pid_n, N, OUT_N, W_ROWS, GATED, gl.SliceLayout(1, w_layout))
            ks_w = gl.arange(0, K_STEP, layout=gl.SliceLayout(0, w_layout))
            w_ptrs = b_ptr + expert * stride_be + w_rows[:, None].to(gl.int64) * stride_bn + ks_w[None, :]
            pairs_c = _tile_pairs(sorted_ids_ptr, pid_m, num_pairs, BLOCK_M, PAIR_TILES, gl.SliceLayout(1, a_layout),
                                  TILES_FROM_COUNTS, tile_pairs_ptr, rows_left)
            a_valid = (pairs_c < num_pairs)[:, None]
            a_rows_c = _a_rows(pairs_c, num_pairs, A_ROWS_PER_PAIR_DIV)
            ks_a = gl.arange(0, K_STEP, layout=gl.SliceLayout(0, a_layout))
            a_ptrs = a_ptr + a_rows_c[:, None] * stride_am + ks_a[None, :]
            # Each accumulator row's weight scales and each column's (pair's) A scales; unscaled, the bare
            # pointers (unread).
            w_scales = b_scale_ptr
            if BLOCK_SCALED:
                acc_rows = _tile_weight_rows(pid_n, N, OUT_N, W_ROWS, GATED, gl.SliceLayout(1, acc_layout))
                w_scales = b_scale_ptr + expert * stride_bse + (acc_rows // _SCALE_GROUP) * stride_bsn
            acc_pairs = _tile_pairs(sorted_ids_ptr, pid_m, num_pairs, BLOCK_M, PAIR_TILES,
                                    gl.SliceLayout(0, acc_layout), TILES_FROM_COUNTS, tile_pairs_ptr, rows_left)
            a_scales = a_scale_ptr
            if BLOCK_SCALED:
                a_scales = a_scale_ptr + _a_rows(acc_pairs, num_pairs, A_ROWS_PER_PAIR_DIV) * stride_asm

            w_smem = gl.allocate_shared_memory(b_ptr.dtype.element_ty, [NUM_STAGES, W_ROWS, K_STEP], smem_layout)
            # A_RAW (down with block scales): A, the bf16 intermediate (in the L2, just written by gate_up),
            # is loaded into registers two steps ahead and each step quantized into one of two e4m3 slots for its
            # wgmma (no A ring).
            A_RAW: gl.constexpr = BLOCK_SCALED and not GATED
            A_SLOTS: gl.constexpr = 2 if A_RAW else NUM_STAGES
            if A_RAW:
                aq_smem = gl.allocate_shared_memory(gl.float8e4nv, [A_SLOTS, BLOCK_M, K_STEP], smem_layout)
                a_smem = aq_smem  # (unused: no A ring)
                a_ones = gl.full([BLOCK_M], 1.0, gl.float32, layout=gl.SliceLayout(0, acc_layout))
            else:
                a_smem = gl.allocate_shared_memory(a_ptr.dtype.element_ty, [NUM_STAGES, BLOCK_M, K_STEP], smem_layout)
                aq_smem = a_smem
                a_ones = a_scales
            stamp(stamps_ptr, pid, 1, STAMPS)
            if WAIT_PRIOR == 2:
                # The first steps' weights (not written by the launch before) stream in before the wait;
                # their activations (written by it) after, as one group: the first wait takes every group.
                for s in gl.static_range(NUM_STAGES - 1):
                    _copy_to_shared(w_smem.index(s), w_ptrs + s * K_STEP, mask=s < n_k)
                    async_copy.commit_group()
                wait_for_prior_launch()
                stamp(stamps_ptr, pid, 2, STAMPS)
                if not A_RAW:
                    for s in gl.static_range(NUM_STAGES - 1):
                        _copy_to_shared(a_smem.index(s), a_ptrs + s * K_STEP, mask=a_valid & (s < n_k))
                    async_copy.commit_group()
            else:
                stamp(stamps_ptr, pid, 2, STAMPS)
                for s in gl.static_range(NUM_STAGES - 1):
                    _copy_step(w_smem, a_smem, w_ptrs, a_ptrs, a_valid, s, n_k, NUM_STAGES, K_STEP, not A_RAW)
            if A_RAW:
                a_r0 = _load_a_step(a_ptrs, a_valid, 0, n_k, K_STEP)
                a_r1 = _load_a_step(a_ptrs, a_valid, 1, n_k, K_STEP)
                a_r2 = _load_a_step(a_ptrs, a_valid, 2, n_k, K_STEP)
            else:
                a_r0 = a_valid
                a_r1 = a_valid
                a_r2 = a_valid

            zero = gl.zeros([W_ROWS, BLOCK_M], gl.float32, layout=acc_layout)  # each product's (unread) start
            acc = zero
            # Scales are loaded two steps before the step they scale (their latency hidden behind two steps' copies);
            # with A_RAW A's come from each step's quantization instead (a_ones stands in until then).
            a_s0, w_s0 = _load_scales(a_ones, w_scales, 0, stride_bsk, BLOCK_SCALED, not A_RAW)
            a_s1, w_s1 = _load_scales(a_ones, w_scales, gl.minimum(1, n_k - 1), stride_bsk, BLOCK_SCALED, not A_RAW)
            async_copy.wait_group(0 if WAIT_PRIOR == 2 else NUM_STAGES - 2)
            _cta_barrier()
            fence_async_shared()
            if A_RAW:
                a_s0 = _quantize_a_step(a_r0, aq_smem, 0, A_SLOTS, gl.SliceLayout(0, acc_layout), FP8_MAX_C, MIN_AMAX)
                fence_async_shared()
                _cta_barrier()
            product = _issue_product(w_smem, aq_smem, 0, zero, NUM_STAGES, A_SLOTS)
            for kb in range(1, n_k):
                a_s2, w_s2 = _load_scales(a_ones, w_scales, gl.minimum(kb + 1, n_k - 1), stride_bsk, BLOCK_SCALED,
                                          not A_RAW)
                # Step kb's tiles land while step kb - 1's product is in the MMA; only then is that product
                # waited for and folded in, and step kb's issued. With A_RAW, step kb's A is quantized into the
                # e4m3 slot that step kb - 2's finished product read.
                if A_RAW:
                    a_r3 = _load_a_step(a_ptrs, a_valid, kb + 2, n_k, K_STEP)
                a_s1 = _land_step(w_smem, a_smem, aq_smem, w_ptrs, a_ptrs, a_valid, a_r1, a_s1, kb, n_k,
                                  NUM_STAGES, K_STEP, A_RAW, A_SLOTS, gl.SliceLayout(0, acc_layout), FP8_MAX_C,
                                  MIN_AMAX)
                if A_RAW:
                    a_r1 = a_r2
                    a_r2 = a_r3
                acc = _fold_product(acc, product, a_s0, w_s0, BLOCK_SCALED)
                a_s0, w_s0 = a_s1, w_s1
                a_s1, w_s1 = a_s2, w_s2
                product = _issue_product(w_smem, aq_smem, kb, zero, NUM_STAGES, A_SLOTS)
            acc = _fold_product(acc, product, a_s0, w_s0, BLOCK_SCALED)
            async_copy.wait_group(0)
            stamp(stamps_ptr, pid, 3, STAMPS)

            if GATED:
                # Gate and up rows apart through shared memory, into the epilogue's layout.
                acc_smem = gl.allocate_shared_memory(gl.float32, [W_ROWS, BLOCK_M],
                                                     gl.SwizzledSharedLayout(1, 1, 1, order=[1, 0]), acc)
                gate = acc_smem.slice(0, OUT_N).load(epi_layout)
                up = acc_smem.slice(OUT_N, OUT_N).load(epi_layout)
                cols = pid_n * OUT_N + gl.arange(0, OUT_N, layout=gl.SliceLayout(1, epi_layout))
                pairs = _tile_pairs(sorted_ids_ptr, pid_m, num_pairs, BLOCK_M, PAIR_TILES,
                                    gl.SliceLayout(0, epi_layout), TILES_FROM_COUNTS, tile_pairs_ptr, rows_left)
                pair_mask = pairs < num_pairs
                c_mask = (cols < N)[:, None] & pair_mask[None, :]
                c_offs = pairs[None, :].to(gl.int64) * stride_cm + cols[:, None]
                c = (gate / (1.0 + gl.exp(-gate)) * up).to(c_ptr.dtype.element_ty)
                gl.store(c_ptr + c_offs, c, mask=c_mask)
            else:
                cols = pid_n * OUT_N + gl.arange(0, OUT_N, layout=gl.SliceLayout(1, acc_layout))
                pair_mask = acc_pairs < num_pairs
                w = gl.load(topk_weights_ptr + acc_pairs, mask=pair_mask, other=0.0).to(gl.float32)
                gl.store(c_ptr + acc_pairs[None, :].to(gl.int64) * stride_cm + cols[:, None],
                         (acc * w[None, :]).to(c_ptr.dtype.element_ty), mask=(cols < N)[:, None] & pair_mask[None, :])

        stamp(stamps_ptr, pid, 4, STAMPS)
else:
    moe_decode_gemm_gluon_kernel = None
