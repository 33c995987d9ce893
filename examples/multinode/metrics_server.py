"""A toy server that serves jitguard's compile counter on /metrics, for a Prometheus to scrape.

    jitguard run --offline -- python metrics_server.py --port 9464

It warms a kernel up on 16 and 17 tokens, marks the serving phase, prints "serving", then reads
requests from stdin, one token count per line ("quit" ends it), and launches the kernel for each.
A token count of 1 is a new specialization: a compile during serving, which the alert in
alerts.yml reports.
"""

from __future__ import annotations

import argparse
import os
import sys

import prometheus_client

import jitguard
from jitguard.integrations.prometheus import count_compiles

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import node_kernels  # beside this file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9464, help="port of /metrics on 127.0.0.1 (default 9464)")
    args = parser.parse_args()
    count_compiles()
    prometheus_client.start_http_server(args.port, addr="127.0.0.1")
    buffer = node_kernels.DevicePointer()
    for tokens in (16, 17):
        node_kernels.sample_rows[(1,)](buffer, tokens, BLOCK=64)
    jitguard.mark_serving()
    print("serving", flush=True)
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        node_kernels.sample_rows[(1,)](buffer, int(line), BLOCK=64)
        print(f"served {int(line)} token(s)", flush=True)


if __name__ == "__main__":
    main()
