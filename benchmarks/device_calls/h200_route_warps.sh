#!/usr/bin/env bash
# Issue #16, eighteenth session (2026-12-03), call 4: the route launch on 8 warps where its router's few-token
# tile holds 1024 logits or more (ROUTE_WIDE_TILE_WARPS, shipped) against 4 on the shipped paths: FP8 grouped
# (Gluon at Qwen3 M = 8, tl at DeepSeek M = 3-4), the bf16 chain path at Qwen3 M = 5-8; and the Gluon down
# GEMM's K loops rotated (GLUON_ROTATE_K_DOWN, prepared) at 1-2 tokens; GPU tests of the routing, layout and
# rotation first. Device, repo root, carry=[".vendor"].
# The record of that call (commit eb811f5): ROUTE_WIDE_TILE_WARPS kept; the rotated Gluon down loops measured
# level (within 0.2 us at all four points) and are gone since.
source benchmarks/h200_setup.sh
R=/tmp/d4; rm -rf $R; mkdir -p $R/p
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py tests/kernels/test_moe_decode_gluon.py \
    -k "route or align or few or rotat or routers" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)|Error:" $R/gpu.log | head -20
timeout 100 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block,deepseek-v3-tp2-fp8-block \
    --ms 1,2 --gluon-tiles auto:default+GLUON_ROTATE_K_DOWN=True --out $R/p1 > $R/p1.log 2>&1
timeout 90 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 5,8 \
    --gluon-tiles auto:default+ROUTE_WIDE_TILE_WARPS=4 --out $R/p > $R/p.log 2>&1
timeout 70 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 3 \
    --gluon-tiles auto:default+ROUTE_WIDE_TILE_WARPS=4 --out $R/p2 > $R/p2.log 2>&1
timeout 60 python3 benchmarks/probe_decode_gluon_layer.py --cases qwen3-30b-bf16 --ms 8 \
    --gluon-tiles auto:default+ROUTE_WIDE_TILE_WARPS=4 --out $R/p3 > $R/p3.log 2>&1
tar czf $OUT/d4.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/p*.log | head -30
grep -h "^|" $R/p1.log $R/p.log $R/p2.log $R/p3.log
