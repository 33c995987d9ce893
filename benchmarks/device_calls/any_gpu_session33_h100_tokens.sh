#!/usr/bin/env bash
# Issue #16, written in the thirty-third session (2026-12-06) for the next call, whichever GPU comes (the
# thirty-third session had no device time left for it): the shipped tree with
# GLUON_FP8_TOKENS_ON_GPU (on an H100, small experts on the grouped path's Gluon GEMMs at 5 and 6 tokens, tiles
# 32x6/128x4), against the H200's token counts on the same GPU (the table emptied), Qwen3-30B-FP8 at 4-7; errors
# against the fp32 reference in the last column. Prediction on an H100: shipped 77.0 at 6 and 67.5 at 5 (calls 4-5),
# the same as the H200's choice at 4 and 7. On an H200 both columns are the same layer. Device, repo root,
# carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
mkdir -p $OUT
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 4,5,6,7 \
    --gluon-tiles "[H200's counts]auto:default+GLUON_FP8_TOKENS_ON_GPU={}" --out $OUT/t > $OUT/t.log 2>&1
grep -h -i -B2 -A12 "error\|Traceback" $OUT/t.log | head -30
grep -h "^|" $OUT/t.log
