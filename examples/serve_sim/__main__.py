"""The serving simulation's command line.

`python examples/serve_sim [--preset cpu|cpu-small|gpu] [--runs upstream,fixed+warmup] [--out DIR] [--per-request]
[--bundle FILE]`.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace

if __package__ in (None, ""):  # run as `python examples/serve_sim`: make the package importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "serve_sim"

from serve_sim.simulation import DEFAULT_RUNS, RUNS, SimConfig, run_simulation
from serve_sim.trace import TraceSpec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="serve_sim", description=__doc__)
    parser.add_argument("--preset", choices=("cpu", "cpu-small", "gpu"), default="cpu")
    parser.add_argument("--runs", default=",".join(DEFAULT_RUNS), help=f"comma-separated, from {', '.join(RUNS)}")
    parser.add_argument("--requests", type=int, default=None, help="override the trace's request count")
    parser.add_argument("--seed", type=int, default=None, help="override the trace's seed")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", default=None, help="keep plans, logs and result.json here")
    parser.add_argument("--per-request", action="store_true", help="also print each request's TTFT per run")
    parser.add_argument("--bundle", default=None,
                        help="a compile bundle for the +bundle run (default: built here from the plan, offline)")
    args = parser.parse_args(argv)
    presets = {"cpu": SimConfig.cpu_default, "cpu-small": SimConfig.cpu_small, "gpu": SimConfig.gpu_default}
    config = presets[args.preset]()
    trace: TraceSpec = config.trace
    if args.requests is not None:
        trace = replace(trace, num_requests=args.requests)
    if args.seed is not None:
        trace = replace(trace, seed=args.seed)
    config = replace(config, trace=trace, workers=args.workers or config.workers)
    try:
        result = run_simulation(config, runs=tuple(r.strip() for r in args.runs.split(",") if r.strip()),
                                out_dir=args.out, bundle=args.bundle)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(result.format_header())
    if args.per_request:
        print(result.format_requests())
    print(result.format_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
