#!/usr/bin/env bash
# Issue #16, sixteenth session (2026-12-03), call 2: the tile's one weight block scale loaded as a scalar a K step.
# First the bare stream (probe_decode_folded_scales.py: shipped per-row scales, the unscaled ceiling, folding with
# swap-AB, one scale), then the whole FP8 layer with the down GEMM on it (moe_decode.ONE_WEIGHT_SCALE_DOWN) on the
# pairs and grouped paths, 1-8 tokens (probe_decode_pairs_variants.py). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/ws; rm -rf $R; mkdir -p $R/s $R/p
timeout 200 python3 benchmarks/probe_decode_folded_scales.py --out $R/s --tiles 64x128x4,128x128x4 \
    --variants "scaled;unscaled;folded, swap;scaled, one w_s" > $R/s.log 2>&1
timeout 300 python3 benchmarks/probe_decode_pairs_variants.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2,4,8 --variants "pairs, one down w_s;grouped;grouped, one down w_s" --out $R/p > $R/p.log 2>&1
tar czf $OUT/ws.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/s.log $R/p.log | head -30
grep "^|" $R/s.log
grep "^|" $R/p.log
