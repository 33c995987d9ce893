"""`jitguard fix --check` against `jitguard scan` on big kernel files and on a real kernel tree.

Generates one file with N kernels per `--kernels` value (each kernel ~6 KB, the size of a real
library's kernels), plus any `--tree` you pass (for example FlagGems, fla-core, liger-kernel and
gemlite unpacked from `pip download --no-deps`; no third-party code lives in this repository).
For each target it runs `scan --json` once to get the requests, then times `scan --json` and
`fix --check --from scan.json`, `--runs` times each, and prints a markdown table of the best
CPU seconds (user + sys, worker processes included: the fair figure on a shared machine) and wall
seconds. `--baseline DIR` times another checkout's `fix` too (its package directory on PYTHONPATH).

    python benchmarks/bench_codemod_fix.py --kernels 128 617 --tree /tmp/kernel-libs
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def kernel_file(count: int) -> str:
    """A module with `count` kernels, each with a token-count parameter scan flags (JG101)."""
    parts = ["import triton\nimport triton.language as tl\n\n"]
    body = "".join(
        f"    acc{j} = tl.load(x_ptr + offs + {j}, mask=offs < num_tokens, other=0.0)  # 'q' \"d\"\n" for j in range(70)
    )
    for index in range(count):
        parts.append(
            f"\n@triton.jit\ndef kernel_{index}(x_ptr, out_ptr, num_tokens, hidden, BLOCK: tl.constexpr):\n"
            f"    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n{body}"
            "    tl.store(out_ptr + offs, acc0, mask=offs < num_tokens)\n"
        )
    return "".join(parts)


def timed(command: list[str], env: dict[str, str], timeout: float, cwd: Path) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stderr's last line) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stderr.strip().splitlines()
    return cpu, wall, lines[-1] if lines else ""


def cli(pythonpath: str | None) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    # `-c` puts the working directory first on sys.path: runs start in the scratch directory, so
    # PYTHONPATH (not the checkout the benchmark is started from) decides which jitguard runs.
    return [sys.executable, "-c", "from jitguard.cli import main; main()"], env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, nargs="*", default=[128, 617])
    parser.add_argument("--tree", type=Path, action="append", default=[])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--baseline", help="another checkout whose `fix` is timed too")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="jitguard-bench-fix-"))
    targets: list[tuple[str, Path]] = []
    for count in args.kernels:
        folder = work / f"k{count}"
        folder.mkdir()
        (folder / "kernels.py").write_text(kernel_file(count))
        size = (folder / "kernels.py").stat().st_size
        targets.append((f"1 file, {count} kernels, {size / 1e6:.1f} MB", folder))
    targets += [(f"tree {tree}", tree.resolve()) for tree in args.tree]
    command, env = cli(None)
    print("| target | scan CPU s | fix --check CPU s | ratio | scan wall s | fix wall s | fix summary |")
    print("|---|---|---|---|---|---|---|")
    for label, target in targets:
        report = work / f"{target.name}.json"
        with report.open("w") as stream:
            subprocess.run([*command, "scan", "--json", str(target)], env=env, stdout=stream,
                           stderr=subprocess.DEVNULL, timeout=args.timeout, cwd=work)
        scans = [timed([*command, "scan", "--json", str(target)], env, args.timeout, work) for _ in range(args.runs)]
        fixes = [timed([*command, "fix", "--check", "--from", str(report), str(target)], env, args.timeout, work)
                 for _ in range(args.runs)]
        scan_cpu, fix_cpu = min(s[0] for s in scans), min(f[0] for f in fixes)
        print(f"| {label} | {scan_cpu:.2f} | {fix_cpu:.2f} | {fix_cpu / scan_cpu:.2f} | "
              f"{min(s[1] for s in scans):.2f} | {min(f[1] for f in fixes):.2f} | {fixes[0][2]} |")
        if args.baseline:
            base_command, base_env = cli(args.baseline)
            try:
                cpu, wall, _ = timed([*base_command, "fix", "--check", "--from", str(report), str(target)],
                                     base_env, args.timeout, work)
                print(f"| {label} (baseline fix) | | {cpu:.2f} | {cpu / scan_cpu:.2f} | | {wall:.2f} | |")
            except subprocess.TimeoutExpired:
                print(f"| {label} (baseline fix) | | > {args.timeout:.0f} s wall | | | | |")


if __name__ == "__main__":
    main()
