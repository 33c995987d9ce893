"""H200 probe (issue #16): the down GEMM's tile for large FP8 block-scaled experts at 1-4 tokens, by the whole layer.

The eleventh session's timeline had DeepSeek-V3-TP2's down GEMM at M = 2 (K = 1024: eight 128-deep
steps a program) streaming at about 3 TB/s over 1792 programs of 64 rows, and a 128-row down tile
took the layer from 96.3 to 95.2 us there in two alternating rounds, where the tiles' launches alone
had been level. Each variant keeps the table's gate_up tile and changes the down tile; the layer
runs on the path ``path="auto"`` takes; variants alternate in two rounds (the second in reverse
order) on bench_moe_layer's inputs and timer, each output against the fp32 reference.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_down_tiles.py --out $OUT
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tune_moe_decode as tmd

from jitguard.kernels import moe_decode
from jitguard.kernels.moe_configs import TileConfig

ROUNDS = 2
# (label, down tile; block_m follows the table's gate_up tile); "table" is the decode table's row.
DOWN_TILES = (("table", None),
              ("128 s3", TileConfig(16, 128, 128, 1, 4, 3, True)),
              ("128 s4", TileConfig(16, 128, 128, 1, 4, 4, True)),
              ("128 s2", TileConfig(16, 128, 128, 1, 4, 2, True)),
              ("256 s3 w8", TileConfig(16, 256, 128, 1, 8, 3, True)),
              ("128 s3 no swap", TileConfig(16, 128, 128, 1, 4, 3, False)))


def probe(layer: tmd.Layer, M: int, log) -> str:
    x, logits = tmd.inputs(layer, M)
    ref = tmd.reference(layer, x, logits)
    out = torch.empty_like(x)
    table = tmd.table_tiles(layer.case, M)
    path = moe_decode.plan_fused_moe_decode(x, logits, layer.layers[0][0], layer.layers[0][1], layer.k,
                                            renormalize=True, workspace=layer.ws, out=out, **layer.kwargs(0)).path
    plans, errs = {}, {}
    for label, down in DOWN_TILES:
        tiles = table if down is None else tmd.with_down_tile(table, down)
        try:
            plans[label] = layer.plans(x, logits, out, path, tiles)
            errs[label] = tmd.run_error(layer, plans[label], out, ref)
        except Exception as exc:  # a tile this layer or Triton cannot take: named, left out
            print(f"# {layer.name} M={M} down {label}: {type(exc).__name__}: {exc}"[:300], flush=True)
            plans.pop(label, None)
    times = tmd.time_alternating(layer, plans, ROUNDS)
    log({"case": layer.name, "M": M, "path": path, "us": times, "err": errs,
         "table": [repr(table.gate_up), repr(table.down)]})
    cells = [" / ".join(f"{t:.1f}" for t in times[label]) if label in times else "-" for label, _ in DOWN_TILES]
    return (f"| {layer.name} | {M} | {path} | " + " | ".join(cells) + " | "
            + f"{min(errs.values()):.1e}-{max(errs.values()):.1e} |")


def main() -> None:
    args = tmd.probe_parser(__doc__, "deepseek-v3-tp2-fp8-block", "1,2,3,4").parse_args()
    header = tmd.probe_header("us per layer, round 1 / round 2 (round 2 in reverse order), the table's gate_up "
                              "tile and each down tile (16-token swapped tiles, 4 warps, unless named); err: "
                              "range over the variants against the fp32 reference",
                              ["path", *(label for label, _ in DOWN_TILES), "err"])
    tmd.probe_each_case_and_m(args, "probe_decode_down_tiles", header, probe)


if __name__ == "__main__":
    main()
