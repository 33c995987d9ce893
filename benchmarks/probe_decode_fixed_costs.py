"""H200 probe: the fixed costs under a decode MoE layer at one token (where its time goes).

Each step is captured 20 times back to back in one CUDA graph and timed per step (median of >=
100 replays), the way a step costs inside a layer's graph:

- an empty Triton kernel (1 and 192 programs): the launch floor of a step in a graph;
- one program that loads a 128-float logits row and stores its maximum: a dependent load;
- the softmax top-k of one token (``moe_routing``), E = 128 and E = 256 with k = 8 (Qwen3,
  DeepSeek), in one program of 1 or 4 warps, and in each of 192 programs of 4 warps (as inside
  the pairs path's GEMMs);
- the grouped decode path's route launch at Qwen3-30B's shape, one token, at 1, 2 and 4 warps;
- reading 50.3 MB and 25.2 MB (Qwen3-30B's active gate_up and down weights at one token) with a
  plain streaming kernel, over rotated buffers so L2 holds none of it: the best a lone GEMM
  launch over those bytes could do.

    python benchmarks/probe_decode_fixed_costs.py --out probe.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fused_moe as bfm

from jitguard.kernels import moe_decode, moe_routing

STEPS_PER_GRAPH = 20


@triton.jit
def _empty_kernel(out_ptr):
    if tl.program_id(0) < 0:
        tl.store(out_ptr, 0.0)


@triton.jit
def _row_max_kernel(logits_ptr, out_ptr, E_POW2: tl.constexpr):
    offs = tl.arange(0, E_POW2)
    tl.store(out_ptr + tl.program_id(0), tl.max(tl.load(logits_ptr + offs), 0))


@triton.jit
def _routing_grid_kernel(logits_ptr, ids_ptr, num_experts, TOP_K: tl.constexpr, K_POW2: tl.constexpr,
                         E_POW2: tl.constexpr):
    """Every program routes token 0, as each program of the pairs path's GEMMs does."""
    ids, _weights = moe_routing.softmax_topk_row(logits_ptr, num_experts, TOP_K, K_POW2, E_POW2, True)
    slot = tl.program_id(0) % TOP_K
    tl.store(ids_ptr + tl.program_id(0), tl.sum(tl.where(tl.arange(0, K_POW2) == slot, ids, 0), 0))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replays", type=int, default=200)
    p.add_argument("--out", default="probe.md")
    args = p.parse_args()
    props = torch.cuda.get_device_properties(0)
    rows: list[tuple[str, float]] = []

    def probe(name: str, step) -> None:
        us = bfm.time_graph(lambda _: step(), STEPS_PER_GRAPH, args.replays)
        rows.append((name, us))
        print(f"{name}: {us:.2f} us", flush=True)

    scratch = torch.zeros(4096, device="cuda", dtype=torch.float32)
    ids = torch.zeros(4096, device="cuda", dtype=torch.int32)
    probe("empty kernel, 1 program", lambda: _empty_kernel[(1,)](scratch))
    probe("empty kernel, 192 programs", lambda: _empty_kernel[(192,)](scratch))
    logits = {E: torch.randn(1, E, device="cuda") for E in (128, 256)}
    probe("load a 128-float row, store its max (1 program)",
          lambda: _row_max_kernel[(1,)](logits[128], scratch, E_POW2=128))
    out_ids = torch.empty(1, 8, device="cuda", dtype=torch.int32)
    out_w = torch.empty(1, 8, device="cuda", dtype=torch.float32)
    for E in (128, 256):
        ref_ids = moe_routing.softmax_topk_reference(logits[E], 8, True)[1]
        for warps in (1, 4):
            def route_one(E=E, warps=warps):
                moe_routing.moe_softmax_topk_kernel[(1,)](
                    logits[E], out_ids, out_w, 1, E, E, TOP_K=8, K_POW2=8, E_POW2=E, RENORMALIZE=True, num_warps=warps)
            route_one()
            assert torch.equal(out_ids, ref_ids), (E, warps)
            probe(f"softmax top-k, 1 token, E={E} k=8, {warps} warp(s)", route_one)
        probe(f"softmax top-k in each of 192 programs (4 warps), E={E} k=8",
              lambda E=E: _routing_grid_kernel[(192,)](logits[E], ids, E, TOP_K=8, K_POW2=8, E_POW2=E, num_warps=4))

    # The decode path's route launch (Qwen3-30B, one token) at 1, 2 and 4 warps.
    E, k, H, I = 128, 8, 2048, 768
    w13 = torch.zeros(E, 2 * I, H, device="cuda", dtype=torch.bfloat16)
    w2 = torch.zeros(E, H, I, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, H, device="cuda", dtype=torch.bfloat16)
    plan = moe_decode.plan_fused_moe_decode(x, logits[128], w13, w2, k, renormalize=True, path="grouped")
    stage, route = plan.launches[0]
    assert stage == "route"
    for warps in (1, 2, 4):
        probe(f"grouped path's route launch (routing + alignment), Qwen3 M=1, {warps} warp(s)",
              lambda warps=warps: route(num_warps=warps))
    del w13, w2

    l2 = getattr(props, "L2_cache_size", 60 << 20)
    for label, nbytes in (("gate_up", 8 * 2 * 768 * 2048 * 2), ("down", 8 * 2048 * 768 * 2)):
        n = nbytes // 2
        copies = max(2, -(-4 * l2 // nbytes))
        bufs = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
        for block, iters in ((4096, 16), (2048, 8), (1024, 4)):
            grid = triton.cdiv(n, block * iters)
            partial = torch.empty(grid, device="cuda", dtype=torch.float32)
            us = bfm.time_graph(
                lambda layer, grid=grid, partial=partial, block=block, iters=iters, bufs=bufs, n=n:
                    bfm._read_only_kernel[(grid,)](bufs[layer], partial, n, BLOCK=block, ITERS=iters),
                copies, args.replays)
            name = f"stream-read {nbytes / 1e6:.1f} MB ({label} bytes at M=1), {grid} programs"
            rows.append((name, us))
            print(f"{name}: {us:.2f} us = {nbytes / us / 1e3:.0f} GB/s", flush=True)
        del bufs

    header = f"# {props.name}, torch {torch.__version__}, triton {triton.__version__}"
    table = "\n".join(["| step (one of 20 back to back in a graph) | us per step |", "|---|---|"]
                      + [f"| {name} | {us:.2f} |" for name, us in rows])
    print(table)
    Path(args.out).write_text(f"{header}\n\nCommand: python {' '.join(sys.argv)}\n\n{table}\n")


if __name__ == "__main__":
    main()
