#!/usr/bin/env bash
# Issue #16, twentieth session (2026-12-03), call 9: Gluon grouped tiles at DeepSeek-V3-TP2 M = 3, 5, 6 (M = 6
# ships Gluon grouped with GLUON_TILES' 32x6/64x3 and was 3.6% behind vLLM's GEMMs alone in the nineteenth
# session; 3 and 5 ship tl's grouped GEMMs), since calls 2-5 found other tiles faster at Qwen3-sized experts.
# Prediction: one of them 1-2 us faster at M = 6 (low confidence). Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/dg; rm -rf $R; mkdir -p $R
timeout 300 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 6,3,5 \
    --gluon-tiles "grouped:32x6/64x3,grouped:32x4/64x3,grouped:32x8/64x3,grouped:32x6/64x4,grouped:32x6/128x3" \
    --out $R/d > $R/d.log 2>&1
tar czf $OUT/dg.tgz -C $R .
grep -h -i -A8 "Traceback" $R/d.log | head -20
grep -h "^|" $R/d.log | awk -F"|" '{n=(NF-5)/2; s="|"$2"|"$3; for(i=4;i<4+n;i++) s=s"|"$i; print s"|"$(NF-2)}'
