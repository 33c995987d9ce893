"""H200 probe (issue #16, sixteenth session): does a block-scaled FP8 decode stream reach the unscaled rate when
each K step's wgmma stays in flight while the next step's weights are awaited?

Triton's ``tl.dot`` cannot leave a product in flight when it is scaled before it is added (the fifteenth
and sixteenth sessions: ``acc += dot * w_s * a_s`` waits for every step's wgmma). Gluon
(``triton.experimental.gluon``, Triton >= 3.5) issues the wgmma itself: this kernel waits for step k's
weights to land (cp.async into a ring of stages), only then for step k - 1's wgmma, folds that product
into the fp32 accumulator with its two scales, refills the freed stage, and issues step k's wgmma
asynchronously (a fresh product, ``use_acc=False``), so each product's MMA runs while the next step's
weights are awaited. The stream, inputs and timer are ``probe_decode_folded_scales.py``'s (swap-AB: weight
rows in the wgmma's M, 16 tokens in its N); its ``scaled`` and ``unscaled`` variants run beside this one,
and every output is compared with the fp32 reference.

Prediction (before the call): ``gluon`` within 3% of ``unscaled`` at the down shapes' 8 slots, where the
per-step wait costs most (DeepSeek down 21.8 against 18.6 us), and faster than ``scaled`` everywhere.

Answered in ``benchmarks/results/moe_layer.md``, sixteenth session (2026-12-03), section 5: gluon / scaled
0.88-0.98 (one point 1.01), within 5% of unscaled at the down shapes' 8 slots, errors equal.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_gluon_scaled.py --out $OUT
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma, warpgroup_mma_wait

sys.path.insert(0, str(Path(__file__).resolve().parent))
import probe_decode_folded_scales as pfs
from probe_decode_tma import TOKENS


@gluon.jit
def _issue_step(w_smem, a_smem, w_ptrs, a_ptrs, kb, n_k, NUM_STAGES: gl.constexpr, BLOCK_K: gl.constexpr):
    """cp.async of K step ``kb``'s weight and activation tiles into stage ``kb % NUM_STAGES`` (past the
    last step: nothing copied, the group still committed so the wait counts stay uniform)."""
    stage = kb % NUM_STAGES
    live = kb < n_k
    async_copy.async_copy_global_to_shared(w_smem.index(stage), w_ptrs + kb * BLOCK_K, mask=live)
    async_copy.async_copy_global_to_shared(a_smem.index(stage), a_ptrs + kb * BLOCK_K, mask=live)
    async_copy.commit_group()


@gluon.jit
def _gluon_scaled_kernel(w_ptr, w_scale_ptr, a_ptr, a_scale_ptr, experts_ptr, out_ptr, N, K,
                         stride_we, stride_wn, stride_wse, stride_wsn, stride_am, stride_asm,
                         BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, TOKENS_C: gl.constexpr,
                         NUM_STAGES: gl.constexpr, NUM_WARPS: gl.constexpr):
    load_layout: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [NUM_WARPS, 1], [1, 0])
    smem_layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                         instr_shape=[16, TOKENS_C, 32])
    pid = gl.program_id(0)
    n_tiles = gl.cdiv(N, BLOCK_N)
    slot = pid // n_tiles
    pid_n = pid % n_tiles
    expert = gl.load(experts_ptr + slot).to(gl.int64)
    n_k = gl.cdiv(K, BLOCK_K)

    rows_l = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, load_layout))
    ks_l = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, load_layout))
    toks_l = gl.arange(0, TOKENS_C, layout=gl.SliceLayout(1, load_layout))
    w_ptrs = w_ptr + expert * stride_we + rows_l[:, None].to(gl.int64) * stride_wn + ks_l[None, :]
    a_ptrs = a_ptr + toks_l[:, None] * stride_am + ks_l[None, :]

    rows_a = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, acc_layout))
    toks_a = gl.arange(0, TOKENS_C, layout=gl.SliceLayout(0, acc_layout))
    ws_rows = w_scale_ptr + expert * stride_wse + (rows_a // 128) * stride_wsn
    as_rows = a_scale_ptr + toks_a * stride_asm

    w_smem = gl.allocate_shared_memory(gl.float8e4nv, [NUM_STAGES, BLOCK_N, BLOCK_K], smem_layout)
    a_smem = gl.allocate_shared_memory(gl.float8e4nv, [NUM_STAGES, TOKENS_C, BLOCK_K], smem_layout)
    for s in gl.static_range(NUM_STAGES - 1):
        _issue_step(w_smem, a_smem, w_ptrs, a_ptrs, s, n_k, NUM_STAGES, BLOCK_K)

    acc = gl.zeros([BLOCK_N, TOKENS_C], gl.float32, layout=acc_layout)
    zero = gl.zeros([BLOCK_N, TOKENS_C], gl.float32, layout=acc_layout)  # each product's (unused) start
    # Step 0: its tiles landed (the other NUM_STAGES - 2 groups may be pending), its product issued.
    async_copy.wait_group(NUM_STAGES - 2)
    gl.thread_barrier()
    fence_async_shared()
    product = warpgroup_mma(w_smem.index(0), a_smem.index(0).permute((1, 0)), zero, use_acc=False, is_async=True)
    for kb in range(1, n_k):
        # Step kb's tiles land while step kb - 1's product is still in the MMA (and its scales in flight).
        w_s = gl.load(ws_rows + (kb - 1))
        a_s = gl.load(as_rows + (kb - 1))
        _issue_step(w_smem, a_smem, w_ptrs, a_ptrs, kb + NUM_STAGES - 2, n_k, NUM_STAGES, BLOCK_K)
        async_copy.wait_group(NUM_STAGES - 2)
        gl.thread_barrier()
        fence_async_shared()
        done = warpgroup_mma_wait(num_outstanding=0, deps=(product,))
        acc += done * w_s[:, None] * a_s[None, :]
        stage = kb % NUM_STAGES
        product = warpgroup_mma(w_smem.index(stage), a_smem.index(stage).permute((1, 0)), zero, use_acc=False,
                                is_async=True)
    done = warpgroup_mma_wait(num_outstanding=0, deps=(product,))
    acc += done * gl.load(ws_rows + (n_k - 1))[:, None] * gl.load(as_rows + (n_k - 1))[None, :]
    async_copy.wait_group(0)
    gl.store(out_ptr + slot * N * TOKENS_C + rows_a[:, None] * TOKENS_C + toks_a[None, :], acc)


def run_gluon(w, w_scale, a, a_scale, experts, out, bn: int, bk: int, stages: int, warps: int = 4):
    N, K = w.shape[1:]
    grid = (experts.numel() * triton.cdiv(N, bn),)
    _gluon_scaled_kernel[grid](w, w_scale, a, a_scale, experts, out, N, K, w.stride(0), w.stride(1),
                               w_scale.stride(0), w_scale.stride(1), a.stride(0), a_scale.stride(0),
                               BLOCK_N=bn, BLOCK_K=bk, TOKENS_C=TOKENS, NUM_STAGES=stages, NUM_WARPS=warps,
                               num_warps=warps)


VARIANTS = (*pfs.VARIANTS, "gluon")


def run_any(v: str, w, w_scale, a, a_scale, x, x_amax, experts, out, bn: int, bk: int, stages: int, warps: int):
    """``gluon``, or one of ``probe_decode_folded_scales``' tl variants."""
    if v == "gluon":
        run_gluon(w, w_scale, a, a_scale, experts, out, bn, bk, stages, warps)
    else:
        pfs.run(v, w, w_scale, a, a_scale, x, x_amax, experts, out, bn, bk, stages, warps)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pfs.add_arguments(p, VARIANTS)
    p.set_defaults(variants="scaled;unscaled;gluon")
    pfs.sweep(p.parse_args(), VARIANTS, run_any, "probe_decode_gluon_scaled")


if __name__ == "__main__":
    main()
