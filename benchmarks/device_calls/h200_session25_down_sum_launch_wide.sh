#!/usr/bin/env bash
# Issue #16, twenty-fifth session (2026-12-04), call 4: call 3 confirmed GLUON_DOWN_SUM_LAUNCH (the Gluon down's
# top-k sum in a reduce launch after it): Gluon down alone 37.4 -> 31.7 us (+ 1.3 for the reduce) at Qwen3-30B-FP8
# M = 16, the layer 0.8-3.5 us faster at Qwen3 7-20 and DeepSeek-V3-TP2 2-12 (level at Qwen3 4). Past 20 tokens the
# shipped layer is the chain (tl GEMMs, five launches), which beat the grouped path on Gluon there because that
# path's down with its fused sum took 49.5 / 60.4 us alone at Qwen3 32 / 64 against the chain's 44.5 + 1.2 /
# 50.0 + 1.4. Prediction, written before the call: with the sum launched apart, the grouped path on Gluon (3.8 +
# gate_up + down + reduce) beats the chain at Qwen3 24-64 by 1-4 us (Qwen3 32 about 131-133 against 135.5) and is
# level with it at DeepSeek 16-64, whose streams are at the HBM's rate either way. Device, repo root,
# carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g25d; rm -rf $R; mkdir -p $R
E="[grouped, sum launch]grouped:default+GLUON_DOWN_SUM_LAUNCH=True"
E="$E,[grouped 32x6/128x4, sum launch]grouped:32x6/128x4+GLUON_DOWN_SUM_LAUNCH=True"
timeout 240 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 24,32,48,64 \
    --gluon-tiles "$E" --out $R/q > $R/q.log 2>&1
timeout 300 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 16,32,64 \
    --gluon-tiles "$E" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g25d.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)"|"$(NF-1)}'; done
for f in q d; do grep -h "^|" $R/$f.log | awk -F"|" '{n=(NF-5)/2; s="|"$3; for(i=4+n;i<4+2*n;i++) s=s"|"$i; print s}'; done
