#!/usr/bin/env bash
# Issue #16, thirteenth session (2026-12-02), call 6 (the session's last 248 s of device time): the
# decode GEMMs with each program's block scales for every K group loaded once before the K loop
# (moe_decode.SCALES_UP_FRONT) against one synchronous load a K step, Qwen3-30B-FP8 at 1, 2 and 4
# tokens (probe_decode_pairs_variants.py). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/upf; rm -rf $R; mkdir -p $R/p
timeout 95 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block --ms 1,2,4 \
    --variants "grouped;pairs, scales up front;grouped, scales up front" --out $R/p > $R/p.log 2>&1
cp $R/p.log $OUT/p.log
grep -i -B2 -A12 "error\|Traceback" $R/p.log | head -20
grep "^|" $R/p.log
