#!/usr/bin/env bash
# Issue #16, twenty-first session (2026-12-03), call 7: Qwen3-30B-FP8 M = 1, the shipped 32x7/128x6 (call 6: 18.2
# against 18.8 us with call 4's tiles, vLLM's GEMMs alone 18.0) beside deeper down rings (7, 8 stages) and
# gate_up 32 x 5. Prediction: level within 0.3 us. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/s21; rm -rf $R; mkdir -p $R
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1 \
    --gluon-tiles "pairs:32x7/128x7,pairs:32x7/128x8,pairs:32x5/128x6,pairs:32x7/64x8" --out $R/q > $R/q.log 2>&1
tar czf $OUT/s21.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log | head -30
grep -h "^|" $R/q.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)}'
