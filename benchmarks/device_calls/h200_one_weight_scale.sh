#!/usr/bin/env bash
# Issue #16, sixteenth session (2026-12-03), call 2: the per-step scaled FP8 stream with the tile's one weight block
# scale loaded as a scalar, beside the shipped per-row form, the unscaled ceiling and folding with swap-AB
# (probe_decode_folded_scales.py). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/ws; rm -rf $R; mkdir -p $R
timeout 500 python3 benchmarks/probe_decode_folded_scales.py --out $R --tiles 64x128x4,128x128x4,64x128x6 \
    --variants "scaled;unscaled;folded, swap;scaled, one w_s" > $R/ws.log 2>&1
tar czf $OUT/ws.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/ws.log | head -30
grep "^|" $R/ws.log
