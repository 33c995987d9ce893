"""H200 probe (issue #16): FP8 block scales on the pairs path, switch and tile variants by the whole layer.

Variants (``--variants``, labels of VARIANTS; all by default), each against the shipped pairs path:

- "pairs, inter by down": ``QUANTIZE_INTER`` off: gate_up stores the bf16 intermediate and folds its
  absmax into each group's slot, the down GEMM quantizes it as it loads it (eleventh session: slower);
- "pairs, down 128 rows": the table's gate_up tile with a 128-row down tile (level);
- "pairs, gate_up 256 deep s3" (s4), "pairs, gate_up 512 deep s2", "pairs, down 256 deep s2", "pairs,
  both 256 deep s3 / s2": the table's tiles with 256 or 512 contiguous bytes of each weight row a
  pipeline stage (two or four 128-deep scale groups an iteration, K_UNROLL) at fewer stages;
- "pairs, per-pair handoff" / "pairs, whole-launch wait": the handoff at every M / at none
  (``PAIR_HANDOFF_MIN_PAIRS``; shipped from 32 pairs, twelfth session): the down GEMM's programs
  start on their pair's gate_up columns (a release/acquire counter per pair) instead of waiting
  for the whole gate_up launch (slower below 32 pairs, faster from 32);
- "pairs, down K rotated" / "grouped, down K rotated": ``ROTATE_K_DOWN``: the down GEMM's programs
  start their K loops at iteration ``pid_n % iterations`` and wrap around (shipped on the pairs path
  at one token for large experts, ``FP8_PAIRS_DOWN_ROTATED_TOKENS``); "pairs, down K straight": never;
- "pairs, first launch plain" (grouped, chain): ``FIRST_LAUNCH_PDL`` off: the layer's first launch in
  plain stream order (shipped: PDL-launched, waiting for the launch before at its start);
- "pairs, gate_up 128 rows s4 w8" / "... s6 w8" / "pairs, down 128 rows s6 w8": 128-row tiles with two
  warpgroups (8 warps), each waiting on its own wgmma a K step;
- "grouped" / "chain": the grouped path and the chain path, for reference.

Removed after they were measured slower (fifteenth session, benchmarks/results/moe_layer.md): "pairs / grouped /
chain, inter bf16" (``INTER_BF16``, commit a6a7695: a weight-only FP8 down GEMM on the bf16 intermediate) and
"pairs / grouped, inter tile scales" (``INTER_TILE_SCALES``, commit 5bd3fc3: activation scales per gate_up tile,
down in 32- or 64-deep K steps).

Variants alternate in two rounds (the second in reverse order) on bench_moe_layer's inputs and timer,
each output against the fp32 reference; then each launch alone.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_pairs_variants.py --out $OUT
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tune_moe_decode as tmd

from jitguard.kernels.moe_configs import MoeTileConfigs, TileConfig

ROUNDS = 2
DOWN_128 = TileConfig(16, 128, 128, 1, 4, 3, True)


def _retiled(gate_up: dict | None = None, down: dict | None = None):
    """The table's tiles with fields of gate_up and down replaced (block_m stays gate_up's)."""
    def tiles(table: MoeTileConfigs) -> MoeTileConfigs:
        up = replace(table.gate_up, **(gate_up or {}))
        return MoeTileConfigs(up, replace(table.down, **{**(down or {}), "block_m": up.block_m}))
    return tiles


def _down_128(table: MoeTileConfigs) -> MoeTileConfigs:
    return tmd.with_down_tile(table, DOWN_128)


# (label, path, moe_decode switches, tiles from the table's, or None for the table's)
SHIPPED = "pairs, inter by gate_up"
VARIANTS = ((SHIPPED, "pairs", {}, None),
            ("pairs, inter by down", "pairs", {"QUANTIZE_INTER": False}, None),
            ("grouped", "grouped", {}, None),
            ("pairs, down 128 rows", "pairs", {}, _down_128),
            ("pairs, per-pair handoff", "pairs", {"PAIR_HANDOFF_MIN_PAIRS": 1}, None),
            ("pairs, whole-launch wait", "pairs", {"PAIR_HANDOFF_MIN_PAIRS": 1 << 30}, None),
            ("pairs, gate_up 256 deep s3", "pairs", {}, _retiled({"block_k": 256, "num_stages": 3})),
            ("pairs, gate_up 256 deep s4", "pairs", {}, _retiled({"block_k": 256, "num_stages": 4})),
            ("pairs, gate_up 512 deep s2", "pairs", {}, _retiled({"block_k": 512, "num_stages": 2})),
            ("pairs, down 256 deep s2", "pairs", {}, _retiled(down={"block_k": 256, "num_stages": 2})),
            ("pairs, both 256 deep s3 / s2", "pairs", {}, _retiled({"block_k": 256, "num_stages": 3},
                                                                    {"block_k": 256, "num_stages": 2})),
            ("pairs, down K rotated", "pairs", {"ROTATE_K_DOWN": True}, None),
            ("grouped, down K rotated", "grouped", {"ROTATE_K_DOWN": True}, None),
            ("pairs, down K straight", "pairs", {"FP8_PAIRS_DOWN_ROTATED_TOKENS": {}}, None),
            ("pairs, first launch plain", "pairs", {"FIRST_LAUNCH_PDL": False}, None),
            ("grouped, first launch plain", "grouped", {"FIRST_LAUNCH_PDL": False}, None),
            ("pairs, gate_up 128 rows s4 w8", "pairs", {}, _retiled({"block_n": 128, "num_stages": 4, "num_warps": 8})),
            ("pairs, gate_up 128 rows s6 w8", "pairs", {}, _retiled({"block_n": 128, "num_stages": 6, "num_warps": 8})),
            ("pairs, down 128 rows s6 w8", "pairs", {}, _retiled(down={"block_n": 128, "num_stages": 6,
                                                                        "num_warps": 8})),
            ("chain", "chain", {}, None),
            ("chain, first launch plain", "chain", {"FIRST_LAUNCH_PDL": False}, None),
            ("grouped, gate_up 256 deep s3", "grouped", {}, _retiled({"block_k": 256, "num_stages": 3})),
            ("grouped, both 256 deep s3 / s2", "grouped", {}, _retiled({"block_k": 256, "num_stages": 3},
                                                                        {"block_k": 256, "num_stages": 2})))


def probe(layer: tmd.Layer, M: int, log, variants=VARIANTS) -> str:
    x, logits = tmd.inputs(layer, M)
    ref = tmd.reference(layer, x, logits)
    out = torch.empty_like(x)
    plans, errs = {}, {}
    for label, path, switches, retile in variants:
        tiles = None if retile is None else retile(tmd.table_tiles(layer.case, M, path))
        with tmd.switched(switches):
            plans[label] = layer.plans(x, logits, out, path, tiles)
        errs[label] = tmd.run_error(layer, plans[label], out, ref)
    times = tmd.time_alternating(layer, plans, ROUNDS)
    stages = {label: layer.time_plans(plans[label])[1] for label, *_ in variants}
    log({"case": layer.name, "M": M, "us": times, "err": errs, "stages": stages})
    cells = [" / ".join(f"{t:.1f}" for t in times[label]) for label, *_ in variants]
    cells += [" + ".join(f"{t:.1f}" for t in stages[label]) for label, *_ in variants]
    return (f"| {layer.name} | {M} | " + " | ".join(cells) + " | "
            + " ".join(f"{errs[label]:.1e}" for label, *_ in variants) + " |")


def main() -> None:
    p = tmd.probe_parser(__doc__, "qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block", "1,2,3,4")
    p.add_argument("--variants", help="semicolon-separated labels of VARIANTS besides the shipped one "
                                      "(labels hold commas; default: all)")
    args = p.parse_args()
    known = {label for label, *_ in VARIANTS}
    wanted = {v.strip() for v in args.variants.split(";")} if args.variants else known
    if wanted - known:
        raise SystemExit(f"probe_decode_pairs_variants: --variants: unknown {sorted(wanted - known)}; "
                         f"known: {sorted(known)}")
    variants = tuple(v for v in VARIANTS if v[0] == SHIPPED or v[0] in wanted)
    labels = [label for label, *_ in variants]
    header = tmd.probe_header("us per layer, round 1 / round 2 (round 2 in reverse order); then each launch alone "
                              "in order (>= 32 a graph); err against the fp32 reference",
                              [*labels, *(f"{label}, launches alone" for label in labels), "err"])
    tmd.probe_each_case_and_m(args, "probe_decode_pairs_variants", header,
                              lambda layer, M, log: probe(layer, M, log, variants))


if __name__ == "__main__":
    main()
