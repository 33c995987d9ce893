#!/usr/bin/env bash
# Issue #16, thirteenth session (2026-12-02), call 5: the whole decode test file on the GPU after the
# first launch became PDL-launched on every path (FP8 maths against the fp32 reference at odd M, CUDA
# graph replays with new inputs, the rotated down loop). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/s13t; rm -rf $R; mkdir -p $R
timeout 290 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py > $R/gpu.log 2>&1
cp $R/gpu.log $OUT/gpu.log
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
