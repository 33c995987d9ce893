#!/usr/bin/env bash
# Issue #16, nineteenth session (2026-12-03), call 5: at Qwen3-30B-FP8 M = 9-16 (the grouped path on Gluon since
# call 3) our GEMMs alone sit at vLLM's (M = 12: gate_up 53.8 / 53.0 us, down 32.3 / 30.6): the grouped path's
# Gluon tiles (gate_up 32 columns x 6 stages, down 64 x 3, chosen at 3-8 tokens) against 128-column down tiles and
# 64-column gate_up tiles there; at DeepSeek-V3-TP2 M = 4 and 6 (1-3.5% behind vLLM) the pairs path on Gluon
# and the grouped path with 128-column down tiles. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/gt; rm -rf $R; mkdir -p $R
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 9,12,16 \
    --gluon-tiles grouped:32x6/128x3,grouped:64x4/64x3,grouped:64x4/128x3 --out $R/q > $R/q.log 2>&1
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 4,6 \
    --gluon-tiles pairs:default,grouped:32x6/128x3 --out $R/d > $R/d.log 2>&1
tar czf $OUT/gt.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
grep -h "^|" $R/q.log $R/d.log | cut -c1-600
