"""Summary table of h200_run.sh's runs: compiles, variants and compile seconds per rank, wall times.

    python3 examples/tp_moe/h200_summary.py /tmp/tp_moe

Also checks what a GPU run could show that the offline CPU run cannot: a key that differs between
ranks for the same compile (device index or rank in the key), and a compile logged on a rank other
than the one whose process made it (the event's rank and device against the process's).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

from jitguard.report.event_logs import load_logs

GEMM = "moe_grouped_gemm_kernel"


def done_seconds(out: str) -> dict[int, float]:
    """Each rank's "[rank R] done: N steps in X s" (the request path: steps wait on all-reduces)."""
    return {int(r): float(s) for r, s in re.findall(r"^\[rank (\d+)\] done: \d+ steps in ([\d.]+) s", out, re.M)}


def summarize(base: Path, name: str) -> None:
    logs = load_logs(base / name)
    wall = (base / f"{name}.wall").read_text().strip()
    done = done_seconds((base / f"{name}.out").read_text())
    per_rank: dict[int, dict] = defaultdict(lambda: {"compiles": 0, "ms": 0.0, "hits": 0})
    keys: dict[tuple[str, int], set] = defaultdict(set)
    odd = []
    for process in logs.processes:
        for e in process.events:
            rank = process.rank if process.rank is not None else -1
            r = per_rank[rank]
            r["compiles"] += 1
            r["ms"] += e.compile_ms or 0.0
            r["hits"] += bool(e.disk_cache_hit)
            keys[(e.kernel, rank)].add(e.key)
            # torchrun's LOCAL_RANK == RANK on one host, and run.py puts rank r on cuda:r.
            if e.rank != process.rank or e.device != rank:
                odd.append(f"{e.kernel}: event rank {e.rank} device {e.device} in process of rank {process.rank}")
    total = sum(r["compiles"] for r in per_rank.values())
    gemm_all = set().union(*(v for (k, _), v in keys.items() if k == GEMM)) if keys else set()
    gemm_by_rank = {rk: len(v) for (k, rk), v in sorted(keys.items()) if k == GEMM}
    ranks = " | ".join(f"rank {rk}: {r['compiles']} compiles ({r['hits']} disk hits) {r['ms'] / 1000:.2f} s"
                       for rk, r in sorted(per_rank.items()))
    print(f"| {name} | {total} | {len(gemm_all)} ({', '.join(f'r{k}: {v}' for k, v in gemm_by_rank.items())}) "
          f"| {ranks} | {', '.join(f'r{k} {v:.1f} s' for k, v in sorted(done.items()))} | {wall} |")
    # Keys compiled on both ranks vs keys per rank: a rank-dependent key would make the union grow.
    shared = defaultdict(int)
    for (kernel, _), v in keys.items():
        shared[kernel] += len(v)
    for kernel in sorted({k for k, _ in keys}):
        union = set().union(*(v for (k, _), v in keys.items() if k == kernel))
        if name.startswith(("small-fixed", "big-fixed")):
            print(f"    {kernel}: {len(union)} distinct keys over ranks, per rank "
                  f"{[len(v) for (k, _), v in sorted(keys.items()) if k == kernel]}")
    for line in odd[:10]:
        print("    MISATTRIBUTED", line)


def main() -> int:
    base = Path(sys.argv[1])
    print("| run | compiles | GEMM variants | per rank | request path (done in) | wall |")
    print("|---|---|---|---|---|---|")
    for name in ("small-stock", "small-fixed", "big-stock-cold", "big-stock-warm", "big-fixed-cold", "big-fixed-warm"):
        try:
            summarize(base, name)
        except Exception as exc:  # one broken run must not hide the others
            print(f"| {name} | failed: {type(exc).__name__}: {exc} |")
    print((base / "pytest.txt").read_text()[-1500:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
