#!/usr/bin/env bash
# Issue #16, thirteenth session (2026-12-02), call 4: the shipped tree (the layer's first launch
# PDL-launched; DeepSeek-sized experts on the pairs path at one token with the down GEMM's K loop
# rotated) beside vLLM's GEMMs, bench_moe_layer, FP8 block scales and bf16 at 1-64 tokens; the probe
# of both changes against their absence at the points they touch and at M = 8 (call 3 read DeepSeek
# M = 8 noisy); the decode GPU tests of the paths and graphs. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/s13; rm -rf $R; mkdir -p $R/p
timeout 290 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block,qwen3-30b-bf16 \
    --ms 1,2,4,8,16,32,64 --time-budget 240 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
timeout 100 python3 benchmarks/probe_decode_pairs_variants.py --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block \
    --ms 1,8 --variants "grouped;pairs, down K straight;pairs, first launch plain;grouped, first launch plain" \
    --out $R/p > $R/p.log 2>&1
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "rotated or handoff or pairs or graph or fp8_layer" > $R/gpu.log 2>&1
tar czf $OUT/s13.tgz -C $R .
grep -i -B2 -A12 "error\|Traceback" $R/bench_moe_layer.log $R/p.log | head -30
echo "pytest: $(tail -1 $R/gpu.log)"; grep -E "^(FAILED|ERROR)" $R/gpu.log | head
grep "^|" $R/p.log
grep -v "^#" $R/moe_layer.md | grep "^|" | awk '!seen[$0]++' | cut -d'|' -f2,3,5,6,8,9,13
