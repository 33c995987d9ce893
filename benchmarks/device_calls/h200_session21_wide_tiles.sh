#!/usr/bin/env bash
# Issue #16, twenty-first session (2026-12-03), call 5: the Gluon tile tuner with a wider candidate set (stages 2-8,
# 128-column gate_up tiles) at the goal token counts still behind vLLM's GEMMs alone or thinnest: Qwen3-30B-FP8
# 1, 8, 16 and DeepSeek-V3-TP2 2, 6. Prediction: nothing better than 0.5% (calls 1 and 3 swept the usual set).
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/wt; rm -rf $R; mkdir -p $R/q $R/d
UP="32x3,32x4,32x5,32x6,32x7,32x8,64x2,64x3,64x4,64x5,64x6,64x8,128x2,128x3"
DOWN="64x2,64x3,64x4,64x5,64x6,64x8,128x2,128x3,128x4,128x5,128x6"
timeout 200 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block --ms 1,8,16 \
    --gate-up $UP --down $DOWN --minutes 3 --out $R/q > $R/q/tune.log 2>&1
timeout 200 python3 benchmarks/tune_decode_gluon_tiles.py --cases deepseek-v3-tp2-fp8-block --ms 2,6 \
    --gate-up $UP --down $DOWN --minutes 3 --out $R/d > $R/d/tune.log 2>&1
tar czf $OUT/wt.tgz -C $R .
grep -h -i -B2 -A12 "Traceback" $R/q/tune.log $R/d/tune.log | head -30
grep -h "^# .*Error\|^# .*error" $R/q/tune.log $R/d/tune.log | head -10
grep -h "^|\|^# [0-9]" $R/q/tune.log $R/d/tune.log | tail -20
