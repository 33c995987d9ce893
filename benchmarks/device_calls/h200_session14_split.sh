#!/usr/bin/env bash
# Issue #16, fourteenth session (2026-12-02), call 5: the pairs path's own tile rows (DECODE_PAIRS_TILE_TABLE)
# split from the decode table, which is back to the rows the grouped path was tuned with (call 4 ran both paths
# on the pairs-tuned rows, and the grouped path was slower on them): bench_moe_layer's pairs and grouped
# columns beside vLLM's GEMMs at the token counts the split touches. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/s14s; rm -rf $R; mkdir -p $R
timeout 240 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --ms 2,4,5,6 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
tar czf $OUT/s14s.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/bench_moe_layer.log | head -30
grep -v "^#" $R/moe_layer.md | grep "^|" | awk '!seen[$0]++' | cut -d'|' -f2,3,5,6,8,9,13
