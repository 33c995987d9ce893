#!/usr/bin/env bash
# Issue #16, thirty-fifth session (2026-12-06), call 8, H100: call 7 found gate_up 64 x 6 alone 82.7 us against 64 x 4's
# 92.1 at DeepSeek-V3-TP2 2 tokens on an H100 (the layer 129.05 against 129.95): deeper gate_up rings beyond the
# tuner's candidates at the H100's DeepSeek points still behind vLLM's GEMMs alone: pairs 64 x 8 at 2 and 4 (4 is on
# tl's pairs path), grouped 64 x 6 and 64 x 8 at 8. Prediction: 64 x 8 within 0.5% of 64 x 6 at 2; nothing beats tl
# at 4; at 8 64 x 6 level with the shipped 32 x 8. Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g35h; rm -rf $R; mkdir -p $R
P="python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block"
timeout 100 $P --ms 2,4 --gluon-tiles "pairs:64x8/128x3,pairs:64x6/128x3" --out $R/p > $R/p.log 2>&1
timeout 100 $P --ms 8 --gluon-tiles "grouped:64x6/128x4,grouped:64x8/128x4" --out $R/g > $R/g.log 2>&1
tar czf $OUT/g35h.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/*.log | head -30
grep -h "^|" $R/p.log $R/g.log | grep -v "^|---"
