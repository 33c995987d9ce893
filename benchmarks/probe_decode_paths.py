"""H200 probe (issue #16): the decode layer's paths side by side, whole layer, per case and M.

``fused_moe_decode`` on each of ``--paths`` (its own tiles per path) and ``softmax_topk`` +
``fused_moe`` (the unfused chain), alternating in two rounds (bench_moe_layer's inputs and timer:
CUDA graphs over rotated layer copies, L2 defeated), each output against the fp32 reference. Written
to decide where ``choose_decode_path`` takes the chain path for bf16.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_paths.py --cases qwen3-30b-bf16 --out $OUT
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import bench_moe_layer as bml
import tune_moe_decode as tmd

ROUNDS = 2


def probe(layer: tmd.Layer, M: int, paths: list[str], log) -> str:
    x, logits = tmd.inputs(layer, M)
    ref = tmd.reference(layer, x, logits)
    out = torch.empty_like(x)

    unfused = layer.unfused_step(x, logits, out)
    whole = layer.plans_step

    steps = {path: whole(layer.plans(x, logits, out, path, None)) for path in paths}
    steps["unfused"] = unfused
    errs = {}
    for name, step in steps.items():
        out.fill_(float("nan"))
        step(0)
        errs[name] = bml.rel(out, ref)
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(ROUNDS):
        for name, step in steps.items():
            times[name].append(bfm.time_graph(step, layer.n_layers, tmd.REPLAYS))
    log({"case": layer.name, "M": M, "us": times, "err": errs})
    return (f"| {layer.name} | {M} | " + " | ".join(" / ".join(f"{t:.1f}" for t in times[n]) for n in steps)
            + " | " + " ".join(f"{errs[n]:.1e}" for n in steps) + " |")


def main() -> None:
    p = tmd.probe_parser(__doc__, "qwen3-30b-bf16,mixtral-bf16", "8,12,16,32,64")
    p.add_argument("--paths", default="grouped,chain")
    args = p.parse_args()
    paths = args.paths.split(",")
    header = tmd.probe_header("us per layer, round 1 / round 2; err against the fp32 reference",
                              [*paths, "unfused", "err"])
    tmd.probe_each_case_and_m(args, "probe_decode_paths", header, lambda layer, M, log: probe(layer, M, paths, log))


if __name__ == "__main__":
    main()
