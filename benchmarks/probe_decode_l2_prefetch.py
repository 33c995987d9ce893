"""H200 probe (issue #16): the down GEMM's weights asked into L2 before it waits for gate_up.

With programmatic dependent launch the down GEMM's programs start while gate_up runs and wait
(``griddepcontrol.wait``) before their K loop. With ``moe_decode.L2_PREFETCH_DOWN`` they first issue
``prefetch.global.L2`` for every 128-byte line of their weight tile (2: with an evict-last
priority), so down's weights stream from DRAM while gate_up's tail runs, and down then reads them
from L2. On the grouped path gate_up lets down start only after its own wait (down reads the route
launch's layout before waiting). This probe times the whole layer with the switch at 0, 1 and 2,
alternating in two rounds (bench_moe_layer's inputs and timer: CUDA graphs over rotated layer
copies, L2 defeated), checks the outputs are equal bit for bit, and times vLLM's two GEMMs alone.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_l2_prefetch.py --vllm-file .vendor/vllm_fused_moe.py \\
        --vllm-configs .vendor/configs --out $OUT
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import bench_moe_layer as bml
import tune_moe_decode as tmd

from jitguard.kernels import moe_decode

ROUNDS = 2
SETTINGS = (("off", 0), ("prefetch", 1), ("evict-last", 2))


def probe(layer: tmd.Layer, M: int, path: str, vllm, configs_dir, log) -> str:
    x, logits = tmd.inputs(layer, M)
    ref = tmd.reference(layer, x, logits)
    out = torch.empty_like(x)
    steps = {}
    for label, setting in SETTINGS:
        moe_decode.L2_PREFETCH_DOWN = setting
        steps[label] = layer.plans_step(layer.plans(x, logits, out, path, None))
    moe_decode.L2_PREFETCH_DOWN = 0
    outputs, errs = {}, {}
    for label, step in steps.items():
        out.fill_(float("nan"))
        step(0)
        outputs[label] = out.clone()
        errs[label] = bml.rel(out, ref)
    same = all(torch.equal(outputs["off"], o) for o in outputs.values())
    times: dict[str, list[float]] = {label: [] for label in steps}
    for _ in range(ROUNDS):
        for label, step in steps.items():
            times[label].append(bfm.time_graph(step, layer.n_layers, tmd.REPLAYS))
    vllm_us = tmd.vllm_gemms_us(layer, M, x, logits, vllm, configs_dir)[0] if vllm is not None else float("nan")
    log({"case": layer.name, "M": M, "path": path, "us": times, "err": errs, "same": same, "vllm_gemms_us": vllm_us})
    return (f"| {layer.name} | {M} | {path} | " + " | ".join(" / ".join(f"{t:.1f}" for t in times[n]) for n in steps)
            + f" | {vllm_us:.1f} | {errs['off']:.1e} | {'y' if same else 'NO'} |")


def main() -> None:
    p = tmd.probe_parser(__doc__, "qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block,qwen3-30b-bf16", "1,2,4,8",
                         vllm=True)
    p.add_argument("--paths", default="grouped", help="decode paths to time (comma-separated)")
    args = p.parse_args()
    vllm = bfm.load_vllm_kernel(args.vllm_file) if args.vllm_file else None
    header = tmd.probe_header("us per layer, round 1 / round 2; same: outputs equal bit for bit",
                              ["path", *(label for label, _ in SETTINGS), "vLLM GEMMs only", "err", "same"])

    def rows(layer, M, log):
        return "\n".join(probe(layer, M, path, vllm, args.vllm_configs, log) for path in args.paths.split(","))
    tmd.probe_each_case_and_m(args, "probe_decode_l2_prefetch", header, rows)


if __name__ == "__main__":
    main()
