#!/usr/bin/env bash
# Issue #16, fourteenth session (2026-12-02), call 3: call 2's sweep of the FP8 block-scale tiles on the pairs
# path at the other token counts where it ships: Qwen3-30B-like M = 3, 5, 6 and DeepSeek-V3-TP2 M = 6 (call 2:
# M = 1, 2, 4). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/pt2; rm -rf $R; mkdir -p $R/q $R/d
C="--skip-variants --fp8-path pairs --gate-up-candidates 32,64,128:4,6,8:2,4 --down-candidates 32,64,128:2,3,4:4"
timeout 300 python3 benchmarks/tune_moe_decode.py $C --tile-cases qwen3-30b-fp8-block --tile-ms 3,5,6 \
    --precompile 12 --time-budget 200 --out $R/q > $R/q.log 2>&1
timeout 200 python3 benchmarks/tune_moe_decode.py $C --tile-cases deepseek-v3-tp2-fp8-block --tile-ms 6 \
    --precompile 12 --time-budget 120 --out $R/d > $R/d.log 2>&1
tar czf $OUT/pairs_tiles2.tgz -C $R .
grep -i -B2 -A12 "Traceback" $R/*.log | head -30
grep -h "^# [0-9]* s\|precompiled" $R/*.log
grep -h "^| [a-z]" $R/q.log $R/d.log | awk '!seen[$0]++'
