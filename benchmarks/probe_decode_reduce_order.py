"""H200 probe (issue #16): the down GEMM's top-k reduce, at the end or while the stream runs.

The grouped path's down GEMM sums each column tile's top-k pair rows in the tile's last program to
arrive, token chunk by token chunk, after every token's pairs have arrived. Its programs go column
tiles fastest, so every column tile's last arrival comes in the last wave. Two switches:
``moe_decode.DOWN_TILES_BY_COLUMN`` (token tiles fastest: a column tile's programs run together and
its sum overlaps later tiles' streams) and ``moe_decode.DOWN_REDUCE_PER_TOKEN`` (a counter per token
and column tile: the last of a token's pair writers sums that token, so the sums spread over the
programs). Variants, alternating in two rounds per case and M (bench_moe_layer's inputs and timer:
CUDA graphs over rotated layer copies, L2 defeated), each output against the fp32 reference:

- ``chain``: the chain path (route, fused_moe's gate_up, the intermediate's quantization, down
  into pair rows, the top-k reduce launch);
- ``grouped`` with each setting of the switches;
- ``hybrid`` with each setting: the chain's launches up to its down GEMM, then the grouped path's
  down GEMM with its reduce on the chain's down tile (one launch fewer). Both share the route
  launch's layout and the workspace's intermediate (and its e4m3 copy and scales for FP8).

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_reduce_order.py --out $OUT
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import bench_moe_layer as bml
import tune_moe_decode as tmd

from jitguard.kernels import moe_configs, moe_decode

ROUNDS = 2
# (label, DOWN_TILES_BY_COLUMN, DOWN_REDUCE_PER_TOKEN)
SETTINGS = (("", False, False), (" by column", True, False), (" per token", False, True),
            (" per token by column", True, True))
VARIANTS = ("chain", *(f"{path}{label}" for path in ("grouped", "hybrid") for label, _, _ in SETTINGS))


def _hybrid(chain_plan, grouped_plan) -> list:
    """The chain's launches before its down GEMM, then the grouped path's down GEMM."""
    head = [launch for name, launch in chain_plan.launches if name not in ("down", "reduce")]
    down = [launch for name, launch in grouped_plan.launches if name == "down"]
    assert len(down) == 1, [name for name, _ in grouped_plan.launches]
    return head + down


def _run_all(launch_lists):
    def step(i):
        for launch in launch_lists[i]:
            launch()
    return step


def _steps(layer: tmd.Layer, M: int, x, logits, out) -> dict:
    chain = layer.plans(x, logits, out, "chain", None)
    steps = {"chain": layer.plans_step(chain)}
    # The hybrid's down GEMM on the chain's tiles: the chain's token tile is the layout's.
    chain_tiles = moe_configs.select_tile_configs(M, layer.E, tmd.case_precision(layer.scheme))
    for label, by_column, per_token in SETTINGS:
        moe_decode.DOWN_TILES_BY_COLUMN, moe_decode.DOWN_REDUCE_PER_TOKEN = by_column, per_token
        grouped = layer.plans(x, logits, out, "grouped", None)
        grouped_on_chain_tiles = layer.plans(x, logits, out, "grouped", chain_tiles)
        steps[f"grouped{label}"] = layer.plans_step(grouped)
        steps[f"hybrid{label}"] = _run_all([_hybrid(c, g) for c, g in zip(chain, grouped_on_chain_tiles)])
    moe_decode.DOWN_TILES_BY_COLUMN, moe_decode.DOWN_REDUCE_PER_TOKEN = False, False
    return steps


def probe(layer: tmd.Layer, M: int, log) -> str:
    x, logits = tmd.inputs(layer, M)
    ref = tmd.reference(layer, x, logits)
    out = torch.empty_like(x)
    steps = _steps(layer, M, x, logits, out)
    errs, outputs = {}, {}
    for name in VARIANTS:
        out.fill_(float("nan"))
        steps[name](0)
        torch.cuda.synchronize()
        errs[name] = bml.rel(out, ref)
        outputs[name] = out.clone()
    same = all(torch.equal(outputs[f"{path}{label}"], outputs[path]) for path in ("grouped", "hybrid")
               for label, _, _ in SETTINGS)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for r in range(ROUNDS):
        for name in (VARIANTS if r % 2 == 0 else tuple(reversed(VARIANTS))):
            times[name].append(bfm.time_graph(steps[name], layer.n_layers, tmd.REPLAYS))
    log({"case": layer.name, "M": M, "us": times, "err": errs, "same": same})
    return (f"| {layer.name} | {M} | " + " | ".join(" / ".join(f"{t:.1f}" for t in times[n]) for n in VARIANTS)
            + " | " + " ".join(f"{errs[n]:.1e}" for n in VARIANTS) + f" | {'y' if same else 'NO'} |")


def main() -> None:
    args = tmd.probe_parser(__doc__, "deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block,qwen3-30b-bf16",
                            "1,2,4,8,12,16,32,64").parse_args()
    header = tmd.probe_header("us per layer, round 1 / round 2 (round 2 in reverse order); err against the fp32 "
                              "reference; same: the switch leaves each path's output bit for bit",
                              [*VARIANTS, "err", "same"])
    tmd.probe_each_case_and_m(args, "probe_decode_reduce_order", header, probe)


if __name__ == "__main__":
    main()
