#!/usr/bin/env bash
# Issue #16, thirtieth session (2026-12-05), call 1 on an H200 (the session's first machine; one call, since a warm
# machine is given back after 30 idle seconds): the shipped tree's goal table (h200_session27_shipped.sh without its
# GPU tests: the twenty-seventh session's call-4 form, never timed as shipped on an H200), then the Gluon tile tuner at
# Qwen3-30B-FP8 M = 16, the one goal point still level with vLLM's GEMMs alone, and 64 if time is left
# (h200_session28_tune.sh's candidates, fewer minutes). Prediction, written before the call: the goal table repeats
# call 4's ratios (Qwen3 ahead at 1-8, 32, 64, level at 16; DeepSeek ahead at 1, 2, 8); the tuner finds nothing beyond
# 1% at 16 (on the H100 a deeper down was slower there). Device, repo root, carry=[".vendor"].
# The first part is h100_or_h200_session29.sh, which picks by GPU: on an H100 it runs h100_session29_gpu_tiles.sh
# instead (the H100 tiles against the H200's), and the tuner is left out.
bash benchmarks/device_calls/h100_or_h200_session29.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H100; then
    exit 0
fi
source benchmarks/h200_setup.sh
R=/tmp/g30t; rm -rf $R; mkdir -p $R
timeout 280 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block --ms 16,64 \
    --gate-up 32x4,32x6,32x8,64x3,64x4 --down 64x3,64x4,64x6,128x3,128x4 \
    --minutes 3 --out $R > $R/tune.log 2>&1
tar czf $OUT/g30t.tgz -C $R .
grep -h -i -B2 -A12 "Traceback" $R/tune.log | head -30
grep -h "^|\|^#\|^GLUON" $R/tune.log | tail -20
