#!/usr/bin/env bash
# Issue #16, thirty-fourth session (2026-12-06), call 2, whichever GPU comes (an H100 each call since the
# twenty-eighth session): the FP8 goal table on the shipped tree, last taken whole on an H100 in the thirty-first
# session's call 1 (tree 5ea73bf), before tiles from counts (31st-33rd sessions), GLUON_TILES_FROM_COUNTS_MIN_TOKENS
# and GLUON_FP8_TOKENS_ON_GPU; DeepSeek-V3-TP2 at 4, 16, 32 and 64 for the first time on an H100. Columns: shipped,
# tl GEMMs (auto), "previous" (GLUON_INTER_QUANTIZED_BY_DOWN=False: faster there at DeepSeek 1, 2, 8 by 0.1-1.2%),
# vLLM's GEMMs alone. Prediction: Qwen3-30B-FP8 ahead of vLLM's GEMMs alone at 2-64 (8 and 16 now from counts),
# behind at 1 by about 1% (21.1 against 20.9); DeepSeek ahead at 1, behind or level at 2 and 8, previous faster
# at 1, 2, 8 again. Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g34b; rm -rf $R; mkdir -p $R
G="[previous]auto:default+GLUON_INTER_QUANTIZED_BY_DOWN=False"
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 1,2,4,8,16,32,64 \
    --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
timeout 330 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,4,8,16,32,64 \
    --gluon-tiles "$G" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g34b.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
grep -h "^|" $R/q.log $R/d.log | cut -d'|' -f1-7,9
