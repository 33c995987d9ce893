"""H200 probe (issue #16): the route launch's alignment past eight tokens, ranks taken early or late.

Past the few-token path, the route launch's last program to arrive aligned every pair through the
per-expert counters: zero them, load the routing, take ranks by atomics, load the counts, store and
load the starts (four round trips after the arrival). With ``moe_decode.RANKS_EARLY`` each token
program takes its pairs' ranks before it arrives, and the last one reads ranks and counts in one
round trip. This probe times, alternating in two rounds per case and M, the route launch alone and
the whole layer on the chain and grouped paths with the switch off and on (bench_moe_layer's
inputs and timer: CUDA graphs over rotated layer copies, L2 defeated), and checks that both give
the same output.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_route_ranks.py --out $OUT
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tune_moe_decode as tmd

from jitguard.kernels import moe_decode

ROUNDS = 2
SETTINGS = (("counters", False), ("ranks early", True))


def probe(layer: tmd.Layer, M: int, log) -> str:
    x, logits = tmd.inputs(layer, M)
    out = torch.empty_like(x)
    cells: dict[str, list[float]] = {}
    outputs = {}
    for _ in range(ROUNDS):
        for label, on in SETTINGS:
            moe_decode.RANKS_EARLY = on
            for path in ("chain", "grouped"):
                plans = layer.plans(x, logits, out, path, None)
                whole, stages = layer.time_plans(plans)
                cells.setdefault(f"{path} {label}", []).append(whole)
                if path == "chain":
                    cells.setdefault(f"route {label}", []).append(stages[0])
                outputs[path, label] = out.clone()
    moe_decode.RANKS_EARLY = True
    same = all(torch.equal(outputs[p, "counters"], outputs[p, "ranks early"]) for p in ("chain", "grouped"))
    log({"case": layer.name, "M": M, "us": cells, "same": same})
    order = [f"route {label}" for label, _ in SETTINGS] + [f"{p} {label}" for p in ("chain", "grouped")
                                                         for label, _ in SETTINGS]
    return (f"| {layer.name} | {M} | " + " | ".join(" / ".join(f"{t:.1f}" for t in cells[c]) for c in order)
            + f" | {'y' if same else 'NO'} |")


def main() -> None:
    args = tmd.probe_parser(__doc__, "deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block", "12,16,32,64").parse_args()
    header = tmd.probe_header("us, round 1 / round 2: the route launch alone, the whole layer per path; same: equal "
                              "outputs", [f"{what}, {how}" for what in ("route", "chain", "grouped")
                                          for how in ("counters", "ranks early")] + ["same"])
    tmd.probe_each_case_and_m(args, "probe_decode_route_ranks", header, probe)


if __name__ == "__main__":
    main()
