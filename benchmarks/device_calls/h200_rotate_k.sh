#!/usr/bin/env bash
# Issue #16, thirteenth session (2026-12-02), call 2: the decode GEMMs with each program's K loop
# started at a column offset of its own (moe_decode.ROTATE_K), pairs and grouped paths, FP8 block
# scales and bf16, by the whole layer against the shipped paths (probe_decode_pairs_variants.py);
# the timeline with the rotation at Qwen3-30B-FP8 M = 1. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/rot; rm -rf $R; mkdir -p $R/p $R/b $R/t
timeout 260 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2,4,8 --variants "grouped;pairs, K rotated;grouped, K rotated" --out $R/p > $R/p.log 2>&1
timeout 100 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-bf16 --ms 1,2,4 \
    --variants "grouped;pairs, K rotated;grouped, K rotated" --out $R/b > $R/b.log 2>&1
timeout 80 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 1 --paths pairs \
    --switch ROTATE_K=True --out $R/t > $R/t.log 2>&1
tar czf $OUT/rot.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log $R/t.log $R/b.log | head -40
grep "^|" $R/p.log
grep "^|" $R/b.log
grep "^|" $R/t.log
