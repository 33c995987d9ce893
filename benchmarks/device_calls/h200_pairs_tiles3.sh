#!/usr/bin/env bash
# Issue #16, fourteenth session (2026-12-02), call 6: DeepSeek-V3-TP2 M = 2 on the pairs path (4% behind vLLM's
# GEMMs alone in call 5) with wider tiles than call 2's sweep, whose best gate_up tile sat at its edge (128 rows,
# the largest tried): gate_up 128 / 256 rows, down up to 256, 8 warps too. Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/pt3; rm -rf $R; mkdir -p $R
timeout 280 python3 benchmarks/tune_moe_decode.py --skip-variants --fp8-path pairs \
    --tile-cases deepseek-v3-tp2-fp8-block --tile-ms 2 \
    --gate-up-candidates 128,256:4,6,8:4,8 --down-candidates 64,128,256:3,4:4,8 \
    --precompile 12 --time-budget 150 --out $R > $R/tune.log 2>&1
tar czf $OUT/pairs_tiles3.tgz -C $R .
grep -i -B2 -A12 "Traceback" $R/tune.log | head -30
grep "^# [0-9]* s\|precompiled" $R/tune.log
grep "^| [a-z]" $R/tune.log | awk '!seen[$0]++'
