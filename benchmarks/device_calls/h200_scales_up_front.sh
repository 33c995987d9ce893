#!/usr/bin/env bash
# Issue #16, written in the thirteenth session (2026-12-02), not yet run (its device time ran out): the
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
tar czf $OUT/upf.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log $R/c.log | head -30
grep "^|" $R/p.log
grep "^|" $R/c.log
