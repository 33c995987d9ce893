#!/usr/bin/env bash
# Issue #16, seventh session (2026-12-01): the five-launch FP8 chain PDL-linked (fused_moe's GEMM, the
# group quantization and the top-k reduce launched with launch_pdl, each waiting for the launch before)
# against itself without PDL, the unfused chain and the decode path; then its launches one by one.
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/hybridpdl; rm -rf $R; mkdir -p $R/variants $R/breakdown
timeout 300 python3 benchmarks/probe_decode_hybrid_chain.py $V --out $R/variants > $R/variants.log 2>&1
timeout 200 python3 benchmarks/probe_decode_hybrid_chain.py $V --breakdown --ms 16,32,64 --out $R/breakdown \
    > $R/breakdown.log 2>&1
tar czf $OUT/hybridpdl.tgz -C $R .
grep -i -B2 -A8 "error\|Traceback" $R/*.log | head -30
grep "^|" $R/variants/probe_decode_hybrid_chain.md $R/breakdown/probe_decode_hybrid_chain.md | cut -d: -f2-
