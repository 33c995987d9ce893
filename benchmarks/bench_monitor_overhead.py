"""Steady-state launch overhead with and without the jitguard monitor installed.

The monitor's hooks run only when Triton's in-memory cache misses, so a cached launch should cost
the same with it. This measures that, side by side in one run: blocks of launches of an
already-compiled kernel, alternating monitor off / on, median per-launch time of each.

    python benchmarks/bench_monitor_overhead.py            # GPU if present, else the offline backend
    python benchmarks/bench_monitor_overhead.py --out benchmarks/results/monitor_overhead.md
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
import triton
import triton.language as tl

import jitguard
from jitguard.runtime import monitor


@triton.jit
def scale_kernel(x_ptr, out_ptr, num_tokens, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < num_tokens
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


def time_block(launch, launches: int, sync) -> float:
    """Microseconds per launch over one block of `launches` launches."""
    sync()
    start = time.perf_counter()
    for _ in range(launches):
        launch()
    sync()
    return (time.perf_counter() - start) / launches * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=2000, help="launches per timed block")
    parser.add_argument("--blocks", type=int, default=30, help="timed blocks per setting (alternating)")
    parser.add_argument("--out", help="write a markdown record of this run here")
    args = parser.parse_args()

    use_gpu = torch.cuda.is_available()
    device = "cuda" if use_gpu else "cpu"
    backend = contextlib.nullcontext() if use_gpu else jitguard.offline()
    sync = torch.cuda.synchronize if use_gpu else (lambda: None)
    x = torch.randn(4096, device=device)
    out = torch.empty_like(x)

    def launch() -> None:
        scale_kernel[(4,)](x, out, 4000, BLOCK=1024)

    off, on = [], []
    with backend:
        launch()  # compile once, outside the timing
        for _ in range(3):
            time_block(launch, args.launches, sync)
        for _ in range(args.blocks):
            monitor.uninstall()
            off.append(time_block(launch, args.launches, sync))
            monitor.install(summary=False)
            on.append(time_block(launch, args.launches, sync))
        monitor.uninstall()

    med_off, med_on = statistics.median(off), statistics.median(on)
    spread_off = (statistics.quantiles(off, n=10)[8] - statistics.quantiles(off, n=10)[0]) / med_off * 100
    ratio = med_on / med_off
    where = (torch.cuda.get_device_name() if use_gpu
             else f"CPU ({platform.processor() or platform.machine()}), offline backend")
    table = [
        "| setting | median us/launch | p10..p90 spread |",
        "|---|---|---|",
        f"| monitor off | {med_off:.3f} | {spread_off:.1f}% |",
        f"| monitor on  | {med_on:.3f} | |",
        f"| ratio on/off | {ratio:.4f} ({(ratio - 1) * 100:+.2f}%) | |",
    ]
    header = (f"date {datetime.date.today()}, device {where}, torch {torch.__version__}, triton {triton.__version__}, "
              f"{args.blocks} alternating blocks of {args.launches} launches")
    print(header)
    print("\n".join(table))
    if args.out:
        Path(args.out).write_text(
            "# Monitor overhead on the cache-hit path\n\n"
            f"Command: `python benchmarks/bench_monitor_overhead.py --out {args.out}`\n\n{header}\n\n"
            + "\n".join(table) + "\n")


if __name__ == "__main__":
    main()
