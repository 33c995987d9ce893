#!/usr/bin/env bash
# Issue #16, twenty-first session (2026-12-03), call 8: the tuner is greedy (gate_up beside the shipped down, then
# down beside the best gate_up) and missed Qwen3-30B-FP8 M = 1's joint 32x7/128x6 until call 5; here every
# gate_up candidate gets its own down sweep at the goal counts still behind: Qwen3 8, 16 and DeepSeek-V3-TP2 2.
# Prediction: nothing 0.5% better. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/j21; rm -rf $R; mkdir -p $R
DOWN="64x2,64x3,64x4,64x5,64x6,128x3,128x4,128x5,128x6"
for UP in 32x4 32x5 32x6 32x7 32x8 64x4 64x6; do
    timeout 100 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block --ms 8,16 \
        --gate-up $UP --down $DOWN --rounds 2 --minutes 1.2 --out $R/q$UP > $R/q$UP.log 2>&1
done
for UP in 32x4 32x6 64x4 64x5 64x6; do
    timeout 100 python3 benchmarks/tune_decode_gluon_tiles.py --cases deepseek-v3-tp2-fp8-block --ms 2 \
        --gate-up $UP --down $DOWN --rounds 2 --minutes 1.2 --out $R/d$UP > $R/d$UP.log 2>&1
done
tar czf $OUT/j21.tgz -C $R .
grep -h -i -B2 -A12 "Traceback" $R/*.log | head -30
grep -h "^| [qd]" $R/*.log
