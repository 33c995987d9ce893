#!/usr/bin/env bash
# Issue #16, fifteenth session (2026-12-02), call 2: the FP8 block-scale intermediate with one activation scale
# per gate_up output tile (moe_decode.INTER_TILE_SCALES: each gate_up program quantizes its own 32 or 64
# columns from its registers, no last writer; the down GEMM in 32- or 64-deep steps) against the shipped
# paths, also on 64-row gate_up tiles where the table's are 32 rows (which the switch leaves alone), 1-8
# tokens (probe_decode_pairs_variants.py); then the timeline at Qwen3-30B-FP8 M = 1 with the switch on.
# Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/its; rm -rf $R; mkdir -p $R/p
timeout 360 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2,4,8 --variants "grouped;pairs, inter tile scales;grouped, inter tile scales;pairs, inter tile scales, gate_up 64 rows;grouped, inter tile scales, gate_up 64 rows" \
    --out $R/p > $R/p.log 2>&1
timeout 90 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 1 --paths pairs \
    --switch INTER_TILE_SCALES=True --out $R/t1 > $R/t1.log 2>&1
tar czf $OUT/its.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log $R/t1.log | head -30
grep "^|" $R/p.log
grep -h "^|" $R/t1.log | awk '!seen[$0]++'
