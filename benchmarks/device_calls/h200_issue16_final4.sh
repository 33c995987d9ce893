#!/usr/bin/env bash
# Issue #16, session 2026-11-30 (third), confirming call on the final tree (routing in its own
# program): GPU tests of the decode layer and the whole-layer benchmark. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/final4; rm -rf $R; mkdir -p $R
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "fp8 or cuda_graph or alignment" \
    > $R/pytest_decode.txt 2>&1
timeout 270 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block,qwen3-30b-fp8-block,qwen3-30b-bf16 \
    --time-budget 210 --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
cp $R/* $OUT/ 2>/dev/null
echo "pytest: $(tail -1 $R/pytest_decode.txt)"
grep -v "^#" $R/moe_layer.md | grep "^|" | cut -d'|' -f1-10,13 | tail -24
