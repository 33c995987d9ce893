#!/usr/bin/env bash
# Issue #16, twenty-eighth session (2026-12-05, written with no device lent; for the next session's second call,
# after h200_session27_shipped.sh): the Gluon tile tuner (whole layer) at the Qwen3-30B-FP8 token counts closest to
# vLLM's GEMMs alone in the twenty-seventh session's call 4 (16 level at 99.9 us, 64 ahead by 0.3%, 12 and 20
# between), now that down quantizes the intermediate (GLUON_INTER_QUANTIZED_BY_DOWN): its shared memory holds weight
# stages and two e4m3 A slots only (no A ring), so deeper down stages cost less than when the tiles were tuned (the
# shipped 64x3 down at 16 and 64 uses 26.7 KB, 64x6 would take 51 KB), and gate_up has no group counter, so its
# 128-column tile is a candidate again. Prediction, written before the call: a deeper down (64x4-64x8) takes
# 0.3-1% at 16 and 64; gate_up stays 32x6. Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/g28t; rm -rf $R; mkdir -p $R
timeout 500 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block --ms 16,64,12,20 \
    --gate-up 32x4,32x6,32x8,64x3,64x4,128x3 --down 64x3,64x4,64x6,64x8,128x3,128x4,128x6 \
    --minutes 7 --out $R > $R/tune.log 2>&1
tar czf $OUT/g28t.tgz -C $R .
grep -h -i -B2 -A12 "Traceback" $R/tune.log | head -30
grep -h "^|\|^#\|^GLUON" $R/tune.log | tail -30
