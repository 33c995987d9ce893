#!/usr/bin/env bash
# Issue #16, ninth session (2026-12-01): inverse-RoPE with no clamp before the saturating fp8 cast and one
# rope absmax reduction (the rope slice within one group) as
# the default: its GPU tests, and the knob sweep against the clamped kernel and vLLM's.
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/ropenoclamp; rm -rf $R; mkdir -p $R/rope
timeout 60 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_inv_rope_fp8.py \
    > $R/rope_gpu.log 2>&1; tail -1 $R/rope_gpu.log
timeout 300 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --out $R/rope > $R/rope.log 2>&1
tar czf $OUT/ropenoclamp.tgz -C $R .
grep -i -B2 -A8 "error\|Traceback\|FAIL" $R/*.log | head -30
grep "^|\|copy" $R/rope.log | tail -9
