"""How long `jitguard report` takes, and how much memory, over a directory of many compile records.

Generates PROCESSES log files of realistic compile records (the fields the monitor writes: eight
parameters, options, causes), then runs `jitguard report DIR --no-cost` (text, and with --json) in a
child process and prints its wall time and peak RSS:

    .venv/bin/python benchmarks/bench_report_scale.py --records 1000000
    .venv/bin/python benchmarks/bench_report_scale.py --records 1000000 --keep /tmp/logs   # reuse the logs

Each process compiles KERNELS kernels, each into as many variants as its share of records needs
(variant keys repeat across processes, as ranks of one server compile the same variants). Nothing
here needs a GPU or Triton.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

_PARAMS = [("a_ptr", "ptr", "*bf16", "aligned16"), ("b_ptr", "ptr", "*bf16", "aligned16"),
           ("c_ptr", "ptr", "*bf16", "aligned16"), ("stride_am", "int", "i32", "div16"),
           ("stride_bk", "int", "i32", "div16"), ("K", "int", "i32", "div16")]


def _record(pid: int, kernel: int, variant: int, now: float) -> dict:
    """One compile record: `num_tokens` takes one of three classes, BLOCK_M one of many values."""
    spec = ("one", "div16", "plain")[variant % 3]
    params = {name: {"kind": kind, "type": type_, "spec": spec_, "value": None} for name, kind, type_, spec_ in _PARAMS}
    params["num_tokens"] = {"kind": "int", "type": "i32", "spec": spec, "value": None}
    params["BLOCK_M"] = {"kind": "constexpr", "type": "constexpr", "spec": None, "value": 16 * (variant // 3 + 1)}
    causes = [] if variant == 1 else [{"param": "num_tokens", "before": "div16", "after": spec,
                                       "advice": "do_not_specialize", "message": ""}]
    return {"kernel": f"kernel_{kernel}", "module": "model.layers.kernels", "file": "/srv/model/layers/kernels.py",
            "line": 10 + kernel, "call_site": "/srv/model/layers/moe.py:88", "pid": pid, "ppid": 1, "rank": pid % 8,
            "role": "worker", "device": pid % 8, "phase": "serving" if variant > 4 else "warmup", "variant": variant,
            "key": f"k{kernel}-v{variant}", "params": params,
            "options": {"num_warps": 4, "num_stages": 3, "num_ctas": 1}, "compile_ms": 120.5 + variant,
            "disk_cache_hit": False, "causes": causes, "triton_version": "3.9.0", "time": now + variant,
            "is_manual_warmup": False, "autotuning": False, "binding": "", "type": "compile"}


def generate(directory: str, records: int, processes: int, kernels: int) -> None:
    """Write `records` compile records spread over `processes` files in `directory`."""
    per_process = records // processes
    variants = max(1, per_process // kernels)
    for pid in range(1000, 1000 + processes):
        lines = [json.dumps({"type": "process", "pid": pid, "ppid": 1, "argv": ["python", "serve.py"],
                             "role": "worker", "rank": pid % 8, "triton_version": "3.9.0", "host": "node1",
                             "time": 1000.0, "events_not_written": 0}, separators=(",", ":"))]
        written = 0
        for variant in range(1, variants + 1):
            for kernel in range(kernels):
                if written < per_process:
                    lines.append(json.dumps(_record(pid, kernel, variant, 1000.0), separators=(",", ":")))
                    written += 1
        with open(os.path.join(directory, f"node1-{pid}.ndjson"), "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")


def measure(args: list[str], source: str | None = None) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS MiB, exit code) of one `jitguard` command run in a child process
    (with `source`, the jitguard package found in that folder instead of the installed one)."""
    env = dict(os.environ)
    if source:
        env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(source), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    start = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "jitguard", *args], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=env, cwd=source or None)
    _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the largest child so far
    wall = time.monotonic() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000, help="compile records in all (default 1,000,000)")
    parser.add_argument("--processes", type=int, default=500, help="log files (default 500)")
    parser.add_argument("--kernels", type=int, default=40, help="kernels per process (default 40)")
    parser.add_argument("--keep", metavar="DIR", help="write the logs to DIR and keep them (reused if present)")
    parser.add_argument("--compare-src", metavar="DIR", help="also time the jitguard package in DIR (another "
                        "version's checkout, e.g. `git archive REV jitguard | tar -x -C DIR`)")
    options = parser.parse_args()
    directory = options.keep or tempfile.mkdtemp(prefix="jitguard-report-scale-")
    try:
        if not (options.keep and os.path.isdir(directory) and os.listdir(directory)):
            os.makedirs(directory, exist_ok=True)
            start = time.monotonic()
            generate(directory, options.records, options.processes, options.kernels)
            print(f"wrote {options.records} records in {options.processes} files ({time.monotonic() - start:.1f} s)")
        size = sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory))
        print(f"logs: {size / 2**20:.0f} MiB in {directory}")
        # CPU seconds beside wall: on a shared machine wall time waits for other processes too.
        print("command                          wall s    CPU s   peak RSS MiB   exit")
        for source in [None, options.compare_src] if options.compare_src else [None]:
            for label, extra in (("report --no-cost (text)", []), ("report --no-cost --json", ["--json"])):
                wall, cpu, peak, code = measure(["report", directory, "--no-cost", *extra], source)
                label += f" [{source}]" if source else ""
                print(f"{label:<32} {wall:6.1f}   {cpu:6.1f}   {peak:12.0f}   {code}", flush=True)
    finally:
        if not options.keep:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
