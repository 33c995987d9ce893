#!/usr/bin/env bash
# Issue #16, twenty-sixth session (2026-12-04), call 10: the tile tuner on a bf16 case for the first time on the GPU
# (it took FP8 block-scaled cases only before this session): Qwen3-30B-bf16 at 4 tokens (the grouped path on Gluon,
# shipped 32x4/128x4) and 8 against the chain, two gate_up candidates, one down, one round. A check that the script
# runs and proposes GLUON_BF16_TILES_AT / GLUON_BF16_TOKENS entries, not a tuning run. Device, repo root.
source benchmarks/h200_setup.sh
R=/tmp/g26j; rm -rf $R; mkdir -p $R
timeout 200 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-bf16 --ms 4,8 --gate-up 32x4,32x6 \
    --down 128x4 --rounds 1 --passes 1 --against-chain --out $R > $R/tune.log 2>&1
echo "rc $?"
tar czf $OUT/g26j.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/tune.log | head -30
grep -v "^vLLM config" $R/tune.log | tail -12
