#!/usr/bin/env bash
# Issue #16, eighth session (2026-12-01): inverse-RoPE with cache hints, second call: the cos/sin loads
# kept in L2 (evict_last), streaming fp8 stores (.cs), both, and the rows' loads evict_last.
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/ropehints; rm -rf $R; mkdir -p $R/rope
timeout 240 python3 benchmarks/bench_inv_rope_fp8.py --upstream .vendor/fused_inv_rope_fp8_quant.py --knobs-only \
    --out $R/rope > $R/rope.log 2>&1
tar czf $OUT/ropehints.tgz -C $R .
grep -i -B2 -A8 "error\|Traceback" $R/*.log | head -30
grep "^|\|copy" $R/rope.log | tail -9
