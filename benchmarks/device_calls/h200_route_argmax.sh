#!/usr/bin/env bash
# Issue #16, fourth session (2026-12-01), seventh device call: one token's routing in the route
# launch as a rolled argmax loop (moe_decode.ROUTE_ONE_TOKEN_ARGMAX_LOOP) against tl.topk, each
# twice, alternating, whole layer and launches alone; M = 2 as a control (not affected).
# Device, repo root, carry .vendor.
# The record of that call (commit 4f89b98): the argmax loop measured slower and is gone since.
source benchmarks/h200_setup.sh
R=/tmp/argmax; rm -rf $R; mkdir -p $R
timeout 200 python3 benchmarks/tune_moe_decode.py $V --skip-tiles --ms 1,2 \
    --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block --out $R > $R/tune.log 2>&1
tar czf $OUT/argmax.tgz -C $R .
tail -n 4 $R/tune.log | grep -i -B3 error
grep "^|" $R/tune.log | awk '!seen[$0]++' | cut -c1-900
