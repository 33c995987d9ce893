"""GPU price of the costly demotions kept in jitguard.kernels, side by side in one run.

tests/kernels/test_kernel_demotion_costs.py records two costly verdicts that the kernels keep:
``num_pairs`` of moe_align's ``_moe_count_kernel`` and ``_moe_scatter_kernel`` (the topk-id loads
masked by ``num_pairs`` go from one 64-bit access to two 32-bit ones). This times
``moe_align_block_size`` as shipped against the same call with those two kernels under Triton's
default specialization, at DeepSeek-V3-like routing (256 experts, top-8), and checks that both
group every pair by expert as the plain-torch reference does.

Method: a CUDA graph of 20 calls per side, 7 alternating rounds of 50 replays, median per side.

Usage (on a GPU): python benchmarks/bench_kernel_demotions.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from typing import Any

NUM_EXPERTS, TOP_K, BLOCK_SIZE = 256, 8, 16
TOKENS = (1, 8, 64, 512, 4096, 16384)
CALLS_PER_GRAPH, ROUNDS, REPLAYS = 20, 7, 50


def grouped_by_expert(routing: Any) -> dict[int, list[int]]:
    """Pairs per expert as the aligned routing lays them out (padding slots dropped)."""
    used = int(routing.num_padded.item())
    sorted_ids, expert_ids = routing.sorted_ids.tolist(), routing.expert_ids.tolist()
    got: dict[int, list[int]] = {}
    for pos in range(used):
        if sorted_ids[pos] < routing.num_pairs:
            got.setdefault(expert_ids[pos // routing.block_size], []).append(sorted_ids[pos])
    return {expert: sorted(pairs) for expert, pairs in got.items()}


def graph_of(call: Callable[[], Any]) -> Any:
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS_PER_GRAPH):
            call()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def replay_us(graph: Any) -> float:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(REPLAYS):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / CALLS_PER_GRAPH)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the rows as JSON here")
    args = parser.parse_args()

    import torch
    import triton

    from jitguard.kernels import moe_align

    shipped = {name: getattr(moe_align, name) for name in ("_moe_count_kernel", "_moe_scatter_kernel")}
    stock = {name: triton.jit(kernel.fn) for name, kernel in shipped.items()}

    def use(kernels: dict[str, Any]) -> None:
        for name, kernel in kernels.items():
            setattr(moe_align, name, kernel)

    rows = []
    gen = torch.Generator(device="cuda").manual_seed(0)
    for tokens in TOKENS:
        # Distinct experts per token, as top-k routing gives.
        ids = torch.rand(tokens, NUM_EXPERTS, device="cuda", generator=gen).argsort(dim=1)[:, :TOP_K]
        ids = ids.to(torch.int32).contiguous()
        expected = moe_align.moe_align_reference(ids.cpu(), NUM_EXPERTS, BLOCK_SIZE)
        row: dict[str, Any] = dict(tokens=tokens, pairs=tokens * TOP_K)
        graphs = {}
        for side, kernels in (("shipped", shipped), ("specialized", stock)):
            use(kernels)
            routing = moe_align.moe_align_block_size(ids, NUM_EXPERTS, BLOCK_SIZE)
            row[f"{side}_ok"] = grouped_by_expert(routing) == expected
            graphs[side] = graph_of(lambda ids=ids: moe_align.moe_align_block_size(ids, NUM_EXPERTS, BLOCK_SIZE))
        use(shipped)
        times: dict[str, list[float]] = {side: [] for side in graphs}
        for _ in range(ROUNDS):
            for side, graph in graphs.items():
                times[side].append(replay_us(graph))
        for side in graphs:
            row[f"{side}_us"] = statistics.median(times[side])
        rows.append(row)

    print(f"\n{torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__}")
    print(f"moe_align_block_size, E={NUM_EXPERTS}, top-{TOP_K}, block {BLOCK_SIZE}; us per call (3 kernels)")
    print("| tokens | pairs | shipped (num_pairs demoted) us | count+scatter specialized us | shipped / specialized"
          " | both right |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['tokens']} | {row['pairs']} | {row['shipped_us']:.2f} | {row['specialized_us']:.2f} | "
              f"{row['shipped_us'] / row['specialized_us']:.3f}x | {row['shipped_ok'] and row['specialized_ok']} |")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
