#!/usr/bin/env bash
# Issue #16, fifteenth session (2026-12-02), call 3: the bare FP8 block-scaled decode weight stream with the
# weights row-major or tile by tile, block-scaled per K step or accumulating in the MMA
# (probe_decode_stream_parts.py). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/sp; rm -rf $R; mkdir -p $R
timeout 400 python3 benchmarks/probe_decode_stream_parts.py --out $R > $R/sp.log 2>&1
tar czf $OUT/sp.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/sp.log | head -30
grep "^|" $R/sp.log
