"""H200 probe (issue #16, fifteenth session): what holds an FP8 block-scaled decode GEMM's weight stream
below the DRAM's rate: the weight layout, or the per-K-step block scaling?

The bare stream of ``probe_decode_tma.py`` (swap-AB, a 16-token e4m3 tile in the MMA's N slot, ``S``
expert slots per call rotated across the calls of a CUDA graph so L2 holds none of them, no routing, no
epilogue), four variants alternating in two rounds:

- ``rows``: the weights as every MoE kernel takes them, [E, N, K] row-major: a tile step reads
  BLOCK_N rows of BLOCK_K bytes, K bytes apart; each step's product scaled by its block scales
  (``acc += dot * b_s * a_s``: the MMA result waited for, then two scale loads and an FMA), as the
  decode GEMMs do;
- ``tiles``: the same bytes laid out tile by tile ([E, N / BLOCK_N, K / BLOCK_K, BLOCK_N, BLOCK_K]), so a
  step reads one contiguous BLOCK_N x BLOCK_K block;
- ``rows, unscaled`` / ``tiles, unscaled``: no block scales, the MMA accumulating across steps
  (``acc = dot(b, a, acc)``): what the stream costs without the per-step scaling.

``rows`` and ``tiles`` compute the same products (the weights re-laid, not changed): their outputs are
compared. Prediction (before the call): if the layout holds the stream, ``tiles`` is 20-40% faster than
``rows`` at 8 and 16 slots; if the per-step scaling does, the unscaled variants are.

Answered in ``benchmarks/results/moe_layer.md``, fifteenth session (2026-12-02), section 3: the layout
is not the limiter (tiles / rows 0.91-1.09); the per-step scaling costs 2-17%.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_stream_parts.py --out $OUT
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
from probe_decode_tma import SHAPES, TOKENS, make_inputs

REPLAYS = 50
ROUNDS = 2
VARIANTS = ("rows", "tiles", "rows, unscaled", "tiles, unscaled")


@triton.jit
def _stream_kernel(w_ptr, w_scale_ptr, a_ptr, a_scale_ptr, experts_ptr, out_ptr, N, K,
                   stride_we, stride_wn, stride_wse, stride_wsn, stride_am, stride_asm,
                   BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, TOKENS_C: tl.constexpr, TILED: tl.constexpr,
                   SCALED: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BLOCK_N)
    slot = pid // n_tiles
    pid_n = pid % n_tiles
    expert = tl.load(experts_ptr + slot).to(tl.int64)
    rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    toks = tl.arange(0, TOKENS_C)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + toks[None, :] * stride_am + offs_k[:, None]
    as_rows = a_scale_ptr + toks * stride_asm
    ws_rows = w_scale_ptr + expert * stride_wse + (rows // 128) * stride_wsn
    if TILED:
        # Tile (pid_n, kb) is BLOCK_N * BLOCK_K contiguous bytes; a row-group's tiles follow each other.
        w_ptrs = (w_ptr + expert * stride_we + pid_n.to(tl.int64) * BLOCK_N * K
                  + tl.arange(0, BLOCK_N)[:, None] * BLOCK_K + offs_k[None, :])
        step = BLOCK_N * BLOCK_K
    else:
        w_ptrs = w_ptr + expert * stride_we + rows[:, None].to(tl.int64) * stride_wn + offs_k[None, :]
        step = BLOCK_K
    acc = tl.zeros((BLOCK_N, TOKENS_C), dtype=tl.float32)
    for kb in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=NUM_STAGES):
        b = tl.load(w_ptrs + kb * step)
        a = tl.load(a_ptrs + kb * BLOCK_K)
        if SCALED:
            acc += tl.dot(b, a) * tl.load(ws_rows + kb)[:, None] * tl.load(as_rows + kb)[None, :]
        else:
            acc = tl.dot(b, a, acc)
    tl.store(out_ptr + slot * N * TOKENS_C + rows[:, None] * TOKENS_C + toks[None, :], acc.to(tl.bfloat16))


def tiled(w: torch.Tensor, block_n: int, block_k: int) -> torch.Tensor:
    """[E, N, K] re-laid tile by tile: [E, N / block_n, K / block_k, block_n, block_k], flat per expert."""
    E, N, K = w.shape
    return w.view(E, N // block_n, block_n, K // block_k, block_k).permute(0, 1, 3, 2, 4).contiguous().view(E, N, K)


def run(variant: str, w_rows, w_tiles, w_scale, a, a_scale, experts, out, bn: int, bk: int, stages: int, warps: int):
    w = w_tiles if variant.startswith("tiles") else w_rows
    N, K = w.shape[1:]
    grid = (experts.numel() * triton.cdiv(N, bn),)
    _stream_kernel[grid](w, w_scale, a, a_scale, experts, out, N, K, w.stride(0), w.stride(1), w_scale.stride(0),
                         w_scale.stride(1), a.stride(0), a_scale.stride(0), BLOCK_N=bn, BLOCK_K=bk, TOKENS_C=TOKENS,
                         TILED=variant.startswith("tiles"), SCALED="unscaled" not in variant, NUM_STAGES=stages,
                         num_warps=warps)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--slots", default="8,16")
    p.add_argument("--tiles", default="64x128x4,64x128x6,128x128x4", help="BLOCK_N x BLOCK_K x stages")
    p.add_argument("--out", default=".")
    args = p.parse_args()
    log = bfm.jsonl_log(args.out, "probe_decode_stream_parts.jsonl")
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 60 << 20)
    lines = ["us per call, round 1 / round 2 (weight TB/s of the mean); same: rows and tiles outputs equal",
             "| shape | slots | tile | MB | " + " | ".join(VARIANTS) + " | tiles / rows | unscaled / rows | same |",
             "|---|---|---|---|" + "---|" * len(VARIANTS) + "---|---|---|"]
    print("\n".join(lines), flush=True)
    for shape in args.shapes.split(","):
        E, N, K = SHAPES[shape]
        w, w_scale, a, a_scale = make_inputs(E, N, K)
        for S in (int(s) for s in args.slots.split(",")):
            nbytes = S * N * K
            calls = max(2, -(-4 * l2 // nbytes))
            sets = [torch.tensor([(i * S + j) % E for j in range(S)], device="cuda", dtype=torch.int32)
                    for i in range(calls)]
            out = {v: torch.empty(S, N, TOKENS, device="cuda", dtype=torch.bfloat16) for v in VARIANTS}
            for tile in args.tiles.split(","):
                bn, bk, st = (int(x) for x in tile.split("x"))
                w_tiles = tiled(w, bn, bk)
                for v in VARIANTS:
                    run(v, w, w_tiles, w_scale, a, a_scale, sets[0], out[v], bn, bk, st, 4)
                torch.cuda.synchronize()
                same = torch.equal(out["rows"], out["tiles"]) and torch.equal(out["rows, unscaled"],
                                                                                out["tiles, unscaled"])
                rounds: dict[str, list[float]] = {v: [] for v in VARIANTS}
                for r in range(ROUNDS):
                    for v in (VARIANTS if r % 2 == 0 else tuple(reversed(VARIANTS))):
                        def step(i, v=v, w_tiles=w_tiles):
                            run(v, w, w_tiles, w_scale, a, a_scale, sets[i], out[v], bn, bk, st, 4)
                        rounds[v].append(bfm.time_graph(step, calls, REPLAYS))
                mean = {v: statistics.mean(us) for v, us in rounds.items()}
                cells = [f"{' / '.join(f'{u:.1f}' for u in rounds[v])} ({nbytes / mean[v] / 1e6:.2f})"
                         for v in VARIANTS]
                line = (f"| {shape} | {S} | {tile} | {nbytes / 1e6:.1f} | " + " | ".join(cells)
                        + f" | {mean['tiles'] / mean['rows']:.3f} | {mean['rows, unscaled'] / mean['rows']:.3f} | "
                        + ("yes" if same else "NO") + " |")
                log({"shape": shape, "slots": S, "tile": tile, "bytes": nbytes, "us": rounds, "same": same})
                print(line, flush=True)
                lines.append(line)
                del w_tiles
    (Path(args.out) / "probe_decode_stream_parts.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
