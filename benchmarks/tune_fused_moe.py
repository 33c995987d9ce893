"""Tune the fused-MoE tile table on a GPU and print a replacement for ``TILE_TABLE``.

For each shape class (one representative layer per class) and each row boundary M, every
candidate tile is timed for both GEMMs (CUDA graph, L2 defeated as in bench_fused_moe.py), swap-AB
on and off; the fastest tile per GEMM wins (this script picks one tile for both GEMMs of a row; the
table allows a different one per GEMM as long as they share the token tile). Swap-AB is kept only
where it measured faster than the same tile without it, which is the heuristic the table encodes.

    python benchmarks/tune_fused_moe.py --classes bf16-many,fp8-many > table.py
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bench  # noqa: E402

TileConfig = bench.moe_configs.TileConfig

# (class key) -> (E, top_k, H, I, scheme) of the representative layer.
CLASSES = {
    "bf16-few": (("bf16", "few"), (8, 2, 4096, 14336, None)),
    "bf16-many": (("bf16", "many"), (128, 8, 2048, 768, None)),
    "fp8-few": (("fp8", "few"), (8, 2, 4096, 14336, "tensor")),
    "fp8-many": (("fp8", "many"), (128, 8, 2048, 768, "tensor")),
    "fp8-block-few": (("fp8-block", "few"), (8, 2, 4096, 14336, "block")),
    "fp8-block-many": (("fp8-block", "many"), (256, 8, 7168, 1024, "block")),
}


def candidates(M: int, fp8: bool):
    block_ms = [8, 16, 32] if M <= 64 else [16, 32, 64] if M <= 512 else [64, 128]
    for bm, bn, bk, stages in itertools.product(block_ms, [32, 64, 128], [64, 128] if not fp8 else [128], [3, 4, 5]):
        swaps = [True, False] if bm < 64 else [False]
        for swap in swaps:
            yield TileConfig(bm, bn, bk, 1 if M <= 64 else 8, 4, stages, swap)
    if M > 512:
        yield TileConfig(128, 256, 64 if not fp8 else 128, 16, 8, 3, False)


def time_tile(layer_set, x, ti, tw, cfg, which, scheme, replays):
    E, k, H, I = layer_set["shape"]
    layers = layer_set["layers"]
    routing = bench.moe_align.moe_align_block_size(ti, E, cfg.block_m)
    quant = {None: 0, "tensor": 1, "channel": 2, "block": 3}[scheme]
    mode = {"tensor": "tensor", "channel": "row", "block": "group"}.get(scheme)
    M = x.shape[0]
    if which == 1:
        a, a_s = bench.moe_quant.quantize_fp8(x, mode) if scheme else (x, None)
        out = torch.empty(M * k, I, device="cuda", dtype=torch.bfloat16)
    else:
        inter = torch.randn(M * k, I, device="cuda", dtype=torch.bfloat16)
        a, a_s = bench.moe_quant.quantize_fp8(inter, mode) if scheme else (inter, None)
        out = torch.empty(M * k, H, device="cuda", dtype=torch.bfloat16)
    flat_w = tw.reshape(-1).float().contiguous()

    def step(layer):
        w13, w2, s13, s2 = layers[layer]
        if which == 1:
            bench.moe_gemm.launch_moe_gemm(a, w13, out, routing, cfg, gated=True, a_rows_per_pair_div=k,
                                           quant=quant, a_scale=a_s, w_scale=s13)
        else:
            bench.moe_gemm.launch_moe_gemm(a, w2, out, routing, cfg, gated=False, a_rows_per_pair_div=1,
                                           topk_weights=flat_w, quant=quant, a_scale=a_s, w_scale=s2)

    return bench.time_graph(step, len(layers), replays)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--classes", default=",".join(CLASSES))
    p.add_argument("--ms", default="8,16,64,128,512,2048,8192")
    p.add_argument("--replays", type=int, default=100)
    args = p.parse_args()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    print("TILE_TABLE = {")
    for cls in args.classes.split(","):
        key, (E, k, H, I, scheme) = CLASSES[cls]
        wbytes = 1 if scheme else 2
        n_layers = max(1, -(-4 * l2 // (k * 3 * H * I * wbytes)))
        layer_set = {"shape": (E, k, H, I),
                     "layers": [bench.make_layer(E, H, I, scheme, 7 + i) for i in range(n_layers)]}
        print(f"    {key!r}: [")
        ms = [int(m) for m in args.ms.split(",")]
        for i, M in enumerate(ms):
            g = torch.Generator(device="cuda").manual_seed(M)
            x = torch.randn(M, H, device="cuda", dtype=torch.bfloat16, generator=g)
            tw, ti = torch.topk(torch.randn(M, E, device="cuda", generator=g).softmax(-1), k)
            best = None
            timings = {}
            for cfg in candidates(M, scheme is not None):
                try:
                    t = sum(time_tile(layer_set, x, ti.int(), tw, cfg, w, scheme, args.replays) for w in (1, 2))
                except Exception as exc:  # a tile that does not fit (shared memory) is skipped
                    print(f"        # skip {cfg}: {type(exc).__name__}", file=sys.stderr)
                    continue
                timings[cfg] = t
                if best is None or t < timings[best]:
                    best = cfg
            twin = TileConfig(**{**best.__dict__, "swap_ab": not best.swap_ab})
            note = f"{timings[best]:.1f} us" + (f", swap flipped {timings[twin]:.1f} us" if twin in timings else "")
            max_m = None if i == len(ms) - 1 else M
            c = best
            print(f"        ({max_m}, _same(_t({c.block_m}, {c.block_n}, {c.block_k}, {c.group_m}, {c.num_warps}, "
                  f"{c.num_stages}, {c.swap_ab}))),  # M={M}: {note}", flush=True)
        print("    ],")
        del layer_set
        torch.cuda.empty_cache()
    print("}")


if __name__ == "__main__":
    main()
