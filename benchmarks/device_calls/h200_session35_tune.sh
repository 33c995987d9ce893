#!/usr/bin/env bash
# Issue #16, thirty-fifth session (2026-12-06), call 4, H200. Call 3's tuner at Qwen3-30B-FP8 one token: 32x6/128x4
# 17.3 us in all three rounds against the shipped 32x7/128x6 18.2 (5.1%), where the probe timed shipped at 17.9.
# (a) The probe beside the shipped layer: pairs 32x6/128x4, 32x6/128x3 (GLUON_TILES') and 32x7/128x6 (shipped's tiles
# forced) at Qwen3 1; (b) the tuner at the other Gluon token counts up to 16 (Qwen3) and 8 (DeepSeek-V3-TP2), last
# tuned before down quantized the intermediate (twenty-seventh session).
# Prediction: (a) 32x6/128x4 0.3-0.6 us faster than shipped in the probe (less than the tuner's 0.9); (b) a change
# beyond 0.5% at two or three more token counts. Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g35d; rm -rf $R; mkdir -p $R
timeout 100 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1 \
    --gluon-tiles "pairs:32x6/128x4,pairs:32x6/128x3,pairs:32x7/128x6" --out $R/p > $R/p.log 2>&1
timeout 420 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 2,3,4,5,7,8,12,16 --minutes 6 --out $R/t > $R/t.log 2>&1
tar czf $OUT/g35d.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
grep -h "^|" $R/p.log | grep -v "^|---" | cut -d'|' -f1-7,11-
grep "^|" $R/t.log; grep "beat the shipped" $R/t.log
