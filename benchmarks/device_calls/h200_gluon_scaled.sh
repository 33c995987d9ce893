#!/usr/bin/env bash
# Issue #16, sixteenth session (2026-12-03), call 5: the block-scaled FP8 stream written in Gluon, each step's
# wgmma left in flight while the next step's weights land, beside tl.dot's scaled and unscaled streams
# (probe_decode_gluon_scaled.py). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/gl; rm -rf $R; mkdir -p $R
timeout 240 python3 benchmarks/probe_decode_gluon_scaled.py --out $R > $R/gl.log 2>&1
tar czf $OUT/gl.tgz -C $R .
grep -i -B2 -A20 "error\|Traceback" $R/gl.log | head -40
grep "^|" $R/gl.log
