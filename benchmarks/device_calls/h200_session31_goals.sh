#!/usr/bin/env bash
# Issue #16, thirty-first session (2026-12-05), call 1, whichever GPU comes (one call: a warm machine is given back
# after 30 idle seconds). First the shipped tree's FP8 goal table on this GPU (h200_session27_shipped.sh without its
# GPU tests: Qwen3-30B-FP8 at 1-64 and DeepSeek-V3-TP2 at 1, 2, 8 against vLLM's two GEMMs alone). Then, on an H200,
# the Gluon tile tuner at Qwen3-30B-FP8 M = 16 (the goal point level with vLLM's GEMMs alone); on an H100, whose FP8
# tiles were confirmed last session, the bf16 M = 1-2 floor table and inverse RoPE against copy and vLLM's kernel,
# never measured on an H100. Prediction, written before the call: on an H200 the twenty-seventh session's call-4
# ratios (Qwen3 ahead at 1-8, 32, 64, level at 16), the tuner nothing beyond 1% at 16; on an H100 the decode table
# as the thirtieth session's (level or ahead at 1, 7+, behind at 8-11 by 1-2%).
# Device, repo root, carry=[".vendor"].
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
GPU_TESTS=0 bash benchmarks/device_calls/h200_session27_shipped.sh
source benchmarks/h200_setup.sh
R=/tmp/g31; rm -rf $R; mkdir -p $R/rope
if [[ "$GPU" == *H100* ]]; then
    timeout 150 python3 benchmarks/bench_moe_layer.py $V --cases qwen3-30b-bf16 --ms 1,2 --out $R/moe_layer.md \
        > $R/bench_moe_layer.log 2>&1
    timeout 120 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py \
        --skip-sweep --out $R/rope > $R/bench_inv_rope.log 2>&1
    tar czf $OUT/g31.tgz -C $R .
    grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
    grep -v "^#" $R/moe_layer.md | grep "^|" | cut -d'|' -f1-6,13
    tail -14 $R/bench_inv_rope.log | cut -c1-260
    exit 0
fi
timeout 250 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block --ms 16 \
    --gate-up 32x4,32x6,32x8,64x3,64x4 --down 64x3,64x4,64x6,128x3,128x4 \
    --minutes 3 --out $R > $R/tune.log 2>&1
tar czf $OUT/g31.tgz -C $R .
grep -h -i -B2 -A12 "Traceback" $R/tune.log | head -30
grep -h "^|\|^#\|^GLUON" $R/tune.log | tail -20
