#!/usr/bin/env bash
# Issue #16, third tuning call: decode tiles chosen by the whole layer (M = 1..64, both FP8 shapes),
# then the inverse-RoPE launch-config sweep. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/tune3; rm -rf $R; mkdir -p $R/rope
timeout 420 python3 benchmarks/tune_moe_decode.py --skip-variants --tile-cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --time-budget 230 --precompile 14 --out $R > $R/tune.log 2>&1
timeout 120 python3 benchmarks/bench_inv_rope_fp8.py --sweep-only --out $R/rope > $R/rope.log 2>&1
cp $R/*.* $OUT/ 2>/dev/null; cp $R/rope/* $OUT/ 2>/dev/null
grep "^#" $R/tune.log | cut -c1-200 | tail -6
grep "^|" $R/tune.log | awk '!seen[$0]++' | cut -c1-400
tail -30 $R/rope.log | cut -c1-200
