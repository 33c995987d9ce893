"""Probe (issue #16): how close to the byte floor can any two-GEMM decode MoE layer get at few tokens?

The goal "within 1.3x of the byte floor at M <= 8" is missed only where the layer's bytes are few (Qwen3-30B-FP8
at one and two tokens: 2.03x and 1.50x on an H200). This reads exactly those bytes (the active experts' gate_up
weights and block scales, then their down weights and scales) with a plain streaming kernel, over rotated buffer
sets so L2 holds none of it, in the arrangements a layer could have:

- ``gate_up alone`` / ``down alone``: each GEMM's bytes in one launch (best of several grid sizes);
- ``one launch``: both GEMMs' bytes in a single launch (no dependency between them: below any real layer);
- ``two launches``: gate_up's bytes, then down's, on one stream;
- ``two, PDL, down waits``: programmatic dependent launch, down's programs wait for gate_up's launch at their
  start (the data dependency kept, the launch latency hidden: the layer's GEMMs at best);
- ``two, PDL, no wait``: down's read may run beside gate_up's (weights need no wait; a lower bound).

The floor is the bench's (``bench_moe_layer.py``): the active experts' weights and scales, x in and out, the
logits, at the read-only rate of a 2 GiB read. Active experts come from the bench's own inputs (its seed per M).
Reading: where even ``two, PDL, down waits`` is above 1.3x the floor, no layer of two dependent GEMMs over these
bytes meets the goal, whatever its GEMMs do.

    python3 benchmarks/probe_decode_read_floor.py --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm
import bench_moe_layer as bml

from jitguard.kernels import moe_routing
from jitguard.kernels.pdl import pdl_enter, pdl_supported

# (case, M): the goal points the layer misses, and a met one and the bf16 control beside them.
POINTS = (("qwen3-30b-fp8-block", 1), ("qwen3-30b-fp8-block", 2), ("qwen3-30b-fp8-block", 4),
          ("qwen3-30b-bf16", 1), ("deepseek-v3-tp2-fp8-block", 1))
# (elements of bf16 a program reads per step, steps): 16-byte loads a thread on 4 warps at 1024.
GRIDS = ((1024, 1), (1024, 2), (1024, 4), (1024, 8), (2048, 4), (4096, 4))


@triton.jit
def _read_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, ITERS: tl.constexpr, LAUNCH_DEPENDENTS: tl.constexpr,
                 WAIT_PRIOR: tl.constexpr):
    """Sums ITERS blocks of BLOCK bf16 a program (so nothing is optimized away); PDL entry as the layer's."""
    pdl_enter(LAUNCH_DEPENDENTS, WAIT_PRIOR)
    base = tl.program_id(0).to(tl.int64) * BLOCK * ITERS
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(ITERS):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc, 0))


def point_bytes(case: str, M: int) -> dict:
    """The bench's inputs at M: active experts, each GEMM's weight and scale bytes, the floor's bytes."""
    _name, E, k, H, I, scheme = bfm.CASES[case]
    _x, logits, _g = bml.layer_inputs(M, H, E)
    e_act = int(torch.unique(moe_routing.softmax_topk_reference(logits, k, bml.RENORMALIZE)[1]).numel())
    gate_up, down = bml.gemm_bytes(H, I, scheme)
    return dict(case=case, M=M, E_act=e_act, gate_up_bytes=e_act * gate_up, down_bytes=e_act * down,
                floor_bytes=bml.floor_bytes(e_act, gate_up + down, M, H, E))


def measure_point(row: dict, l2: int, partial: torch.Tensor, replays: int) -> dict:
    """Each arrangement's time over one point's bytes, in buffer sets that together exceed L2 four times."""
    n13, n2 = row["gate_up_bytes"] // 2, row["down_bytes"] // 2
    sets = max(2, -(-4 * l2 // (row["gate_up_bytes"] + row["down_bytes"])))
    buffers = [torch.randn(n13 + n2, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]

    def launch(buf, n, grid_shape, dependents=False, wait=0, pdl=False):
        block, iters = grid_shape
        _read_kernel[(triton.cdiv(n, block * iters),)](
            buf, partial, n, BLOCK=block, ITERS=iters, LAUNCH_DEPENDENTS=dependents, WAIT_PRIOR=wait,
            **({"launch_pdl": True} if pdl else {}))

    def best(part: str, n: int, slice_of) -> tuple[int, int]:
        timed = {shape: bfm.time_graph(lambda s, shape=shape: launch(slice_of(buffers[s]), n, shape), sets, replays)
                 for shape in GRIDS}
        shape = min(timed, key=timed.get)
        row[f"{part}_us"], row[f"{part}_grid"] = timed[shape], list(shape)
        return shape

    g13 = best("gate_up_alone", n13, lambda b: b[:n13])
    g2 = best("down_alone", n2, lambda b: b[n13:])
    best("one_launch", n13 + n2, lambda b: b)
    arrangements = {
        "two_launches": lambda s: (launch(buffers[s][:n13], n13, g13), launch(buffers[s][n13:], n2, g2)),
        # 3: wait for the launch before, then let the next start (pdl_enter): strictly one after another.
        "two_pdl_down_waits": lambda s: (launch(buffers[s][:n13], n13, g13, True, 3, True),
                                         launch(buffers[s][n13:], n2, g2, True, 3, True)),
        "two_pdl_no_wait": lambda s: (launch(buffers[s][:n13], n13, g13, True, 3, True),
                                      launch(buffers[s][n13:], n2, g2, True, 0, True)),
    }
    for name, step in arrangements.items():
        row[f"{name}_us"] = bfm.time_graph(step, sets, replays)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=200)
    parser.add_argument("--out", required=True, help="folder for read_floor.json and read_floor.md")
    args = parser.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not pdl_supported():
        raise SystemExit("probe_decode_read_floor: this Triton's launcher has no launch_pdl (needs Triton >= 3.4)")
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    _copy_gbs, read_gbs, _torch_copy = bfm.measure_bandwidths(args.replays)
    print(f"{props.name}: read-only {read_gbs:.0f} GB/s", flush=True)
    partial = torch.empty(1 << 20, device="cuda", dtype=torch.float32)
    rows = []
    for case, M in POINTS:
        row = measure_point(point_bytes(case, M), l2, partial, args.replays)
        row["floor_us"] = row["floor_bytes"] / read_gbs / 1e3
        for key in [key for key in row if key.endswith("_us") and key != "floor_us"]:
            row[key.replace("_us", "_x_floor")] = row[key] / row["floor_us"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    (out_dir / "read_floor.json").write_text(json.dumps(dict(gpu=props.name, torch=torch.__version__,
                                                             triton=triton.__version__, read_gbs=read_gbs,
                                                             rows=rows), indent=1))
    columns = ("gate_up_alone", "down_alone", "one_launch", "two_launches", "two_pdl_down_waits", "two_pdl_no_wait")
    lines = [f"{props.name}, torch {torch.__version__}, Triton {triton.__version__}, read-only {read_gbs:.0f} GB/s;"
             " us (x the byte floor)", "",
             "| case | M | E_act | floor | " + " | ".join(columns) + " |", "|---" * (4 + len(columns)) + "|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['M']} | {r['E_act']} | {r['floor_us']:.1f} | " + " | ".join(
            f"{r[c + '_us']:.1f} ({r[c + '_x_floor']:.2f}x)" for c in columns) + " |")
    table = "\n".join(lines)
    (out_dir / "read_floor.md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
