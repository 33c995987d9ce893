#!/usr/bin/env bash
# Issue #16, thirteenth session (2026-12-02), call 1: the pairs path with each GEMM program's first
# K steps of weights loaded into registers before it waits for the launch before it
# (moe_decode.EARLY_STEPS_DOWN / _GATE_UP), by the whole layer against the shipped pairs path
# (probe_decode_pairs_variants.py), FP8 block scales and bf16; the timeline with down's six steps
# early at Qwen3-30B-FP8 M = 1-2. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/early; rm -rf $R; mkdir -p $R/p $R/b $R/t
VARS="pairs, down early 2;pairs, down early 4;pairs, down early 6;pairs, down early 8;pairs, gate_up early 2;pairs, gate_up early 4;pairs, early 2 / 6"
timeout 330 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2,4 --variants "$VARS" --out $R/p > $R/p.log 2>&1
timeout 90 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 1,2 --paths pairs \
    --switch EARLY_STEPS_DOWN=6 --out $R/t > $R/t.log 2>&1
timeout 110 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-bf16 --ms 1,2 \
    --variants "pairs, down early 2;pairs, down early 4;pairs, down early 8" --out $R/b > $R/b.log 2>&1
tar czf $OUT/early.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log $R/t.log $R/b.log | head -40
grep "^|" $R/p.log
grep "^|" $R/b.log
grep "^|" $R/t.log
