#!/usr/bin/env bash
# Issue #16, written in the thirteenth session (2026-12-02), run in the fourteenth (call 1, with the
# timeline of both switch settings at Qwen3-30B-FP8 M = 1 added): the
# decode GEMMs and fused_moe's grouped GEMM with each program's block scales for every K group loaded
# once before the K loop (moe_decode.SCALES_UP_FRONT, moe_gemm.SCALES_UP_FRONT_MAX_BLOCK_M) against one
# synchronous load a K step, FP8 block scales at 1-64 tokens (probe_decode_pairs_variants.py: the
# layer, then each launch alone). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/upf; rm -rf $R; mkdir -p $R/p $R/c
timeout 240 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2,4,8 --variants "grouped;pairs, scales up front;grouped, scales up front" --out $R/p > $R/p.log 2>&1
timeout 150 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 16,64 --variants "chain;chain, scales up front" --out $R/c > $R/c.log 2>&1
timeout 90 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 1 --paths pairs \
    --out $R/t0 > $R/t0.log 2>&1
timeout 90 python3 benchmarks/probe_decode_timeline.py --cases qwen3-30b-fp8-block --ms 1 --paths pairs \
    --switch SCALES_UP_FRONT=True --out $R/t1 > $R/t1.log 2>&1
tar czf $OUT/upf.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log $R/c.log | head -30
grep "^|" $R/p.log
grep "^|" $R/c.log
grep -h "^|" $R/t0.log $R/t1.log | awk '!seen[$0]++'
