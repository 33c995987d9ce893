#!/usr/bin/env bash
# Issue #16, thirty-second session (2026-12-06), call 1, whichever GPU comes. On an H200 (none lent since the
# twenty-seventh session): the goal table of the shipped tree, tiles from counts against the aligned form
# (GLUON_TILES_FROM_COUNTS=False, never timed on an H200): Qwen3-30B-FP8 at 1-64 and DeepSeek-V3-TP2 at 1, 2, 4, 8,
# then the bf16 floor at M = 1 and inverse RoPE. Prediction: Qwen3-FP8 16 ahead of vLLM's GEMMs alone (was level,
# 99.9 against 99.9) by 0.5-1.5 us, the rest as the twenty-seventh session's call 4. On an H100: the points where
# the thirty-first session's call 4 left a choice open, side by side: Qwen3-30B-FP8 3, 5, 6, 10, 11 and bf16 3-7, from
# counts against aligned against tl's GEMMs. Prediction: aligned faster at 3 tokens by 0.2-0.4 us (as call 4), from
# counts faster at 5-11; tl's GEMMs faster than Gluon at bf16 5-7 by 0.3-1 us.
# Device, repo root, carry=[".vendor"].
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
R=/tmp/g32; rm -rf $R; mkdir -p $R/rope
G="[aligned]auto:default+GLUON_TILES_FROM_COUNTS=False"
if [[ "$GPU" == *H200* ]]; then
    timeout 160 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,4,8,16,32,64 \
        --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
    timeout 100 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,4,8 \
        --gluon-tiles "$G" --out $R/d > $R/d.log 2>&1
    timeout 120 python3 benchmarks/bench_moe_layer.py $V --cases qwen3-30b-bf16 --ms 1 --out $R/moe_layer.md \
        > $R/bench_moe_layer.log 2>&1
    timeout 110 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py \
        --skip-sweep --out $R/rope > $R/bench_inv_rope.log 2>&1
    tar czf $OUT/g32.tgz -C $R .
    grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
    for f in q d; do grep -h "^|" $R/$f.log | cut -d'|' -f1-7,10; done
    grep -v "^#" $R/moe_layer.md 2>/dev/null | grep "^|" | cut -d'|' -f1-6,13
    tail -14 $R/bench_inv_rope.log | cut -c1-200
    exit 0
fi
timeout 170 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 3,5,6,10,11 \
    --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
timeout 170 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-bf16 --ms 3,4,5,6,7 \
    --gluon-tiles "$G" --out $R/b > $R/b.log 2>&1
tar czf $OUT/g32.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/b.log | head -30
for f in q b; do grep -h "^|" $R/$f.log | cut -d'|' -f1-7,10; done
