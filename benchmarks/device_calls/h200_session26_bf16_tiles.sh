#!/usr/bin/env bash
# Issue #16, twenty-sixth session (2026-12-04), call 3: bf16 on the Gluon GEMMs where calls 1-2 found it faster
# (Qwen3-30B-bf16 M = 2 on the pairs path 41.4-41.6 against 43.9; M = 3 and 4 on the grouped path 56.1 / 75.1
# against the chain's 60.5 / 76.2): the tiles at 2-8 tokens, to write GLUON_BF16_TOKENS and GLUON_BF16_TILES_AT.
# Prediction, written before the call: the grouped path on Gluon ahead of the chain at 3-6 tokens, level or behind
# at 7-8; at 2 the pairs path's 32x7/128x6 the best. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g26c; rm -rf $R; mkdir -p $R
B="GLUON_BF16_GEMMS='always'"
timeout 120 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-bf16 --ms 2 \
    --gluon-tiles "[bf16]pairs:32x7/128x6+$B,[bf16]pairs:32x6/128x6+$B,[bf16]pairs:64x3/128x6+$B,[bf16]pairs:32x7/128x4+$B,[bf16]grouped:32x4/128x4+$B" \
    --out $R/q1 > $R/q1.log 2>&1
timeout 360 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-bf16 --ms 3,4,5,6,7,8 \
    --gluon-tiles "[bf16]grouped:32x4/128x4+$B,[bf16]grouped:32x6/128x4+$B,[bf16]grouped:32x4/64x4+$B,[bf16]grouped:64x3/128x4+$B" \
    --out $R/q2 > $R/q2.log 2>&1
tar czf $OUT/g26c.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q1.log $R/q2.log | head -30
for f in q1 q2; do grep -h "^|" $R/$f.log; done
