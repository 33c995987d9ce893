#!/usr/bin/env bash
# Issue #16, thirty-first session (2026-12-05), call 3, whichever GPU comes: GLUON_TILES_FROM_COUNTS, new this session
# (the grouped path's route launch aligns nothing; each Gluon GEMM program finds its token tile from the per-expert
# counts; the top-k sum launch zeroes them). First its GPU tests (bit for bit the aligned layer over graph replays,
# FP8 block scales and bf16, M = 1-64, counters zero after each replay) and the shipped grouped Gluon replays; then
# the whole layer with it against the shipped one at Qwen3-30B-FP8 M = 8, 12, 16, 32, 64 and DeepSeek-V3-TP2 M = 3, 8,
# 12 (the grouped path on Gluon). Prediction, written before the call: the route launch alone 3.5-4.0 -> 1.5-2.0 us,
# the layer 1.0-1.8 us faster at Qwen3 8-64 and 0.5-1.5 at DeepSeek (the GEMMs' extra set-up, a warp-local scan over
# E, under 0.3 us). Device, repo root, carry=[".vendor"].
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
source benchmarks/h200_setup.sh
R=/tmp/g31c; rm -rf $R; mkdir -p $R
timeout 200 python3 -m pytest -q -m gpu tests/kernels/test_moe_decode_gluon.py -p no:cacheprovider \
    -k "tiles_from_counts or (matches_reference_and_tl_kernel and grouped and shipped-tiles)" > $R/tests.log 2>&1
tail -3 $R/tests.log
G="[from counts]auto:default+GLUON_TILES_FROM_COUNTS=True"
timeout 190 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 8,12,16,32,64 \
    --gluon-tiles "$G" --out $R/q > $R/q.log 2>&1
timeout 150 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 3,8,12 \
    --gluon-tiles "$G" --out $R/d > $R/d.log 2>&1
tar czf $OUT/g31c.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
grep -h "FAILED\|Error" $R/tests.log | head -10
for f in q d; do grep -h "^|" $R/$f.log; done
