#!/usr/bin/env bash
# Issue #16, eighteenth session (2026-12-03), calls 1-2 (call 2 with PYTEST_K=routers, the 64-column variant dropped:
# Triton 3.6's ptxas crashes on down 64x3 with 2 tiles a program on the pairs path; and the x launch's routing in
# programs of its own, X_LAUNCH_ROUTERS_APART, with its GPU tests): the Gluon GPU tests (with the prepared
# GLUON_DOWN_TILES_PER_PROGRAM case), then the whole layer with down streaming 2 or 4 column tiles a
# program, and the grouped path's route launch on 8 or 2 warps (ROUTE_NUM_WARPS), beside the shipped choice, tl's
# GEMMs and vLLM's GEMMs alone. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/d1; rm -rf $R; mkdir -p $R/p
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode_gluon.py ${PYTEST_K:+-k "$PYTEST_K"} > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)|Error:" $R/gpu.log | head -20
timeout 420 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --ms 1,2,3,6,8 --gluon-tiles pairs:default,pairs:default+X_LAUNCH_ROUTERS_APART=True,pairs:default+down2,pairs:default+down4,grouped:default+down2,grouped:default+ROUTE_NUM_WARPS=8,grouped:default+ROUTE_NUM_WARPS=2 \
    --out $R/p > $R/p.log 2>&1
tar czf $OUT/d1.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log | head -30
grep "^|" $R/p.log
