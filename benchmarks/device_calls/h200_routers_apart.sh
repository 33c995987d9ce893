#!/usr/bin/env bash
# Issue #16, eighteenth session (2026-12-03), call 3: the shipped tree (the Gluon pairs path's x launch routing
# in programs of its own; the down-tiles and in-GEMM layout tries removed): the Gluon GPU tests and the decode
# tests of the FP8 paths, then the whole layer with and without X_LAUNCH_ROUTERS_APART, and the grouped path's
# route launch on 8 or 2 warps (ROUTE_NUM_WARPS), beside tl's GEMMs and vLLM's GEMMs alone.
# Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/d3; rm -rf $R; mkdir -p $R/p
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode_gluon.py tests/kernels/test_moe_decode.py \
    -k "gluon or fp8 or pairs or graph or handoff" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)|Error:" $R/gpu.log | head -20
G=pairs:default,pairs:default+X_LAUNCH_ROUTERS_APART=False,grouped:default,grouped:default+ROUTE_NUM_WARPS=8
G=$G,grouped:default+ROUTE_NUM_WARPS=2
timeout 330 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2,3,6,8 --gluon-tiles $G --out $R/p > $R/p.log 2>&1
tar czf $OUT/d3.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/p.log | head -30
grep "^|" $R/p.log
