"""H200 probe (issue #16): the decode layer's down GEMM split over K, against the table's unsplit row.

At one to eight tokens the down GEMM has few programs with short K loops (DeepSeek-V3-TP2: 8 K
steps, Qwen3-30B: 6) and streams its weights at 34-64% of the read bandwidth, where a plain read of
the same bytes over more programs reaches ~80% (moe_layer.md, "Fixed costs at one token"). This
times, per (case, M), the table's row and the same row with the down tile's ``split_k`` set to each
candidate, alternating in two rounds (table, splits..., table, splits...): the whole layer on its
automatic path, each launch alone, each candidate's error against the fp32 reference, and vLLM's
two GEMMs alone once. Inputs and timer of bench_moe_layer.py (CUDA graphs, L2 defeated).

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_split_k.py --vllm-file .vendor/vllm_fused_moe.py \\
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

from jitguard.kernels.moe_configs import MoeTileConfigs

# (case, token counts, splits): the splits divide the K steps (8 for DeepSeek's I = 1024, 6 for Qwen3's 768).
POINTS = [
    ("qwen3-30b-fp8-block", (1, 2, 4, 8), (2, 3, 6)),
    ("deepseek-v3-tp2-fp8-block", (1, 2, 4, 8), (2, 4, 8)),
    ("qwen3-30b-bf16", (1, 2, 4), (2, 3, 6)),
]


def with_split(tiles: MoeTileConfigs, split: int) -> MoeTileConfigs:
    return MoeTileConfigs(tiles.gate_up, dataclasses.replace(tiles.down, split_k=split))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vllm-file")
    p.add_argument("--vllm-configs")
    p.add_argument("--cases", default=",".join(name for name, _, _ in POINTS))
    p.add_argument("--out", default=".")
    args = p.parse_args()
    out_dir = Path(args.out)
    log = bfm.jsonl_log(out_dir, "probe_decode_split_k.jsonl")
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    bw = bfm.measure_bandwidths(tmd.REPLAYS)
    lines = [f"# {props.name}, torch {torch.__version__}, triton {triton.__version__}, read-only {bw[1]:.0f} GB/s",
             "",
             "us per layer (x floor) and route / gate_up / down alone (the pairs path has no route launch);",
             "round 1 then round 2, each: the table's row, then its down tile split over K",
             "| case | M | path | floor us | split_k: round 1 | round 2 | err per split | vLLM GEMMs only |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    layers: dict[str, tmd.Layer] = {}
    wanted = args.cases.split(",")
    for name, ms, splits in POINTS:
        if name not in wanted:
            continue
        layer = tmd.layer_for(layers, name, l2)
        for M in ms:
            x, logits = tmd.inputs(layer, M)
            out = torch.empty_like(x)
            fl = tmd.floor_us(layer, M, logits, bw[1])
            table = tmd.table_tiles(layer.case, M)
            candidates = [table] + [with_split(table, s) for s in splits]
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
                    cells.append(f"{tiles.down.split_k}: {t:.1f} ({t / fl:.2f}x) {alone}")
                    log({"case": name, "M": M, "round": rnd, "path": path, "split_k": tiles.down.split_k,
                         "gate_up": tiles.gate_up.__dict__, "down": tiles.down.__dict__, "us": t, "stages": stages,
                         "floor_us": fl})
                rounds.append("; ".join(cells))
            vg = float("nan")
            if vllm is not None:
                vg, _, _ = tmd.vllm_gemms_us(layer, M, x, logits, vllm, args.vllm_configs)
            log({"case": name, "M": M, "errs": errs, "vllm_gemms_us": vg})
            line = (f"| {name} | {M} | {path} | {fl:.1f} | {rounds[0]} | {rounds[1]} | "
                    + "/".join(f"{e:.1e}" for e in errs) + f" | {vg:.1f} |")
            print(line, flush=True)
            lines.append(line)
    (out_dir / "probe_decode_split_k.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
