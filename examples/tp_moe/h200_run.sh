#!/usr/bin/env bash
# examples/tp_moe on two GPUs (nvidia-h200-x2), everything the README's "On two H200s" section shows.
# Run from the repository root on the device; writes $OUT/tp_moe.tgz (logs, reports) and $OUT/tp_moe.txt.
# Needs libcst (carried as .whl/) and an editable install of this checkout (done here).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
W=/tmp/tp_moe
rm -rf "$W"; mkdir -p "$W"
LOG="$OUT/tp_moe.txt"
{
  date -u; nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "gpus", torch.cuda.device_count())'
  git log -1 --format='commit %H %s' 2>/dev/null || true
} >"$LOG" 2>&1

# One layer run under `jitguard run`, cold or warm Triton cache; wall seconds to "$W/NAME.wall".
layer() {  # NAME CACHE ARGS...
  local name=$1 cache=$2; shift 2
  local t0; t0=$(date +%s.%N)
  TRITON_CACHE_DIR="$W/$cache" jitguard run --dir "$W/$name" -- \
    torchrun --nproc-per-node 2 --standalone examples/tp_moe/run.py "$@" >"$W/$name.out" 2>&1
  echo "rc=$? wall_s=$(python3 -c "import time; print(round(time.time() - $t0, 1))")" >"$W/$name.wall"
  jitguard report "$W/$name" >"$W/$name.report.txt" 2>&1
  jitguard report "$W/$name" --json >"$W/$name.json" 2>"$W/$name.json.err"
}

# 1. The README's two commands (default small layer), each with a cold cache of its own.
layer small-stock cache-small-stock --kernels stock
layer small-fixed cache-small-fixed --kernels fixed
# 2. The larger layer: cold cache, then the same cache again (disk hits): the difference in each
#    rank's "done: 5 steps in X s" is what a cold start costs the request path.
BIG=(--hidden 4096 --intermediate 7168 --experts 8 --top-k 2)
for k in stock fixed; do
  layer big-$k-cold cache-big-$k --kernels $k "${BIG[@]}"
  layer big-$k-warm cache-big-$k --kernels $k "${BIG[@]}"
done
# 3. The test's GPU half (NCCL on two GPUs).
python3 -m pytest -q -p no:cacheprovider -m gpu tests/kernels/test_tp_moe.py >"$W/pytest.txt" 2>&1
echo "pytest rc=$?" >>"$W/pytest.txt"

python3 examples/tp_moe/h200_summary.py "$W" >>"$LOG" 2>&1
tar -C /tmp --exclude='tp_moe/cache-*' -czf "$OUT/tp_moe.tgz" tp_moe
cat "$LOG"
