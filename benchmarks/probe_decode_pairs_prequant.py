"""H200 probe (issue #16): FP8 block scales at 1-4 tokens without the route launch, x quantized first.

The grouped path's first launch routes every token, aligns the pairs and quantizes x (4.5-5 us
alone at one token); gate_up then waits for it. The pairs path has no route launch: each gate_up
program routes its own pair, but took each token group's activation scale from its bf16 tile every
K step (a reduction across threads: +10 us at one token). With ``moe_decode.PAIRS_PREQUANT_X`` the
pairs path's first launch quantizes x alone (the route kernel with routing off), in plain stream
order; it lets gate_up start at once, so gate_up's programs route themselves while x is quantized
and wait for it only before their K loop. ``auto`` is ``path="auto"`` (``choose_decode_path``).
Variants alternate in two rounds (the second in reverse order) on bench_moe_layer's inputs and
timer (CUDA graphs over rotated layer copies, L2 defeated), each output against the fp32
reference; then each launch alone.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_pairs_prequant.py --out $OUT
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tune_moe_decode as tmd

ROUNDS = 2
# (label, path, PAIRS_PREQUANT_X)
VARIANTS = (("grouped", "grouped", False), ("pairs, scale from the tile", "pairs", False),
            ("pairs, x quantized first", "pairs", True), ("auto", "auto", True))


def probe(layer: tmd.Layer, M: int, log) -> str:
    x, logits = tmd.inputs(layer, M)
    ref = tmd.reference(layer, x, logits)
    out = torch.empty_like(x)
    plans, errs, outputs = {}, {}, {}
    for label, path, prequant in VARIANTS:
        with tmd.switched({"PAIRS_PREQUANT_X": prequant}):
            plans[label] = layer.plans(x, logits, out, path, None)
        errs[label] = tmd.run_error(layer, plans[label], out, ref)
        outputs[label] = out.clone()
    times = tmd.time_alternating(layer, plans, ROUNDS)
    stages = {label: layer.time_plans(plans[label])[1] for label, _, _ in VARIANTS}
    names = {label: [name for name, _ in plans[label][0].launches] for label, _, _ in VARIANTS}
    same = torch.equal(outputs["pairs, x quantized first"], outputs["grouped"])
    log_path = plans["auto"][0].path
    log({"case": layer.name, "M": M, "us": times, "err": errs, "stages": stages, "names": names, "same": same,
         "auto": log_path})
    cells = [" / ".join(f"{t:.1f}" for t in times[label]) for label, _, _ in VARIANTS]
    cells += [" + ".join(f"{t:.1f}" for t in stages[label]) for label, _, _ in VARIANTS]
    return (f"| {layer.name} | {M} | " + " | ".join(cells) + " | "
            + " ".join(f"{errs[label]:.1e}" for label, _, _ in VARIANTS) + f" | {'y' if same else 'n'} | {log_path} |")


def main() -> None:
    args = tmd.probe_parser(__doc__, "deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block", "1,2,3,4,5").parse_args()
    labels = [label for label, _, _ in VARIANTS]
    header = tmd.probe_header("us per layer, round 1 / round 2 (round 2 in reverse order); then each launch alone "
                              "in order; err against the fp32 reference; same: x quantized first equals grouped "
                              "bit for bit", [*labels, *(f"{label}, launches alone" for label in labels), "err",
                                              "same", "auto takes"])
    tmd.probe_each_case_and_m(args, "probe_decode_pairs_prequant", header, probe)


if __name__ == "__main__":
    main()
