#!/usr/bin/env bash
# Issue #16, twentieth session (2026-12-03), call 4: the Gluon tiles swept again where the goal table still loses
# (Qwen3-30B-FP8 M = 1 pairs, 8 and 16 grouped; DeepSeek-V3-TP2 M = 2 pairs, 1 for the floor), since the tiles
# were last swept at 1-8 tokens before down's weights before its wait and the routers apart. Prediction: within
# 0.5 us of the shipped tiles at every point (low confidence: call 2 moved M = 2 and 5 by 1.3-2 us with down's
# stages alone). Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/rs; rm -rf $R; mkdir -p $R
P="pairs:32x8/128x3,pairs:32x4/128x3,pairs:64x4/128x3,pairs:32x6/64x4"
G="grouped:32x8/64x3,grouped:32x4/64x3,grouped:64x4/64x3,grouped:32x6/128x3"
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1 \
    --gluon-tiles "$P" --out $R/q1 > $R/q1.log 2>&1
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2 \
    --gluon-tiles "$P" --out $R/d > $R/d.log 2>&1
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 8,16 \
    --gluon-tiles "$G" --out $R/g > $R/g.log 2>&1
tar czf $OUT/rs.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
grep -h "^|" $R/q1.log $R/d.log $R/g.log | cut -d"|" -f2-9,16
