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
0.88-0.98 (one point 1.01), within 5% of unscaled at the down shapes' 8 slots, errors equal. Its table loop
repeats ``probe_decode_folded_scales.py``'s: both are kept as they ran on the device.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_gluon_scaled.py --out $OUT
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma, warpgroup_mma_wait

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import probe_decode_folded_scales as pfs
from probe_decode_tma import SHAPES, TOKENS

REPLAYS = 50
ROUNDS = 2


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


VARIANTS = ("scaled", "unscaled", "gluon")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--slots", default="8,16")
    p.add_argument("--tiles", default="64x128x4,128x128x4", help="BLOCK_N x BLOCK_K x stages")
    p.add_argument("--out", default=".")
    args = p.parse_args()
    log = bfm.jsonl_log(args.out, "probe_decode_gluon_scaled.jsonl")
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 60 << 20)
    lines = ["us per call, round 1 / round 2 (weight TB/s of the mean); x scaled: mean over scaled's; err: against "
             "the fp32 reference (norm of the difference / norm)",
             "| shape | slots | tile | MB | " + " | ".join(VARIANTS) + " | unscaled x scaled | gluon x scaled | "
             "err scaled / gluon |",
             "|---|---|---|---|" + "---|" * len(VARIANTS) + "---|---|---|"]
    print("\n".join(lines), flush=True)
    for shape in args.shapes.split(","):
        E, N, K = SHAPES[shape]
        w, w_scale, a, a_scale, x, x_amax = pfs.make_inputs(E, N, K)
        for S in (int(s) for s in args.slots.split(",")):
            nbytes = S * N * K
            calls = max(2, -(-4 * l2 // nbytes))
            sets = [torch.tensor([(i * S + j) % E for j in range(S)], device="cuda", dtype=torch.int32)
                    for i in range(calls)]
            ref = pfs.reference(w, w_scale, x, sets[0])
            out = {v: torch.empty(S, N, TOKENS, device="cuda", dtype=torch.float32) for v in VARIANTS}

            def call(v, i, bn, bk, st):
                if v == "gluon":
                    run_gluon(w, w_scale, a, a_scale, sets[i], out[v], bn, bk, st)
                else:
                    pfs.run(v, w, w_scale, a, a_scale, x, x_amax, sets[i], out[v], bn, bk, st)
            for tile in args.tiles.split(","):
                bn, bk, st = (int(v) for v in tile.split("x"))
                for v in VARIANTS:
                    out[v].fill_(float("nan"))
                    call(v, 0, bn, bk, st)
                torch.cuda.synchronize()
                errs = {v: ((out[v] - ref).norm() / ref.norm()).item() for v in ("scaled", "gluon")}
                rounds: dict[str, list[float]] = {v: [] for v in VARIANTS}
                for r in range(ROUNDS):
                    for v in (VARIANTS if r % 2 == 0 else tuple(reversed(VARIANTS))):
                        rounds[v].append(bfm.time_graph(lambda i, v=v, bn=bn, bk=bk, st=st: call(v, i, bn, bk, st),
                                                        calls, REPLAYS))
                mean = {v: statistics.mean(us) for v, us in rounds.items()}
                cells = [f"{' / '.join(f'{u:.1f}' for u in rounds[v])} ({nbytes / mean[v] / 1e6:.2f})"
                         for v in VARIANTS]
                line = (f"| {shape} | {S} | {tile} | {nbytes / 1e6:.1f} | " + " | ".join(cells)
                        + f" | {mean['unscaled'] / mean['scaled']:.3f} | {mean['gluon'] / mean['scaled']:.3f} | "
                        + f"{errs['scaled']:.1e} / {errs['gluon']:.1e} |")
                log({"shape": shape, "slots": S, "tile": tile, "bytes": nbytes, "us": rounds, "err": errs})
                print(line, flush=True)
                lines.append(line)
    (Path(args.out) / "probe_decode_gluon_scaled.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
