#!/usr/bin/env bash
# Issue #16, twenty-first session (2026-12-03), call 2: the tile tuner's proposals of call 1 (GLUON_TILES_AT at
# Qwen3-30B-FP8 3, 4, 5, 11 and DeepSeek-V3-TP2 grouped 8; Gluon pairs at Qwen3 4, Gluon grouped at DeepSeek 8)
# as shipped, against the twentieth session's tables ("previous tables") and vLLM's two GEMMs alone, at the goal
# token counts and the changed ones. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/c21; rm -rf $R; mkdir -p $R
PREV_AT="{'small': {'pairs': {2: ((32, 6), (128, 6)), 5: ((32, 6), (128, 4))}, 'grouped': {7: ((32, 4), (64, 3)), 8: ((32, 4), (64, 3)), 9: ((32, 4), (64, 3)), 10: ((32, 6), (64, 4)), 11: ((32, 6), (64, 4)), 12: ((32, 6), (64, 4))}}, 'large': {'pairs': {1: ((32, 8), (128, 3)), 2: ((64, 4), (128, 3))}, 'grouped': {3: ((32, 8), (64, 3)), 5: ((32, 8), (64, 3)), 6: ((32, 8), (64, 3))}}}"
PREV_TOKENS="{'small': {'pairs': (1, 2, 5), 'grouped': (3, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)}, 'large': {'pairs': (1, 2), 'grouped': (3, 5, 6)}}"
PREV="[previous tables]auto:default+GLUON_TILES_AT=$PREV_AT+GLUON_FP8_TOKENS=$PREV_TOKENS"
timeout 270 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,3,4,5,8,11,16,32 \
    --gluon-tiles "$PREV" --out $R/q > $R/q.log 2>&1
timeout 250 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,4,6,8,16 \
    --gluon-tiles "$PREV" --out $R/d > $R/d.log 2>&1
tar czf $OUT/c21.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)}'; done
