#!/usr/bin/env bash
# Issue #16, sixth session (2026-12-01), last device call: the GPU maths of fused_moe (256-deep FP8
# block-scaled tiles bit-equal to 128-deep ones included) and of the decode layer, and the whole-layer
# benchmark for both FP8 cases and Qwen3-30B bf16 on the final tree (fused_moe's FP8 block-scale row
# for M = 9..64 with a 256-deep gate_up). Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/final9; rm -rf $R; mkdir -p $R
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_fused_moe_math.py tests/kernels/test_fused_moe.py \
    > $R/pytest_fused.txt 2>&1
timeout 130 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py \
    -k "fp8 or cuda_graph or alignment or deeper_than" > $R/pytest_decode.txt 2>&1
timeout 320 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block,qwen3-30b-bf16 \
    --time-budget 260 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
tar czf $OUT/final9.tgz -C $R .
echo "pytest fused: $(tail -1 $R/pytest_fused.txt)"; grep -E "^(FAILED|ERROR)" $R/pytest_fused.txt | head
echo "pytest decode: $(tail -1 $R/pytest_decode.txt)"; grep -E "^(FAILED|ERROR)" $R/pytest_decode.txt | head
tail -n 4 $R/bench_moe_layer.log | grep -i -B3 error
grep -v "^#" $R/moe_layer.md | grep "^|" | awk '!seen[$0]++' | cut -d'|' -f1-13
