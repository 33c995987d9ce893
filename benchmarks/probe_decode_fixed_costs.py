"""H200 probe: the fixed costs under a decode MoE layer at one token (where its time goes).

Each step is captured 20 times back to back in one CUDA graph and timed per step (median of >=
100 replays), the way a step costs inside a layer's graph:

- an empty Triton kernel (1 and 192 programs): the launch floor of a step in a graph;
- one program that loads a 128-float logits row and stores its maximum: a dependent load;
- ``softmax_topk`` at one token: E = 128, k = 8 (Qwen3; every expert ranked at once) and E = 256,
  k = 8 (DeepSeek; successive argmaxes), then each inside a 192-program grid;
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
import bench_fused_moe as bfm  # noqa: E402  (also makes jitguard.kernels importable from a checkout)
from jitguard.kernels import moe_routing  # noqa: E402

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
    ids, weights = moe_routing.softmax_topk_row(logits_ptr, num_experts, TOP_K, K_POW2, E_POW2, True)
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
    probe("load a 128-float row, store its max (1 program)", lambda: _row_max_kernel[(1,)](logits[128], scratch, E_POW2=128))
    for E in (128, 256):
        method = "ranked at once" if E <= moe_routing.RANK_MAX_EXPERTS else "successive argmax"
        probe(f"softmax_topk, 1 token, E={E} k=8 ({method})", lambda E=E: moe_routing.softmax_topk(logits[E], 8, True))
        probe(f"routing in each of 192 programs, E={E} k=8",
              lambda E=E: _routing_grid_kernel[(192,)](logits[E], ids, E, TOP_K=8, K_POW2=8, E_POW2=E))

    l2 = getattr(props, "L2_cache_size", 60 << 20)
    for label, nbytes in (("gate_up", 8 * 2 * 768 * 2048 * 2), ("down", 8 * 2048 * 768 * 2)):
        n = nbytes // 2
        copies = max(2, -(-4 * l2 // nbytes))
        bufs = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
        for block, iters in ((4096, 16), (2048, 8), (1024, 4)):
            grid = triton.cdiv(n, block * iters)
            partial = torch.empty(grid, device="cuda", dtype=torch.float32)
            us = bfm.time_graph(
                lambda layer, grid=grid, partial=partial, block=block, iters=iters, bufs=bufs: bfm._read_only_kernel[(grid,)](
                    bufs[layer], partial, n, BLOCK=block, ITERS=iters),
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
