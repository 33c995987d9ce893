#!/usr/bin/env bash
# Issue #16, eleventh session (2026-12-02): the decode layer's timeline from device-side stamps
# (probe_decode_timeline.py: every GEMM program's start, set-up, wait, K loop and end against a
# marker before the call) for FP8 block scales and bf16 at 1, 2, 4 tokens on both paths; then
# bench_moe_layer's launches alone with at least 32 launches a graph (they were replay-bound).
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/timeline; rm -rf $R; mkdir -p $R/t
timeout 300 python3 benchmarks/probe_decode_timeline.py --out $R/t > $R/t.log 2>&1
timeout 200 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --ms 1,2,4,8 --time-budget 150 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
tar czf $OUT/timeline.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/t.log | head -40
grep "^|" $R/t.log
grep -v "^#" $R/moe_layer.md | grep "^|" | awk '!seen[$0]++' | cut -d'|' -f2,3,6,8,9,13-16
