#!/usr/bin/env bash
# Issue #16, thirty-fourth session (2026-12-06), call 4, whichever GPU comes: the points where an H100 stays behind
# vLLM's GEMMs alone (call 2: DeepSeek-V3-TP2 M = 2 1.006, M = 8 1.009, where the layer took 2.9 us more than its
# launches alone; Qwen3-30B-FP8 M = 1 1.007). Columns: shipped; the Gluon down waiting for gate_up before it copies
# any weights (GLUON_DOWN_WEIGHTS_BEFORE_WAIT=False); the intermediate quantized by gate_up's writers (previous);
# counts off (aligned); at DeepSeek two more grouped tiles (32x8/128x4, 32x6/128x4; the H100's tuner found the
# H200's within 0.4% before tiles from counts). Call 3 refuted tl's gate_up before the Gluon down (slower at every
# point). Prediction: down waiting first slower at 1-2 tokens (its weights no longer overlap gate_up), within 1 us
# at DeepSeek 8; no tile beyond 0.5%. Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g34d; rm -rf $R; mkdir -p $R
W="[down waits first]auto:default+GLUON_DOWN_WEIGHTS_BEFORE_WAIT=False"
G="$W,[previous]auto:default+GLUON_INTER_QUANTIZED_BY_DOWN=False,[aligned]auto:default+GLUON_TILES_FROM_COUNTS=False"
timeout 300 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 2,6,8 \
    --gluon-tiles "$G,grouped:32x8/128x4,grouped:32x6/128x4" --out $R/d > $R/d.log 2>&1
timeout 120 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1 \
    --gluon-tiles "$W" --out $R/q > $R/q.log 2>&1
tar czf $OUT/g34d.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/d.log $R/q.log | head -40
grep -h "^|" $R/d.log $R/q.log | cut -d'|' -f1-10
