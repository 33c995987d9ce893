#!/usr/bin/env bash
# Issue #16, twentieth session (2026-12-03): the Gluon down GEMM's stages. With PDL its programs copy their first
# NUM_STAGES - 1 K steps of weights before they wait for gate_up (GLUON_DOWN_WEIGHTS_BEFORE_WAIT, shipped in the
# seventeenth session with 3 stages, never timed with more): 3 stages copy 2 of down's 6 K steps (Qwen3-30B) or 8
# (DeepSeek-V3-TP2) early, 6 stages 5. Prediction: 4-6 stages take 0.3-1 us off the pairs path at 1-2 tokens
# (where down streams at well under bandwidth), level past 8 tokens. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/ds; rm -rf $R; mkdir -p $R
P="pairs:32x6/128x3,pairs:32x6/128x4,pairs:32x6/128x6,pairs:32x6/64x6"
G="grouped:32x6/64x3,grouped:32x6/64x4,grouped:32x6/64x6,grouped:32x6/128x6"
timeout 170 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2 --gluon-tiles "$P" --out $R/p > $R/p.log 2>&1
timeout 110 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 5 \
    --gluon-tiles "$P" --out $R/p5 > $R/p5.log 2>&1
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 8,12,16 \
    --gluon-tiles "$G" --out $R/g > $R/g.log 2>&1
tar czf $OUT/ds.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
grep -h "^|" $R/p.log $R/p5.log $R/g.log | cut -d"|" -f2-9,16
