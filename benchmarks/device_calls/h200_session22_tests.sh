#!/usr/bin/env bash
# Issue #16, twenty-second session (2026-12-03), call 4: every kernel GPU test on the closing tree (maths against
# the fp32 reference at odd token counts, CUDA-graph replays with new inputs, tl and Gluon GEMMs, inverse RoPE,
# the fused-MoE GEMM). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/s22t; rm -rf $R; mkdir -p $R
timeout 560 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode.py \
    tests/kernels/test_moe_decode_gluon.py tests/kernels/test_inv_rope_fp8.py tests/kernels/test_fused_moe.py \
    > $R/gpu.log 2>&1
cp $R/gpu.log $OUT/gpu.log
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
