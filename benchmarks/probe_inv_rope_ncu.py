"""H200 probe for Nsight Compute: inverse-RoPE (vLLM's layout) and a torch copy of the same bytes, per T,
each one call inside a profiler range (the warm-up calls before it compile and settle the caches).

    ncu --clock-control none --profile-from-start off --section SpeedOfLight --section Occupancy \\
        python3 benchmarks/probe_inv_rope_ncu.py --tokens 4096,16384
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_inv_rope_fp8 as bir


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", default="4096,16384")
    args = p.parse_args()
    irf = bir.import_kernels()
    for tokens in (int(t) for t in args.tokens.split(",")):
        nbytes, _, inputs, layout, _, buffers = bir.upstream_layout_inputs(irf, tokens)
        src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        for _ in range(3):
            irf.launch_inv_rope_fp8(layout, **inputs[0], out=buffers[0][0], scales=buffers[0][1])
            dst.copy_(src)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        irf.launch_inv_rope_fp8(layout, **inputs[0], out=buffers[0][0], scales=buffers[0][1])
        dst.copy_(src)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        print(f"T={tokens}: {nbytes / 1e6:.1f} MB", flush=True)


if __name__ == "__main__":
    main()
