"""H200 probe (issue #16): the decode layer's down GEMM on a persistent grid, against one program per item.

``moe_decode.PERSISTENT_DOWN_PROGRAMS_PER_SM`` = 0 launches one program per (token tile, column
tile); N > 0 launches N programs per SM, each looping over several items in one software-pipelined
loop (``moe_decode_down_persistent_kernel``). The down GEMMs stream their rows at 65-75% of the
read bandwidth, below gate_up's 85-89%, and their time followed the program count when split over
K (benchmarks/results/moe_layer.md, fifth session): with K = 768-1024 (6-8 steps of 128) each
program fills and drains its pipeline for a few steps. This times, per (case, M), the table's tiles
with the switch at each value (and the down tile two stages deeper at 4 per SM), alternating in two
rounds: the whole layer on its automatic path, each launch alone, each variant's output against the
switch-off layer's (bit for bit) and its error against the fp32 reference, and vLLM's two GEMMs
alone once. Inputs and timer of bench_moe_layer.py (CUDA graphs, L2 defeated).

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_persistent.py --vllm-file .vendor/vllm_fused_moe.py \\
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

from jitguard.kernels import moe_decode
from jitguard.kernels.moe_configs import MoeTileConfigs

POINTS = [("deepseek-v3-tp2-fp8-block", (1, 2, 3, 4, 6, 8)), ("qwen3-30b-fp8-block", (1, 2, 4, 8, 16)),
          ("qwen3-30b-bf16", (8, 16))]
# (label, programs per SM, extra down stages)
VARIANTS = [("off", 0, 0), ("p1", 1, 0), ("p2", 2, 0), ("p4", 4, 0), ("p8", 8, 0), ("p16", 16, 0),
            ("p4 s+2", 4, 2)]


def tiles_for(table: MoeTileConfigs, extra_stages: int) -> MoeTileConfigs:
    if not extra_stages:
        return table
    return MoeTileConfigs(table.gate_up, dataclasses.replace(table.down,
                                                             num_stages=table.down.num_stages + extra_stages))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vllm-file")
    p.add_argument("--vllm-configs")
    p.add_argument("--cases", default=",".join(name for name, _ in POINTS))
    p.add_argument("--ms", help="token counts instead of each case's own")
    p.add_argument("--out", default=".")
    args = p.parse_args()
    out_dir = Path(args.out)
    log = bfm.jsonl_log(out_dir, "probe_decode_persistent.jsonl")
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    bw = bfm.measure_bandwidths(tmd.REPLAYS)
    lines = [f"# {props.name}, torch {torch.__version__}, triton {triton.__version__}, read-only {bw[1]:.0f} GB/s",
             "",
             "us per layer (x floor) and route / gate_up / down alone (the pairs path has no route launch);",
             "round 1 then round 2, each: " + ", ".join(name for name, _, _ in VARIANTS)
             + "; 'same' = each variant's output equal to the switch-off layer's bit for bit",
             "| case | M | path | floor us | round 1 | round 2 | same | err per variant | vLLM GEMMs only |",
             "|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    layers: dict[str, tmd.Layer] = {}
    wanted = args.cases.split(",")
    shipped = moe_decode.PERSISTENT_DOWN_PROGRAMS_PER_SM
    try:
        for name, ms in POINTS:
            if name not in wanted:
                continue
            layer = tmd.layer_for(layers, name, l2)
            for M in [int(m) for m in args.ms.split(",")] if args.ms else ms:
                x, logits = tmd.inputs(layer, M)
                out = torch.empty_like(x)
                fl = tmd.floor_us(layer, M, logits, bw[1])
                table = tmd.table_tiles(layer.case, M)
                ref = tmd.reference(layer, x, logits)
                errs, same, path, first = [], [], "auto", None
                for _, programs, extra in VARIANTS:
                    moe_decode.PERSISTENT_DOWN_PROGRAMS_PER_SM = programs
                    out.fill_(float("nan"))
                    plan = layer.plans(x, logits, out, "auto", tiles_for(table, extra))[0]
                    path = plan.path
                    for _, launch in plan.launches:
                        launch()
                    errs.append(bml.rel(out, ref))
                    first = out.clone() if first is None else first
                    same.append(bool(torch.equal(out, first)))
                rounds = []
                for rnd in (1, 2):
                    cells = []
                    for label, programs, extra in VARIANTS:
                        moe_decode.PERSISTENT_DOWN_PROGRAMS_PER_SM = programs
                        t, stages = layer.time_plans(layer.plans(x, logits, out, "auto", tiles_for(table, extra)))
                        alone = "/".join(f"{s:.1f}" for s in stages)
                        cells.append(f"{t:.1f} ({t / fl:.2f}x) {alone}")
                        log({"case": name, "M": M, "round": rnd, "path": path, "variant": label, "us": t,
                             "stages": stages, "floor_us": fl})
                    rounds.append("; ".join(cells))
                moe_decode.PERSISTENT_DOWN_PROGRAMS_PER_SM = shipped
                vg = float("nan")
                if vllm is not None:
                    vg, _, _ = tmd.vllm_gemms_us(layer, M, x, logits, vllm, args.vllm_configs)
                log({"case": name, "M": M, "errs": errs, "same": same, "vllm_gemms_us": vg})
                line = (f"| {name} | {M} | {path} | {fl:.1f} | {rounds[0]} | {rounds[1]} | "
                        + "/".join("y" if s else "N" for s in same) + " | "
                        + "/".join(f"{e:.1e}" for e in errs) + f" | {vg:.1f} |")
                print(line, flush=True)
                lines.append(line)
    finally:
        moe_decode.PERSISTENT_DOWN_PROGRAMS_PER_SM = shipped
        (out_dir / "probe_decode_persistent.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
