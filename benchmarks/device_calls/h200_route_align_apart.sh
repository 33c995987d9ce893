#!/usr/bin/env bash
# Issue #16, written in the eighteenth session (2026-12-03) for the next device call (not yet run): the grouped
# and chain paths' route launch with its routers apart from the rows' programs, the last router aligning
# (ROUTE_ALIGN_APART, prepared off), against the shipped route launch (the few-token router program at up to 8
# tokens, the counter path past it) where the grouped path ships: Qwen3-30B-FP8 M = 3, 8 (and 5-7, where the
# pairs path ships but the grouped path's route launch was the cost: 4.1 us), DeepSeek-V3-TP2 M = 3, 5, 6, 8;
# GPU tests of the switch first. Device, repo root, carry=[".vendor"].
source benchmarks/h200_setup.sh
R=/tmp/ra; rm -rf $R; mkdir -p $R
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "apart or align" > $R/gpu.log 2>&1
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)|Error:" $R/gpu.log | head -20
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases qwen3-30b-fp8-block --ms 3,5,6,7,8 \
    --gluon-tiles auto:default+ROUTE_ALIGN_APART=True,grouped:default,grouped:default+ROUTE_ALIGN_APART=True \
    --out $R/q > $R/q.log 2>&1
timeout 200 python3 benchmarks/probe_decode_gluon_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 3,5,6,8 \
    --gluon-tiles auto:default+ROUTE_ALIGN_APART=True,grouped:default,grouped:default+ROUTE_ALIGN_APART=True \
    --out $R/d > $R/d.log 2>&1
tar czf $OUT/ra.tgz -C $R .
grep -h -i -B2 -A12 "error\|Traceback" $R/q.log $R/d.log | head -30
grep -h "^|" $R/q.log $R/d.log
