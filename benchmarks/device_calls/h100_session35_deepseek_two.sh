#!/usr/bin/env bash
# Issue #16, thirty-fifth session (2026-12-06), call 7, H100: call 6's H100 tuner proposal, DeepSeek-V3-TP2 pairs at
# 2 tokens gate_up 64 x 6 (128.95 against 129.65 us in three rounds), written into GLUON_TILES_ON_GPU, beside the
# H200's 64 x 4 in one run with vLLM's GEMMs alone. Prediction: 0.5-0.8 us faster, ahead of vLLM's GEMMs alone.
# Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g35g; rm -rf $R; mkdir -p $R
timeout 120 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 2 \
    --gluon-tiles "[H200's tiles]auto:default+GLUON_TILES_ON_GPU={}" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g35g.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/d.log | head -30
grep -h "^|" $R/d.log | grep -v "^|---"
