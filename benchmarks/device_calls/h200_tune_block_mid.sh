#!/usr/bin/env bash
# Issue #16, tenth session (2026-12-01): tune TILE_TABLE's FP8 block-scale row for 9-64 tokens (many
# experts; fused_moe and the decode layer's chain path), each GEMM alone beside vLLM's at Qwen3-30B-FP8
# and DeepSeek-V3-TP2 M = 16 / 32 / 64 (tune_fused_moe.py row 14). Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/tuneblock; rm -rf $R; mkdir -p $R
timeout 500 python3 benchmarks/tune_fused_moe.py measure $V --rows 14 --workers 15 --out $R/tune.json 2>&1 \
    | tee $R/tune.log
cp $R/tune.json $OUT/ 2>/dev/null
tar czf $OUT/tuneblock.tgz -C $R .
