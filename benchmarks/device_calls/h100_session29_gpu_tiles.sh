#!/usr/bin/env bash
# Issue #16, twenty-ninth session (2026-12-05), call 5, on the H100 this session was lent: the shipped tree with
# GLUON_TILES_ON_GPU's H100 tiles (calls 3-4's tuner picks) against the H200's tiles (GLUON_TILES_ON_GPU={}) and
# vLLM's GEMMs alone (the H200 configs the benchmark always reads), side by side in one run, at the retuned token counts (the goal
# counts first; 2, 4, 16 and 32 take the H200's tiles on both: call 1's numbers stand).
# Prediction, written before the call: the H100 tiles 0.5-3% faster at every retuned M (M = 1 level with vLLM's
# GEMMs alone or ahead, 8 and 64 ahead). Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/g29c; rm -rf $R; mkdir -p $R
G="[H200 tiles]auto:default+GLUON_TILES_ON_GPU={}"
timeout 330 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block \
    --ms 1,8,64,7,9,10,11,12,13,17,18,20,48 --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
tar czf $OUT/g29c.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log | head -30
grep -h "^|" $R/q.log | cut -d"|" -f2-6,9-
