#!/usr/bin/env bash
# Issue #16, eleventh session (2026-12-02): inverse-RoPE with the grid lowered so every program runs
# the same number of tiles (inv_rope.inv_rope_grid, balance_rounds) against the default grid, the
# clamped kernel, vLLM's and the copy, rounds in alternating order; the inverse-RoPE GPU tests; and
# the decode layer's real-compile test fixed in the tenth session (never re-run on the GPU).
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/ropebalance; rm -rf $R; mkdir -p $R/rope
timeout 60 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_inv_rope_fp8.py \
    > $R/rope_gpu.log 2>&1; tail -1 $R/rope_gpu.log
timeout 240 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --out $R/rope > $R/rope.log 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "real_sm90_compile_of_each_path or pairs" > $R/decode_gpu.log 2>&1; tail -1 $R/decode_gpu.log
grep -E "^(FAILED|ERROR)" $R/decode_gpu.log | head
tar czf $OUT/ropebalance.tgz -C $R .
grep -i -B2 -A8 "error\|Traceback" $R/rope.log | head -30
grep "^|\|copy" $R/rope.log | tail -9
