#!/usr/bin/env bash
# Issue #16, fifteenth session (2026-12-02), call 4: the kernel tests on the GPU, the FP8 block-scale CUDA-graph
# replays now on every path at odd token counts (1, 3, 5, 11 beside 2 and 8), on the tree whose kernels are the
# fourteenth session's (the session's two switches removed). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/s15t; rm -rf $R; mkdir -p $R
timeout 540 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py tests/kernels/test_inv_rope_fp8.py \
    tests/kernels/test_fused_moe.py > $R/gpu.log 2>&1
cp $R/gpu.log $OUT/gpu.log
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
grep -E "graph_replays" $R/gpu.log | head
