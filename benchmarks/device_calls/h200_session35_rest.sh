#!/usr/bin/env bash
# Issue #16, thirty-fifth session (2026-12-06), call 2, on the H200 of call 1 if still held: the goal points call 1
# did not time or timed disturbed: DeepSeek-V3-TP2 at 8 (call 1's second round of the shipped layer 372.5 us against
# its first 317.6, tl's 323.4 / 327.6), 16, 32, 64; Qwen3-30B-FP8 at 1 again (call 1: 17.95 against vLLM's GEMMs
# alone 18.0). Prediction: DeepSeek ahead at every point (0.95-0.99), Qwen3 at 1 within 0.5% either side.
# Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g35b; rm -rf $R; mkdir -p $R
G="[aligned]auto:default+GLUON_TILES_FROM_COUNTS=False"
timeout 260 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 8,16,32,64 \
    --gluon-tiles "$G" --out $R/d > $R/d.log 2>&1
timeout 80 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1 \
    --gluon-tiles "" --out $R/q > $R/q.log 2>&1
tar czf $OUT/g35b.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
grep -h "^|" $R/d.log $R/q.log | grep -v "^|---"
