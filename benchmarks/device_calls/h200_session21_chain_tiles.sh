#!/usr/bin/env bash
# Issue #16, twenty-first session (2026-12-03), call 3: GPU tests of the tiles call 2 confirmed (the shipped tiles
# at the pairs path's 4 tokens and the grouped path's 11 among them), then the Gluon tile tuner with
# --against-chain where the shipped choice is the chain: Qwen3-30B-FP8 17-32, 48, 64 and DeepSeek-V3-TP2 9-16
# (the nineteenth session timed GLUON_TILES' tiles there: level at Qwen3 24-32, slower at DeepSeek; the grouped
# path has 3 launches against the chain's 5). Prediction: Gluon 0.5-2 us ahead at Qwen3 17-32 with deeper down
# rings, behind at 64 and at DeepSeek. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/ct; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider -p no:jitguard -m gpu tests/kernels/test_moe_decode_gluon.py \
    -k "shipped-tiles or 64-columns" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
mkdir -p $R/q $R/d
timeout 250 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block \
    --ms 17-32,48,64 --against-chain --minutes 3.5 --out $R/q > $R/q/tune.log 2>&1
timeout 200 python3 benchmarks/tune_decode_gluon_tiles.py --cases deepseek-v3-tp2-fp8-block \
    --ms 9-16,24,32 --against-chain --minutes 2.5 --out $R/d > $R/d/tune.log 2>&1
tar czf $OUT/ct.tgz -C $R .
grep -h -i -B2 -A12 "Traceback" $R/q/tune.log $R/d/tune.log | head -30
grep -h "^|\|^#\|^GLUON" $R/q/tune.log $R/d/tune.log | tail -50
