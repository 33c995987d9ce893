#!/usr/bin/env bash
# Issue #16, ninth session (2026-12-01): one token's FP8 MoE GEMMs in one launch, down's weights held
# in registers while gate_up runs, against the same code as two launches.
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/onelaunch; rm -rf $R; mkdir -p $R/ol
timeout 420 python3 benchmarks/probe_decode_one_launch.py --out $R/ol > $R/ol.log 2>&1
tar czf $OUT/onelaunch.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/*.log | head -40
grep "^|" $R/ol/probe_decode_one_launch.md
