#!/usr/bin/env bash
# Issue #16, thirty-fifth session (2026-12-06), call 9, H100: (a) DeepSeek-V3-TP2 at 8 tokens on tl's grouped GEMMs
# (GLUON_FP8_TOKENS_ON_GPU's new "large" entry) beside the H200's counts (Gluon 32x8/64x3), the fourth time; (b) at 2
# tokens the shipped H100 gate_up 64 x 6 beside 64 x 8 (call 8's 64 x 8 column ran the H100 entry: the probe's forced
# tiles gave way to GLUON_TILES_ON_GPU, fixed since). Prediction: (a) tl 1-1.5 us faster; (b) 64 x 8 within 0.3%.
# Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g35i; rm -rf $R; mkdir -p $R
P="python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block"
timeout 90 $P --ms 8 --gluon-tiles "[H200's counts]auto:default+GLUON_FP8_TOKENS_ON_GPU={'NVIDIA H100 80GB HBM3': {'small': {'pairs': (1, 2, 4), 'grouped': (3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64)}}}" --out $R/g > $R/g.log 2>&1
timeout 90 $P --ms 2 --gluon-tiles "pairs:64x8/128x3" --out $R/p > $R/p.log 2>&1
tar czf $OUT/g35i.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
grep -h "^|" $R/g.log $R/p.log | grep -v "^|---"
