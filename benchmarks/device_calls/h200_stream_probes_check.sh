#!/usr/bin/env bash
# Issue #16, sixteenth session (2026-12-03), call 6: the two stream probes after their shared sweep was factored
# out (probe_decode_folded_scales.sweep): one small point of the folded probe, and the Gluon stream again at two
# shapes' 8 slots with 4 and 6 stages (a second machine's reading of call 5; kept small: the session's device
# time was nearly spent). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/pc; rm -rf $R; mkdir -p $R/f $R/g
timeout 100 python3 benchmarks/probe_decode_folded_scales.py --out $R/f --shapes "deepseek-fp8 down" --slots 8 \
    --tiles 64x128x4 --variants "scaled;unscaled;scaled, one w_s" > $R/f.log 2>&1
timeout 100 python3 benchmarks/probe_decode_gluon_scaled.py --out $R/g --shapes "deepseek-fp8 down,qwen3-fp8 gate_up" \
    --slots 8 --tiles 64x128x4,64x128x6 > $R/g.log 2>&1
tar czf $OUT/pc.tgz -C $R .
grep -i -B2 -A20 "error\|Traceback" $R/f.log $R/g.log | head -40
grep -h "^|" $R/f.log $R/g.log
