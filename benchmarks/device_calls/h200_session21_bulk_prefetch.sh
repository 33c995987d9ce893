#!/usr/bin/env bash
# Issue #16, twenty-first session (2026-12-03), call 10: GATE_UP_PREFETCH_PARTS, the first launch asking the L2
# for parts of each routed expert's gate and up rows with bulk prefetches (the TMA unit streams them; call 9's
# line-by-line prefetch of the first K steps cost one SM 6 us a step). Prediction: Qwen3-30B-FP8 M = 1-2 0.5-2 us
# faster with the whole gate_up (32 parts: 25 MB at M = 1, in L2), DeepSeek-V3-TP2 level or slower (117 MB).
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/b21; rm -rf $R; mkdir -p $R
V3="auto:default+GATE_UP_PREFETCH_PARTS=8,auto:default+GATE_UP_PREFETCH_PARTS=16,auto:default+GATE_UP_PREFETCH_PARTS=32"
timeout 120 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,8 \
    --gluon-tiles "$V3" --out $R/q > $R/q.log 2>&1
timeout 100 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2 \
    --gluon-tiles "$V3" --out $R/d > $R/d.log 2>&1
tar czf $OUT/b21.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'; done
