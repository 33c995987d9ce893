"""Probe (issue #16, inverse RoPE at T = 4096): is the kernel's ~3.5 us a launch beyond a copy the cost of
starting 4224 one-warp programs? Streaming kernels that move the inverse-RoPE kernel's row bytes (bf16 rows in,
fp8 rows out, no rope, no scales) with one-warp programs 32 an SM (the shipped shape) and with multi-warp
programs (fewer to start, as many warps an SM), an empty grid of each shape, and torch's copy of the same bytes,
side by side in CUDA graphs over input sets that defeat L2, two rounds.

    python3 benchmarks/probe_inv_rope_ctas.py --out DIR
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_inv_rope_fp8 import L2_DEFEAT_BYTES, graph_time_us

HEADS, HEAD_DIM = 16, 512
TOKENS = (1024, 4096, 8192, 16384)


@triton.jit(do_not_specialize=["n_rows"])
def stream_rows_kernel(x_ptr, y_ptr, n_rows, ROWS: tl.constexpr, WIDTH: tl.constexpr, PREFETCH: tl.constexpr):
    """Each tile ROWS rows of WIDTH bf16 in, the same as e4m3 out; programs stride over tiles."""
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    n_tiles = tl.cdiv(n_rows, ROWS)
    cols = tl.arange(0, WIDTH)
    rows0 = tl.arange(0, ROWS).to(tl.int64)
    rows = rows0 + pid * ROWS
    nxt = tl.load(x_ptr + rows[:, None] * WIDTH + cols[None, :], mask=(rows < n_rows)[:, None], other=0.0)
    for tile in range(pid, n_tiles, n_programs):
        rows = rows0 + tile * ROWS
        ok = (rows < n_rows)[:, None]
        if PREFETCH:
            x = nxt
            nrows = rows0 + (tile + n_programs) * ROWS
            nxt = tl.load(x_ptr + nrows[:, None] * WIDTH + cols[None, :], mask=(nrows < n_rows)[:, None], other=0.0)
        else:
            x = tl.load(x_ptr + rows[:, None] * WIDTH + cols[None, :], mask=ok, other=0.0)
        y = (x.to(tl.float32) * 0.5).to(y_ptr.dtype.element_ty)
        tl.store(y_ptr + rows[:, None] * WIDTH + cols[None, :], y, mask=ok, cache_modifier=".cs")


@triton.jit
def empty_kernel(p):
    pass


# (label, rows a tile, warps, programs an SM)
SHAPES = [
    ("1w_32sm", 1, 1, 32),
    ("2w_16sm", 2, 2, 16),
    ("4w_8sm", 4, 4, 8),
    ("4w_16sm", 4, 4, 16),
    ("8w_8sm", 8, 8, 8),
]


def measure(tokens: int, sms: int) -> dict:
    """One T: every call's two rounds (us) and the stream kernels' output checks."""
    n_rows = tokens * HEADS
    nbytes = n_rows * HEAD_DIM * 3
    sets = max(1, min(8, math.ceil(L2_DEFEAT_BYTES / nbytes)))
    xs = [torch.randn(n_rows, HEAD_DIM, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    ys = [torch.empty(n_rows, HEAD_DIM, device="cuda", dtype=torch.float8_e4m3fn) for _ in range(sets)]
    same_src = [torch.empty(nbytes // 2, device="cuda", dtype=torch.uint8) for _ in range(sets)]
    same_dst = [torch.empty(nbytes // 2, device="cuda", dtype=torch.uint8) for _ in range(sets)]
    calls = {}
    for label, rows, warps, per_sm in SHAPES:
        grid = min(triton.cdiv(n_rows, rows), sms * per_sm)
        for prefetch in (True, False):
            name = f"stream_{label}{'' if prefetch else '_noprefetch'}"
            calls[name] = lambda k, rows=rows, warps=warps, grid=grid, prefetch=prefetch: (
                lambda: stream_rows_kernel[(grid,)](
                    xs[k], ys[k], n_rows, ROWS=rows, WIDTH=HEAD_DIM, PREFETCH=prefetch, num_warps=warps
                )
            )
        calls[f"empty_{label}"] = lambda k, warps=warps, grid=grid: (
            lambda: empty_kernel[(grid,)](xs[k], num_warps=warps)
        )
    calls["copy_same_bytes"] = lambda k: lambda: same_dst[k].copy_(same_src[k])
    ref = (xs[0].float() * 0.5).to(torch.float8_e4m3fn).view(torch.uint8)
    checks = {}
    for name, make in calls.items():
        if name.startswith("stream"):
            ys[0].view(torch.uint8).fill_(0xFF)
            make(0)()
            checks[name] = bool(torch.equal(ys[0].view(torch.uint8), ref))
    row: dict = dict(tokens=tokens, bytes=nbytes, checks=checks, us={})
    inner = max(sets, 4)
    for _ in range(2):
        for name, make in calls.items():
            row["us"].setdefault(name, []).append(graph_time_us(make, sets, inner))
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    results = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__, rows=[])
    for tokens in TOKENS:
        row = measure(tokens, sms)
        results["rows"].append(row)
        print(f"T={tokens}: " + ", ".join(f"{n} {sum(v) / 2:.2f}" for n, v in row["us"].items()), flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "probe_inv_rope_ctas.json").write_text(json.dumps(results, indent=1))
    names = list(results["rows"][0]["us"])
    print(f"\n{results['gpu']} torch {results['torch']} triton {results['triton']}: us [rounds] (bytes right)")
    print("| variant | " + " | ".join(f"T={r['tokens']}" for r in results["rows"]) + " |")
    print("|---|" + "---|" * len(results["rows"]))
    for name in names:
        cells = []
        for r in results["rows"]:
            a, b = r["us"][name]
            ok = r["checks"].get(name)
            cells.append(f"{(a + b) / 2:.2f} [{a:.2f}/{b:.2f}]" + ("" if ok is None else (" ok" if ok else " WRONG")))
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
