#!/usr/bin/env bash
# Issue #16, written in the nineteenth session (2026-12-03) for a later device call (not yet run): the route
# launch with its routers apart (shipped past the few-token router) runs on ROUTE_NUM_WARPS = 4; 8 warps sped the
# few-token router (eighteenth session) but were slower on the old counter path. Its last router aligns up to 512
# pairs (P_POW2) on those warps. Shipped against 8 and 2 warps where routers apart ship: Qwen3-30B-FP8 M = 9, 12,
# 16 (grouped, Gluon), 32 (chain), DeepSeek-V3-TP2 M = 5, 6, 8, 16. The switch also changes the pairs path's x
# launch, which none of these token counts takes. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/aw; rm -rf $R; mkdir -p $R
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 9,12,16,32 \
    --gluon-tiles "auto:default+ROUTE_NUM_WARPS=8,auto:default+ROUTE_NUM_WARPS=2" --out $R/q > $R/q.log 2>&1
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 5,6,8,16 \
    --gluon-tiles "auto:default+ROUTE_NUM_WARPS=8,auto:default+ROUTE_NUM_WARPS=2" --out $R/d > $R/d.log 2>&1
tar czf $OUT/aw.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
grep -h "^|" $R/q.log $R/d.log | cut -d"|" -f1-4,6,7,8,10,11,12
