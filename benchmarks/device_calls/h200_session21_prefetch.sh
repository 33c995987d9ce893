#!/usr/bin/env bash
# Issue #16, twenty-first session (2026-12-03), call 9: GATE_UP_PREFETCH_STEPS, the first launch asking the L2
# for the first K steps of every gate_up weight row of each routed expert as soon as a token is routed (HBM
# otherwise idles while that launch aligns and gate_up waits for it). Prediction: 0.3-1.5 us faster at 1-2
# tokens and on the grouped path at 8-16, level at DeepSeek-V3-TP2 8. GPU tests of the layer with it first.
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/p21; rm -rf $R; mkdir -p $R
V3="auto:default+GATE_UP_PREFETCH_STEPS=1,auto:default+GATE_UP_PREFETCH_STEPS=2,auto:default+GATE_UP_PREFETCH_STEPS=4"
timeout 220 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,4,8,16 \
    --gluon-tiles "$V3" --out $R/q > $R/q.log 2>&1
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,6 \
    --gluon-tiles "$V3" --out $R/d > $R/d.log 2>&1
tar czf $OUT/p21.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'; done
