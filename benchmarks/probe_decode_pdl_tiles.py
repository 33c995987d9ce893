"""H200 probe (issue #16): why a gate_up tile that is faster alone does not make the layer faster.

On 2026-12-01 the tile sweep found Qwen3-30B-FP8 gate_up tiles 3-4 us faster alone at M = 2 and 4
(6 stages, 60 KB of shared memory per program) whose whole layer was no faster. One guess: with
programmatic dependent launch the down GEMM's programs start early and wait in free SM slots; a
gate_up tile that fills the shared memory leaves none, so the down GEMM starts late. This probe
times, per case and M, the table's tiles and the faster gate_up tile (the table's down tile), each
as a whole layer with PDL and without, and each launch alone, in one run (inputs and timer of
bench_moe_layer.py: CUDA graphs, L2 defeated).

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_pdl_tiles.py --out $OUT
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import tune_moe_decode as tmd

from jitguard.kernels import moe_decode
from jitguard.kernels.moe_configs import MoeTileConfigs, TileConfig

# (case, M, the faster gate_up tile alone from the 2026-12-01 sweeps)
POINTS = [
    ("qwen3-30b-fp8-block", 2, TileConfig(16, 64, 128, 1, 4, 6, True)),
    ("qwen3-30b-fp8-block", 4, TileConfig(16, 128, 128, 1, 4, 4, True)),
    ("deepseek-v3-tp2-fp8-block", 2, TileConfig(16, 64, 128, 1, 4, 6, True)),
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=".")
    args = p.parse_args()
    log = bfm.jsonl_log(Path(args.out), "probe_decode_pdl_tiles.jsonl")
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 60 << 20)
    layers: dict[str, tmd.Layer] = {}
    lines = ["us: whole layer with PDL / without PDL; route / gate_up / down alone (with PDL)",
             "| case | M | tiles | layer, PDL | layer, no PDL | stages alone |", "|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    real_pdl = moe_decode.pdl_supported
    for name, M, fast_gate_up in POINTS:
        layer = tmd.layer_for(layers, name, l2)
        x, logits = tmd.inputs(layer, M)
        out = torch.empty_like(x)
        table = tmd.table_tiles(layer.case, M)
        fast = MoeTileConfigs(fast_gate_up, TileConfig(fast_gate_up.block_m, *tmd._rest(table.down)))
        for label, tiles in (("table", table), ("fast gate_up", fast), ("table again", table)):
            with_pdl, stages = layer.time_plans(layer.plans(x, logits, out, "grouped", tiles))
            moe_decode.pdl_supported = lambda: False
            try:
                without_pdl, _ = layer.time_plans(layer.plans(x, logits, out, "grouped", tiles))
            finally:
                moe_decode.pdl_supported = real_pdl
            log({"case": name, "M": M, "tiles": label, "gate_up": tiles.gate_up.__dict__,
                 "down": tiles.down.__dict__, "pdl_us": with_pdl, "no_pdl_us": without_pdl, "stages": stages})
            line = (f"| {name} | {M} | {label} {tmd._fmt(tiles.gate_up)} | {with_pdl:.1f} | {without_pdl:.1f} | "
                    + " / ".join(f"{s:.1f}" for s in stages) + " |")
            print(line, flush=True)
            lines.append(line)
    (Path(args.out) / "probe_decode_pdl_tiles.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
