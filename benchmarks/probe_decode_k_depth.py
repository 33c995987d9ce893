"""H200 probe (issue #16): FP8 block-scaled decode tiles deeper than one scale group, against the table's.

The decode GEMMs stream each weight row 128 bytes per K step (one 128-column scale group of e4m3),
while the bf16 and per-tensor FP8 rows that measured fastest read 256-512 bytes of a row per step
(moe_configs.TILE_TABLE). With ``block_k`` = 256 or 512 a loop iteration now runs two or four
128-deep steps (each with its own scales) whose weight loads are issued together. This times, per
(case, M), the table's row and variants of it (gate_up and/or down deeper, stages cut to keep the
bytes in flight or kept), alternating in two rounds: the whole layer on its automatic path, each
launch alone, each variant's error against the fp32 reference, and vLLM's two GEMMs alone once.
Inputs and timer of bench_moe_layer.py (CUDA graphs, L2 defeated).

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_k_depth.py --vllm-file .vendor/vllm_fused_moe.py \\
        --vllm-configs .vendor/configs --out $OUT
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import bench_moe_layer as bml
import tune_moe_decode as tmd

from jitguard.kernels.moe_configs import MoeTileConfigs, TileConfig

# (bf16 rows take block_k 256 / 512 natively: one step per iteration, no scale groups.)
POINTS = [("deepseek-v3-tp2-fp8-block", (1, 2, 4, 8)), ("qwen3-30b-fp8-block", (1, 2, 4, 8, 16)),
          ("qwen3-30b-bf16", (1, 2, 4))]


def deeper(tile: TileConfig, block_k: int, keep_stages: bool = False) -> TileConfig:
    """``tile`` block_k deep; unless keep_stages, with stages cut so the bytes in flight stay (at least 2)."""
    stages = tile.num_stages if keep_stages else max(2, tile.num_stages * tile.block_k // block_k)
    return dataclasses.replace(tile, block_k=block_k, num_stages=stages)


# (label, table row -> candidate row)
VARIANTS = [
    ("gu256", lambda t: MoeTileConfigs(deeper(t.gate_up, 256), t.down)),
    ("gu256 same stages", lambda t: MoeTileConfigs(deeper(t.gate_up, 256, True), t.down)),
    ("gu512", lambda t: MoeTileConfigs(deeper(t.gate_up, 512), t.down)),
    ("dn256", lambda t: MoeTileConfigs(t.gate_up, deeper(t.down, 256))),
    ("both256", lambda t: MoeTileConfigs(deeper(t.gate_up, 256), deeper(t.down, 256))),
]


def label(tiles: MoeTileConfigs) -> str:
    return (f"gate_up bk{tiles.gate_up.block_k} s{tiles.gate_up.num_stages}, "
            f"down bk{tiles.down.block_k} s{tiles.down.num_stages}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vllm-file")
    p.add_argument("--vllm-configs")
    p.add_argument("--cases", default="deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block")
    p.add_argument("--ms", help="token counts instead of each case's own")
    p.add_argument("--out", default=".")
    args = p.parse_args()
    out_dir = Path(args.out)
    log = bfm.jsonl_log(out_dir, "probe_decode_k_depth.jsonl")
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    bw = bfm.measure_bandwidths(tmd.REPLAYS)
    lines = [f"# {props.name}, torch {torch.__version__}, triton {triton.__version__}, read-only {bw[1]:.0f} GB/s",
             "",
             "us per layer (x floor) and route / gate_up / down alone (the pairs path has no route launch);",
             "round 1 then round 2, each: the table's row, then " + ", ".join(name for name, _ in VARIANTS),
             "| case | M | path | floor us | round 1 | round 2 | err per row | vLLM GEMMs only |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    layers: dict[str, tmd.Layer] = {}
    wanted = args.cases.split(",")
    for name, ms in POINTS:
        if name not in wanted:
            continue
        layer = tmd.layer_for(layers, name, l2)
        for M in [int(m) for m in args.ms.split(",")] if args.ms else ms:
            x, logits = tmd.inputs(layer, M)
            out = torch.empty_like(x)
            fl = tmd.floor_us(layer, M, logits, bw[1])
            table = tmd.table_tiles(layer.case, M)
            candidates = [table] + [make(table) for _, make in VARIANTS]
            ref = tmd.reference(layer, x, logits)
            errs, path = [], "auto"
            for tiles in candidates:
                out.fill_(float("nan"))
                plan = layer.plans(x, logits, out, "auto", tiles)[0]
                path = plan.path
                for _, launch in plan.launches:
                    launch()
                errs.append(bml.rel(out, ref))
            rounds = []
            for rnd in (1, 2):
                cells = []
                for tiles in candidates:
                    t, stages = layer.time_plans(layer.plans(x, logits, out, "auto", tiles))
                    alone = "/".join(f"{s:.1f}" for s in stages)
                    cells.append(f"{t:.1f} ({t / fl:.2f}x) {alone}")
                    log({"case": name, "M": M, "round": rnd, "path": path, "tiles": label(tiles),
                         "gate_up": tiles.gate_up.__dict__, "down": tiles.down.__dict__, "us": t, "stages": stages,
                         "floor_us": fl})
                rounds.append("; ".join(cells))
            vg = float("nan")
            if vllm is not None:
                vg, _, _ = tmd.vllm_gemms_us(layer, M, x, logits, vllm, args.vllm_configs)
            log({"case": name, "M": M, "errs": errs, "vllm_gemms_us": vg, "rows": [label(c) for c in candidates]})
            line = (f"| {name} | {M} | {path} | {fl:.1f} | {rounds[0]} | {rounds[1]} | "
                    + "/".join(f"{e:.1e}" for e in errs) + f" | {vg:.1f} |")
            print(line, flush=True)
            lines.append(line)
    (out_dir / "probe_decode_k_depth.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
