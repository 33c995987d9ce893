#!/usr/bin/env bash
# Issue #16, twenty-sixth session (2026-12-04), call 5: at Qwen3-30B-FP8 16 and 64 tokens (1.2-1.5% behind vLLM's
# GEMMs alone last session) the layer takes 1.1-1.3 us more than its four launches timed alone, where PDL should
# make it take less. One explanation: down's programs, started during gate_up's last wave with their weights
# copied before their wait (GLUON_DOWN_WEIGHTS_BEFORE_WAIT, measured at 1-8 tokens only), hold shared memory and
# bandwidth that gate_up's last programs want. Here down waits first (the switch off) beside the shipped layer, at
# Qwen3-FP8 16, 32, 64, DeepSeek-V3-TP2 8 and Qwen3-bf16 3 and 6. Prediction, written before the call: level or
# slower at every point (refuting that explanation), as at 1-8 tokens. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g26e; rm -rf $R; mkdir -p $R
W="[down waits first]auto:default+GLUON_DOWN_WEIGHTS_BEFORE_WAIT=False"
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 16,32,64 \
    --gluon-tiles "$W" --out $R/q > $R/q.log 2>&1
timeout 100 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 8 \
    --gluon-tiles "$W" --out $R/d > $R/d.log 2>&1
timeout 100 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-bf16 --ms 3,6 \
    --gluon-tiles "$W" --out $R/b > $R/b.log 2>&1
tar czf $OUT/g26e.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log $R/b.log | head -30
for f in q d b; do grep -h "^|" $R/$f.log; done
