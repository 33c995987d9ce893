#!/usr/bin/env bash
# Issue #16, twenty-fifth session (2026-12-04), call 6: the Gluon tile tuner (whole layer) at the Qwen3-30B-FP8 goal
# token counts still behind vLLM's GEMMs alone in call 5 (8: 1.2%, 16: 2.1%, 32: 0.4%, 64: 2.0%), now that down's
# top-k sum is launched apart (GLUON_DOWN_SUM_LAUNCH): the tiles up to 20 tokens were tuned with the sum in down,
# and 21-64 were timed with two tiles only. Prediction, written before the call: 128-column down tiles (cheaper
# without the fused sum's per-column-tile tail, as at 24-32 in call 4) take 0.5-1.5% at 8-16; level at 32-64.
# Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/g25f; rm -rf $R; mkdir -p $R
timeout 470 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block --ms 8,16,32,64 \
    --minutes 6 --out $R > $R/tune.log 2>&1
tar czf $OUT/g25f.tgz -C $R .
grep -h -i -B2 -A12 "Traceback" $R/tune.log | head -30
grep -h "^|\|^#\|^GLUON" $R/tune.log | tail -30
