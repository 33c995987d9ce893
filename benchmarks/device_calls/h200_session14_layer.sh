#!/usr/bin/env bash
# Issue #16, fourteenth session (2026-12-02), call 4: the shipped tree (FP8 block-scale rows of the decode tile
# table retuned on the pairs path at Qwen3-like M = 4-6 and DeepSeek-like M = 2 and 4, calls 2-3) beside vLLM's
# GEMMs, bench_moe_layer, FP8 block scales and bf16 at 1-64 tokens; the decode GPU tests of the paths and
# graphs. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/s14; rm -rf $R; mkdir -p $R
timeout 330 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block,qwen3-30b-bf16 \
    --ms 1,2,4,5,6,8,16,32,64 --time-budget 200 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "pairs or graph or fp8_layer or handoff" > $R/gpu.log 2>&1
tar czf $OUT/s14.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/bench_moe_layer.log | head -30
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
grep -v "^#" $R/moe_layer.md | grep "^|" | awk '!seen[$0]++' | cut -d'|' -f2,3,5,6,8,9,13
