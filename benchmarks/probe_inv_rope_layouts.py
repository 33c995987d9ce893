"""H200 probe (issue #16, nineteenth session): which part of vLLM's output layout costs the inverse-RoPE kernel.

The nineteenth session's bench_inv_rope_fp8 run had the kernel at 84% of copy at T = 4096 in vLLM's layout
(power-of-two fp32 scales MN-major, T padded to 4; the output in 4 head groups) and 88% with per-token fp32
scales in rows and one group (``ours_row_fp32``). This probe times the same kernel with one of the three
differences changed at a time, side by side in one run (CUDA graphs over input sets that defeat L2, two
rounds, each timing every variant in turn), on bench_inv_rope_fp8's inputs, timer and byte count:

- ``vllm layout``: pow2 scales, MN-major, 4 groups (``fused_inv_rope_fp8_quant``'s launch);
- ``one group``: the same with the output in one group;
- ``row scales``: pow2 scales in rows, 4 groups;
- ``fp32 scales``: fp32 (not rounded to a power of two) scales, MN-major, 4 groups;
- ``row fp32, one group``: bench_inv_rope_fp8's ``ours_row_fp32``.

Token-run tiles (one head's run of consecutive tokens a tile) were measured here too and removed (slower).

    PYTHONPATH=$PWD python3 benchmarks/probe_inv_rope_layouts.py --out $OUT
"""

from __future__ import annotations

import argparse
import json
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
ROUNDS = 2


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", default="1024,4096,8192,32768")
    p.add_argument("--out", default=".", help="folder for probe_inv_rope_layouts.json")
    args = p.parse_args()
    irf = bench.import_kernels()
    copy_gbs = bench.copy_bandwidth_gbs()
    print(f"copy ceiling {copy_gbs:.0f} GB/s; us per call (% of copy) [round 1 / round 2]", flush=True)
    print("| T | " + " | ".join(VARIANTS) + " |")
    print("|---|" + "---|" * len(VARIANTS), flush=True)
    results = []
    for tokens in (int(t) for t in args.tokens.split(",")):
        nbytes = bench.minimal_bytes(tokens)
        sets = bench.l2_defeat_sets(nbytes)
        inner = max(sets, 16 if tokens < 4096 else 4)
        input_sets = [bench.make_inputs(tokens, seed=s) for s in range(sets)]
        rounds: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for _ in range(ROUNDS):
            for name, kw in VARIANTS.items():
                def make(k: int, kw: dict = kw):
                    return lambda: irf.inv_rope_fp8(**input_sets[k], rope_start=bench.NOPE_DIM, style="gptj",
                                                    group_size=bench.GROUP, check_positions=False, **kw)
                rounds[name].append(bench.graph_time_us(make, sets, inner))
        row = {"tokens": tokens, "bytes": nbytes, "rounds_us": rounds}
        results.append(row)
        cells = []
        for name in VARIANTS:
            us = statistics.mean(rounds[name])
            pct = 100 * nbytes / (us * 1e-6) / 1e9 / copy_gbs
            cells.append(f"{us:.2f} ({pct:.0f}%) [{'/'.join(f'{t:.2f}' for t in rounds[name])}]")
        print(f"| {tokens} | " + " | ".join(cells) + " |", flush=True)
        input_sets = None
    Path(args.out, "probe_inv_rope_layouts.json").write_text(json.dumps(
        {"copy_gbs": copy_gbs, "variants": VARIANTS, "rows": results}, indent=1))


if __name__ == "__main__":
    main()
