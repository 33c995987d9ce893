#!/usr/bin/env bash
# Issue #16, seventh session (2026-12-01): bf16 decode layers on the grouped and chain paths and the
# unfused chain (probe_decode_paths.py), to decide where choose_decode_path takes the chain for bf16.
# Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/pathsbf16; rm -rf $R; mkdir -p $R
timeout 300 python3 benchmarks/probe_decode_paths.py --out $R > $R/probe.log 2>&1
tar czf $OUT/pathsbf16.tgz -C $R .
grep -i -B2 -A8 "error\|Traceback" $R/probe.log | head -30
grep "^|" $R/probe_decode_paths.md 2>/dev/null || tail -20 $R/probe.log
