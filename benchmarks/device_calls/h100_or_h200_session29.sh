#!/usr/bin/env bash
# Issue #16, twenty-ninth session (2026-12-05), call 5: whichever GPU comes. On an H100 80GB HBM3,
# h100_session29_gpu_tiles.sh (GLUON_TILES_ON_GPU's H100 tiles against the H200's). On an H200, the shipped tree's
# goal table (h200_session27_shipped.sh's probes without its GPU tests, which passed on the H100 in call 1): the
# tree's H200 tables are the twenty-seventh session's call-4 form, never timed as shipped on an H200. Prediction for
# the H200: call 4's ratios (Qwen3-30B-FP8 ahead of vLLM's GEMMs alone at 1-8, 32, 64, level at 16; DeepSeek-V3-TP2
# ahead at 1, 2, 8). Device, repo root, carry=[".vendor"].
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
if [[ "$GPU" == *H100* ]]; then
    exec bash benchmarks/device_calls/h100_session29_gpu_tiles.sh
fi
GPU_TESTS=0 exec bash benchmarks/device_calls/h200_session27_shipped.sh
