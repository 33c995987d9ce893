#!/usr/bin/env bash
# Issue #16, eighteenth session (2026-12-03), call 1: the Gluon GPU tests (with the prepared
# GLUON_DOWN_TILES_PER_PROGRAM case), then the whole layer with down streaming 2 or 4 column tiles a
# program beside the shipped choice, tl's GEMMs and vLLM's GEMMs alone. Device, repo root, carry=[".vendor"].
# The record of that call (commit 7780772): the tests passed (65), the probe stopped at its first row, Triton 3.6's
# ptxas crashing on the 64-column down tile streamed 4 a program; call 2 (h200_gluon_route_layout.sh) timed
# the rest. GLUON_DOWN_TILES_PER_PROGRAM measured slower there and is gone since.
source benchmarks/h200_setup.sh
R=/tmp/d1; rm -rf $R; mkdir -p $R/p
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode_gluon.py > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)|Error:" $R/gpu.log | head -20
timeout 380 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --ms 1,2,3,4,6,8 --gluon-tiles pairs:default,pairs:default+down2,pairs:32x6/64x3+down4,grouped:default+down2 \
    --out $R/p > $R/p.log 2>&1
tar czf $OUT/d1.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log | head -30
grep "^|" $R/p.log
