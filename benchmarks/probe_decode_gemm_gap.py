"""H200 probe (issue #16): why the decode layer's GEMMs alone are slower than fused_moe's on the same tile.

At Qwen3-30B-FP8 M = 2 and 4 the decode gate_up alone measured 19.9 / 31.4 us (18.7 / 30.2 without its
group quantization) where fused_moe's grouped GEMM on the same tile measured 16.1 / 27.1 and vLLM's
16.5 / 27.3 (benchmarks/results/moe_layer.md and fused_moe.md, other calls). This probe times, in one
run on the shipped grouped path's inputs (the route launch's layout, x quantized, the intermediate
quantized), each decode GEMM alone as planned, with its epilogue parts or its programmatic dependent
launch switched off, beside ``moe_gemm.moe_grouped_gemm_kernel`` on the same tile and buffers and
vLLM's GEMM alone (CUDA graphs over rotated layer copies, L2 defeated, bench_moe_layer's timer).
Outputs of switched-off variants are not checked; only the times count.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_gemm_gap.py --vllm-file .vendor/vllm_fused_moe.py \\
        --vllm-configs .vendor/configs --out $OUT
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import probe_decode_epilogues as pde
import tune_moe_decode as tmd

from jitguard.kernels import moe_gemm
from jitguard.kernels.moe_align import AlignedRouting, max_padded_len
from jitguard.kernels.moe_inputs import normalize_w_scale

NO_PDL = {"LAUNCH_DEPENDENTS": False, "WAIT_PRIOR": 0}
# (column, stage, constexprs replaced, launched with PDL)
STAGE_VARIANTS = [
    ("gate_up", "gate_up", {}, True),
    ("gate_up, no group quantization", "gate_up", {"QUANT_OUT": False}, True),
    ("gate_up, no PDL", "gate_up", NO_PDL, False),
    ("gate_up, neither", "gate_up", {"QUANT_OUT": False, **NO_PDL}, False),
    ("down", "down", {}, True),
    ("down, no top-k reduce", "down", {"REDUCE": False}, True),
    ("down, no PDL", "down", NO_PDL, False),
]


def without_pdl_attribute(launch: functools.partial) -> functools.partial:
    keywords = {k: v for k, v in launch.keywords.items() if k != "launch_pdl"}
    return functools.partial(launch.func, *launch.args, **keywords)


def grouped_gemm_launches(layer: tmd.Layer, M: int, tiles=None, inter=None, inter_scale=None) -> dict[str, list]:
    """fused_moe's grouped GEMM as gate_up and down, per layer copy, on the decode workspace's layout
    (sorted pairs, x quantized) and, for down, on ``inter`` / ``inter_scale`` (default: the
    intermediate gate_up quantized in the workspace). ``tiles`` default to the decode table's."""
    ws, k, H, I, E = layer.ws, layer.k, layer.H, layer.I, layer.E
    tiles = tiles or tmd.table_tiles(layer.case, M)
    P = M * k
    padded = max_padded_len(P, E, tiles.block_m)
    routing = AlignedRouting(ws.sorted_ids[:padded], ws.expert_ids[:padded // tiles.block_m], ws.num_padded,
                             tiles.block_m, P)
    x_scale = ws.x_scale[:M * triton.cdiv(H, 128)].view(M, -1)
    if inter is None:
        inter, inter_scale = ws.inter_q[:P], ws.a2_amax[:P * triton.cdiv(I, 128)].view(P, -1)
    c1 = torch.empty(P, I, device="cuda", dtype=torch.bfloat16)
    c2 = torch.empty(P, H, device="cuda", dtype=torch.bfloat16)
    out: dict[str, list] = {"gate_up": [], "down": [], "gate_up_out": c1, "down_out": c2}
    for i in range(layer.n_layers):
        w13, w2, s13, s2 = layer.layers[i]
        s13 = normalize_w_scale(s13, "w1_scale", E, 2 * I, H, moe_gemm.QUANT_BLOCK, (128, 128))
        s2 = normalize_w_scale(s2, "w2_scale", E, H, I, moe_gemm.QUANT_BLOCK, (128, 128))
        out["gate_up"].append(functools.partial(
            moe_gemm.launch_moe_gemm, ws.x_q[:M], w13, c1, routing, tiles.gate_up, gated=True,
            a_rows_per_pair_div=k, quant=moe_gemm.QUANT_BLOCK, a_scale=x_scale, w_scale=s13))
        out["down"].append(functools.partial(
            moe_gemm.launch_moe_gemm, inter, w2, c2, routing, tiles.down, gated=False,
            a_rows_per_pair_div=1, topk_weights=ws.topk_weights[:P], quant=moe_gemm.QUANT_BLOCK,
            a_scale=inter_scale, w_scale=s2))
    return out


def probe(layer: tmd.Layer, M: int, vllm, configs_dir, log) -> str:
    x, logits = tmd.inputs(layer, M)
    out = torch.empty_like(x)
    plans = layer.plans(x, logits, out, "grouped", None)
    whole, _ = layer.time_plans(plans)  # also leaves every stage's inputs in the workspace
    cells = {"layer": whole}
    for column, stage, replaced, pdl in STAGE_VARIANTS:
        launches = [pde.with_constexprs(dict(plan.launches)[stage], replaced) for plan in plans]
        if not pdl:
            launches = [without_pdl_attribute(launch) for launch in launches]
        cells[column] = bfm.time_graph(lambda i, launches=launches: launches[i](), layer.n_layers, tmd.REPLAYS)
    grouped = grouped_gemm_launches(layer, M)
    for stage in ("gate_up", "down"):
        cells[f"fused_moe {stage}"] = bfm.time_graph(lambda i, s=stage: grouped[s][i](), layer.n_layers,
                                                     tmd.REPLAYS)
    if vllm is not None:
        _, cells["vLLM gate_up"], cells["vLLM down"] = tmd.vllm_gemms_us(layer, M, x, logits, vllm, configs_dir)
    log({"case": layer.name, "M": M, "tiles": str(tmd.table_tiles(layer.case, M)), **cells})
    return f"| {layer.name} | {M} | " + " | ".join(f"{t:.1f}" for t in cells.values()) + " |"


def main() -> None:
    args = tmd.probe_parser(__doc__, "qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block", "1,2,4,8", vllm=True).parse_args()
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    columns = ["layer"] + [c for c, _, _, _ in STAGE_VARIANTS] + ["fused_moe gate_up", "fused_moe down"]
    columns += ["vLLM gate_up", "vLLM down"] if vllm is not None else []
    header = tmd.probe_header("us, each alone unless 'layer'; outputs of the switched-off variants are not checked",
                              columns)
    tmd.probe_each_case_and_m(args, "probe_decode_gemm_gap", header,
                              lambda layer, M, log: probe(layer, M, vllm, args.vllm_configs, log))


if __name__ == "__main__":
    main()
