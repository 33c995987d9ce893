#!/usr/bin/env bash
# Issue #16, seventh session (2026-12-01): the decode GEMMs alone against fused_moe's grouped GEMM on
# the same tile and buffers, with their epilogue parts and PDL switched off one at a time
# (probe_decode_gemm_gap.py). Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/gemmgap; rm -rf $R; mkdir -p $R
timeout 400 python3 benchmarks/probe_decode_gemm_gap.py $V --out $R > $R/probe.log 2>&1
tar czf $OUT/gemmgap.tgz -C $R .
grep -i -B2 -A8 "error\|Traceback" $R/probe.log | head -30
grep "^|" $R/probe_decode_gemm_gap.md 2>/dev/null || tail -20 $R/probe.log
