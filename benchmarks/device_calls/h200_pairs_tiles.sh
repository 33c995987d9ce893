#!/usr/bin/env bash
# Issue #16, fourteenth session (2026-12-02), call 2: the FP8 block-scale tiles swept on the pairs path
# at the token counts where it ships (Qwen3-30B-like M = 1-6, DeepSeek-V3-TP2 M = 1, 2, 4, 6; swept here at
# 1, 2 and 4), where every earlier FP8 tile sweep ran on the grouped path. tune_moe_decode.py's tile part:
# each GEMM's candidates alone, then the whole layer on the fastest pairs against the table's row, the
# table's row and the winner timed again back to back. Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/pt; rm -rf $R; mkdir -p $R
timeout 540 python3 benchmarks/tune_moe_decode.py --skip-variants --fp8-path pairs \
    --tile-cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block --tile-ms 1,2,4 \
    --gate-up-candidates 32,64,128:4,6,8:2,4 --down-candidates 32,64,128:2,3,4:4 \
    --precompile 12 --time-budget 330 --out $R > $R/tune.log 2>&1
tar czf $OUT/pairs_tiles.tgz -C $R .
grep -i -B2 -A12 "Traceback" $R/tune.log | head -30
grep "^#" $R/tune.log | grep -v "precompile qwen\|precompile deepseek" | tail -8
grep "^|" $R/tune.log
