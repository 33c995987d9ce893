#!/usr/bin/env bash
# Issue #16, thirty-third session (2026-12-06), call 4, whichever GPU comes. Qwen3-30B-FP8 at 6 tokens is the only
# token count of 1-64 whose GEMMs are tl's (GLUON_FP8_TOKENS: Gluon slower there in the nineteenth session on an
# H200, grouped 61.3 against 60.75, before the top-k sum launched apart, the intermediate quantized by down and
# tiles from counts); on an H100 the shipped layer is 1.2% behind vLLM's GEMMs alone there (80.4 against 79.4,
# call 1). The Gluon GEMMs at 6 tokens on both paths with the tiles their neighbours take, M = 5 and 7 beside as
# anchors. Prediction: grouped on Gluon faster than the shipped tl pairs path by 1.5-3 us at 6 (between 5's 68.8
# and 7's 81.65 on call 1's H100). Device, repo root, carry=[".vendor"].
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $GPU"
source benchmarks/h200_setup.sh
mkdir -p $OUT
G="grouped:32x6/128x4,grouped:32x8/64x3,grouped:32x6/64x3,pairs:32x8/128x6,pairs:32x6/128x3"
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 6,5,7 \
    --gluon-tiles "$G" --out $OUT/six > $OUT/six.log 2>&1
grep -h -i -B2 -A12 "error\|Traceback" $OUT/six.log | head -30
grep -h "^|" $OUT/six.log | cut -d'|' -f1-10,18
