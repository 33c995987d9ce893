#!/usr/bin/env bash
# Issue #16, eleventh session (2026-12-02): DeepSeek-V3-TP2 FP8 block scales at 1-4 tokens, the down
# GEMM's tile by the whole layer (probe_decode_down_tiles.py). Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/downtiles; rm -rf $R; mkdir -p $R/p
timeout 300 python3 benchmarks/probe_decode_down_tiles.py --out $R/p > $R/p.log 2>&1
tar czf $OUT/downtiles.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log | head -30
grep "^|\|^#" $R/p.log
