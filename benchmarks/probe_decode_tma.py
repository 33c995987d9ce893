"""H200 probe (issue #16): do tensor-memory-accelerator (TMA) weight loads stream a decode GEMM faster?

A few-token MoE GEMM is a weight stream: each program reads one expert's [BLOCK_N, K] weight rows
once. This probe times the bare stream, FP8 block-scaled and swap-AB like the decode GEMMs (weights in
the MMA's M slot, a 16-token tile in its N slot), with the weight tiles loaded two ways, alternating
in two rounds: through pointers (cp.async, as ``moe_decode`` and ``moe_gemm`` load them) and through a
host-side ``TensorDescriptor`` (TMA). No routing, no epilogue: ``S`` expert slots per call, their ids
rotated over the layer's experts across the calls of a CUDA graph so L2 holds none of them. A third
variant loads each tile as two descriptor boxes of half its rows with a dot each, the form a gated
gate_up tile (gate rows and up rows N / 2 apart) would take. The variants' outputs are compared
(same K steps in the same order: equal up to the MMA's own summation order).

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_tma.py --out $OUT
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm

REPLAYS = 50
ROUNDS = 2
TOKENS = 16
# (name, experts, N rows of the GEMM's weights, K)
SHAPES = {
    "qwen3-fp8 gate_up": (128, 1536, 2048),
    "qwen3-fp8 down": (128, 2048, 768),
    "deepseek-fp8 gate_up": (256, 2048, 7168),
    "deepseek-fp8 down": (256, 7168, 1024),
}


@triton.jit
def _stream_gemm_kernel(w_ptr, w_desc, w_scale_ptr, a_ptr, a_scale_ptr, experts_ptr, out_ptr, N, K,
                        stride_we, stride_wn, stride_wse, stride_wsn, stride_am, stride_asm,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, TOKENS_C: tl.constexpr, TMA: tl.constexpr,
                        NUM_STAGES: tl.constexpr, HALVES: tl.constexpr = False):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BLOCK_N)
    slot = pid // n_tiles
    n0 = (pid % n_tiles) * BLOCK_N
    expert = tl.load(experts_ptr + slot).to(tl.int64)
    rows = n0 + tl.arange(0, BLOCK_N)
    toks = tl.arange(0, TOKENS_C)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + toks[None, :] * stride_am + offs_k[:, None]
    as_rows = a_scale_ptr + toks * stride_asm
    if HALVES:
        # A gated tile as TMA would load it: gate rows and up rows as two boxes of BLOCK_N / 2 rows
        # (N / 2 apart, as w13's halves), two dots; here the halves of this tile's own rows stand in.
        HALF: tl.constexpr = BLOCK_N // 2
        half_rows = n0 // 2 + tl.arange(0, HALF)
        acc_g = tl.zeros((HALF, TOKENS_C), dtype=tl.float32)
        acc_u = tl.zeros((HALF, TOKENS_C), dtype=tl.float32)
        g_s_rows = w_scale_ptr + expert * stride_wse + (half_rows // 128) * stride_wsn
        u_s_rows = w_scale_ptr + expert * stride_wse + ((N // 2 + half_rows) // 128) * stride_wsn
        for kb in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=NUM_STAGES):
            b_g = w_desc.load([(expert * N + n0 // 2).to(tl.int32), kb * BLOCK_K])
            b_u = w_desc.load([(expert * N + N // 2 + n0 // 2).to(tl.int32), kb * BLOCK_K])
            a = tl.load(a_ptrs + kb * BLOCK_K)
            a_s = tl.load(as_rows + kb)
            acc_g += tl.dot(b_g, a) * tl.load(g_s_rows + kb)[:, None] * a_s[None, :]
            acc_u += tl.dot(b_u, a) * tl.load(u_s_rows + kb)[:, None] * a_s[None, :]
        out_ptrs = out_ptr + slot * N * TOKENS_C + half_rows[:, None] * TOKENS_C + toks[None, :]
        tl.store(out_ptrs, acc_g.to(tl.bfloat16))
        tl.store(out_ptrs + (N // 2) * TOKENS_C, acc_u.to(tl.bfloat16))
    else:
        w_ptrs = w_ptr + expert * stride_we + rows[:, None].to(tl.int64) * stride_wn + offs_k[None, :]
        ws_rows = w_scale_ptr + expert * stride_wse + (rows // 128) * stride_wsn
        acc = tl.zeros((BLOCK_N, TOKENS_C), dtype=tl.float32)
        for kb in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=NUM_STAGES):
            if TMA:
                b = w_desc.load([(expert * N + n0).to(tl.int32), kb * BLOCK_K])
            else:
                b = tl.load(w_ptrs + kb * BLOCK_K)
            a = tl.load(a_ptrs + kb * BLOCK_K)
            b_s = tl.load(ws_rows + kb)
            a_s = tl.load(as_rows + kb)
            acc += tl.dot(b, a) * b_s[:, None] * a_s[None, :]
        out_ptrs = out_ptr + slot * N * TOKENS_C + rows[:, None] * TOKENS_C + toks[None, :]
        tl.store(out_ptrs, acc.to(tl.bfloat16))


def make_inputs(E: int, N: int, K: int):
    g = torch.Generator(device="cuda").manual_seed(N + K)
    w = (torch.randn(E, N, K, device="cuda", generator=g) * 0.1).to(torch.float8_e4m3fn)
    w_scale = torch.rand(E, triton.cdiv(N, 128), triton.cdiv(K, 128), device="cuda", generator=g) + 0.5
    a = (torch.randn(TOKENS, K, device="cuda", generator=g)).to(torch.float8_e4m3fn)
    a_scale = torch.rand(TOKENS, triton.cdiv(K, 128), device="cuda", generator=g) + 0.5
    return w, w_scale, a, a_scale


VARIANTS = ("ptr", "tma", "tma_halves")


def run_variant(w, w_scale, a, a_scale, experts, out, block_n: int, block_k: int, stages: int, warps: int,
                variant: str):
    from triton.tools.tensor_descriptor import TensorDescriptor

    E, N, K = w.shape
    box = block_n // 2 if variant == "tma_halves" else block_n
    desc = TensorDescriptor(w.view(E * N, K), [E * N, K], [K, 1], [box, block_k]) if variant != "ptr" else None
    grid = (experts.numel() * triton.cdiv(N, block_n),)
    _stream_gemm_kernel[grid](w, desc, w_scale, a, a_scale, experts, out, N, K, w.stride(0), w.stride(1),
                              w_scale.stride(0), w_scale.stride(1), a.stride(0), a_scale.stride(0),
                              BLOCK_N=block_n, BLOCK_K=block_k, TOKENS_C=TOKENS, TMA=variant != "ptr",
                              NUM_STAGES=stages, HALVES=variant == "tma_halves", num_warps=warps)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--slots", default="8,16,32", help="expert slots per call (one token: 8 = M 1)")
    p.add_argument("--tiles", default="64x128x3,64x128x4,64x128x6,128x128x3,128x128x4",
                   help="BLOCK_N x BLOCK_K x stages, comma-separated")
    p.add_argument("--out", default=".")
    args = p.parse_args()
    log = bfm.jsonl_log(args.out, "probe_decode_tma.jsonl")
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 60 << 20)
    lines = ["us per call, round 1 / round 2 (weight bytes / time in TB/s); ptr: pointer loads, tma: TensorDescriptor "
             "loads, tma_halves: two descriptor boxes of half the rows and two dots (a gated tile's form); "
             "diff: max |ptr - other| / max |ptr| over both others",
             "| shape | slots | tile | MB | ptr | tma | tma_halves | tma / ptr | tma_halves / ptr | diff |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for shape in args.shapes.split(","):
        E, N, K = SHAPES[shape]
        w, w_scale, a, a_scale = make_inputs(E, N, K)
        for S in (int(s) for s in args.slots.split(",")):
            nbytes = S * N * K
            calls = max(2, -(-4 * l2 // nbytes))
            # Rotated expert sets: call i takes experts i * S .. i * S + S - 1 (mod E), distinct within a call.
            sets = [torch.tensor([(i * S + j) % E for j in range(S)], device="cuda", dtype=torch.int32)
                    for i in range(calls)]
            out = {v: torch.empty(S, N, TOKENS, device="cuda", dtype=torch.bfloat16) for v in VARIANTS}
            for tile in args.tiles.split(","):
                bn, bk, st = (int(x) for x in tile.split("x"))
                warps = 4
                results = {}
                for variant in VARIANTS:
                    run_variant(w, w_scale, a, a_scale, sets[0], out[variant], bn, bk, st, warps, variant)
                torch.cuda.synchronize()
                diff = max(((out["ptr"].float() - out[v].float()).abs().max()
                            / out["ptr"].float().abs().max().clamp_min(1e-30)).item() for v in VARIANTS[1:])
                rounds: dict[str, list[float]] = {v: [] for v in VARIANTS}
                for _ in range(ROUNDS):
                    for variant in VARIANTS:
                        def step(i, variant=variant):
                            run_variant(w, w_scale, a, a_scale, sets[i], out[variant], bn, bk, st, warps, variant)
                        rounds[variant].append(bfm.time_graph(step, calls, REPLAYS))
                for variant, us in rounds.items():
                    results[variant] = statistics.mean(us)
                cell = {v: f"{' / '.join(f'{u:.1f}' for u in rounds[v])} ({nbytes / results[v] / 1e6:.2f})"
                        for v in rounds}
                line = (f"| {shape} | {S} | {bn}x{bk}x{st} | {nbytes / 1e6:.1f} | {cell['ptr']} | {cell['tma']} | "
                        f"{cell['tma_halves']} | {results['tma'] / results['ptr']:.3f} | "
                        f"{results['tma_halves'] / results['ptr']:.3f} | {diff:.1e} |")
                log({"shape": shape, "slots": S, "tile": tile, "bytes": nbytes, "us": rounds, "diff": diff})
                print(line, flush=True)
                lines.append(line)
    (Path(args.out) / "probe_decode_tma.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
