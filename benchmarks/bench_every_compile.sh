#!/usr/bin/env bash
# Every Triton compile under `jitguard run`, whatever made it, on one GPU (needs torch with CUDA and
# Triton; no network). Run from the repository root:
#   bash benchmarks/bench_every_compile.sh
# Prints, last, a table: run 1 (cold caches) and run 2 (the same caches) as jitguard saw them beside the
# truth (Triton cache entries written, torch's generated-kernel count, and for run 2 torch's own cache hits:
# FX graphs and statically launchable kernels it loaded), then the monitor's overhead on a torch.compile'd
# model, then the GPU tests' summary. Everything it writes goes under $OUT (or /tmp).
set -uo pipefail
ROOT=$(pwd)
W=${OUT:-/tmp/every_compile}
mkdir -p "$W"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export TRITON_CACHE_DIR="$W/triton-cache" TORCHINDUCTOR_CACHE_DIR="$W/inductor-cache"
PY=${PYTHON:-python3}
$PY -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name(0))"

cat > "$W/probe_kernels.py" <<'EOF'
import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)
EOF

cat > "$W/probe.py" <<'EOF'
"""torch.compile(dynamic=True) + one @triton.jit kernel, 7 row counts; prints torch's own counts as JSON."""
import json
import sys

import torch
import triton

sys.path.insert(0, sys.argv[1])
from probe_kernels import scale_rows  # noqa: E402


@torch.compile(dynamic=True)
def mlp_step(x, w):
    return torch.nn.functional.gelu(x @ w).softmax(dim=-1) * 2.0 + 1.0


w = torch.randn(256, 256, device="cuda")
for rows in (1, 2, 3, 16, 17, 64, 1000):
    x = torch.randn(rows, 256, device="cuda")
    y = mlp_step(x, w)
    out = torch.empty_like(y)
    scale_rows[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
torch.cuda.synchronize()
import torch._dynamo.utils as dynamo_utils  # noqa: E402
import torch._inductor.metrics as inductor_metrics  # noqa: E402
reasons = [m.recompile_reason for m in dynamo_utils.get_compilation_metrics() if m.recompile_reason]
inductor = dynamo_utils.counters["inductor"]
print("TORCH_COUNTS " + json.dumps({"generated_kernel_count": inductor_metrics.generated_kernel_count,
                                    "unique_graphs": dynamo_utils.counters["stats"]["unique_graphs"],
                                    "fxgraph_cache_hit": inductor["fxgraph_cache_hit"],
                                    "static_autotuners_loaded": inductor["triton_bundler_load_static_autotuner"],
                                    "recompile_reasons": reasons}))
EOF

count_cubins() { find "$TRITON_CACHE_DIR" -name '*.cubin' 2>/dev/null | wc -l; }
for run in 1 2; do
  before=$(count_cubins)
  $PY -m jitguard run --dir "$W/run$run" -- $PY "$W/probe.py" "$W" > "$W/run$run.out" 2>&1
  echo "run $run exit $?"
  echo "$(( $(count_cubins) - before ))" > "$W/run$run.new_cubins"
  $PY -m jitguard report --no-cost --json "$W/run$run" > "$W/run$run.json" 2> "$W/run$run.report_err"
  $PY -m jitguard report --no-cost "$W/run$run" > "$W/run$run.txt" 2>&1
done
echo "--- run 1 report (text) ---"; cat "$W/run1.txt"
echo "--- run 2 report (text) ---"; cat "$W/run2.txt"

cat > "$W/overhead.py" <<'EOF'
"""Steady-state calls of a torch.compile'd model, jitguard's monitor off / on in alternating blocks."""
import statistics
import time

import torch

import jitguard
from jitguard.runtime import monitor

model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda().half()
step = torch.compile(model)
x = torch.randn(8, 1024, device="cuda", dtype=torch.half)
for _ in range(20):
    step(x)
torch.cuda.synchronize()


def block(calls=500):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        step(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


off, on = [], []
for _ in range(30):
    off.append(block())
    jitguard.install(summary=False)
    on.append(block())
    monitor.uninstall()
print(f"OVERHEAD off {statistics.median(off):.2f} on {statistics.median(on):.2f} "
      f"ratio {statistics.median(on) / statistics.median(off):.4f} spread_off "
      f"{(sorted(off)[26] - sorted(off)[3]) / statistics.median(off) * 100:.1f}%")
EOF
$PY "$W/overhead.py" > "$W/overhead.out" 2>&1; tail -3 "$W/overhead.out"
$PY benchmarks/bench_monitor_overhead.py > "$W/bench_monitor_overhead.out" 2>&1; tail -6 "$W/bench_monitor_overhead.out"

$PY -m pytest -q -p no:cacheprovider -m gpu tests/tool/test_inductor_gpu.py tests/tool/test_compile_origins.py \
  tests/tool/test_monitor_backends.py > "$W/gpu_tests.out" 2>&1
echo "--- GPU tests ---"; tail -25 "$W/gpu_tests.out"

$PY - "$W" <<'EOF'
import json
import sys

w = sys.argv[1]
print("\n=== every compile, whatever made it (jitguard run) ===")
print("| run | origin | cold compiles | loads (disk/bundle/remote) | handed over by a worker, not tied | arrival unknown | kernels | Triton cubins written | torch generated kernels | torch FX graph cache hits / static kernels loaded | hand-overs tied to a worker's compile | processes (grouped) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for run in (1, 2):
    try:
        report = json.load(open(f"{w}/run{run}.json"))
    except Exception as exc:
        print(f"| {run} | report failed: {exc} |")
        continue
    torch_counts = {}
    for line in open(f"{w}/run{run}.out"):
        if line.startswith("TORCH_COUNTS "):
            torch_counts = json.loads(line.split(" ", 1)[1])
    cubins = open(f"{w}/run{run}.new_cubins").read().strip()
    groups = ", ".join(f"{g['name']} x{g['processes']}" for g in report.get("process_groups", []))
    counted = {}
    for k in report["kernels"]:
        origin = k.get("origin", "jit")
        row = counted.setdefault(origin, {"cold": 0, "loads": 0, "worker": 0, "unknown": 0, "kernels": 0})
        row["kernels"] += 1
        for name, value in (k.get("arrivals") or {}).items():
            key = name if name in ("cold", "worker", "unknown") else "loads"
            row[key] += value["count"]
    cache_hits = f"{torch_counts.get('fxgraph_cache_hit', '?')} / {torch_counts.get('static_autotuners_loaded', '?')}"
    for origin, row in sorted(counted.items()):
        print(f"| {run} | {origin} | {row['cold']} | {row['loads']} | {row['worker']} | {row['unknown']} | "
              f"{row['kernels']} | {cubins} | {torch_counts.get('generated_kernel_count', '?')} | {cache_hits} | "
              f"{report['totals'].get('handovers_tied', '?')} | {report['totals']['processes']} ({groups or '-'}) |")
    unseen = (report.get("torch_compile") or {}).get("handovers_unseen")
    if unseen:
        print(f"| {run} | GAP: Inductor kernels launched without Triton not seen in pid(s) {unseen} |")
    graphs = report.get("torch_compile") or {}
    print(f"| {run} | by_origin | {json.dumps(report['totals'].get('by_origin'))} | recompile reasons (torch): "
          f"{torch_counts.get('recompile_reasons')} | graph compiles logged: {graphs.get('graphs')}, reasons: "
          f"{[r['recompile_reason'] for r in graphs.get('recompiles', [])]} |")
for line in open(f"{w}/overhead.out"):
    if line.startswith("OVERHEAD"):
        print("torch.compile'd model, us/call:", line.strip())
EOF
