#!/usr/bin/env bash
# Issue #16, ninth session (2026-12-01): inverse-RoPE's final tree (no clamp before the fp8 cast): GPU
# tests and the knob sweep against the clamped kernel, vLLM's and the copy, rounds in alternating order.
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/ropefinal; rm -rf $R; mkdir -p $R/rope
timeout 60 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_inv_rope_fp8.py \
    > $R/rope_gpu.log 2>&1; tail -1 $R/rope_gpu.log
timeout 300 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --out $R/rope > $R/rope.log 2>&1
tar czf $OUT/ropefinal.tgz -C $R .
grep -i -B2 -A8 "error\|Traceback\|FAIL" $R/*.log | head -30
grep "^|\|copy" $R/rope.log | tail -9
