"""H200 probe (issue #16): a five-launch FP8 chain for 8-64 tokens against the unfused chain's ten.

At 16-64 tokens ``fused_moe_from_logits`` runs FP8 block scales on ``softmax_topk`` + ``fused_moe``:
its two GEMMs alone are faster than vLLM's (fused_moe.md, sixth session) but its other eight launches
(routing, alignment, two activation quantizations, the top-k reduce) cost 14-17 us, which leaves the
layer behind vLLM's GEMMs alone. This probe times, in one run, per case and M:

- ``unfused``: ``softmax_topk`` + ``fused_moe`` (ten launches, what ships there);
- ``decode``: ``fused_moe_decode`` on the grouped path with its table's tiles;
- ``route+5``: the decode route launch (routing, x quantized, alignment in one launch), fused_moe's
  gate_up GEMM, ``quantize_fp8`` of the intermediate, fused_moe's down GEMM, the top-k reduce;
  ``route+5 PDL``: the same with each launch after the route PDL-linked to the one before;
- ``route+4 PDL``: the decode route launch and its gate_up (which quantizes the intermediate
  itself), fused_moe's down GEMM and the top-k reduce, PDL-linked;

the last three on fused_moe's tiles, and vLLM's two GEMMs alone (CUDA graphs over rotated layer
copies, L2 defeated, bench_moe_layer's timer; two rounds alternating). Each variant's output is
compared with the fp32 reference and with the unfused chain's, bit for bit.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_hybrid_chain.py --vllm-file .vendor/vllm_fused_moe.py \\
        --vllm-configs .vendor/configs --out $OUT
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import bench_moe_layer as bml
import probe_decode_gemm_gap as gap
import tune_moe_decode as tmd

from jitguard.kernels import moe_configs, moe_gemm
from jitguard.kernels.moe_inputs import normalize_w_scale
from jitguard.kernels.moe_quant import quantize_fp8
from jitguard.kernels.pdl import pdl_supported

ROUNDS = 2


def variant_steps(layer: tmd.Layer, M: int, x, logits, out) -> dict:
    """name -> step(i) running the whole layer on layer copy i into ``out``."""
    fused_tiles = moe_configs.select_tile_configs(M, layer.E, "fp8-block")
    decode_plans = layer.plans(x, logits, out, "grouped", None)
    fused_plans = layer.plans(x, logits, out, "grouped", fused_tiles)
    gemms = gap.grouped_gemm_launches(layer, M, fused_tiles)
    k, E, P = layer.k, layer.E, M * layer.k
    topk_ids = layer.ws.topk_ids[:P].view(M, k)
    pair_out = gemms["down_out"]

    unfused = layer.unfused_step(x, logits, out)
    whole = layer.plans_step

    w2_scales = [normalize_w_scale(layer.layers[i][3], "w2_scale", E, layer.H, layer.I, moe_gemm.QUANT_BLOCK,
                                   (128, 128)) for i in range(layer.n_layers)]
    routing = gemms["gate_up"][0].args[3]

    inter_q = {}

    def stages_for(pdl: bool) -> dict:
        """The five launches by name, each a step(i), PDL-linked or not (the route launch is first)."""
        def quantize_inter(i):
            inter_q["q"], inter_q["s"] = quantize_fp8(gemms["gate_up_out"], "group", group_size=128, pdl=pdl)

        def gate_up(i):
            launch = gemms["gate_up"][i]
            launch.func(*launch.args, **launch.keywords, pdl=pdl)

        def down(i):
            moe_gemm.launch_moe_gemm(inter_q["q"], layer.layers[i][1], pair_out, routing, fused_tiles.down,
                                     gated=False, a_rows_per_pair_div=1, topk_weights=layer.ws.topk_weights[:P],
                                     quant=moe_gemm.QUANT_BLOCK, a_scale=inter_q["s"], w_scale=w2_scales[i], pdl=pdl)

        return {"route": lambda i: dict(fused_plans[i].launches)["route"](), "gate_up": gate_up,
                "quantize": quantize_inter, "down": down,
                "reduce": lambda i: moe_gemm.launch_topk_reduce(pair_out, topk_ids, out, E, pdl=pdl)}

    def chain(stages: dict):
        def step(i):
            for stage in stages.values():
                stage(i)
        return step

    def route_plus_4_pdl(i):
        launches = dict(fused_plans[i].launches)
        launches["route"]()
        launches["gate_up"]()  # PDL-launched after the route launch, quantizes the intermediate itself
        launch = gemms["down"][i]
        launch.func(*launch.args, **launch.keywords, pdl=True)
        moe_gemm.launch_topk_reduce(pair_out, topk_ids, out, E, pdl=True)

    steps = {"unfused": unfused, "decode": whole(decode_plans), "route+5": chain(stages_for(False))}
    if pdl_supported():
        steps.update({"route+5 PDL": chain(stages_for(True)), "route+4 PDL": route_plus_4_pdl})
    return steps, stages_for(pdl_supported())


def breakdown(layer: tmd.Layer, M: int, log) -> str:
    """route+5 (PDL-linked where supported): each launch alone, and the layer without each launch."""
    x, logits = tmd.inputs(layer, M)
    out = torch.empty_like(x)
    steps, stages = variant_steps(layer, M, x, logits, out)
    whole = bfm.time_graph(steps["route+5 PDL" if pdl_supported() else "route+5"], layer.n_layers, tmd.REPLAYS)
    alone = {n: bfm.time_graph(st, layer.n_layers, tmd.REPLAYS) for n, st in stages.items()}

    def without(name):
        def step(i):
            for n, st in stages.items():
                if n != name:
                    st(i)
        return step

    left_out = {n: bfm.time_graph(without(n), layer.n_layers, tmd.REPLAYS) for n in stages}
    log({"part": "breakdown", "case": layer.name, "M": M, "whole": whole, "alone": alone, "without": left_out})
    return (f"| {layer.name} | {M} | {whole:.1f} | " + " | ".join(f"{alone[n]:.1f} / {whole - left_out[n]:.1f}"
                                                          for n in stages) + " |")


def probe(layer: tmd.Layer, M: int, vllm, configs_dir, log) -> str:
    x, logits = tmd.inputs(layer, M)
    ref = tmd.reference(layer, x, logits)
    out = torch.empty_like(x)
    steps, _ = variant_steps(layer, M, x, logits, out)
    errs, outputs = {}, {}
    for name, step in steps.items():
        out.fill_(float("nan"))
        step(0)
        torch.cuda.synchronize()
        outputs[name] = out.clone()
        errs[name] = bml.rel(out, ref)
    same = {name: bool(torch.equal(o, outputs["unfused"])) for name, o in outputs.items()}
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(ROUNDS):
        for name, step in steps.items():
            times[name].append(bfm.time_graph(step, layer.n_layers, tmd.REPLAYS))
    vg = tmd.vllm_gemms_us(layer, M, x, logits, vllm, configs_dir)[0] if vllm is not None else float("nan")
    log({"case": layer.name, "M": M, "us": times, "err": errs, "same_as_unfused": same, "vllm_gemms_us": vg})
    cells = [" / ".join(f"{t:.1f}" for t in times[name]) for name in steps]
    return (f"| {layer.name} | {M} | " + " | ".join(cells) + f" | {vg:.1f} | "
            + " ".join(f"{errs[n]:.1e}{'=' if same[n] else ''}" for n in steps) + " |")


def main() -> None:
    p = tmd.probe_parser(__doc__, "deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block", "8,16,32,64", vllm=True)
    p.add_argument("--breakdown", action="store_true",
                   help="time route+5's launches alone and the layer without each, instead of the variants")
    args = p.parse_args()
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    names = ["unfused", "decode", "route+5"] + (["route+5 PDL", "route+4 PDL"] if pdl_supported() else [])
    header = tmd.probe_header("us per layer, round 1 / round 2; err: against the fp32 reference, '=' equal to "
                              "unfused bit for bit", [*names, "vLLM GEMMs only", "err"])
    if args.breakdown:
        header = tmd.probe_header("route+5, us: whole layer; per launch: alone / what leaving it out saves",
                                  ["layer", "route", "gate_up", "quantize", "down", "reduce"])

    def row(layer, M, log):
        return breakdown(layer, M, log) if args.breakdown else probe(layer, M, vllm, args.vllm_configs, log)

    tmd.probe_each_case_and_m(args, "probe_decode_hybrid_chain", header, row)


if __name__ == "__main__":
    main()
