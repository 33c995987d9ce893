#!/usr/bin/env bash
# Issue #16, eleventh session (2026-12-02), last device call: the kernel tests on the GPU on the final
# tree (the decode GEMM now takes STAMPS; the pairs path may leave the intermediate to the down GEMM).
# The inverse-RoPE maths under TRITON_INTERPRET=1 are left out: Triton 3.6's interpreter (this
# machine's) cannot run the kernel's loops over runtime bounds (CI runs them on the newest Triton).
# Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/kerneltests; rm -rf $R; mkdir -p $R
timeout 330 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py tests/kernels/test_inv_rope_fp8.py \
    -k "not interpreter" > $R/gpu.log 2>&1
cp $R/gpu.log $OUT/
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
