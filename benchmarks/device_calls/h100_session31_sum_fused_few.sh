#!/usr/bin/env bash
# Issue #16, thirty-first session (2026-12-05), call 2, whichever GPU comes: the Gluon down's top-k sum in its last
# program of each column tile (GLUON_DOWN_SUM_LAUNCH=False, the form shipped before the twenty-fifth session) against
# the sum launched apart (shipped) at 1-4 tokens, where it was never timed (the twenty-fifth session's call 3 began at
# Qwen3 M = 4: level, 40.45 / 40.55). At one or two tokens each column tile's last program sums 8-16 pair rows of
# one or two tokens, so the fused sum's tail is short and the layer saves a launch. Prediction, written before the
# call: the fused sum 0.3-0.8 us faster at Qwen3-30B-FP8 M = 1-2 and DeepSeek-V3-TP2 M = 1, level at 4.
# Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g31s; rm -rf $R; mkdir -p $R
G="[sum fused]auto:default+GLUON_DOWN_SUM_LAUNCH=False"
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,3,4 \
    --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
timeout 100 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2 \
    --gluon-tiles "$G" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g31s.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
for f in q d; do grep -h "^|" $R/$f.log; done
