"""Start a Ray cluster of N nodes on this machine (Ray's own test utility), run a command against it, stop it.

    python local_cluster.py --nodes 2 -- jitguard run --offline --dir logs -- python cluster_job.py --address {address}

The nodes are started here, outside the command, as `ray start --head` and `ray start --address`
would start them on separate machines: the command's processes are not their parents, so Ray's
runtime_env is what reaches the workers. `{address}` in the command becomes the head's address.
Exits with the command's exit code.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from ray.cluster_utils import Cluster


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2, help="how many nodes (default 2)")
    parser.add_argument("--cpus", type=float, default=1, help="logical CPUs per node (default 1)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ... ({address} is replaced)")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give a command after --")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": args.cpus})
    try:
        for _ in range(args.nodes - 1):
            cluster.add_node(num_cpus=args.cpus)
        cluster.wait_for_nodes()
        return subprocess.call([part.replace("{address}", cluster.address) for part in command])
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
