"""A Ray job over every node of a running cluster: one actor per node, each driving its own kernel, and a task.

    python cluster_job.py --address HOST:PORT [--gpu]

Each actor warms up on 16 and 17 tokens, marks the serving phase, then serves 1, 32, 48 and 5
tokens: the single token is a new specialization (an int equal to 1 becomes a constant), so one
compile happens during serving on every node. The task fills a table once. Each worker answers
with how many variants Triton itself holds for its kernel; the driver prints one line per worker.
Without --gpu the kernels take a stand-in for a tensor (for `jitguard run --offline` on CPU nodes);
with --gpu each actor launches on its own GPU (the i-th actor on cuda:i, one node per GPU).
"""

from __future__ import annotations

import argparse
import os
import sys

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

HERE = os.path.dirname(os.path.abspath(__file__))  # where node_kernels is, for the workers

WARMUP_TOKENS = (16, 17)
SERVING_TOKENS = (1, 32, 48, 5)


def _buffer(gpu: int | None, size: int):  # type: ignore[no-untyped-def]
    """A CUDA tensor on cuda:`gpu`, or, without a GPU, what Triton reads of one (for the offline backend)."""
    sys.path.insert(0, HERE)
    import node_kernels

    if gpu is None:
        return node_kernels.DevicePointer()
    import torch

    torch.cuda.set_device(gpu)
    return torch.zeros(size, device=f"cuda:{gpu}")


def _serve(kernel_name: str, gpu: int | None) -> dict:
    sys.path.insert(0, HERE)
    import node_kernels

    kernel = getattr(node_kernels, kernel_name)
    buffer = _buffer(gpu, 64)
    for tokens in WARMUP_TOKENS:
        kernel[(1,)](buffer, tokens, BLOCK=64)
    try:
        import jitguard
        jitguard.mark_serving()
    except ImportError:  # the job runs without jitguard too
        pass
    for tokens in SERVING_TOKENS:
        kernel[(1,)](buffer, tokens, BLOCK=64)
    return {"pid": os.getpid(), "node": ray.get_runtime_context().get_node_id()[:8], "kernel": kernel_name,
            "triton_variants": node_kernels.triton_variants(kernel)}


@ray.remote(num_cpus=0.5)
class Embedder:
    def serve(self, gpu: int | None) -> dict:
        return {"worker": "actor Embedder", **_serve("embed_rows", gpu)}


@ray.remote(num_cpus=0.5)
class Sampler:
    def serve(self, gpu: int | None) -> dict:
        return {"worker": "actor Sampler", **_serve("sample_rows", gpu)}


@ray.remote(num_cpus=0.5)
def build_table(gpu: int | None) -> dict:
    sys.path.insert(0, HERE)
    import node_kernels

    node_kernels.fill_table[(1,)](_buffer(gpu, 128), 100, BLOCK=128)
    return {"worker": "task build_table", "pid": os.getpid(), "node": ray.get_runtime_context().get_node_id()[:8],
            "kernel": "fill_table", "triton_variants": node_kernels.triton_variants(node_kernels.fill_table)}


def on_node(node_id: str) -> NodeAffinitySchedulingStrategy:
    return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", required=True, help="the cluster's head, HOST:PORT (or 'auto')")
    parser.add_argument("--gpu", action="store_true", help="launch on GPUs: actor i on cuda:i (default: no GPU)")
    args = parser.parse_args()
    ray.init(address=args.address, log_to_driver=False)
    nodes = sorted(node["NodeID"] for node in ray.nodes() if node["Alive"])
    actors = [kind.options(scheduling_strategy=on_node(nodes[i % len(nodes)])).remote()
              for i, kind in enumerate((Embedder, Sampler))]
    gpus = [i if args.gpu else None for i in range(len(actors))]
    task = build_table.options(scheduling_strategy=on_node(nodes[-1])).remote(gpus[-1])
    answers = ray.get([actor.serve.remote(gpu) for actor, gpu in zip(actors, gpus)] + [task])
    print(f"{len(nodes)} nodes")
    for answer in sorted(answers, key=lambda a: a["worker"]):
        print(f"{answer['worker']}: pid {answer['pid']} on node {answer['node']}: Triton holds "
              f"{answer['triton_variants']} variant(s) of {answer['kernel']}")
    ray.shutdown()


if __name__ == "__main__":
    main()
