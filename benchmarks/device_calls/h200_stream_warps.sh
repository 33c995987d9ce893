#!/usr/bin/env bash
# Issue #16, sixteenth session (2026-12-03), call 3: the bare FP8 block-scaled stream with 8 warps (two warpgroups,
# each waiting on its own wgmma a step) beside 4, scaled and unscaled (probe_decode_folded_scales.py); then the
# kernel tests on the GPU (the FP8 CUDA-graph replay test's assertion fixed in 5c2969e). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/sw; rm -rf $R; mkdir -p $R/s
timeout 200 python3 benchmarks/probe_decode_folded_scales.py --out $R/s \
    --tiles 64x128x4x4,64x128x4x8,128x128x4x4,128x128x4x8,128x128x6x8 --variants "scaled;unscaled" > $R/s.log 2>&1
timeout 330 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py tests/kernels/test_inv_rope_fp8.py \
    tests/kernels/test_fused_moe.py > $R/gpu.log 2>&1
tar czf $OUT/sw.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/s.log | head -30
grep "^|" $R/s.log
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
