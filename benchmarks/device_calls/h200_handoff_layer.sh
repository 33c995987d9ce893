#!/usr/bin/env bash
# Issue #16, twelfth session (2026-12-02), call 5: the shipped tree (per-pair handoff from 32 pairs,
# FP8 pairs path at M = 1-6 small / 2, 4, 6 large) beside vLLM's GEMMs, bench_moe_layer, FP8 block
# scales at 1-8 tokens; then the decode GPU tests of the pairs path, the handoff and the graphs.
# Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/hlayer; rm -rf $R; mkdir -p $R
timeout 300 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --ms 1,2,3,4,5,6,8 --time-budget 200 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "handoff or pairs or graph or fp8_layer or l2" > $R/gpu.log 2>&1
tar czf $OUT/hlayer.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/bench_moe_layer.log | head -30
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
grep -v "^#" $R/moe_layer.md | grep "^|" | awk '!seen[$0]++' | cut -d'|' -f2,3,5,6,8,9,13
