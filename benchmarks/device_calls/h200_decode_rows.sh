#!/usr/bin/env bash
# Issue #16, fourth session (2026-12-01), eighth device call: benchmarks/probe_decode_rows.py
# (DeepSeek-V3-TP2 decode rows for M = 3..4 and 5..8 found by the tile sweep, against the table's,
# alternating). Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/rows; rm -rf $R; mkdir -p $R
timeout 200 python3 benchmarks/probe_decode_rows.py --out $R > $R/probe.log 2>&1
tar czf $OUT/rows.tgz -C $R .
tail -n 4 $R/probe.log | grep -i -B3 error
grep "^|" $R/probe.log
