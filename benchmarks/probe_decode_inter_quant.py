"""H200 probe (issue #16): FP8 block scales on the pairs path, the intermediate quantized by the down GEMM.

The eleventh session's timeline (``probe_decode_timeline.py``) put 1.2 us between gate_up's last K
loop and its last program's end at Qwen3-30B-FP8 M = 1: with ``QUANTIZE_INTER`` the last writer of
each 128-column group waits for its arrival atomic, re-reads the group and writes it as e4m3. Off,
gate_up stores bf16 and folds its absmax into the group's slot (an atomic whose result it does not
wait for), and the down GEMM quantizes the intermediate as it loads it (the pairs path's x launch
zeroes the slots). Also, at DeepSeek M = 2, the down GEMM's 1792 programs of 64 rows ran at about
3 TB/s in the timeline: a 128-row down tile there. Variants alternate in two rounds (the second in
reverse order) on bench_moe_layer's inputs and timer, each output against the fp32 reference.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_inter_quant.py --out $OUT
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_moe_layer as bml
import tune_moe_decode as tmd

from jitguard.kernels import moe_decode
from jitguard.kernels.moe_configs import MoeTileConfigs, TileConfig

ROUNDS = 2
DOWN_128 = TileConfig(16, 128, 128, 1, 4, 3, True)
# (label, path, moe_decode switches, down tile or None for the table's)
VARIANTS = (("pairs, inter by gate_up", "pairs", {}, None),
            ("pairs, inter by down", "pairs", {"QUANTIZE_INTER": False}, None),
            ("grouped", "grouped", {}, None),
            ("pairs, down 128 rows", "pairs", {}, DOWN_128))


def probe(layer: tmd.Layer, M: int, log) -> str:
    x, logits = tmd.inputs(layer, M)
    ref = tmd.reference(layer, x, logits)
    out = torch.empty_like(x)
    plans, errs = {}, {}
    for label, path, switches, down in VARIANTS:
        saved = {name: getattr(moe_decode, name) for name in switches}
        table_up = tmd.table_tiles(layer.case, M).gate_up
        tiles = None if down is None else MoeTileConfigs(table_up, replace(down, block_m=table_up.block_m))
        try:
            for name, value in switches.items():
                setattr(moe_decode, name, value)
            plans[label] = layer.plans(x, logits, out, path, tiles)
        finally:
            for name, value in saved.items():
                setattr(moe_decode, name, value)
        out.fill_(float("nan"))
        layer.plans_step(plans[label])(0)
        torch.cuda.synchronize()
        errs[label] = bml.rel(out, ref)
    times = tmd.time_alternating(layer, plans, ROUNDS)
    stages = {label: layer.time_plans(plans[label])[1] for label, *_ in VARIANTS}
    log({"case": layer.name, "M": M, "us": times, "err": errs, "stages": stages})
    cells = [" / ".join(f"{t:.1f}" for t in times[label]) for label, *_ in VARIANTS]
    cells += [" + ".join(f"{t:.1f}" for t in stages[label]) for label, *_ in VARIANTS]
    return (f"| {layer.name} | {M} | " + " | ".join(cells) + " | "
            + " ".join(f"{errs[label]:.1e}" for label, *_ in VARIANTS) + " |")


def main() -> None:
    args = tmd.probe_parser(__doc__, "qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block", "1,2,3,4").parse_args()
    labels = [label for label, *_ in VARIANTS]
    header = tmd.probe_header("us per layer, round 1 / round 2 (round 2 in reverse order); then each launch alone "
                              "in order (>= 32 a graph); err against the fp32 reference",
                              [*labels, *(f"{label}, launches alone" for label in labels), "err"])
    tmd.probe_each_case_and_m(args, "probe_decode_inter_quant", header, probe)


if __name__ == "__main__":
    main()
