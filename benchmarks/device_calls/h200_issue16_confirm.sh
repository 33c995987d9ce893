#!/usr/bin/env bash
# Issue #16: confirms the route launch's few-token limit (FEW_ELEMENTS) after the final call:
# GPU tests of the decode layer, the switches side by side at M = 2, 4, 8, and the whole-layer
# benchmark of the DeepSeek-V3-TP2 FP8 shape at M = 1..16. Device, repo root, carry .vendor.
source benchmarks/h200_setup.sh
R=/tmp/confirm; rm -rf $R; mkdir -p $R
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_decode.py -k "fp8 or cuda_graph or alignment" \
    > $R/pytest_decode.txt 2>&1
timeout 70 python3 benchmarks/tune_moe_decode.py $V --skip-tiles --ms 2,4,8 --out $R > $R/tune.log 2>&1
timeout 80 python3 benchmarks/bench_moe_layer.py $V --cases deepseek-v3-tp2-fp8-block --ms 1,2,4,8,16 \
    --out $R/moe_layer.md > $R/bench_moe_layer.log 2>&1
cp $R/*.txt $R/*.log $R/*.md $OUT/ 2>/dev/null
echo "pytest: $(tail -1 $R/pytest_decode.txt)"
grep "^|" $R/tune.log | awk '!seen[$0]++' | cut -c1-400
grep -v "^#" $R/moe_layer.md | grep "^|" | cut -d'|' -f1-6,11-13,15 | tail -8
