"""H200 probe (issue #16): where one decode-layer call spends its time, from device-side stamps.

The stage-alone times (each launch replayed back to back) do not add up to the layer's: a GEMM
launched with PDL overlaps the launch before it, and a graph of a few short launches is bound by
its replay, not by the GPU. Here every program of both decode GEMMs stores ``%globaltimer`` at its
start, when its set-up (routing, pointers) is done, when its wait for the prior launch returns,
after its K loop, and at its end (``moe_decode_gemm_kernel``'s STAMPS, ``device_clock``; on the
chain path ``moe_gemm``'s grouped GEMM, which waits before its set-up); a
one-program marker kernel stamps before and after each layer call. Each layer copy runs in one
CUDA graph (L2 defeated by the rotated copies); the table gives, per launch, the programs' stamps
relative to the marker before the call (median over layer copies and replays of the min / median /
max over programs), and the layer timed with and without stamps.

    PYTHONPATH=$PWD python3 benchmarks/probe_decode_timeline.py --out $OUT
"""

from __future__ import annotations

import ast
import functools
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import tune_moe_decode as tmd

from jitguard.kernels import moe_decode, moe_gemm
from jitguard.kernels.device_clock import N_STAMPS, global_time_ns

SLOTS = ("start", "set-up", "waited", "K loop", "end")
MAX_PROGRAMS = 1 << 16
REPLAYS = 8


@triton.jit
def _mark_kernel(buf_ptr, slot):
    tl.store(buf_ptr + slot, global_time_ns())


def stamped(launch, buf: torch.Tensor):
    """The GEMM launch ``launch`` storing its stamps in ``buf``: a functools.partial of the decode
    GEMM kernel (grouped and pairs paths) or of ``moe_gemm.launch_moe_gemm`` (the chain path)."""
    if launch.func is moe_gemm.launch_moe_gemm:
        return functools.partial(launch.func, *launch.args, **{**launch.keywords, "stamps": buf})
    return functools.partial(launch.func, *launch.args, **{**launch.keywords, "STAMPS": True, "stamps_ptr": buf})


def timeline_rows(layer: tmd.Layer, M: int, path: str) -> tuple[list[str], dict]:
    x, logits = tmd.inputs(layer, M)
    out = torch.empty_like(x)
    plans = layer.plans(x, logits, out, path, None)
    gemms = [name for name, _ in plans[0].launches if name in ("gate_up", "down")]
    bufs = [{name: torch.full((MAX_PROGRAMS * N_STAMPS,), -1, dtype=torch.int64, device="cuda") for name in gemms}
            for _ in plans]
    marks = torch.zeros(2 * len(plans), dtype=torch.int64, device="cuda")
    launches = [[(name, stamped(fn, bufs[i][name]) if name in bufs[i] else fn) for name, fn in plan.launches]
                for i, plan in enumerate(plans)]

    def step(i):
        _mark_kernel[(1,)](marks, 2 * i)
        for _, fn in launches[i]:
            fn()
        _mark_kernel[(1,)](marks, 2 * i + 1)

    def plain(i):
        for _, fn in plans[i].launches:
            fn()

    plain_us = bfm.time_graph(plain, layer.n_layers, tmd.REPLAYS)
    stamped_us = bfm.time_graph(step, layer.n_layers, tmd.REPLAYS)
    # One graph of every copy, replayed; each replay's stamps read back.
    for i in range(layer.n_layers):
        step(i)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        for i in range(layer.n_layers):
            step(i)
    torch.cuda.current_stream().wait_stream(stream)
    for _ in range(20):
        graph.replay()
    samples: dict[str, dict[str, list[float]]] = {}
    spans = []
    for _ in range(REPLAYS):
        for b in bufs:
            for t in b.values():
                t.fill_(-1)
        graph.replay()
        torch.cuda.synchronize()
        m = marks.cpu().tolist()
        for i in range(layer.n_layers):
            t0 = m[2 * i]
            spans.append((m[2 * i + 1] - t0) / 1e3)
            for name in gemms:
                st = bufs[i][name].view(MAX_PROGRAMS, N_STAMPS)
                st = st[st[:, 0] >= 0].cpu()
                rec = samples.setdefault(name, {})
                rec.setdefault("programs", []).append(float(st.shape[0]))
                for s, slot in enumerate(SLOTS):
                    col = st[:, s]
                    col = col[col >= 0].double()
                    if col.numel() == 0:
                        continue
                    rel = (col - t0) / 1e3
                    rec.setdefault(f"{slot} min", []).append(rel.min().item())
                    rec.setdefault(f"{slot} med", []).append(rel.median().item())
                    rec.setdefault(f"{slot} max", []).append(rel.max().item())
    del graph
    med = {name: {key: statistics.median(v) for key, v in rec.items()} for name, rec in samples.items()}
    lines = []
    for name in gemms:
        r = med[name]

        def cell(slot, r=r):
            if f"{slot} med" not in r:
                return "-"
            return f"{r[f'{slot} min']:.1f} / {r[f'{slot} med']:.1f} / {r[f'{slot} max']:.1f}"

        lines.append(f"| {layer.name} | {M} | {plans[0].path} | {name} | {int(r['programs'])} | "
                     + " | ".join(cell(slot) for slot in SLOTS)
                     + f" | {statistics.median(spans):.1f} | {stamped_us:.1f} | {plain_us:.1f} |")
    return lines, {"case": layer.name, "M": M, "path": plans[0].path, "timeline": med,
                   "span_us": statistics.median(spans), "stamped_us": stamped_us, "plain_us": plain_us}


def main() -> None:
    p = tmd.probe_parser(__doc__, "qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block,qwen3-30b-bf16", "1,2,4")
    p.add_argument("--paths", default="pairs,grouped")
    p.add_argument("--switch", action="append", default=[],
                   help="NAME=VALUE: set moe_decode.NAME (a Python literal) for the whole run")
    args = p.parse_args()
    for item in args.switch:
        name, _, value = item.partition("=")
        if not hasattr(moe_decode, name):
            raise SystemExit(f"probe_decode_timeline: --switch {item}: moe_decode has no {name}")
        setattr(moe_decode, name, ast.literal_eval(value))
    paths = args.paths.split(",")
    header = tmd.probe_header(
        "us from the marker before the layer call; each stamp min / median / max over the launch's programs "
        "(median over copies and replays); span: marker to marker; layer: timed in a graph, with / without stamps",
        ["path", "launch", "programs", *SLOTS, "span", "layer stamped", "layer plain"])

    def row(layer, M, log):
        lines = []
        for path in paths:
            rows, record = timeline_rows(layer, M, path)
            log(record)
            lines += rows
        return "\n".join(lines)

    tmd.probe_each_case_and_m(args, "probe_decode_timeline", header, row)


if __name__ == "__main__":
    main()
