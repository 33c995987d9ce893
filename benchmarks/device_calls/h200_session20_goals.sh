#!/usr/bin/env bash
# Issue #16, twentieth session (2026-12-03), call 6: the goal table on the shipped tree (GLUON_TILES_AT with
# gate_up 32x4 on the grouped path at 7-9 tokens too), against vLLM's two GEMMs alone in the same run; and
# GLUON_TILES alone beside it at the token counts the table changed. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g20; rm -rf $R; mkdir -p $R
timeout 250 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,4,5,7,8,9,16,32 \
    --gluon-tiles "auto:default+GLUON_TILES_AT={}" --out $R/q > $R/q.log 2>&1
timeout 250 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,4,8,16 \
    --gluon-tiles "auto:default+GLUON_TILES_AT={}" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g20.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)}'; done
