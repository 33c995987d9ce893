"""H200 probe: the FP8-block decode layer with x quantized by the route launch or on load (issue #16).

``moe_decode.PREQUANT_X`` on (the route launch writes x as e4m3; gate_up loads it) and off
(gate_up quantizes x as it loads it), each timed on the same inputs as
bench_moe_layer.py (CUDA graphs over rotated layer copies, L2 defeated, median of 100 replays):
the whole decode layer, each of its launches alone, and the error against the fp32 reference;
our unfused chain and vLLM's two GEMMs alone once per M for comparison.

    PYTHONPATH=$PWD python3 benchmarks/probe_fp8_decode.py --vllm-file .vendor/vllm_fused_moe.py \\
        --vllm-configs .vendor/configs --out $OUT/probe_fp8.md
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

from jitguard.kernels import moe_chain as fm
from jitguard.kernels import moe_decode, moe_routing

REPLAYS = 100


def probe_case(case, ms, vllm, configs_dir, bw, l2_bytes) -> list[str]:
    name, E, k, H, I, scheme = case
    scale_blocks = triton.cdiv(2 * I, 128) * triton.cdiv(H, 128) + triton.cdiv(H, 128) * triton.cdiv(I, 128)
    expert_bytes = 3 * H * I + 4 * scale_blocks
    n_layers = max(1, -(-4 * l2_bytes // (k * expert_bytes)))
    layers = [bfm.make_layer(E, H, I, scheme, 1234 + i) for i in range(n_layers)]
    ws = moe_decode.MoeDecodeWorkspace.for_layer(layers[0][0], layers[0][1], k, torch.bfloat16)
    lines = []
    for M in ms:
        g = torch.Generator(device="cuda").manual_seed(M)
        x = torch.randn(M, H, device="cuda", dtype=torch.bfloat16, generator=g)
        logits = torch.randn(M, E, device="cuda", dtype=torch.float32, generator=g)
        ref_w, ref_ids = moe_routing.softmax_topk_reference(logits, k, True)
        e_act = int(torch.unique(ref_ids).numel())
        floor_us = (e_act * expert_bytes + 2 * M * H * 2 + M * E * 4) / bw[1] / 1e3
        kw0 = bml.fp8_kwargs(scheme, layers[0][2], layers[0][3])
        ref = moe_decode.fused_moe_decode_reference(x, logits, layers[0][0], layers[0][1], k, renormalize=True,
                                                    **kw0, quantize_activations=True)
        out = torch.empty_like(x)
        cells = []
        for prequant in (False, True):
            moe_decode.PREQUANT_X = prequant
            out.fill_(float("nan"))
            moe_decode.fused_moe_decode(x, logits, layers[0][0], layers[0][1], k, renormalize=True, workspace=ws,
                                        out=out, **kw0)
            err = bml.rel(out, ref)
            plans = [moe_decode.plan_fused_moe_decode(
                x, logits, layers[i][0], layers[i][1], k, renormalize=True, workspace=ws, out=out,
                **bml.fp8_kwargs(scheme, layers[i][2], layers[i][3])) for i in range(n_layers)]

            def whole(layer, plans=plans):
                for _, launch in plans[layer].launches:
                    launch()

            t = bfm.time_graph(whole, n_layers, REPLAYS)
            stages = bfm.time_launches_alone(plans, n_layers, REPLAYS)
            cells.append(f"{t:.1f} ({t / floor_us:.2f}x) {'/'.join(f'{s:.1f}' for s in stages)} err {err:.1e}")
        moe_decode.PREQUANT_X = True

        def unfused(layer):
            lw13, lw2, ls13, ls2 = layers[layer]
            tw, ti = moe_routing.softmax_topk(logits, k, True)
            fm.fused_moe(x, lw13, lw2, tw, ti, out=out, **bml.fp8_kwargs(scheme, ls13, ls2))

        un = bfm.time_graph(unfused, n_layers, REPLAYS)
        vg = float("nan")
        if vllm is not None:
            vcfg, _ = bfm.vllm_config(configs_dir, E, I, scheme, M, vllm)
            vgemms = bml.vllm_gemms_step(
                vllm, vcfg, layers, x, ref_w, ref_ids, k, E, I, scheme,
                inter=torch.randn(M * k, I, device="cuda", dtype=torch.bfloat16),
                v1=torch.empty(M * k, 2 * I, device="cuda", dtype=torch.bfloat16),
                v2=torch.empty(M * k, H, device="cuda", dtype=torch.bfloat16))
            vg = bfm.time_graph(vgemms, n_layers, REPLAYS)
        line = (f"| {name} | {M} | {floor_us:.1f} | " + " | ".join(cells)
                + f" | {un:.1f} ({un / floor_us:.2f}x) | {vg:.1f} ({vg / floor_us:.2f}x) |")
        print(line, flush=True)
        lines.append(line)
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vllm-file")
    p.add_argument("--vllm-configs")
    p.add_argument("--cases", default="deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block")
    p.add_argument("--ms", default="1,2,4,8,16,64")
    p.add_argument("--out", default="probe_fp8.md")
    args = p.parse_args()
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    bw = bfm.measure_bandwidths(REPLAYS)
    head = [f"# {props.name}, torch {torch.__version__}, triton {triton.__version__}, read-only {bw[1]:.0f} GB/s",
            "us per layer (x floor) route/gate_up/down alone, error vs fp32 reference; columns: PREQUANT_X",
            "| case | M | floor us | off | on | unfused ours | vLLM GEMMs only |",
            "|---|---|---|---|---|---|---|"]
    print("\n".join(head), flush=True)
    lines = list(head)
    for name in args.cases.split(","):
        lines += probe_case(bfm.CASES[name], [int(m) for m in args.ms.split(",")], vllm, args.vllm_configs, bw, l2)
    Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
