#!/usr/bin/env bash
# Issue #16, twenty-second session (2026-12-03), call 5: the route launch's few-token router wider, through
# existing switches only: 16 warps where its top-k tile holds 1024 logits or more (ROUTE_WIDE_TILE_WARPS; 8
# measured 0.5 us faster than 4 at Qwen3-30B-FP8 M = 8 in the eighteenth session), and the few-token path up to
# 16 tokens / 2048 logits (FEW_TOKENS, FEW_ELEMENTS) at 8 or 16 warps, in place of routers apart with the last
# one aligning. Prediction: 16 warps 0.2-0.4 us faster at Qwen3 6-8 (route launch 3.6 -> about 3.3 us alone);
# the few-token path at 12-16 tokens level or slower (a [16, 128] top-k network in one program). Below 9 tokens
# the "few to 16" columns run 16-row tiles (expected slower). Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/rw; rm -rf $R; mkdir -p $R
W="[16 warps]auto:default+ROUTE_WIDE_TILE_WARPS=16"
F8="[few to 16, 8 warps]auto:default+FEW_TOKENS=16+FEW_ELEMENTS=2048"
F16="[few to 16, 16 warps]auto:default+FEW_TOKENS=16+FEW_ELEMENTS=2048+ROUTE_WIDE_TILE_WARPS=16"
timeout 240 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 6,7,8,12,16 \
    --gluon-tiles "$W,$F8,$F16" --out $R/q > $R/q.log 2>&1
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 3,8 \
    --gluon-tiles "$W,$F8,$F16" --out $R/d > $R/d.log 2>&1
tar czf $OUT/rw.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)}'; done
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4+n;i<4+2*n;i++) s=s"|"$i; print s}'; done
