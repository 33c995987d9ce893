"""H200 probe (issue #16): candidate decode tile rows against the table's, side by side.

For each (case, M, candidate row): the whole layer on the table's row and on the candidate,
alternating (table, candidate, table, candidate), each launch alone too, and the candidate's error
against the fp32 reference; inputs and timer of bench_moe_layer.py (CUDA graphs, L2 defeated).
The candidates are the rows the 2026-12-01 tile sweep found fastest for DeepSeek-V3-TP2 at M = 4
and 8 (benchmarks/results/moe_layer.md), for experts over 8 MiB.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_rows.py --out $OUT
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import bench_moe_layer as bml
import tune_moe_decode as tmd

from jitguard.kernels.moe_configs import MoeTileConfigs, TileConfig

POINTS = [
    ("deepseek-v3-tp2-fp8-block", M, MoeTileConfigs(TileConfig(16, 128, 128, 1, 4, 6, True),
                                                    TileConfig(16, 64, 128, 1, 4, 3, True)))
    for M in (3, 4)
] + [
    ("deepseek-v3-tp2-fp8-block", M, MoeTileConfigs(TileConfig(8, 32, 128, 1, 2, 6, True),
                                                    TileConfig(8, 64, 128, 1, 4, 4, False)))
    for M in (6, 8)
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=".")
    args = p.parse_args()
    log = bfm.jsonl_log(Path(args.out), "probe_decode_rows.jsonl")
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 60 << 20)
    layers: dict[str, tmd.Layer] = {}
    lines = ["us per layer, route / gate_up / down alone; table and candidate alternating",
             "| case | M | candidate | table | candidate | table again | candidate again | err candidate |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for name, M, candidate in POINTS:
        layer = tmd.layer_for(layers, name, l2)
        x, logits = tmd.inputs(layer, M)
        out = torch.empty_like(x)
        table = tmd.table_tiles(layer.case, M)
        cells = []
        for tiles in (table, candidate, table, candidate):
            t, stages = layer.time_plans(layer.plans(x, logits, out, "grouped", tiles))
            cells.append(f"{t:.1f} " + "/".join(f"{s:.1f}" for s in stages))
            log({"case": name, "M": M, "gate_up": tiles.gate_up.__dict__, "down": tiles.down.__dict__, "us": t,
                 "stages": stages})
        out.fill_(float("nan"))
        for _, launch in layer.plans(x, logits, out, "grouped", candidate)[0].launches:
            launch()
        err = bml.rel(out, tmd.reference(layer, x, logits))
        line = (f"| {name} | {M} | {tmd._fmt(candidate.gate_up)} {tmd._fmt(candidate.down)} | "
                + " | ".join(cells) + f" | {err:.1e} |")
        print(line, flush=True)
        lines.append(line)
    (Path(args.out) / "probe_decode_rows.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
