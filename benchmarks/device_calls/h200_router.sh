#!/usr/bin/env bash
# Issue #16: the route launch with a program of its own for the routing (moe_decode.ROUTER_OWN_PROGRAM)
# side by side with the shipped layer, each twice. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/router; rm -rf $R; mkdir -p $R
timeout 240 python3 benchmarks/tune_moe_decode.py --skip-tiles --ms ${MS:-1,2,4,8} --out $R > $R/tune.log 2>&1
cp $R/* $OUT/ 2>/dev/null
tail -3 $R/tune.log | grep -i error
grep "^|" $R/tune.log | awk '!seen[$0]++' | cut -c1-1400
