"""A tensor-parallel MoE layer on N ranks, each rank fed its own token-count stream.

Start it with torchrun (one process per rank), under ``jitguard run`` to see every rank's compiles:

    jitguard run --offline -- torchrun --nproc-per-node 2 examples/tp_moe/run.py --kernels stock
    jitguard run -- torchrun --nproc-per-node 2 examples/tp_moe/run.py --kernels fixed   # 2 GPUs

The layer: a replicated router (softmax top-k) and E experts split across the ranks, rank r
owning experts [r*E/N, (r+1)*E/N). Each rank runs ``fused_moe`` over its local experts (pairs
routed to another rank's experts are dropped) and an all-reduce sums the ranks' partial outputs.
Rank r reads the r-th ``--tokens`` stream, so ranks run different token counts at the same step;
the all-reduce runs over the step's largest batch (agreed first with an all-reduce MAX), each
rank's rows past its own batch being zero. The numbers are not a model's: the point is what each
rank compiles.

``--kernels fixed`` uses ``jitguard.kernels.fused_moe``; ``--kernels stock`` the same kernels with
their ``do_not_specialize`` lists removed at load time (see stock_kernels.py), as upstream ships.
NCCL on GPUs, gloo on CPU. With ``jitguard run --offline`` kernels compile for sm_90 and launches
do nothing, so outputs are garbage but every compile is real.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

DEFAULT_STREAMS = ("3,5,11,13,7", "1,16,8,12,2")


@dataclass(frozen=True)
class LayerSpec:
    """Sizes of the MoE layer (the whole layer; each rank holds experts / world_size of it)."""

    hidden: int
    intermediate: int
    experts: int
    top_k: int
    dtype: torch.dtype


def parse_stream(text: str) -> list[int]:
    """'3,5,11' -> [3, 5, 11]; raises ValueError naming the bad entry."""
    counts = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise ValueError(f"--tokens: {part!r} in {text!r} is not a positive token count")
        counts.append(int(part))
    return counts


def local_expert_weights(spec: LayerSpec, rank: int, world: int,
                         device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """w13 [E/N, 2I, H] and w2 [E/N, H, I] of this rank's experts, seeded by global expert id."""
    per_rank = spec.experts // world
    w13, w2 = [], []
    for expert in range(rank * per_rank, (rank + 1) * per_rank):
        gen = torch.Generator().manual_seed(1000 + expert)
        w13.append(torch.randn(2 * spec.intermediate, spec.hidden, generator=gen) / spec.hidden ** 0.5)
        w2.append(torch.randn(spec.hidden, spec.intermediate, generator=gen) / spec.intermediate ** 0.5)
    return (torch.stack(w13).to(device=device, dtype=spec.dtype),
            torch.stack(w2).to(device=device, dtype=spec.dtype))


def route(x: torch.Tensor, router: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax top-k routing: (weights [M, k] fp32 renormalized, global expert ids [M, k] int32)."""
    probs = torch.softmax(x.float() @ router.T, dim=-1)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    return weights / weights.sum(dim=-1, keepdim=True), ids.to(torch.int32)


def to_local_ids(global_ids: torch.Tensor, rank: int, per_rank: int) -> torch.Tensor:
    """Expert ids local to this rank; pairs routed to another rank's experts become -1 (dropped)."""
    local = global_ids - rank * per_rank
    return torch.where((local >= 0) & (local < per_rank), local, torch.full_like(local, -1))


def load_fused_moe(kernels: str):  # type: ignore[no-untyped-def]
    """The fused_moe entry point of the fixed kernels or of their stock form, and a description."""
    if kernels == "fixed":
        from jitguard.kernels.moe_chain import fused_moe
        return fused_moe, "jitguard.kernels (do_not_specialize kept)"
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from stock_kernels import load_stock_module, stock_demotions_removed

    fused_moe = load_stock_module("moe_chain").fused_moe
    removed = stock_demotions_removed()
    where = ", ".join(f"{r.function}:{r.keyword.replace('do_not_specialize', 'dns')}" for r in removed)
    return fused_moe, f"stock ({len(removed)} demotion lists removed: {where})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", choices=("stock", "fixed"), required=True,
                        help="fixed: jitguard.kernels; stock: the same kernels without do_not_specialize")
    parser.add_argument("--tokens", action="append", default=None, metavar="M1,M2,...",
                        help="token counts of one rank's steps; give it once per rank (rank r uses the "
                             f"r-th, cycling). Default: {' and '.join(DEFAULT_STREAMS)}")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--intermediate", type=int, default=128)
    parser.add_argument("--experts", type=int, default=4, help="experts of the whole layer, split across ranks")
    parser.add_argument("--top-k", type=int, default=2)
    parser.add_argument("--dtype", choices=("bfloat16", "float16"), default="bfloat16")
    args = parser.parse_args(argv)

    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        parser.error("start me with torchrun (RANK and WORLD_SIZE are not set), e.g. "
                     "torchrun --nproc-per-node 2 examples/tp_moe/run.py --kernels fixed")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    try:
        streams = [parse_stream(s) for s in (args.tokens or DEFAULT_STREAMS)]
    except ValueError as exc:
        parser.error(str(exc))
    if args.experts % world:
        parser.error(f"--experts {args.experts} does not split evenly over {world} ranks")
    if not 1 <= args.top_k <= args.experts:
        parser.error(f"--top-k must be in [1, {args.experts}], got {args.top_k}")
    spec = LayerSpec(args.hidden, args.intermediate, args.experts, args.top_k, getattr(torch, args.dtype))
    stream = streams[rank % len(streams)]

    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device, backend = torch.device("cuda", local_rank), "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"
    dist.init_process_group(backend=backend)
    try:
        fused_moe, description = load_fused_moe(args.kernels)
        per_rank = spec.experts // world
        w13, w2 = local_expert_weights(spec, rank, world, device)
        router = torch.randn(spec.experts, spec.hidden, generator=torch.Generator().manual_seed(7)).to(device)
        print(f"[rank {rank}] pid {os.getpid()} {backend} on {device}: experts "
              f"{rank * per_rank}..{(rank + 1) * per_rank - 1} of {spec.experts}, kernels {description}", flush=True)

        steps = max(len(s) for s in streams)
        start = time.perf_counter()
        for step in range(steps):
            num_tokens = stream[step % len(stream)]
            gen = torch.Generator().manual_seed(10_000 * rank + step)
            x = torch.randn(num_tokens, spec.hidden, generator=gen).to(device=device, dtype=spec.dtype)
            weights, global_ids = route(x, router, spec.top_k)
            partial = fused_moe(x, w13, w2, weights, to_local_ids(global_ids, rank, per_rank))

            largest = torch.tensor([num_tokens], device=device)
            dist.all_reduce(largest, op=dist.ReduceOp.MAX)
            summed = torch.zeros(int(largest.item()), spec.hidden, device=device, dtype=spec.dtype)
            summed[:num_tokens] = partial
            dist.all_reduce(summed)
            print(f"[rank {rank}] step {step}: {num_tokens} tokens, all-reduce over {summed.shape[0]} rows", flush=True)
        print(f"[rank {rank}] done: {steps} steps in {time.perf_counter() - start:.1f} s", flush=True)
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
