"""H200 probe (issue #16): FP8 block-scaled tiles deeper than one scale group in fused_moe's grouped GEMMs.

``moe_gemm.moe_grouped_gemm_kernel`` now runs a tile ``block_k`` of 256 or 512 as two or four
128-deep steps per iteration, each with its own block scales (``K_UNROLL``, as the decode GEMM
does); before, a block-scaled tile was clamped to 128 deep. The decode GEMM measured 1-2% faster
with 256-deep gate_up rows at DeepSeek-sized M = 4 and 8 (benchmarks/results/moe_layer.md, fifth
session). This times the unfused layer ``fused_moe_from_logits`` serves at 16-64 tokens
(``softmax_topk`` + ``fused_moe``) per (case, M): TILE_TABLE's row and VARIANTS of it (or
probe_decode_k_depth's, ``--variants k-depth``), alternating in two rounds, each variant's output
against the row's (bit for bit: the steps and their order are those of 128-deep tiles), and vLLM's
two GEMMs alone once. Inputs and timer of bench_moe_layer.py (CUDA graphs, L2 defeated).

    PYTHONPATH=$PWD python3 benchmarks/probe_fused_moe_k_depth.py --vllm-file .vendor/vllm_fused_moe.py \\
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
import probe_decode_k_depth as pkd
import tune_moe_decode as tmd

from jitguard.kernels import moe_chain, moe_configs, moe_routing
from jitguard.kernels.moe_configs import MoeTileConfigs

POINTS = [("deepseek-v3-tp2-fp8-block", (16, 32, 64)), ("qwen3-30b-fp8-block", (32, 64))]


# (label, table row -> candidate row); --variants k-depth takes probe_decode_k_depth's instead.
# The first call (h200_kdepth_fused.sh) timed those: gate_up 256 deep at the same stages was the
# fastest at all five points; these vary it.
VARIANTS = [
    ("gu256", lambda t: MoeTileConfigs(pkd.deeper(t.gate_up, 256, True), t.down)),
    ("gu256 dn256", lambda t: MoeTileConfigs(pkd.deeper(t.gate_up, 256, True), pkd.deeper(t.down, 256, True))),
    ("gu256 s+1", lambda t: MoeTileConfigs(dataclasses.replace(pkd.deeper(t.gate_up, 256, True),
                                                               num_stages=t.gate_up.num_stages + 1), t.down)),
    ("gu256 dn s+1", lambda t: MoeTileConfigs(pkd.deeper(t.gate_up, 256, True),
                                              dataclasses.replace(t.down, num_stages=t.down.num_stages + 1))),
]
# --variants shape: the 256-deep gate_up row (TILE_TABLE's since 8b96090) with other widths and
# warps, and a narrower down tile (the third call).
SHAPE_VARIANTS = [
    ("gu bn64", lambda t: MoeTileConfigs(dataclasses.replace(t.gate_up, block_n=64), t.down)),
    ("gu bn256 s2", lambda t: MoeTileConfigs(dataclasses.replace(t.gate_up, block_n=256, num_stages=2), t.down)),
    ("gu 8 warps", lambda t: MoeTileConfigs(dataclasses.replace(t.gate_up, num_warps=8), t.down)),
    ("dn bn64", lambda t: MoeTileConfigs(t.gate_up, dataclasses.replace(t.down, block_n=64))),
    ("dn bn64 s4", lambda t: MoeTileConfigs(t.gate_up, dataclasses.replace(t.down, block_n=64, num_stages=4))),
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vllm-file")
    p.add_argument("--vllm-configs")
    p.add_argument("--cases", default=",".join(name for name, _ in POINTS))
    p.add_argument("--ms", help="token counts instead of each case's own")
    p.add_argument("--variants", choices=("own", "k-depth", "shape"), default="own")
    p.add_argument("--out", default=".")
    args = p.parse_args()
    variants = {"own": VARIANTS, "k-depth": pkd.VARIANTS, "shape": SHAPE_VARIANTS}[args.variants]
    out_dir = Path(args.out)
    log = bfm.jsonl_log(out_dir, "probe_fused_moe_k_depth.jsonl")
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    bw = bfm.measure_bandwidths(tmd.REPLAYS)
    lines = [f"# {props.name}, torch {torch.__version__}, triton {triton.__version__}, read-only {bw[1]:.0f} GB/s",
             "",
             "us per layer (softmax_topk + fused_moe, x floor); round 1 then round 2, each: TILE_TABLE's row, then "
             + ", ".join(name for name, _ in variants) + "; 'same' = output equal to the row's bit for bit",
             "| case | M | floor us | round 1 | round 2 | same | err per row | vLLM GEMMs only |",
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
            table = moe_configs.select_tile_configs(M, layer.E, tmd.case_precision(layer.scheme))
            candidates = [table] + [make(table) for _, make in variants]
            ref = tmd.reference(layer, x, logits)

            def run(i: int, tiles) -> None:
                tw, ti = moe_routing.softmax_topk(logits, layer.k, True)
                moe_chain.fused_moe(x, layer.layers[i][0], layer.layers[i][1], tw, ti, out=out, tile_configs=tiles,
                                    **layer.kwargs(i))

            errs, same, first = [], [], None
            for tiles in candidates:
                out.fill_(float("nan"))
                run(0, tiles)
                errs.append(bml.rel(out, ref))
                first = out.clone() if first is None else first
                same.append(bool(torch.equal(out, first)))
            rounds = []
            for rnd in (1, 2):
                cells = []
                for tiles in candidates:
                    t = bfm.time_graph(lambda i, tiles=tiles: run(i, tiles), layer.n_layers, tmd.REPLAYS)
                    cells.append(f"{t:.1f} ({t / fl:.2f}x)")
                    log({"case": name, "M": M, "round": rnd, "tiles": pkd.label(tiles), "us": t, "floor_us": fl})
                rounds.append("; ".join(cells))
            vg = float("nan")
            if vllm is not None:
                vg, _, _ = tmd.vllm_gemms_us(layer, M, x, logits, vllm, args.vllm_configs)
            log({"case": name, "M": M, "errs": errs, "same": same, "vllm_gemms_us": vg,
                 "rows": [pkd.label(c) for c in candidates]})
            line = (f"| {name} | {M} | {fl:.1f} | {rounds[0]} | {rounds[1]} | "
                    + "/".join("y" if s else "N" for s in same) + " | "
                    + "/".join(f"{e:.1e}" for e in errs) + f" | {vg:.1f} |")
            print(line, flush=True)
            lines.append(line)
    (out_dir / "probe_fused_moe_k_depth.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
