"""H200 probe for Nsight Compute: one decode-layer call per M, inside a profiler range.

Run under ``ncu --profile-from-start off`` so only the ranged calls are profiled (the warm-up
calls before compile and settle the caches' state). Each call's launches are the decode path's
route, gate_up and down kernels (``fused_moe_decode``, DeepSeek-V3-TP2 FP8-block by default).

    ncu --clock-control none --profile-from-start off --section SpeedOfLight --section WarpStateStats \\
        python3 benchmarks/probe_decode_ncu.py --ms 1,4
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import bench_moe_layer as bml

from jitguard.kernels import moe_decode


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", default="deepseek-v3-tp2-fp8-block")
    p.add_argument("--ms", default="1,4")
    args = p.parse_args()
    _, E, k, H, I, scheme = bfm.CASES[args.case]
    w13, w2, s13, s2 = bfm.make_layer(E, H, I, scheme, 1234)
    ws = moe_decode.MoeDecodeWorkspace.for_layer(w13, w2, k, torch.bfloat16)
    kw = bml.fp8_kwargs(scheme, s13, s2)
    for M in (int(m) for m in args.ms.split(",")):
        x = torch.randn(M, H, device="cuda", dtype=torch.bfloat16)
        logits = torch.randn(M, E, device="cuda")
        for _ in range(3):
            moe_decode.fused_moe_decode(x, logits, w13, w2, k, renormalize=True, workspace=ws, **kw)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        moe_decode.fused_moe_decode(x, logits, w13, w2, k, renormalize=True, workspace=ws, **kw)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        print(f"profiled M={M}", flush=True)


if __name__ == "__main__":
    main()
