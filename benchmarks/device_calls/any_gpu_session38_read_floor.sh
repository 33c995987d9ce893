#!/usr/bin/env bash
# Issue #16, thirty-eighth session (2026-12-06): the byte floor's reach for a layer of two dependent GEMMs
# (probe_decode_read_floor.py) at the missed Qwen3-30B-FP8 points (1, 2 tokens), a met one (4) and the controls
# (Qwen3-30B-bf16 1: the twenty-fifth session's plain read was 1.28x; DeepSeek-V3-TP2 1). Device, repo root.
# Prediction (H200): Qwen3-30B-FP8 at one token: gate_up's bytes (25.2 MB) about 7.7 us alone as the bf16 down's
# same bytes were, down's (12.6 MB) 4.5-5 us, two launches with PDL and down waiting 11.5-12.5 us = 1.35-1.5x the
# floor of 8.4: above the 1.3x goal, so no two-GEMM layer meets it; at two tokens about 1.25-1.3x (twice the bytes).
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
R=/tmp/rf38; rm -rf $R; mkdir -p $R
timeout 400 python3 benchmarks/probe_decode_read_floor.py --out $R > $R/read_floor.log 2>&1
cp $R/* $OUT/
grep -h -i -B2 -A12 "error\|Traceback" $R/read_floor.log | head -30
cat $R/read_floor.md
