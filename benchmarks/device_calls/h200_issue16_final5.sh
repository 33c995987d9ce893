#!/usr/bin/env bash
# Issue #16, fourth session (2026-12-01), confirming call on the final tree: GPU maths of the decode
# layer (FP8 layers against the fp32 reference at odd token counts, CUDA-graph replays with new
# inputs, the route launch's routing) and the whole-layer benchmark side by side with vLLM.
# Device, repo root, carry .vendor. Results in one tarball.
source benchmarks/h200_setup.sh
R=/tmp/final5; rm -rf $R; mkdir -p $R
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "fp8 or cuda_graph or alignment" \
    > $R/pytest_decode.txt 2>&1
timeout 300 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block,qwen3-30b-bf16 \
    --time-budget 240 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
tar czf $OUT/final5.tgz -C $R .
echo "pytest: $(tail -1 $R/pytest_decode.txt)"; grep -E "^(FAILED|ERROR)" $R/pytest_decode.txt | head
grep -v "^#" $R/moe_layer.md | grep "^|" | cut -d'|' -f1-13 | tail -24
