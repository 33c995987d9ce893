#!/usr/bin/env bash
# Issue #16, sixth session (2026-12-01), fifth device call: fused_moe's FP8 block-scale row for
# M = 9..64 (gate_up 256 deep since 8b96090) against other gate_up widths / warps and a narrower down
# tile, at DeepSeek-V3-TP2 M = 16 / 32 / 64, where the unfused layer is 0-2% behind vLLM's two GEMMs
# alone. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/fshape; rm -rf $R; mkdir -p $R
timeout 300 python3 benchmarks/probe_fused_moe_k_depth.py $V --variants shape --cases deepseek-v3-tp2-fp8-block \
    --out $R > $R/probe.log 2>&1
tar czf $OUT/fshape.tgz -C $R .
tail -n 4 $R/probe.log | grep -i -B3 error
grep -h "^|" $R/probe.log | cut -c1-1200
