#!/usr/bin/env bash
# Issue #16, seventh session (2026-12-01): a five-launch FP8 chain for 8-64 tokens (the decode route
# launch, fused_moe's GEMMs, one quantization, the reduce) against the unfused chain's ten and the
# decode path (probe_decode_hybrid_chain.py; HYBRID_ARGS="--breakdown --ms 16,32,64": its launches one by
# one). Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/hybrid; rm -rf $R; mkdir -p $R
timeout 420 python3 benchmarks/probe_decode_hybrid_chain.py $V --out $R ${HYBRID_ARGS:-} > $R/probe.log 2>&1
tar czf $OUT/hybrid.tgz -C $R .
grep -i -B2 -A8 "error\|Traceback" $R/probe.log | head -30
grep "^|" $R/probe_decode_hybrid_chain.md 2>/dev/null || tail -20 $R/probe.log
