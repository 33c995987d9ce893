#!/usr/bin/env bash
# Issue #16, sixteenth session (2026-12-03), call 4: the FP8 pairs path with 128-row, 8-warp tiles (the bare stream
# of call 3 gained with them at DeepSeek gate_up 8 slots), whole layer, 1-2 tokens. Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/w8; rm -rf $R; mkdir -p $R/p
timeout 280 python3 benchmarks/probe_decode_pairs_variants.py --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --ms 1,2 --variants "pairs, gate_up 128 rows s4 w8;pairs, gate_up 128 rows s6 w8;pairs, down 128 rows s6 w8" \
    --out $R/p > $R/p.log 2>&1
tar czf $OUT/w8.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log | head -30
grep "^|" $R/p.log
