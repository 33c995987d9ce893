#!/usr/bin/env bash
# Issue #16, written in the twentieth session (2026-12-03) for a later device call (not yet run): the Gluon tile
# tuner (benchmarks/tune_decode_gluon_tiles.py) over every token count that takes the pairs or grouped path, on
# both FP8 block-scaled cases, to check the hand-written GLUON_TILES_AT (calls 2-10) and find what they missed.
# About 4-6 minutes (each M: 12 single layer timings, then 3 contenders x 3 rounds). Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/tg; rm -rf $R; mkdir -p $R
timeout 560 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1-16 --minutes 7.5 --out $R > $R/tune.log 2>&1
tar czf $OUT/tg.tgz -C $R .
grep -h -i -B2 -A12 "Traceback" $R/tune.log | head -30
grep -h "^|\|^#\|^GLUON" $R/tune.log | tail -45
