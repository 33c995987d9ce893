#!/usr/bin/env bash
# Issue #16, fourth session (2026-12-01), last device call: the whole-layer benchmark for
# DeepSeek-V3-TP2 FP8-block on the final tree (its M = 5..8 decode row changed after call 5).
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/final6; rm -rf $R; mkdir -p $R
timeout 200 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,4,8,16 \
    --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
tar czf $OUT/final6.tgz -C $R .
tail -n 4 $R/bench_moe_layer.log | grep -i -B3 error
grep -v "^#" $R/moe_layer.md | grep "^|" | awk '!seen[$0]++' | cut -d'|' -f1-13
