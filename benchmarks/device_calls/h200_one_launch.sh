#!/usr/bin/env bash
# Issue #16, ninth session (2026-12-01): one token's FP8 MoE GEMMs in one launch, down's weights held
# in registers while gate_up runs, and a persistent variant, against the same code as two launches.
# The persistent variant needs all its programs resident at once (it waits on them): with 32-row gate_up
# tiles (384 programs) it hung in call 10; only the 64-row tiles (192 programs) run here.
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/onelaunch; rm -rf $R; mkdir -p $R/ol
timeout 150 python3 benchmarks/probe_decode_one_launch.py --configs 64x128x4x4x4,64x128x4x8x8 --out $R/ol 2>&1 \
    | tee $R/ol.log | grep "^|"
tar czf $OUT/onelaunch.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/*.log | head -40
