"""H200 probe (issue #16): what each part of the FP8 decode layer's epilogues costs, beside vLLM's GEMMs.

Our GEMMs do more than vLLM's two GEMM launches alone: gate_up applies SiLU * up and quantizes the
intermediate per 128-column group (its last writer re-reads the group), down multiplies by the
routing weight and sums each token's top-k rows (its last program per column tile). This probe
times, on the shipped grouped path, the whole layer and each GEMM alone with those epilogue parts
switched off one at a time (the planned launches' constexprs replaced; the outputs are then wrong,
only the times count), the layer without its route launch, and vLLM's gate_up and down alone, in
one run with the inputs and timer of bench_moe_layer.py (CUDA graphs, L2 defeated).

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_epilogues.py --vllm-file .vendor/vllm_fused_moe.py \\
        --vllm-configs .vendor/configs --out $OUT
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import tune_moe_decode as tmd

# (column, stage, constexprs replaced): each row times that stage alone with its launch changed.
STAGE_VARIANTS = [
    ("gate_up", "gate_up", {}),
    ("gate_up, no group quantization", "gate_up", {"QUANT_OUT": False, "AMAX_OUT": False}),
    ("down", "down", {}),
    ("down, no top-k reduce", "down", {"REDUCE": False}),
]


def with_constexprs(launch: functools.partial, replaced: dict) -> functools.partial:
    """The same planned launch with some keyword arguments (constexprs) replaced."""
    return functools.partial(launch.func, *launch.args, **{**launch.keywords, **replaced})


def probe(layer: tmd.Layer, M: int, vllm, configs_dir, log) -> str:
    x, logits = tmd.inputs(layer, M)
    out = torch.empty_like(x)
    plans = layer.plans(x, logits, out, "grouped", None)
    whole, _ = layer.time_plans(plans)  # also leaves every stage's inputs in the workspace

    def without_route(i):
        for name, launch in plans[i].launches:
            if name != "route":
                launch()

    cells = {"layer": whole, "layer without route": bfm.time_graph(without_route, layer.n_layers, tmd.REPLAYS)}
    for column, stage, replaced in STAGE_VARIANTS:
        launches = [with_constexprs(dict(plan.launches)[stage], replaced) for plan in plans]
        cells[column] = bfm.time_graph(lambda i, launches=launches: launches[i](), layer.n_layers, tmd.REPLAYS)
    if vllm is not None:
        _, cells["vLLM gate_up"], cells["vLLM down"] = tmd.vllm_gemms_us(layer, M, x, logits, vllm, configs_dir)
    log({"case": layer.name, "M": M, **cells})
    return f"| {layer.name} | {M} | " + " | ".join(f"{t:.1f}" for t in cells.values()) + " |"


def main() -> None:
    args = tmd.probe_parser(__doc__, "deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block", "1,2,4,8", vllm=True).parse_args()
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    columns = ["layer", "layer without route"] + [c for c, _, _ in STAGE_VARIANTS]
    columns += ["vLLM gate_up", "vLLM down"] if vllm is not None else []
    header = tmd.probe_header("us, each alone unless 'layer'; outputs of the switched-off variants are not checked",
                              columns)
    tmd.probe_each_case_and_m(args, "probe_decode_epilogues", header,
                              lambda layer, M, log: probe(layer, M, vllm, args.vllm_configs, log))


if __name__ == "__main__":
    main()
