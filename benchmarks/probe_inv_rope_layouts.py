"""H200 probe (issue #16, nineteenth session): which part of vLLM's output layout costs the inverse-RoPE kernel.

The nineteenth session's bench_inv_rope_fp8 run had the kernel at 84% of copy at T = 4096 in vLLM's layout
(power-of-two fp32 scales MN-major, T padded to 4; the output in 4 head groups) and 88% with per-token fp32
scales in rows and one group (``ours_row_fp32``). This probe times the same kernel with one of the three
differences changed at a time, side by side in one run (CUDA graphs over input sets that defeat L2, two
alternating rounds), on bench_inv_rope_fp8's inputs, timer and byte count:

- ``vllm layout``: pow2 scales, MN-major, 4 groups (``fused_inv_rope_fp8_quant``'s launch);
- ``one group``: the same with the output in one group;
- ``row scales``: pow2 scales in rows, 4 groups;
- ``fp32 scales``: fp32 (not rounded to a power of two) scales, MN-major, 4 groups;
- ``row fp32, one group``: bench_inv_rope_fp8's ``ours_row_fp32``.

With ``--token-runs``, instead: vLLM's layout with tiles of one head's run of 1 (one row a tile, shipped),
2, 4 or 8 consecutive tokens (``launch_inv_rope_fp8(token_run=...)``), on 1 or 2 warps. Every variant plans,
allocates and launches as ``inv_rope_fp8`` does (positions unchecked).

    PYTHONPATH=$PWD python3 benchmarks/probe_inv_rope_layouts.py --out $OUT
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_inv_rope_fp8 as bench

VARIANTS = {
    "vllm layout": {"scale_format": "pow2", "scale_layout": "mn_major", "n_groups": bench.N_GROUPS},
    "one group": {"scale_format": "pow2", "scale_layout": "mn_major", "n_groups": 1},
    "row scales": {"scale_format": "pow2", "scale_layout": "row", "n_groups": bench.N_GROUPS},
    "fp32 scales": {"scale_format": "fp32", "scale_layout": "mn_major", "n_groups": bench.N_GROUPS},
    "row fp32, one group": {"scale_format": "fp32", "scale_layout": "row", "n_groups": 1},
}
VLLM_LAYOUT = VARIANTS["vllm layout"]
TOKEN_RUN_VARIANTS = {
    "one row a tile": {**VLLM_LAYOUT, "token_run": 1},
    "runs of 2, 1 warp": {**VLLM_LAYOUT, "token_run": 2, "num_warps": 1},
    "runs of 4, 1 warp": {**VLLM_LAYOUT, "token_run": 4, "num_warps": 1},
    "runs of 4, 2 warps": {**VLLM_LAYOUT, "token_run": 4, "num_warps": 2},
    "runs of 8, 2 warps": {**VLLM_LAYOUT, "token_run": 8, "num_warps": 2},
}
LAUNCH_KNOBS = ("token_run", "num_warps")
ROUNDS = 2


def layout_call(irf, inputs: dict, variant: dict):
    """One call of the kernel as ``inv_rope_fp8`` makes it, with the variant's layout and launch knobs."""
    layout_kw = {k: v for k, v in variant.items() if k not in LAUNCH_KNOBS}
    launch_kw = {k: v for k, v in variant.items() if k in LAUNCH_KNOBS}
    tokens = inputs["o"].shape[0]

    def call():
        layout = irf.plan_inv_rope_fp8(**inputs, rope_start=bench.NOPE_DIM, style="gptj", group_size=bench.GROUP,
                                       **layout_kw)
        out, scales = irf.allocate_inv_rope_fp8_outputs(layout, tokens, inputs["o"].device, inputs["o"].dtype)
        irf.launch_inv_rope_fp8(layout, **inputs, out=out, scales=scales, **launch_kw)
        return irf.output_views(layout, out, scales, tokens)
    return call


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", default="1024,4096,8192,32768")
    p.add_argument("--out", default=".", help="folder for probe_inv_rope_layouts.json")
    p.add_argument("--token-runs", action="store_true", help="time token-run tiles in vLLM's layout instead")
    args = p.parse_args()
    variants = TOKEN_RUN_VARIANTS if args.token_runs else VARIANTS
    irf = bench.import_kernels()
    copy_gbs = bench.copy_bandwidth_gbs()
    print(f"copy ceiling {copy_gbs:.0f} GB/s; us per call (% of copy) [round 1 / round 2]", flush=True)
    print("| T | " + " | ".join(variants) + " |")
    print("|---|" + "---|" * len(variants), flush=True)
    results = []
    for tokens in (int(t) for t in args.tokens.split(",")):
        nbytes = bench.minimal_bytes(tokens)
        sets = max(1, min(16, math.ceil(bench.L2_DEFEAT_BYTES / nbytes))) if nbytes > 2**20 else 1
        inner = max(sets, 16 if tokens < 4096 else 4)
        input_sets = [bench.make_inputs(tokens, seed=s) for s in range(sets)]
        rounds: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(ROUNDS):
            for name, variant in variants.items():
                def make(k: int, variant: dict = variant):
                    return layout_call(irf, input_sets[k], variant)
                rounds[name].append(bench.graph_time_us(make, sets, inner))
        row = {"tokens": tokens, "bytes": nbytes, "rounds_us": rounds}
        results.append(row)
        cells = []
        for name in variants:
            us = statistics.mean(rounds[name])
            pct = 100 * nbytes / (us * 1e-6) / 1e9 / copy_gbs
            cells.append(f"{us:.2f} ({pct:.0f}%) [{'/'.join(f'{t:.2f}' for t in rounds[name])}]")
        print(f"| {tokens} | " + " | ".join(cells) + " |", flush=True)
        input_sets = None
    Path(args.out, "probe_inv_rope_layouts.json").write_text(json.dumps(
        {"copy_gbs": copy_gbs, "variants": variants, "rows": results}, indent=1))


if __name__ == "__main__":
    main()
