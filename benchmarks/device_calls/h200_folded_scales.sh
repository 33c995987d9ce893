#!/usr/bin/env bash
# Issue #16, sixteenth session (2026-12-03), call 1: FP8 block scales folded into the activations (tokens as the
# wgmma's M, activations its register operand, the MMA left in flight) against the per-step scaled stream
# (probe_decode_folded_scales.py). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/fs; rm -rf $R; mkdir -p $R
timeout 500 python3 benchmarks/probe_decode_folded_scales.py --out $R > $R/fs.log 2>&1
tar czf $OUT/fs.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/fs.log | head -30
grep "^|" $R/fs.log
