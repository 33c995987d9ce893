#!/usr/bin/env bash
# Issue #16, twenty-ninth session (2026-12-05), call 4, on the H100 this session was lent (80GB HBM3; every earlier
# table is an H200's): the Gluon tile tuner (whole layer) over the FP8 token counts where the Gluon GEMMs run. Why:
# call 1 (h200_session27_shipped.sh on this H100) put the shipped layer behind vLLM's GEMMs alone at Qwen3-30B-FP8
# M = 1 (1.029), 8 (1.025), 64 (1.009) and DeepSeek-V3-TP2 M = 2 (1.007), 8 (1.010), all ahead on the H200 in the
# twenty-seventh session; vLLM reads tiles tuned for this GPU (its H100 configs), ours are the H200's; call 3 found
# 1.0% at M = 64, 0.7% at 12 and 1.9% at 20 in other tiles. Prediction, written before the call: other tiles 0.5-2%
# faster at half or more of the token counts, enough to put M = 8 and 64 ahead; M = 1 stays behind (the 3% there is
# the intermediate quantized by down, not a tile). Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g29t; rm -rf $R; mkdir -p $R
timeout 280 python3 benchmarks/tune_decode_gluon_tiles.py --cases qwen3-30b-fp8-block \
    --ms 1,2,3,4,5,6,7,8,9,10,11,13,14,15,17,18,24,32,40,48,56 \
    --gate-up 32x4,32x6,32x8,64x3,64x4,128x3 --down 64x3,64x4,128x3,128x4,128x6 \
    --minutes 4 --out $R/q > $R/q.log 2>&1
timeout 230 python3 benchmarks/tune_decode_gluon_tiles.py --cases deepseek-v3-tp2-fp8-block \
    --ms 1,2,3,5,6,8,10,12,13 \
    --gate-up 32x4,32x6,32x8,64x3,64x4 --down 64x3,64x4,128x3,128x4,128x6 \
    --minutes 3 --out $R/d > $R/d.log 2>&1
tar czf $OUT/g29t.tgz -C $R .
grep -h -i -B2 -A12 "Traceback" $R/q.log $R/d.log | head -30
grep -h "^| qwen\|^| deep\|^# " $R/q.log $R/d.log
