#!/usr/bin/env bash
# Issue #16, thirty-fourth session (2026-12-06), call 5, whichever GPU comes: DeepSeek-V3-TP2 at 5-7 tokens, the
# shipped grouped Gluon path (1.9% behind vLLM's GEMMs alone at 6 on an H100, call 4) against the pairs path's Gluon
# GEMMs (no route alignment; 48 pairs on 256 experts mostly one a expert, so about the same weight bytes).
# Prediction: pairs within 1% of grouped, faster at 6 by at most 1 us. Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g34e; rm -rf $R; mkdir -p $R
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 5,6,7 \
    --gluon-tiles "pairs:default,grouped:32x8/128x4" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g34e.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/d.log | head -40
grep -h "^|" $R/d.log | cut -d'|' -f1-6,8,10-
