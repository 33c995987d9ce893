#!/usr/bin/env bash
# Issue #16, sixth session (2026-12-01), third device call: fused_moe's grouped GEMMs with a 256-deep
# FP8 block-scaled gate_up tile (the fastest of h200_kdepth_fused.sh at all five points) and variants
# of it (down 256 deep too, one more stage), against TILE_TABLE's row, at the token counts the
# unfused layer serves. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/kdf2; rm -rf $R; mkdir -p $R
timeout 300 python3 benchmarks/probe_fused_moe_k_depth.py $V --out $R > $R/probe.log 2>&1
tar czf $OUT/kdf2.tgz -C $R .
tail -n 4 $R/probe.log | grep -i -B3 error
grep -h "^|" $R/probe.log | cut -c1-1200
