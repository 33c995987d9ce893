"""H200 probe (issue #16): the grouped down GEMM reading the layout before it waits, and 256-deep gate_up rows.

Per (case, M), alternating in two rounds: the table's row with ``moe_decode.DOWN_READS_LAYOUT_BEFORE_WAIT``
off (the down GEMM waits for gate_up, then reads the tile count, the tile's expert and its pairs)
and on (it reads them first, through L2: gate_up lets it start only once the route launch has
completed), and for DeepSeek-V3-TP2 at M = 3..8 a 256-deep gate_up row (probe_decode_k_depth.py
measured it faster at M = 4 and 8) with the switch off. The whole layer on its automatic path, each launch alone, the
error against the fp32 reference, and vLLM's two GEMMs alone once; inputs and timer of
bench_moe_layer.py (CUDA graphs, L2 defeated).

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_layout_wait.py --vllm-file .vendor/vllm_fused_moe.py \\
        --vllm-configs .vendor/configs --out $OUT
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import bench_moe_layer as bml
import tune_moe_decode as tmd
from probe_decode_k_depth import deeper

from jitguard.kernels import moe_decode
from jitguard.kernels.moe_configs import MoeTileConfigs

POINTS = [("deepseek-v3-tp2-fp8-block", (1, 2, 3, 4, 5, 6, 7, 8)), ("qwen3-30b-fp8-block", (1, 2, 4, 8, 16)),
          ("qwen3-30b-bf16", (8, 16))]


def deep_gate_up(case: str, M: int, table: MoeTileConfigs) -> MoeTileConfigs | None:
    """The 256-deep gate_up candidate of probe_decode_k_depth.py's winners, where it has one."""
    if case != "deepseek-v3-tp2-fp8-block" or not 3 <= M <= 8:
        return None
    # M = 4 won with the stages kept (3), M = 8 with them halved (6 -> 3).
    return MoeTileConfigs(deeper(table.gate_up, 256, keep_stages=M <= 4), table.down)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vllm-file")
    p.add_argument("--vllm-configs")
    p.add_argument("--out", default=".")
    args = p.parse_args()
    out_dir = Path(args.out)
    log = bfm.jsonl_log(out_dir, "probe_decode_layout_wait.jsonl")
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    bw = bfm.measure_bandwidths(tmd.REPLAYS)
    lines = [f"# {props.name}, torch {torch.__version__}, triton {triton.__version__}, read-only {bw[1]:.0f} GB/s",
             "",
             "us per layer (x floor) and route / gate_up / down alone; two rounds of:",
             "table row waiting first | table row reading the layout first | 256-deep gate_up row waiting first",
             "| case | M | path | floor us | round 1 | round 2 | err per variant | vLLM GEMMs only |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    layers: dict[str, tmd.Layer] = {}
    for name, ms in POINTS:
        layer = tmd.layer_for(layers, name, l2)
        for M in ms:
            x, logits = tmd.inputs(layer, M)
            out = torch.empty_like(x)
            fl = tmd.floor_us(layer, M, logits, bw[1])
            table = tmd.table_tiles(layer.case, M)
            variants = [(False, table), (True, table)]
            deep = deep_gate_up(name, M, table)
            if deep is not None:
                variants.append((False, deep))
            ref = tmd.reference(layer, x, logits)
            errs, path = [], "auto"
            for switch, tiles in variants:
                moe_decode.DOWN_READS_LAYOUT_BEFORE_WAIT = switch
                out.fill_(float("nan"))
                plan = layer.plans(x, logits, out, "auto", tiles)[0]
                path = plan.path
                for _, launch in plan.launches:
                    launch()
                errs.append(bml.rel(out, ref))
            rounds = []
            for rnd in (1, 2):
                cells = []
                for switch, tiles in variants:
                    moe_decode.DOWN_READS_LAYOUT_BEFORE_WAIT = switch
                    t, stages = layer.time_plans(layer.plans(x, logits, out, "auto", tiles))
                    alone = "/".join(f"{s:.1f}" for s in stages)
                    cells.append(f"{t:.1f} ({t / fl:.2f}x) {alone}")
                    log({"case": name, "M": M, "round": rnd, "path": path, "layout_first": switch,
                         "gate_up": tiles.gate_up.__dict__, "down": tiles.down.__dict__, "us": t, "stages": stages,
                         "floor_us": fl})
                rounds.append(" \\| ".join(cells))
            moe_decode.DOWN_READS_LAYOUT_BEFORE_WAIT = True
            vg = float("nan")
            if vllm is not None:
                vg, _, _ = tmd.vllm_gemms_us(layer, M, x, logits, vllm, args.vllm_configs)
            log({"case": name, "M": M, "errs": errs, "vllm_gemms_us": vg})
            line = (f"| {name} | {M} | {path} | {fl:.1f} | {rounds[0]} | {rounds[1]} | "
                    + "/".join(f"{e:.1e}" for e in errs) + f" | {vg:.1f} |")
            print(line, flush=True)
            lines.append(line)
    (out_dir / "probe_decode_layout_wait.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
